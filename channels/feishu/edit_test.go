package feishu

import (
	"context"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
)

// TestEditOnTheCard: the pending card's form holds the call's arguments
// in an input, prefilled (the fake accepts it under Feishu's form rules),
// and a 按修改确认 button; pressed after changing the input (form values
// as Feishu sends them), the call runs once with the changed arguments,
// the approval is bound to their hash and the answered card says what
// changed. Arguments that are not a JSON object, or that the tool's schema
// refuses, decide nothing. On both stores.
func TestEditOnTheCard(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) approval.Store
	}{
		{"memory", func(*testing.T) approval.Store { return memstore.New(memstore.Options{}) }},
		{"redis", redisStore},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRigWith(t, rigOptions{store: tc.store(t)})
			a, card := g.pending(t, "oc_edit", "ou_alice", "orders")
			js := mustJSON(t, card)
			if !strings.Contains(js, `"name":"`+cards.FeishuArgsField(1)+`"`) || !strings.Contains(js, `"default_value":"{\"target\":\"orders\"}"`) {
				t.Fatalf("the card has no prefilled arguments input: %s", js)
			}
			edit := cardButton(t, card, "edit")
			if edit["decision"] != "edit" || edit["payload_sha256"] != a.PayloadSHA256 {
				t.Fatalf("edit button value %v", edit)
			}
			click := func(args string) *feishutest.CardActionEvent {
				return &feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: "ou_alice", MessageID: a.Cards[0].MessageID, ChatID: a.ChatID,
					Value: edit, FormValue: map[string]any{"reason": "the archive", cards.FeishuArgsField(1): args}, Name: "edit"}
			}
			for _, bad := range []string{`orders_archive`, `{"target":5}`, `[]`} {
				if resp := g.clickEvent(t, *click(bad)); resp.Card != nil || g.state(t, a.ID) != approval.StatePending {
					t.Fatalf("%s decided: %+v", bad, resp)
				}
			}
			resp := g.clickEvent(t, *click(`{"target":"orders_archive"}`))
			if resp.Card == nil {
				t.Fatalf("answer %+v", resp)
			}
			if answered := mustJSON(t, resp.Card.Data); !strings.Contains(answered, `Changed before approval, call 1: target: \"orders\" → \"orders_archive\"`) {
				t.Fatalf("the answered card does not say what changed: %s", answered)
			}
			got, err := g.engine.Get(context.Background(), a.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != approval.StateExecuted || got.ProposedSHA256 != a.PayloadSHA256 || string(got.Calls[0].Args) != `{"target":"orders_archive"}` ||
				got.Comment != "the archive" || g.erase.Runs.Load() != 1 {
				t.Fatalf("record %+v, runs %d", got, g.erase.Runs.Load())
			}
			// The settled card (the patch after the answer) says what changed.
			eventually(t, "the card is settled with the change", func() bool {
				for _, c := range g.calls("patch") {
					if strings.Contains(c.Content, `Changed before approval, call 1: target: \"orders\" → \"orders_archive\"`) {
						return true
					}
				}
				return false
			})
		})
	}
}
