package approval_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/internal/clock"
)

// rawSecret is what a tool's error may carry (a host, a password, a path):
// it must never reach the people reading an outcome.
const rawSecret = "dial tcp 10.1.2.3:5432: password=hunter2 in /etc/hitlbot/secret.dsn"

// frozenTool fails in the way its mode says, always with rawSecret in the
// error: "timeout" waits for the engine's ExecTimeout; "toolTimeout" is a
// tool's own time limit; "error" an error of unknown effect; "panic" a crash.
type frozenTool struct{ mode string }

func (f frozenTool) Dispatch(ctx context.Context, c approval.Call) (approval.Result, error) {
	switch f.mode {
	case "timeout":
		<-ctx.Done()
		return approval.Result{}, fmt.Errorf("%s: %w", rawSecret, ctx.Err())
	case "toolTimeout":
		return approval.Result{}, fmt.Errorf("%s: %w", rawSecret, context.DeadlineExceeded)
	case "panic":
		panic(rawSecret)
	}
	return approval.Result{}, errors.New(rawSecret)
}

// TestFrozenOutcomeText: a frozen outcome says the frozen sentence once,
// then why, in the configured language and in words safe to show — never
// the tool's own error.
func TestFrozenOutcomeText(t *testing.T) {
	const execTimeout = 200 * time.Millisecond
	cases := []struct {
		mode, lang, cause string
	}{
		{"timeout", "en", "timed out after 200ms"},
		{"timeout", "zh", "执行超时（200ms）"},
		{"toolTimeout", "en", "the tool timed out"},
		{"error", "en", "the tool stopped with an error, so whether it took effect is unknown"},
		{"error", "zh", "工具出错，无法确定是否已生效"},
		{"panic", "en", "the tool crashed"},
		{"panic", "zh", "工具崩溃"},
	}
	for _, c := range cases {
		t.Run(c.mode+"/"+c.lang, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
			store := memstore.New(memstore.Options{Clock: clk})
			text := approval.DefaultOutcomeText(c.lang)
			e, err := approval.NewEngine(approval.EngineConfig{Store: store, Notifier: &notifier{}, Dispatcher: frozenTool{c.mode}, Audit: &recorder{},
				Clock: clk, Logger: quiet, PollInterval: time.Hour, Text: text, Lang: c.lang, ExecTimeout: execTimeout})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if err := e.Start(ctx); err != nil {
				t.Fatal(err)
			}
			a := request(t, e)
			waited := waitAsync(t, e, a.ID)
			o := decide(t, e, a.ID, decision(a, approval.Approve, "bob"))
			stored, err := e.Get(ctx, a.ID)
			if err != nil || stored.Outcome == nil {
				t.Fatalf("Get: %+v, %v", stored, err)
			}
			sentence := text.Text(approval.StatusFrozen)
			for name, got := range map[string]approval.Outcome{"Decide": o, "Wait": recv(t, waited), "the record": *stored.Outcome} {
				if got.Status != approval.StatusFrozen {
					t.Fatalf("%s: status %s, want frozen: %+v", name, got.Status, got)
				}
				if n := strings.Count(got.Content, sentence); n != 1 {
					t.Errorf("%s: the frozen sentence is said %d times, want once: %q", name, n, got.Content)
				}
				if !strings.Contains(got.Content, c.cause) {
					t.Errorf("%s: %q does not say the cause %q", name, got.Content, c.cause)
				}
				if got.Content != sentence+": "+got.Detail || !strings.Contains(got.Detail, c.cause) {
					t.Errorf("%s: Detail %q, want what follows the sentence, with the cause %q", name, got.Detail, c.cause)
				}
				for _, leak := range []string{"hunter2", "10.1.2.3", "/etc/hitlbot", "panicked", "goroutine"} {
					if strings.Contains(got.Content, leak) {
						t.Errorf("%s: the tool's own error (%q) is shown: %q", name, leak, got.Content)
					}
				}
			}
		})
	}
}
