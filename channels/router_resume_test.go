package channels_test

import (
	"context"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	. "github.com/hitlbot/hitlbot/channels"
)

// saidOnce waits until the chat of g has said sub as kind, then a moment
// more, and fails unless it was said exactly once.
func (g *rig) saidOnce(t *testing.T, kind, sub string) {
	t.Helper()
	eventually(t, kind+" "+sub, func() bool { return g.ch.hasText(kind, sub) })
	time.Sleep(300 * time.Millisecond) // a second resumption would have spoken by then
	if n := g.ch.countText(kind, sub); n != 1 {
		t.Fatalf("%s %q said %d times: %v", kind, sub, n, g.ch.texts())
	}
}

// The replica whose turn waits is gone (its loop closed, as when the
// process is killed); the click reaches the other replica. The tool runs
// once, and the other replica's chat gets the tool's result and then the
// model's follow-up answer, once; the first replica says nothing more.
func TestResumeOnTheOtherReplica(t *testing.T) {
	a, b := newReplicas(t, memstore.New(memstore.Options{}))
	ap := a.pendingApproval(t, "orders")
	if err := a.loop.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := len(a.ch.texts())
	card := a.ch.shownCards()[0]
	o, err := b.router.HandleCardAction(context.Background(), CardAction{Channel: "fake", ChatID: "c1", MessageID: card.ref.MessageID,
		EventID: "click-resume", UserID: "alice", ApprovalID: ap.ID, Verb: approval.Approve, PayloadSHA256: card.v.Approve.PayloadSHA256})
	if err != nil || o.Status != approval.StatusExecuted {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	b.saidOnce(t, "tool_result", "erase done (run 1)")
	b.saidOnce(t, "answer", "summary: erase done (run 1)")
	texts := b.ch.texts()
	if len(texts) < 2 || texts[len(texts)-2] != "tool_result: erase done (run 1)" || texts[len(texts)-1] != "answer: summary: erase done (run 1)" {
		t.Fatalf("B said %v", texts)
	}
	if n := len(a.ch.texts()); n != before {
		t.Fatalf("A said more after it was gone: %v", a.ch.texts()[before:])
	}
	if a.erase.Runs.Load()+b.erase.Runs.Load() != 1 {
		t.Fatalf("runs A %d, B %d", a.erase.Runs.Load(), b.erase.Runs.Load())
	}
}

// The turn ran out of time while the approval was open (its replica
// lives); the decision, on the other replica, resumes it there.
func TestResumeAfterTheTurnTimedOut(t *testing.T) {
	a, b := newReplicas(t, memstore.New(memstore.Options{}), func(c *agent.LoopConfig) { c.TurnTimeout = 300 * time.Millisecond })
	ap := a.pendingApproval(t, "orders")
	eventually(t, "A's turn says it still waits", func() bool { return a.ch.hasText("notice", "still waiting") })
	card := a.ch.shownCards()[0]
	if o, err := b.router.HandleCardAction(context.Background(), CardAction{Channel: "fake", ChatID: "c1", MessageID: card.ref.MessageID,
		EventID: "click-late", UserID: "alice", ApprovalID: ap.ID, Verb: approval.Approve, PayloadSHA256: card.v.Approve.PayloadSHA256}); err != nil || o.Status != approval.StatusExecuted {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	b.saidOnce(t, "answer", "summary: erase done (run 1)")
	if a.ch.hasText("answer", "summary") {
		t.Fatalf("A answered too: %v", a.ch.texts())
	}
}

// Both replicas see the outcome and both try to resume the turn (each
// router settles, each loop is handed the outcome): one resumption goes
// on, and the chat gets one answer.
func TestBothReplicasSeeTheOutcomeOneResumes(t *testing.T) {
	a, b := newReplicas(t, memstore.New(memstore.Options{}), func(c *agent.LoopConfig) { c.TurnTimeout = 300 * time.Millisecond })
	ap := a.pendingApproval(t, "orders")
	eventually(t, "A's turn says it still waits", func() bool { return a.ch.hasText("notice", "still waiting") })
	o, err := a.engine.Decide(context.Background(), ap.ID, approval.Decision{Verb: approval.Approve, Actor: "alice", Source: approval.SourceCard,
		PayloadSHA256: ap.PayloadSHA256})
	if err != nil || o.Status != approval.StatusExecuted {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	rec, err := a.engine.Get(context.Background(), ap.ID)
	if err != nil {
		t.Fatal(err)
	}
	b.loop.Resume(rec, o) // A's engine handed it to A's loop already (Ended)
	eventually(t, "one answer", func() bool {
		return a.ch.hasText("answer", "summary: erase done (run 1)") || b.ch.hasText("answer", "summary: erase done (run 1)")
	})
	time.Sleep(500 * time.Millisecond)
	if n := a.ch.countText("answer", "summary") + b.ch.countText("answer", "summary"); n != 1 {
		t.Fatalf("%d answers: A %v, B %v", n, a.ch.texts(), b.ch.texts())
	}
}
