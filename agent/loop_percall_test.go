package agent_test

import (
	"context"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
)

// TestPerCallBatch: a per-call decision that approves two calls of a batch
// and declines the third: the two run once each, the third never, and the
// model reads which ran and which were declined, by whom and why.
func TestPerCallBatch(t *testing.T) {
	var reqs requests
	h := newHarness(t, recording(callThenSummarise(call("c1", "erase", "a"), call("c2", "drop", "b"), call("c3", "erase", "c")), &reqs))
	ch := h.submit(t, "s1", "erase a and c, drop b")
	a := h.nextApproval(t)
	if len(a.Calls) != 3 {
		t.Fatalf("approval = %+v", a)
	}
	o, err := h.engine.Decide(context.Background(), a.ID, approval.Decision{Verb: approval.Approve, Actor: "alice", Source: approval.SourceCard,
		PayloadSHA256: a.PayloadSHA256, Comment: "keep b", Calls: map[string]approval.Verb{"c1": approval.Approve, "c2": approval.Reject, "c3": approval.Approve}})
	if err != nil || o.Status != approval.StatusExecuted {
		t.Fatalf("decision = %+v, %v", o, err)
	}
	r := result(t, ch)
	if h.del.Runs.Load() != 2 || h.drop.runs.Load() != 0 {
		t.Fatalf("runs erase=%d drop=%d, want 2 and 0", h.del.Runs.Load(), h.drop.runs.Load())
	}
	want := []approval.Status{approval.StatusExecuted, approval.StatusRejected, approval.StatusExecuted}
	if len(r.Actions) != 3 {
		t.Fatalf("actions = %+v", r.Actions)
	}
	for i, act := range r.Actions {
		if act.Status != want[i] || act.IsError != (want[i] == approval.StatusRejected) {
			t.Fatalf("action %d = %+v, want %s", i, act, want[i])
		}
	}
	replies := toolReplies(reqs.last())
	declined := "Not run: declined by alice: keep b. Do not propose this same call again; ask the user what they want instead."
	if replies["c2"] != declined {
		t.Fatalf("the model was told %q for the declined call, want %q", replies["c2"], declined)
	}
	if replies["c1"] != "erase done (run 1)" || replies["c3"] != "erase done (run 2)" {
		t.Fatalf("the model was told %q and %q for the calls that ran", replies["c1"], replies["c3"])
	}
	said := h.speak.toolResults()
	if len(said) != 2 || said[0].Tool != "erase" || said[1].Tool != "erase" {
		t.Fatalf("tool results shown in the chat: %+v", said)
	}
}
