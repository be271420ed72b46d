package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
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

// TestRoundCallsCapped: a model round of more calls than one approval may
// hold (approval.MaxCalls, what a card's button may announce): the first
// MaxCalls are one approval, decided by a click and run; each call past
// them is not run and the model is told why.
func TestRoundCallsCapped(t *testing.T) {
	var reqs requests
	n := approval.MaxCalls + 1
	calls := make([]agent.ToolCall, n)
	for i := range calls {
		calls[i] = call(fmt.Sprintf("c%d", i+1), "erase", fmt.Sprintf("t%d", i+1))
	}
	h := newHarness(t, recording(callThenSummarise(calls...), &reqs))
	ch := h.submit(t, "s1", "erase everything")
	a := h.nextApproval(t)
	if len(a.Calls) != approval.MaxCalls || approval.MaxCalls != cards.MaxCardCalls {
		t.Fatalf("an approval of %d calls (at most %d; a card announces at most %d)", len(a.Calls), approval.MaxCalls, cards.MaxCardCalls)
	}
	o, err := h.engine.Decide(context.Background(), a.ID, approval.Decision{Verb: approval.Approve, Actor: "alice", Source: approval.SourceCard, PayloadSHA256: a.PayloadSHA256})
	if err != nil || o.Status != approval.StatusExecuted {
		t.Fatalf("decision = %+v, %v", o, err)
	}
	r := result(t, ch)
	if h.del.Runs.Load() != int64(approval.MaxCalls) || len(r.Actions) != n {
		t.Fatalf("%d runs, %d actions", h.del.Runs.Load(), len(r.Actions))
	}
	last := fmt.Sprintf("c%d", n)
	want := "Not run: too many calls in one round (at most 64); ask again for the rest."
	if got := toolReplies(reqs.last())[last]; got != want || r.Actions[n-1].Status != approval.StatusInvalid || !r.Actions[n-1].IsError {
		t.Fatalf("the model was told %q for call %s (%+v), want %q", got, last, r.Actions[n-1], want)
	}
}

// TestPerCallDeclineHoldsInTheContinuedTurn: a per-call decision declines
// one call of a batch; the model, going on with the outcome, proposes that
// same call again. Whichever continues the turn — the turn that waited, or
// its resumption after the waiting replica restarted — the call is
// answered as declined, and no second approval is asked: the outcome
// enters the turn through one continuation. (Before, the resumption marked
// a call declined only when the whole approval was rejected, and asked
// again.)
func TestPerCallDeclineHoldsInTheContinuedTurn(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			var reqs requests
			h := newHarness(t, recording(proposeAgain(call("c1", "erase", "a"), call("c2", "drop", "b")), &reqs))
			ch := h.submit(t, "s1", "erase a, drop b")
			a := h.nextApproval(t)
			if restart {
				h.restart(t)
				result(t, ch)
				ch = nil
			}
			o, err := h.engine.Decide(context.Background(), a.ID, approval.Decision{Verb: approval.Approve, Actor: "alice", Source: approval.SourceCard,
				PayloadSHA256: a.PayloadSHA256, Calls: map[string]approval.Verb{"c1": approval.Approve, "c2": approval.Reject}})
			if err != nil || o.Status != approval.StatusExecuted {
				t.Fatalf("decision = %+v, %v", o, err)
			}
			var r agent.TurnResult
			select {
			case b := <-h.shown:
				t.Fatalf("a second approval was asked: %s", b.Summary)
			case r = <-ch:
			case rt := <-h.speak.resumed:
				r = rt.res
			case <-time.After(10 * time.Second):
				t.Fatal("the continued turn did not end")
			}
			if r.Text != "done" {
				t.Fatalf("the turn ended with %+v", r)
			}
			if got := toolReplies(reqs.last())["c2-again"]; !strings.HasPrefix(got, "Not run: the user already declined this exact call") {
				t.Fatalf("the call proposed again was answered %q", got)
			}
			if h.drop.runs.Load() != 0 {
				t.Fatalf("drop ran %d times", h.drop.runs.Load())
			}
			select {
			case b := <-h.shown:
				t.Fatalf("a second approval was asked: %+v", b)
			default:
			}
		})
	}
}

// proposeAgain asks for calls; after their replies it proposes the
// second call again (id "<id>-again"), and after that reply answers
// "done".
func proposeAgain(calls ...agent.ToolCall) scripted {
	return func(req agent.Request) (agent.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == agent.RoleTool && last.ToolCallID == calls[1].ID+"-again":
			return agent.Response{Message: agent.Message{Content: "done"}}, nil
		case last.Role == agent.RoleTool:
			again := calls[1]
			again.ID += "-again"
			return agent.Response{Message: agent.Message{ToolCalls: []agent.ToolCall{again}}}, nil
		}
		return agent.Response{Message: agent.Message{ToolCalls: calls}}, nil
	}
}
