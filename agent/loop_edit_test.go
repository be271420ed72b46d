package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

// TestEditedCallToldToTheModel: an approver changes the call's target
// before approving: the tool runs once with the changed arguments, and
// the model is told who changed what before the result, so it knows its
// own call is not what ran. Arguments the tool's schema refuses decide
// nothing.
func TestEditedCallToldToTheModel(t *testing.T) {
	var reqs requests
	h := newHarness(t, recording(callThenSummarise(call("c1", "erase", "orders")), &reqs))
	ch := h.submit(t, "s1", "erase the orders")
	a := h.nextApproval(t)
	d := approval.Decision{Verb: approval.Approve, Actor: "alice", Source: approval.SourceCard, PayloadSHA256: a.PayloadSHA256,
		Edits: map[string]json.RawMessage{"c1": json.RawMessage(`{"target":7}`)}}
	if _, err := h.engine.Decide(context.Background(), a.ID, d); approval.KindOf(err) != errkind.Invalid {
		t.Fatalf("an edit the schema refuses: %v", err)
	}
	d.Edits = map[string]json.RawMessage{"c1": json.RawMessage(`{"target":"orders_archive"}`)}
	o, err := h.engine.Decide(context.Background(), a.ID, d)
	if err != nil || o.Status != approval.StatusExecuted {
		t.Fatalf("decision = %+v, %v", o, err)
	}
	r := result(t, ch)
	if h.del.Runs.Load() != 1 {
		t.Fatalf("runs %d", h.del.Runs.Load())
	}
	want := `Note: alice changed the arguments before approving (target: "orders" → "orders_archive"); the call ran with the changed arguments. Result: erase done (run 1)`
	if got := toolReplies(reqs.last())["c1"]; got != want {
		t.Fatalf("the model was told %q, want %q", got, want)
	}
	if len(r.Actions) != 1 || r.Actions[0].Status != approval.StatusExecuted || r.Actions[0].Result != want {
		t.Fatalf("actions %+v", r.Actions)
	}
}
