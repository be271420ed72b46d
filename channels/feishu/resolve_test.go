package feishu

import (
	"context"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
)

// resolveValue is the callback value of a frozen card's resolve button.
func resolveValue(a *approval.Approval, r approval.Resolution) map[string]any {
	v := buttonValue(a, "resolve")
	v["resolution"] = string(r)
	return v
}

// freezeOnCard approves a's card while the tool's effect comes back
// unknown, and returns once the card is patched to frozen with its three
// resolve buttons (the form Feishu's rules accept).
func (g *rig) freezeOnCard(t *testing.T, a *approval.Approval, user string) {
	t.Helper()
	g.erase.Unknown.Store(1)
	resp, _ := g.click(t, a, user, buttonValue(a, "approve"))
	if resp.Toast == nil {
		t.Fatalf("answer %+v", resp)
	}
	if st := g.state(t, a.ID); st != approval.StateFrozen {
		t.Fatalf("state %s, want frozen", st)
	}
	eventually(t, "the card is patched to frozen with the resolve buttons", func() bool {
		for _, c := range g.calls("patch") {
			if c.MessageID == a.Cards[0].MessageID && strings.Count(c.Content, `"decision":"resolve"`) == 3 {
				if err := feishutest.CheckCard(c.Content); err != nil {
					t.Fatalf("Feishu would refuse the frozen card: %v", err)
				}
				return true
			}
		}
		return false
	})
}

// End to end through the router, on the fake Feishu: a call freezes (its
// effect unknown); on the frozen card, someone the approver rule does not
// allow is refused; the requester presses 重试 with a note: the tool runs
// exactly once more, the click is answered with the retried card (no
// buttons left) that the settle's patch also shows, the record keeps the
// note, and the chat gets the model's follow-up (the resumed turn).
func TestFrozenCardRetry(t *testing.T) {
	g := newRig(t)
	a, _ := g.pending(t, "oc_p2p_retry", "ou_alice", "orders")
	g.freezeOnCard(t, a, "ou_alice")
	if n := g.erase.Runs.Load(); n != 1 {
		t.Fatalf("runs %d", n)
	}
	// Not the requester's approvers: refused, nothing changes.
	resp, _ := g.click(t, a, "ou_mallory", resolveValue(a, approval.ResolveRetry))
	if resp.Toast == nil || resp.Toast.Type != "warning" || resp.Card != nil {
		t.Fatalf("mallory's click answered %+v", resp)
	}
	if st := g.state(t, a.ID); st != approval.StateFrozen || g.erase.Runs.Load() != 1 {
		t.Fatalf("after mallory: state %s, runs %d", st, g.erase.Runs.Load())
	}
	e := feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: "ou_alice", MessageID: a.Cards[0].MessageID, ChatID: a.ChatID,
		Value: resolveValue(a, approval.ResolveRetry), FormValue: map[string]any{"reason": " the database is back "}, Name: "resolve_retry"}
	resp = g.clickEvent(t, e)
	if resp.Toast == nil || resp.Toast.Type != "success" || resp.Card == nil {
		t.Fatalf("retry answered %+v", resp)
	}
	answered := mustJSON(t, resp.Card.Data)
	if !strings.Contains(answered, "Retried: Executed") || !strings.Contains(answered, "erase done (run 2)") || strings.Contains(answered, "behaviors") ||
		!strings.Contains(answered, "Comment: the database is back") {
		t.Fatalf("answered card %s", answered)
	}
	if n := g.erase.Runs.Load(); n != 2 {
		t.Fatalf("the tool ran %d times, want 2", n)
	}
	got, err := g.engine.Get(context.Background(), a.ID)
	if err != nil || got.State != approval.StateExecuted || got.Outcome.Resolution != approval.ResolveRetry || got.Comment != "the database is back" ||
		got.DecidedBy != "ou_alice" || got.DecidedVia != approval.SourceCard {
		t.Fatalf("record %+v, %v", got, err)
	}
	eventually(t, "the card is patched to the retried state, as the click was answered", func() bool {
		for _, c := range g.calls("patch") {
			if c.MessageID == a.Cards[0].MessageID && strings.Contains(c.Content, "Retried: Executed") {
				return c.Content == answered
			}
		}
		return false
	})
	eventually(t, "the chat gets the model's follow-up", func() bool {
		for _, op := range []string{"create", "reply"} {
			for _, c := range g.calls(op) {
				if c.ReceiveID == a.ChatID && strings.Contains(c.Content, "Update on the earlier approval "+string(a.ID)) &&
					strings.Contains(c.Content, "the retry ended executed") {
					return true
				}
			}
		}
		return false
	})
	// Pressed again (a second click, another button): already decided.
	resp, _ = g.click(t, a, "ou_alice", resolveValue(a, approval.ResolveDone))
	if resp.Toast == nil || resp.Toast.Type != "info" || g.erase.Runs.Load() != 2 || g.state(t, a.ID) != approval.StateExecuted {
		t.Fatalf("a second resolution: %+v, runs %d", resp, g.erase.Runs.Load())
	}
}

// 已完成 with the result typed in the card's input: nothing runs again;
// the record is executed by hand with the note, and the answered card
// (and the patch) say so.
func TestFrozenCardDone(t *testing.T) {
	g := newRig(t)
	a, _ := g.pending(t, "oc_p2p_done", "ou_alice", "orders")
	g.freezeOnCard(t, a, "ou_alice")
	e := feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: "ou_alice", MessageID: a.Cards[0].MessageID, ChatID: a.ChatID,
		Value: resolveValue(a, approval.ResolveDone), FormValue: map[string]any{"reason": "checked: the rows are gone"}, Name: "resolve_done"}
	resp := g.clickEvent(t, e)
	if resp.Card == nil {
		t.Fatalf("done answered %+v", resp)
	}
	answered := mustJSON(t, resp.Card.Data)
	if !strings.Contains(answered, "Resolved: done by hand") || !strings.Contains(answered, "Comment: checked: the rows are gone") || strings.Contains(answered, "behaviors") {
		t.Fatalf("answered card %s", answered)
	}
	if n := g.erase.Runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want 1", n)
	}
	got, err := g.engine.Get(context.Background(), a.ID)
	if err != nil || got.State != approval.StateExecuted || got.Outcome.Resolution != approval.ResolveDone || got.Comment != "checked: the rows are gone" {
		t.Fatalf("record %+v, %v", got, err)
	}
	eventually(t, "the card is patched to done, as the click was answered", func() bool {
		for _, c := range g.calls("patch") {
			if c.MessageID == a.Cards[0].MessageID && strings.Contains(c.Content, "Resolved: done by hand") {
				return c.Content == answered
			}
		}
		return false
	})
}
