package feishu

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
	"github.com/hitlbot/hitlbot/internal/hitltest"
)

// TestLargestBatchThroughFeishu: the largest batch hitlbot asks one
// approval for (approval.MaxCalls, 64 calls) goes through the Feishu
// channel against the strict fake, which refuses a card of more than
// 200 components or a body over 30 KB (feishutest rules.go, doc
// feishu-cards/card-json-v2-structure): every card posted is accepted,
// each holds the approve and reject buttons for all 64 calls, and one
// 确认 runs every call exactly once.
func TestLargestBatchThroughFeishu(t *testing.T) {
	var mu sync.Mutex
	runs := map[string]int{}
	g := newRig(t, func(_ *Config, tool *hitltest.Tool) {
		tool.Result = func(name, target string, n int64) string {
			mu.Lock()
			defer mu.Unlock()
			runs[target]++
			return hitltest.TargetResult(name, target, n)
		}
	})
	n := approval.MaxCalls
	if n != cards.MaxCardCalls {
		t.Fatalf("approval.MaxCalls %d, cards.MaxCardCalls %d: a card must announce every call one approval holds", n, cards.MaxCardCalls)
	}
	targets := make([]string, n)
	for i := range targets {
		targets[i] = fmt.Sprintf("t%02d", i+1)
	}
	g.say(t, "p2p", "oc_big", "ou_alice", "erase-both "+strings.Join(targets, " "), nil)
	var a *approval.Approval
	eventually(t, "the batch approval is pending with its card", func() bool {
		p, err := g.engine.Pending(context.Background(), channels.SessionKey(g.scope, Name, "oc_big", "ou_alice", ""))
		if err != nil {
			t.Fatal(err)
		}
		a = p
		return p != nil && len(p.Cards) > 0
	})
	if len(a.Calls) != n {
		t.Fatalf("the approval holds %d calls, want %d", len(a.Calls), n)
	}
	// Every card of the approval the fake received was accepted (the
	// fake answers a card over Feishu's limits 400 / 230099).
	var posted []map[string]any
	for _, c := range g.fake.Calls() {
		if c.MsgType != "interactive" || !strings.Contains(c.Content, string(a.ID)) {
			continue
		}
		if c.Answered != 200 || c.Code != 0 {
			t.Fatalf("Feishu refused a card of the batch: HTTP %d, code %d (%d bytes)", c.Answered, c.Code, len(c.Content))
		}
		posted = append(posted, mustDecode(t, c.Content))
	}
	if len(posted) == 0 || len(posted) != len(a.Cards) {
		t.Fatalf("%d cards posted, the approval names %d", len(posted), len(a.Cards))
	}
	for i, card := range posted {
		for _, verb := range []string{"approve", "reject"} {
			if v := cardButton(t, card, verb); v["approval_id"] != string(a.ID) || v["calls"] != fmt.Sprint(n) {
				t.Fatalf("card %d: %s button %v does not decide all %d calls", i+1, verb, v, n)
			}
		}
	}
	approve := cardButton(t, posted[0], "approve")
	resp := g.clickEvent(t, feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: "ou_alice", MessageID: a.Cards[0].MessageID,
		ChatID: a.ChatID, Value: approve, Name: "approve"})
	if resp.Card == nil {
		t.Fatalf("the click got no card: %+v", resp)
	}
	eventually(t, "all 64 calls run", func() bool { return g.state(t, a.ID) == approval.StateExecuted })
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != n {
		t.Fatalf("%d targets run, want %d", len(runs), n)
	}
	for _, target := range targets {
		if runs[target] != 1 {
			t.Errorf("%s ran %d times, want once", target, runs[target])
		}
	}
	if got := g.erase.Runs.Load(); got != int64(n) {
		t.Fatalf("%d runs, want %d", got, n)
	}
	// The answered and settled cards are within the limits too: no call
	// of the fake was refused.
	for _, c := range g.fake.Calls() {
		if c.Answered != 200 {
			t.Errorf("Feishu refused a %s (HTTP %d, code %d)", c.Op, c.Answered, c.Code)
		}
	}
}
