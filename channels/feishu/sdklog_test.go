package feishu

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
)

// Issue 12, item 10: the SDK's own log lines (the API client, the long
// connection client, the event dispatcher) go through the channel's slog
// logger as JSON lines, and nothing reaches stdout as plain text.
func TestSDKLogsGoThroughSlog(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	var stdout bytes.Buffer
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(&stdout, r)
		close(copied)
	}()
	restored := false
	restore := func() {
		if !restored {
			restored = true
			os.Stdout = old
			w.Close()
			<-copied
		}
	}
	defer restore()

	fake := feishutest.New()
	defer fake.Close()
	lb, logger := newLogBuf()
	cfg := testConfig(fake)
	cfg.BotOpenID = "ou_bot"
	ch, err := New(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	h := &recorder{}
	if err := ch.Start(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	ev := feishutest.MessageEvent{EventID: nextID("ev"), MessageID: nextID("om"), ChatID: "oc_log", ChatType: "p2p", Sender: "ou_a", Text: "hello"}
	if resp, err := fake.Push(ev.JSON(), 5*time.Second); err != nil || resp.StatusCode != 200 {
		t.Fatalf("push: %+v %v", resp, err)
	}
	if err := ch.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	restore()

	if stdout.Len() != 0 {
		t.Errorf("plain text on stdout: %q", stdout.String())
	}
	var client, ws bool
	for _, l := range lb.lines(t) {
		msg, _ := l["msg"].(string)
		if l["level"] == "INFO" && msg == "lark sdk: client ready" {
			client = true
		}
		if l["level"] == "INFO" && strings.HasPrefix(msg, "lark sdk: connected to ") {
			ws = true
		}
	}
	if !client || !ws {
		t.Errorf("SDK lines through slog: API client %v, long connection %v; lines %v", client, ws, lb.lines(t))
	}
}

// sdkLogger keeps the SDK's levels and separates the SDK's arguments
// (the long connection logs a message and a "[conn_id=…]" apart).
func TestSDKLoggerLevels(t *testing.T) {
	lb, logger := newLogBuf()
	s := sdkLogger{logger}
	ctx := context.Background()
	s.Debug(ctx, "d", "[conn_id=1]")
	s.Info(ctx, "i")
	s.Warn(ctx, "w")
	s.Error(ctx, "e")
	want := [][2]string{{"DEBUG", "lark sdk: d [conn_id=1]"}, {"INFO", "lark sdk: i"}, {"WARN", "lark sdk: w"}, {"ERROR", "lark sdk: e"}}
	lines := lb.lines(t)
	if len(lines) != len(want) {
		t.Fatalf("lines %v", lines)
	}
	for i, l := range lines {
		if l["level"] != want[i][0] || l["msg"] != want[i][1] {
			t.Errorf("line %d: %v %q, want %v %q", i, l["level"], l["msg"], want[i][0], want[i][1])
		}
	}
}
