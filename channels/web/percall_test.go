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

// TestEditResponse: a user.response with edits approves the changed
// arguments in one step through the socket: the tool runs once with them,
// the record binds the edited hash; malformed edits and arguments the
// tool refuses are INVALID_MESSAGE and leave the step open.
func TestEditResponse(t *testing.T) {
	s := newServer(t)
	c := s.connect(t, "", "s1")
	c.message("s1", "erase orders")
	conf := c.expect("agent.user_confirm", nil)
	step := conf.str("step_id")
	send := func(confirmed bool, edits any, extra map[string]any) {
		content := map[string]any{"confirmed": confirmed, "message": "use the archive", "edits": edits}
		for k, v := range extra {
			content[k] = v
		}
		c.send(map[string]any{"type": "user.response", "session_id": "s1", "step_id": step, "content": content})
	}
	for _, bad := range []struct {
		confirmed bool
		edits     any
		extra     map[string]any
		want      string
	}{
		{false, map[string]any{"#1": map[string]any{"target": "x"}}, nil, "content.edits"},
		{true, map[string]any{"#1": "x"}, nil, "content.edits"},
		{true, map[string]any{}, nil, "content.edits"},
		{true, map[string]any{"#1": map[string]any{"target": "x"}}, map[string]any{"calls": map[string]any{"#1": "approve"}}, "content.edits"},
		{true, map[string]any{"#1": map[string]any{"target": 5}}, nil, "refused"},
		{true, map[string]any{"#2": map[string]any{"target": "x"}}, nil, "refused"},
	} {
		send(bad.confirmed, bad.edits, bad.extra)
		if e := c.expect("error", withCode(web.CodeInvalidMessage)); !strings.Contains(e.str("message"), bad.want) {
			t.Fatalf("%v: error %v", bad, e)
		}
	}
	if n := s.erase.Runs.Load(); n != 0 {
		t.Fatalf("a refused edit ran %d times", n)
	}
	send(true, map[string]any{"#1": map[string]any{"target": "orders_archive"}}, nil)
	res := c.expect("agent.tool_result", nil)
	if res.str("content") == "" || !strings.Contains(res.str("content"), "changed the arguments") {
		t.Fatalf("tool result %v", res)
	}
	if done := c.expect("agent.confirm_resolved", withStep(step)); done.str("status") != string(approval.StatusExecuted) {
		t.Fatalf("resolved %v", done)
	}
	a, err := s.engine.Get(t.Context(), approval.ID(conf.meta("approval_id").(string)))
	if err != nil || a.ProposedSHA256 != conf.meta("payload_sha256") || string(a.Calls[0].Args) != `{"target":"orders_archive"}` || s.erase.Runs.Load() != 1 {
		t.Fatalf("record %+v %v, runs %d", a, err, s.erase.Runs.Load())
	}
}
