package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
)

// abandonClaim claims a as the engine would on a decision, but runs
// nothing after it (the process running the tool died), then moves the
// clock past the claim's stale bound and sweeps: the engine freezes the
// approval with no per-call results, only the frozen sentence and why.
func abandonClaim(t *testing.T, h *harness, a *approval.Approval) {
	t.Helper()
	ctx := context.Background()
	res, err := h.engine.Store().Claim(ctx, a.ID, approval.ClaimRequest{Intent: approval.IntentApprove, PayloadSHA256: a.PayloadSHA256,
		Actor: "alice", Source: approval.SourceCard, Now: h.clk.Now()})
	if err != nil || res.Code != approval.ClaimOK {
		t.Fatalf("claim: %+v, %v", res, err)
	}
	h.clk.Advance(10 * time.Minute)
	if n, err := h.engine.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	got, err := h.engine.Get(ctx, a.ID)
	if err != nil || got.Outcome == nil || got.Outcome.Status != approval.StatusFrozen || len(got.Outcome.Results) != 0 {
		t.Fatalf("the abandoned claim ended as %+v, %v", got.Outcome, err)
	}
}

// checkFrozenNote: the model is told once that the result is unknown (in
// the loop's words, not again in the engine's status sentence), and why.
func checkFrozenNote(t *testing.T, h *harness, note string) {
	t.Helper()
	if sentence := h.engine.Text().Text(approval.StatusFrozen); strings.Contains(note, sentence) {
		t.Errorf("the model is told the frozen sentence twice: %q", note)
	}
	if n := strings.Count(strings.ToLower(note), "result is unknown"); n != 1 {
		t.Errorf("the model is told %d times that the result is unknown: %q", n, note)
	}
	if !strings.Contains(note, "the replica running it stopped") || !strings.Contains(note, "not run again") {
		t.Errorf("the model is not told why it froze: %q", note)
	}
}

// TestFrozenWithoutResultsToldOnce: an approval frozen with no per-call
// results (its claim was abandoned) reaches the model as one note, with
// the cause — both in the turn that waits for it and, recorded later, in
// the update on an approval whose turn ended first.
func TestFrozenWithoutResultsToldOnce(t *testing.T) {
	t.Run("in its turn", func(t *testing.T) {
		var reqs requests
		h := newHarness(t, recording(callThenSummarise(call("c1", "erase", "orders")), &reqs))
		ch := h.submit(t, "s1", "erase the orders")
		a := h.nextApproval(t)
		abandonClaim(t, h, a)
		r := result(t, ch)
		if len(r.Actions) != 1 || r.Actions[0].Status != "frozen" || !r.Actions[0].IsError {
			t.Fatalf("actions = %+v", r.Actions)
		}
		checkFrozenNote(t, h, toolReplies(reqs.last())["c1"])
		checkFrozenNote(t, h, r.Actions[0].Result)
		if h.del.Runs.Load() != 0 {
			t.Fatal("the tool ran")
		}
	})
	t.Run("after its turn", func(t *testing.T) {
		h := newHarness(t, eraseOnRequest(nil), func(c *agent.LoopConfig) { c.TurnTimeout = 300 * time.Millisecond })
		if r := result(t, h.submit(t, "s1", "erase x")); len(r.Actions) != 1 || r.Actions[0].Status != "pending" {
			t.Fatalf("turn that ran out of time = %+v", r)
		}
		a := h.nextApproval(t)
		abandonClaim(t, h, a)
		r := h.nextResumed(t)
		if len(r.res.Actions) != 1 || r.res.Actions[0].Status != approval.StatusFrozen {
			t.Fatalf("resumed = %+v", r)
		}
		conv, _ := h.history.Load(context.Background(), "s1")
		checkFrozenNote(t, h, toolReply(t, conv.Messages, "c-x").Content)
	})
}

// TestRejectedToldOnce: a rejection reaches the model as "not run:
// declined by" who declined, with their comment as the reason, and not to
// propose the call again — not again in the engine's status sentence.
func TestRejectedToldOnce(t *testing.T) {
	var reqs requests
	h := newHarness(t, recording(callThenSummarise(call("c1", "erase", "orders")), &reqs))
	ch := h.submit(t, "s1", "erase the orders")
	if o := h.decide(t, h.nextApproval(t), approval.Reject); o.Status != approval.StatusRejected {
		t.Fatalf("decision = %+v", o)
	}
	r := result(t, ch)
	note := toolReplies(reqs.last())["c1"]
	if want := "Not run: declined by alice: checked. Do not propose this same call again; ask the user what they want instead."; note != want || note != r.Actions[0].Result {
		t.Fatalf("the model was told %q", note)
	}
	if sentence := h.engine.Text().Text(approval.StatusRejected); strings.Contains(note, sentence) {
		t.Fatalf("the model is told the rejection twice: %q", note)
	}
}
