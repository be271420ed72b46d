package agent_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
)

// toolMessages returns the tool messages of the last model request that
// ended with tool replies, by call id.
type requests struct {
	mu   sync.Mutex
	reqs []agent.Request
}

func (r *requests) add(req agent.Request) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
}

func (r *requests) last() agent.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reqs[len(r.reqs)-1]
}

// toolReplies returns the tool messages the model saw last, by call id.
func toolReplies(req agent.Request) map[string]string {
	out := map[string]string{}
	for _, m := range req.Messages {
		if m.Role == agent.RoleTool {
			out[m.ToolCallID] = m.Content
		}
	}
	return out
}

// toolResultsSaid returns the tool results the agent showed in the chat.
func (s *speaker) toolResults() []agent.Say {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []agent.Say
	for _, m := range s.said {
		if m.Kind == agent.SayToolResult {
			out = append(out, m)
		}
	}
	return out
}

func (s *speaker) notices() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.said {
		if m.Kind == agent.SayNotice {
			out = append(out, m.Text)
		}
	}
	return out
}

// recording wraps a model and records its requests.
func recording(m agent.Model, r *requests) scripted {
	return func(req agent.Request) (agent.Response, error) {
		r.add(req)
		return m.Complete(context.Background(), req)
	}
}

// A batch where one call ran and another failed: the call that ran is
// reported as run, with its own result, and shown in the chat.
func TestBatchMixedSuccessAndFailure(t *testing.T) {
	var reqs requests
	h := newHarness(t, recording(callThenSummarise(call("c1", "erase", "orders"), call("c2", "drop", "bad")), &reqs))
	ch := h.submit(t, "s1", "erase orders and drop bad")
	a := h.nextApproval(t)
	if len(a.Calls) != 2 {
		t.Fatalf("approval = %+v", a)
	}
	if o := h.decide(t, a, approval.Approve); o.Status != approval.StatusFailed {
		t.Fatalf("decision = %+v", o)
	}
	r := result(t, ch)
	if h.del.Runs.Load() != 1 || h.drop.runs.Load() != 1 {
		t.Fatalf("runs erase=%d drop=%d", h.del.Runs.Load(), h.drop.runs.Load())
	}
	if len(r.Actions) != 2 {
		t.Fatalf("actions = %+v", r.Actions)
	}
	if got := r.Actions[0]; got.Status != "executed" || got.IsError || got.Result != "erase done (run 1)" {
		t.Fatalf("the call that ran is reported as %+v", got)
	}
	if got := r.Actions[1]; got.Status != "failed" || !got.IsError || !strings.Contains(got.Result, "no such table: bad") {
		t.Fatalf("the call that failed is reported as %+v", got)
	}
	replies := toolReplies(reqs.last())
	if replies["c1"] != "erase done (run 1)" {
		t.Fatalf("the model was told %q for the call that ran", replies["c1"])
	}
	if !strings.HasPrefix(replies["c2"], "Failed:") || strings.Contains(replies["c2"], "erase done") {
		t.Fatalf("the model was told %q for the call that failed", replies["c2"])
	}
	said := h.speak.toolResults()
	if len(said) != 1 || said[0].Tool != "erase" || said[0].Text != "erase done (run 1)" || said[0].IsError {
		t.Fatalf("tool results shown in the chat: %+v", said)
	}
}

// A batch frozen by one call of unknown effect: the call before it ran
// (and says so), the frozen one says its effect is unknown and why, and
// the call after it says it was not run.
func TestBatchMixedSuccessAndFrozen(t *testing.T) {
	var reqs requests
	h := newHarness(t, recording(callThenSummarise(call("c1", "erase", "a"), call("c2", "drop", "boom"), call("c3", "erase", "c")), &reqs))
	ch := h.submit(t, "s1", "go")
	a := h.nextApproval(t)
	if o := h.decide(t, a, approval.Approve); o.Status != approval.StatusFrozen {
		t.Fatalf("decision = %+v", o)
	}
	r := result(t, ch)
	if h.del.Runs.Load() != 1 || h.drop.runs.Load() != 1 {
		t.Fatalf("runs erase=%d drop=%d", h.del.Runs.Load(), h.drop.runs.Load())
	}
	if got := r.Actions[0]; got.Status != "executed" || got.IsError || got.Result != "erase done (run 1)" {
		t.Fatalf("the call that ran is reported as %+v", got)
	}
	if got := r.Actions[1]; got.Status != "frozen" || !got.IsError || !strings.Contains(got.Result, "unknown") {
		t.Fatalf("the call of unknown effect is reported as %+v", got)
	}
	// Once, in the loop's words, with the engine's cause, not again in
	// the engine's status sentence.
	if got := r.Actions[1].Result; strings.Count(got, "result is unknown") != 1 || !strings.Contains(got, "Cause: the tool stopped with an error") ||
		strings.Contains(got, h.engine.Text().Text(approval.StatusFrozen)) {
		t.Fatalf("the model is told %q for the call of unknown effect", got)
	}
	if got := r.Actions[2]; got.Status != "frozen" || !got.IsError || !strings.HasPrefix(got.Result, "Not run") {
		t.Fatalf("the call after it is reported as %+v", got)
	}
	replies := toolReplies(reqs.last())
	if replies["c1"] != "erase done (run 1)" {
		t.Fatalf("the model was told %q for the call that ran", replies["c1"])
	}
	said := h.speak.toolResults()
	if len(said) != 1 || said[0].Tool != "erase" {
		t.Fatalf("tool results shown in the chat: %+v", said)
	}
}

// Rejecting a batch rejects every call of it, and none may be proposed
// again in the turn.
func TestBatchRejectAll(t *testing.T) {
	var rounds atomic.Int64
	model := scripted(func(req agent.Request) (agent.Response, error) {
		n := rounds.Add(1)
		if n <= 2 {
			return agent.Response{Message: agent.Message{ToolCalls: []agent.ToolCall{
				call(fmt.Sprint("a", n), "erase", "a"), call(fmt.Sprint("b", n), "drop", "b")}}}, nil
		}
		return agent.Response{Message: agent.Message{Content: "ok, not doing it"}}, nil
	})
	h := newHarness(t, model)
	ch := h.submit(t, "s1", "erase a, drop b")
	a := h.nextApproval(t)
	if len(a.Calls) != 2 {
		t.Fatalf("approval = %+v", a)
	}
	if o := h.decide(t, a, approval.Reject); o.Status != approval.StatusRejected {
		t.Fatalf("decision = %+v", o)
	}
	r := result(t, ch)
	if h.del.Runs.Load() != 0 || h.drop.runs.Load() != 0 {
		t.Fatal("a rejected call ran")
	}
	select {
	case a2 := <-h.shown:
		t.Fatalf("a declined call asked again: %s", a2.ID)
	default:
	}
	if len(r.Actions) != 4 {
		t.Fatalf("actions = %+v", r.Actions)
	}
	for i, act := range r.Actions {
		if act.Status != "rejected" || !act.IsError {
			t.Fatalf("action %d = %+v", i, act)
		}
		if i < 2 && !strings.Contains(act.Result, "declined by alice: checked.") {
			t.Fatalf("action %d = %+v", i, act)
		}
		if i >= 2 && !strings.Contains(act.Result, "already declined") {
			t.Fatalf("action %d = %+v", i, act)
		}
	}
	if len(h.speak.toolResults()) != 0 {
		t.Fatalf("rejected calls shown as tool results: %+v", h.speak.toolResults())
	}
}
