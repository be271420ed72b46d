package feishu

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
)

// cardButton finds the callback value of the button named name in a card
// (as sent to the fake).
func cardButton(t *testing.T, card any, name string) map[string]any {
	t.Helper()
	var found map[string]any
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if x["tag"] == "button" && x["name"] == name {
				bs, _ := x["behaviors"].([]any)
				if len(bs) == 1 {
					found, _ = bs[0].(map[string]any)["value"].(map[string]any)
				}
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(card)
	if found == nil {
		t.Fatalf("no button %s in the card", name)
	}
	return found
}

// TestPerCallChoicesOnTheCard: a batch card offers a choice per call in
// its form (the fake accepts it under Feishu's form rules); 确认 with the
// second call set to "reject" (form values as Feishu sends them: strings
// under the selects' names) runs the first and third once, never the
// second, and the answered card says which call was declined. A choice
// that is neither approve nor reject decides nothing. On both stores.
func TestPerCallChoicesOnTheCard(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) approval.Store
	}{
		{"memory", func(*testing.T) approval.Store { return memstore.New(memstore.Options{}) }},
		{"redis", redisStore},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRigWith(t, rigOptions{store: tc.store(t)})
			g.say(t, "p2p", "oc_batch", "ou_alice", "erase-both a b c", nil)
			var a *approval.Approval
			eventually(t, "a batch approval is pending with its card", func() bool {
				p, err := g.engine.Pending(context.Background(), channels.SessionKey(g.scope, Name, "oc_batch", "ou_alice", ""))
				if err != nil {
					t.Fatal(err)
				}
				a = p
				return p != nil && len(p.Cards) > 0
			})
			if len(a.Calls) != 3 {
				t.Fatalf("approval calls %+v", a.Calls)
			}
			var card map[string]any
			for _, c := range g.calls("create") {
				if c.MsgType == "interactive" && strings.Contains(c.Content, string(a.ID)) {
					card = mustDecode(t, c.Content)
				}
			}
			js := mustJSON(t, card)
			for n := 1; n <= 3; n++ {
				if !strings.Contains(js, `"name":"`+cards.FeishuCallField(n)+`"`) {
					t.Fatalf("the card has no choice for call %d: %s", n, js)
				}
			}
			approve := cardButton(t, card, "approve")
			if approve["calls"] != "3" {
				t.Fatalf("approve value %v", approve)
			}
			bad := feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: "ou_alice", MessageID: a.Cards[0].MessageID, ChatID: a.ChatID,
				Value: approve, FormValue: map[string]any{"reason": "", "call_1": "approve", "call_2": "maybe", "call_3": "approve"}, Name: "approve"}
			if resp := g.clickEvent(t, bad); resp.Card != nil || g.state(t, a.ID) != approval.StatePending {
				t.Fatalf("a malformed choice decided: %+v, state %s", resp, g.state(t, a.ID))
			}
			e := feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: "ou_alice", MessageID: a.Cards[0].MessageID, ChatID: a.ChatID,
				Value: approve, FormValue: map[string]any{"reason": "not b", "call_1": "approve", "call_2": "reject", "call_3": "approve"}, Name: "approve"}
			resp := g.clickEvent(t, e)
			if resp.Card == nil {
				t.Fatalf("answer %+v", resp)
			}
			if answered := mustJSON(t, resp.Card.Data); !strings.Contains(answered, "Declined, not run: call 2") || !strings.Contains(answered, `"template":"green"`) {
				t.Fatalf("answered card %s", answered)
			}
			got, err := g.engine.Get(context.Background(), a.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != approval.StateExecuted || got.Verdicts != "ara" || got.Comment != "not b" || g.erase.Runs.Load() != 2 {
				t.Fatalf("record: state %s, verdicts %q, comment %q, runs %d", got.State, got.Verdicts, got.Comment, g.erase.Runs.Load())
			}
			if st := got.Outcome.Results[1].Status; st != approval.StatusRejected {
				t.Fatalf("call 2 ended %s", st)
			}
			// 取消 on the same form later is too late; a fresh batch
			// declined with 取消 declines every call whatever is chosen.
			g.say(t, "p2p", "oc_batch2", "ou_alice", "erase-both d e", nil)
			var b *approval.Approval
			eventually(t, "a second batch approval", func() bool {
				p, _ := g.engine.Pending(context.Background(), channels.SessionKey(g.scope, Name, "oc_batch2", "ou_alice", ""))
				b = p
				return p != nil && len(p.Cards) > 0
			})
			rej := buttonValue(b, "reject")
			rej["calls"] = "2"
			g.clickEvent(t, feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: "ou_alice", MessageID: b.Cards[0].MessageID, ChatID: b.ChatID,
				Value: rej, FormValue: map[string]any{"reason": "", "call_1": "approve", "call_2": "approve"}, Name: "reject"})
			if st := g.state(t, b.ID); st != approval.StateRejected || g.erase.Runs.Load() != 2 {
				t.Fatalf("取消 with choices: state %s, runs %d", st, g.erase.Runs.Load())
			}
		})
	}
}

func mustDecode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("card content is not JSON: %v", err)
	}
	return m
}
