package web_test

import (
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels/web"
)

func (c *client) respondCalls(session, step string, confirmed bool, calls map[string]any) {
	c.t.Helper()
	c.send(map[string]any{"type": "user.response", "session_id": session, "step_id": step,
		"content": map[string]any{"confirmed": confirmed, "message": "only a", "calls": calls}})
}

// TestPerCallResponse: a batch's confirmation card lists its calls with
// their call_id; a user.response with calls runs the approved calls once
// and not the others, and the page learns which ran. Malformed calls (with
// confirmed false, a value that is neither approve nor reject, a call
// missing) are INVALID_MESSAGE and leave the step open.
func TestPerCallResponse(t *testing.T) {
	s := newServer(t)
	c := s.connect(t, "", "s1")
	c.message("s1", "erase-both a b")
	conf := c.expect("agent.user_confirm", nil)
	step := conf.str("step_id")
	card, _ := conf["card"].(map[string]any)
	calls, _ := card["calls"].([]any)
	if len(calls) != 2 {
		t.Fatalf("card calls %v", card["calls"])
	}
	var ids []string
	for _, x := range calls {
		id, _ := x.(map[string]any)["call_id"].(string)
		if id == "" {
			t.Fatalf("a call without call_id: %v", x)
		}
		ids = append(ids, id)
	}
	for _, bad := range []struct {
		confirmed bool
		calls     map[string]any
	}{
		{false, map[string]any{ids[0]: "approve", ids[1]: "reject"}},
		{true, map[string]any{ids[0]: "approve", ids[1]: "later"}},
		{true, map[string]any{ids[0]: "approve"}},
		{true, map[string]any{ids[0]: "approve", ids[1]: "reject", "zz": "reject"}},
	} {
		c.respondCalls("s1", step, bad.confirmed, bad.calls)
		if e := c.expect("error", withCode(web.CodeInvalidMessage)); !strings.Contains(e.str("message"), "calls") {
			t.Fatalf("%v: error %v", bad, e)
		}
	}
	if n := s.erase.Runs.Load(); n != 0 {
		t.Fatalf("a malformed response ran %d calls", n)
	}
	c.respondCalls("s1", step, true, map[string]any{ids[0]: "approve", ids[1]: "reject"})
	res := c.expect("agent.tool_result", nil)
	if res.str("content") != "erase done (run 1)" {
		t.Fatalf("tool result %v", res)
	}
	done := c.expect("agent.confirm_resolved", withStep(step))
	if done.str("status") != string(approval.StatusExecuted) {
		t.Fatalf("resolved %v", done)
	}
	c.expect("agent.message", withContent("declined by"))
	if n := s.erase.Runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want 1", n)
	}
	a, err := s.engine.Get(t.Context(), approval.ID(conf.meta("approval_id").(string)))
	if err != nil || a.Verdicts != "ar" || a.Comment != "only a" || a.DecidedVia != approval.SourceWeb {
		t.Fatalf("record %+v %v", a, err)
	}
}
