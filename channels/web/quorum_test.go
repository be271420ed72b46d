package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels/web"
)

// TestQuorumStepStaysOpen: HIGH needs 2 people of the chat. The page's
// approve counts (an AWAITING_QUORUM error frame for the step, which says
// the progress) and the step stays open: a second approve on it counts for
// nothing; the approval that reaches the quorum (another person's, here
// through the engine as the API or a card would) runs the call once and
// resolves the step.
func TestQuorumStepStaysOpen(t *testing.T) {
	pc := approval.DefaultPolicyConfig()
	pc.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverChat, Quorum: 2}}
	s := newServerWith(t, approval.EffectDestructive, nil, &pc)
	c := s.connect(t, "", "s1")
	c.message("s1", "erase orders")
	conf := c.expect("agent.user_confirm", nil)
	step := conf.str("step_id")
	c.respond("s1", step, true, "")
	e := c.expect("error", withStep(step))
	if e.str("code") != web.CodeAwaitingQuorum || !strings.Contains(e.str("message"), "1/2 approved: "+web.LocalUser) {
		t.Fatalf("the first approve = %v", e)
	}
	// Every page showing the step is told the progress: the step again,
	// the same step_id, with metadata.progress.
	again := c.expect("agent.user_confirm", withStep(step))
	if p, _ := again.meta("progress").(string); p != "1/2 approved: "+web.LocalUser {
		t.Fatalf("the step again says progress %q", p)
	}
	c.respond("s1", step, true, "")
	if e := c.expect("error", withStep(step)); e.str("code") != web.CodeAwaitingQuorum || !strings.Contains(e.str("message"), "already approved") {
		t.Fatalf("the same person again = %v", e)
	}
	if n := s.erase.Runs.Load(); n != 0 {
		t.Fatalf("the tool ran %d times on one approval of two", n)
	}
	id := approval.ID(conf.meta("approval_id").(string))
	a, err := s.engine.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	o, err := s.engine.Decide(context.Background(), id, approval.Decision{Verb: approval.Approve, Actor: "bob", Source: approval.SourceAPI,
		PayloadSHA256: a.PayloadSHA256, Channel: a.Channel, ChatID: a.ChatID})
	if err != nil || o.Status != approval.StatusExecuted {
		t.Fatalf("the second person's approve = %+v, %v", o, err)
	}
	if done := c.expect("agent.confirm_resolved", withStep(step)); done.str("status") != "executed" {
		t.Fatalf("resolved = %v", done)
	}
	if n := s.erase.Runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want once", n)
	}
}
