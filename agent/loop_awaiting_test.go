package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
)

// eraseOnRequest asks for an erase of the target named by a user message
// "erase X" (call id "c-X") and otherwise answers "ok".
func eraseOnRequest(reqs *requests) scripted {
	return func(req agent.Request) (agent.Response, error) {
		if reqs != nil {
			reqs.add(req)
		}
		last := req.Messages[len(req.Messages)-1]
		if target, ok := strings.CutPrefix(last.Content, "erase "); ok && last.Role == agent.RoleUser {
			return agent.Response{Message: agent.Message{ToolCalls: []agent.ToolCall{call("c-"+target, "erase", target)}}}, nil
		}
		return agent.Response{Message: agent.Message{Content: "ok"}}, nil
	}
}

// updates returns the system messages of a conversation that mention id.
func updates(msgs []agent.Message, id approval.ID) []string {
	var out []string
	for _, m := range msgs {
		if m.Role == agent.RoleSystem && strings.Contains(m.Content, string(id)) {
			out = append(out, m.Content)
		}
	}
	return out
}

// An approval superseded by a newer one while no loop waited on it (its
// turn ended with a restart) is resolved too: the history says it was not
// run, and nothing is left awaited.
func TestSupersededAwaitingIsResolved(t *testing.T) {
	var reqs requests
	h := newHarness(t, eraseOnRequest(&reqs))
	ch := h.submit(t, "s1", "erase a")
	first := h.nextApproval(t)
	h.restart(t)
	if r := result(t, ch); r.Actions[0].Status != "pending" {
		t.Fatalf("turn ended by the restart = %+v", r)
	}

	ch = h.submit(t, "s1", "erase b")
	second := h.nextApproval(t)
	h.restart(t)
	result(t, ch)
	if o := h.decide(t, first, approval.Approve); o.Status != approval.StatusSuperseded {
		t.Fatalf("deciding the superseded approval = %+v", o)
	}
	if o := h.decide(t, second, approval.Approve); o.Status != approval.StatusExecuted {
		t.Fatalf("deciding the newer approval = %+v", o)
	}

	result(t, h.submit(t, "s1", "what happened?"))
	msgs := reqs.last().Messages
	if u := updates(msgs, first.ID); len(u) != 1 || !strings.Contains(u[0], "superseded") || !strings.Contains(u[0], "Not run") {
		t.Fatalf("updates on the superseded approval: %q\nmessages: %+v", u, msgs)
	}
	if u := updates(msgs, second.ID); len(u) != 1 || !strings.Contains(u[0], "erase done (run 1)") {
		t.Fatalf("updates on the executed approval: %q\nmessages: %+v", u, msgs)
	}
	conv, _ := h.history.Load(context.Background(), "s1")
	if len(conv.Awaiting) != 0 {
		t.Fatalf("still awaiting %v", conv.Awaiting)
	}
	if h.del.Runs.Load() != 1 {
		t.Fatalf("erase ran %d times", h.del.Runs.Load())
	}
}

// A superseded approval is resolved in the very turn that superseded it,
// when that turn waits for its own approval to the end.
func TestSupersededResolvedInTheSupersedingTurn(t *testing.T) {
	h := newHarness(t, eraseOnRequest(nil))
	ch := h.submit(t, "s1", "erase a")
	first := h.nextApproval(t)
	h.restart(t)
	result(t, ch)

	ch = h.submit(t, "s1", "erase b")
	second := h.nextApproval(t)
	h.decide(t, second, approval.Approve)
	if r := result(t, ch); r.Actions[0].Status != "executed" {
		t.Fatalf("second turn = %+v", r)
	}
	conv, _ := h.history.Load(context.Background(), "s1")
	if len(conv.Awaiting) != 0 {
		t.Fatalf("still awaiting %v", conv.Awaiting)
	}
	if u := updates(conv.Messages, first.ID); len(u) != 1 || !strings.Contains(u[0], "superseded") {
		t.Fatalf("updates on the superseded approval: %q\nhistory: %+v", u, conv.Messages)
	}
}

// A turn that runs out of time while waiting for an approval says that
// the approval is still open (not that the work was stopped), and the
// outcome is recorded in the history when it comes, without waiting for
// another message.
func TestDeadlineWhileWaitingKeepsTheApproval(t *testing.T) {
	h := newHarness(t, eraseOnRequest(nil), func(c *agent.LoopConfig) { c.TurnTimeout = 300 * time.Millisecond })
	r := result(t, h.submit(t, "s1", "erase x"))
	a := h.nextApproval(t)
	if r.Err != nil || len(r.Actions) != 1 || r.Actions[0].Status != "pending" {
		t.Fatalf("turn that ran out of time = %+v", r)
	}
	for _, text := range append(h.speak.notices(), r.Text) {
		if strings.Contains(text, "too long") || strings.Contains(text, "stopped") {
			t.Fatalf("said %q while the approval is still open", text)
		}
	}
	if !strings.Contains(r.Text, "still waiting") || !strings.Contains(r.Text, "recorded") {
		t.Fatalf("result text = %q", r.Text)
	}
	if n := h.speak.notices(); len(n) != 1 || n[0] != r.Text {
		t.Fatalf("notices = %q", n)
	}

	if o := h.decide(t, a, approval.Approve); o.Status != approval.StatusExecuted {
		t.Fatalf("late decision = %+v", o)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		conv, _ := h.history.Load(context.Background(), "s1")
		if u := updates(conv.Messages, a.ID); len(u) == 1 && strings.Contains(u[0], "erase done (run 1)") && len(conv.Awaiting) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the late outcome was not recorded: %+v", conv)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
