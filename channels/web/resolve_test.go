package web_test

import (
	"testing"

	"github.com/hitlbot/hitlbot/channels/web"
)

// resolveStep answers a frozen step's resolve choice.
func (c *client) resolveStep(session, step, resolution, note string) {
	c.t.Helper()
	c.send(map[string]any{"type": "user.response", "session_id": session, "step_id": step,
		"content": map[string]any{"resolution": resolution, "message": note}})
}

// TestFrozenStepResolves: on the web page, a confirmation whose call froze
// is resolved as on a card: its confirm_resolved frame carries the three
// choices (labels and what they do from the catalogue); a choice on a step
// that is not frozen, or an unknown one, is refused; 重试 runs the tool
// exactly once more, the step is resolved again (retried, no choices
// left), and the chat gets the model's follow-up; a second choice gets
// ALREADY_DECIDED.
func TestFrozenStepResolves(t *testing.T) {
	s := newServer(t)
	c := s.connect(t, "", "s1")
	c.message("s1", "erase orders")
	step := c.expect("agent.user_confirm", nil).str("step_id")
	c.resolveStep("s1", step, "retry", "") // still pending: not frozen
	if e := c.expect("error", withStep(step)); e.str("code") != web.CodeAlreadyDecided {
		t.Fatalf("resolving a pending step = %v", e)
	}
	s.erase.Unknown.Store(1)
	c.respond("s1", step, true, "")
	frozen := c.expect("agent.confirm_resolved", withStep(step))
	choices, _ := frozen["resolve"].([]any)
	if frozen.str("status") != "frozen" || len(choices) != 3 || frozen.str("resolve_how") == "" {
		t.Fatalf("frozen frame = %v", frozen)
	}
	for i, want := range [][2]string{{"done", "Done"}, {"retry", "Retry"}, {"abandon", "Abandon"}} {
		ch, _ := choices[i].(map[string]any)
		if ch["resolution"] != want[0] || ch["label"] != want[1] {
			t.Fatalf("choice %d = %v", i, ch)
		}
	}
	c.resolveStep("s1", step, "maybe", "")
	if e := c.expect("error", withStep(step)); e.str("code") != web.CodeInvalidMessage {
		t.Fatalf("an unknown resolution = %v", e)
	}
	c.resolveStep("s1", step, "retry", "the database is back")
	res := c.expect("agent.confirm_resolved", func(f frame) bool { return f.str("step_id") == step && f.str("resolution") == "retry" })
	if res.str("status") != "executed" || res.str("status_text") != "Retried: Executed" || res["resolve"] != nil || res.str("result") != "erase done (run 2)" {
		t.Fatalf("retried frame = %v", res)
	}
	if n := s.erase.Runs.Load(); n != 2 {
		t.Fatalf("the tool ran %d times, want 2", n)
	}
	c.expect("agent.message", withContent("the retry ended executed"))
	c.resolveStep("s1", step, "done", "")
	if e := c.expect("error", func(f frame) bool { return f.str("step_id") == step && f.str("code") == web.CodeAlreadyDecided }); e == nil {
		t.Fatal("no refusal of a second resolution")
	}
	if n := s.erase.Runs.Load(); n != 2 {
		t.Fatalf("the tool ran %d times after a second resolution", n)
	}
}
