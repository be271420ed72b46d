package web_test

import (
	"context"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels/web"
)

// TestGrantResponse, over the WebSocket: a MEDIUM confirmation's card
// carries the second approve button (approve_once), the grant window and
// the approval's code; a user.response with a grant that is not once or
// session, or a grant with confirmed false, is INVALID_MESSAGE and decides
// nothing; confirmed true with grant "once" runs it and grants nothing
// (the same request asks again).
func TestGrantResponse(t *testing.T) {
	s := newServerEffect(t, approval.EffectWrite)
	c := s.connect(t, "", "s1")
	c.message("s1", "erase orders")
	conf := c.expect("agent.user_confirm", nil)
	step := conf.str("step_id")
	card, _ := conf["card"].(map[string]any)
	once, _ := card["approve_once"].(map[string]any)
	approve, _ := card["approve"].(map[string]any)
	if conf.meta("risk") != "MEDIUM" || once["grant"] != "once" || approve["grant"] != "session" || card["grant_window"] != "5m" ||
		!approval.ValidCode(frame(card).str("code")) {
		t.Fatalf("MEDIUM card = %v", card)
	}
	for _, content := range []map[string]any{
		{"confirmed": true, "grant": "forever"},
		{"confirmed": false, "grant": "once"},
		{"confirmed": true, "grant": 5},
	} {
		c.send(map[string]any{"type": "user.response", "session_id": "s1", "step_id": step, "content": content})
		if e := c.expect("error", nil); e.str("code") != web.CodeInvalidMessage {
			t.Fatalf("%v: %v", content, e)
		}
	}
	c.send(map[string]any{"type": "user.response", "session_id": "s1", "step_id": step, "content": map[string]any{"confirmed": true, "grant": "once"}})
	done := c.expect("agent.confirm_resolved", withStep(step))
	if done.str("status") != "executed" {
		t.Fatalf("resolved = %v", done)
	}
	id := approval.ID(conf.meta("approval_id").(string))
	rec, err := s.engine.Get(context.Background(), id)
	if err != nil || rec.Grant != approval.GrantOnce {
		t.Fatalf("record = %+v, %v", rec, err)
	}
	c.message("s1", "erase orders")
	again := c.expect("agent.user_confirm", func(f frame) bool { return f.meta("approval_id") != string(id) })
	if again.meta("tool_name") != "erase" {
		t.Fatalf("the same request after 仅本次 = %v", again)
	}
}

// TestAlwaysForgedOverWeb: a user.response choosing always on a card that
// offers no standing rule (the dialog has no such button: a forged frame)
// runs nothing and leaves the approval pending.
func TestAlwaysForgedOverWeb(t *testing.T) {
	s := newServerEffect(t, approval.EffectWrite)
	c := s.connect(t, "", "s1")
	c.message("s1", "erase orders")
	conf := c.expect("agent.user_confirm", nil)
	step := conf.str("step_id")
	if card, _ := conf["card"].(map[string]any); card["approve_always"] != nil {
		t.Fatalf("a card without a standing rule offers always: %v", card)
	}
	c.send(map[string]any{"type": "user.response", "session_id": "s1", "step_id": step, "content": map[string]any{"confirmed": true, "grant": "always"}})
	// Refused as a tampered step (fail closed, as a wrong hash is): the
	// step can no longer be answered here; the approval still waits and
	// nothing ran.
	if e := c.expect("error", withStep(step)); e.str("code") != web.CodeInvalidStepID {
		t.Fatalf("answer to a forged always = %v", e)
	}
	rec, err := s.engine.Get(context.Background(), approval.ID(conf.meta("approval_id").(string)))
	if err != nil || rec.State != approval.StatePending || rec.Grant != approval.GrantUnset {
		t.Fatalf("after a forged always: record %+v, %v", rec, err)
	}
	if n := s.erase.Runs.Load(); n != 0 {
		t.Fatalf("runs = %d", n)
	}
}
