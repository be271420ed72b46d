package channels_test

import (
	"context"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
)

// TestTypedCancelWithReason: a typed cancel followed by a reason rejects
// the pending approval as the sender, with the reason as the decision's
// comment: the record and its outcome keep it, the settled card shows it,
// and the model's tool reply says who declined and why.
func TestTypedCancelWithReason(t *testing.T) {
	forEachDedupStore(t, func(t *testing.T, store approval.Store) {
		g := newRig(t, store)
		a := g.pendingApproval(t, "orders")
		g.send(t, msg("alice", "取消 用 orders_archive 表"))
		g.drain()
		rec, err := g.engine.Get(context.Background(), a.ID)
		if err != nil {
			t.Fatal(err)
		}
		const reason = "用 orders_archive 表"
		if rec.State != approval.StateRejected || rec.DecidedBy != "alice" || rec.DecidedVia != approval.SourceReply || rec.Comment != reason ||
			rec.Outcome == nil || rec.Outcome.Comment != reason {
			t.Fatalf("record %+v, outcome %+v", rec, rec.Outcome)
		}
		if g.erase.Runs.Load() != 0 || !g.ch.hasText("notice", "Declined; nothing was run") {
			t.Fatalf("runs %d, texts %v", g.erase.Runs.Load(), g.ch.texts())
		}
		eventually(t, "the settled card", func() bool { return len(g.ch.settledCards()) == 1 })
		if s := g.ch.settledCards()[0]; s.v.Status != approval.StatusRejected || s.v.Comment != reason || s.v.DecidedBy != "alice" {
			t.Fatalf("settled card %+v", s.v)
		}
		want := "summary: Not run: declined by alice: " + reason + ". Do not propose this same call again; ask the user what they want instead."
		eventually(t, "the model is told the reason", func() bool { return g.ch.hasText("answer", want) })
		if g.model.Seen("取消 用 orders_archive 表") != 0 {
			t.Fatal("the typed decision reached the model as a message")
		}
	})
}

type typedReasonTest struct {
	text   string
	reject bool   // the text rejects the pending approval
	reason string // the decision's comment
}

var typedReasonTests = []typedReasonTest{
	{"@_user_1 cancel: wrong table", true, "wrong table"},
	{"@hitlbot 取消，表不对", true, "表不对"},
	{"Reject - Use ORDERS_Archive", true, "Use ORDERS_Archive"},
	{"取消", true, ""},
	{"不要确认", true, ""},
	// Not a decision: the agent reads them and the approval waits.
	{"确认 用 orders_archive 表", false, ""},
	{"取消吗？", false, ""},
	{"取消订单 42", false, ""},
	{"no problem, go ahead", false, ""},
}

// TestTypedReasonForms: in a group chat, with a mention or without, which
// typed texts reject with which reason, and which go to the agent.
func TestTypedReasonForms(t *testing.T) {
	for _, test := range typedReasonTests {
		t.Run(test.text, func(t *testing.T) {
			g := newRig(t, nil)
			a := g.pendingApproval(t, "orders")
			g.send(t, msg("alice", test.text))
			g.drain()
			rec, err := g.engine.Get(context.Background(), a.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !test.reject {
				if rec.State != approval.StatePending || !g.ch.hasText("notice", "An approval is waiting") {
					t.Fatalf("state %s, texts %v", rec.State, g.ch.texts())
				}
				return
			}
			if rec.State != approval.StateRejected || rec.Comment != test.reason || rec.Outcome == nil || rec.Outcome.Comment != test.reason {
				t.Fatalf("record %+v, outcome %+v", rec, rec.Outcome)
			}
		})
	}
}
