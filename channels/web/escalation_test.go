package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/internal/chattest"
	"github.com/hitlbot/hitlbot/internal/waitfor"
)

// TestEscalationFromTheWeb: a web user asks for a HIGH call only bob may
// approve; nobody decides within a minute. The sweep shows the approval
// in the Feishu on-call chat (with its buttons and the escalation line),
// the page is told in the conversation who else was asked, and ou_dave's
// approve from the on-call chat runs the call once and resolves the
// page's step; the on-call card ends executed too.
func TestEscalationFromTheWeb(t *testing.T) {
	pc := approval.DefaultPolicyConfig()
	pc.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverUsers, Users: []string{"bob"}}}
	pc.Escalation = map[string][]approval.EscalationConfig{"HIGH": {{After: time.Minute, To: approval.Place{Channel: "feishu", ChatID: "oc_oncall"},
		Approvers: approval.ApproverConfig{Mode: approval.ApproverUsers, Users: []string{"ou_dave"}}}}}
	rec := &chattest.Recorder{}
	s := newServerBeside(t, approval.EffectDestructive, nil, &pc, []channels.Channel{rec})
	c := s.connect(t, "", "s1")
	c.message("s1", "erase orders")
	conf := c.expect("agent.user_confirm", nil)
	step := conf.str("step_id")
	id := approval.ID(conf.meta("approval_id").(string))
	// The page has the step; the engine records its card once Show
	// returns. A step taken before that would not redraw it (a gap of the
	// engine: AddCards returns no record to redraw for an approval without
	// votes), so the sweep waits for the record.
	waitfor.True(t, "the page's card recorded", func() bool {
		a, err := s.engine.Get(context.Background(), id)
		return err == nil && len(a.Cards) == 1
	})

	s.clk.Advance(time.Minute)
	if n, err := s.engine.Sweep(context.Background()); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	again := c.expect("agent.user_confirm", withStep(step))
	if e, _ := again.meta("escalated").(string); !strings.Contains(e, "also asked in oc_oncall") {
		t.Fatalf("the step again says escalated %q", e)
	}
	told := c.expect("agent.message", withContent("also asked in oc_oncall"))
	if !strings.Contains(told.str("content"), "ou_dave may decide too") {
		t.Fatalf("the page was told %q", told.str("content"))
	}
	shown, _ := rec.Views()
	if len(shown) != 1 || shown[0].Approve == nil || shown[0].Step != 1 || !strings.Contains(shown[0].Escalated, "also asked in oc_oncall") {
		t.Fatalf("the on-call chat was shown %+v", shown)
	}

	a, err := s.engine.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	o, err := s.engine.Decide(context.Background(), id, approval.Decision{Verb: approval.Approve, Actor: "ou_dave", Source: approval.SourceCard,
		PayloadSHA256: a.PayloadSHA256, Channel: "feishu", ChatID: "oc_oncall"})
	if err != nil || o.Status != approval.StatusExecuted {
		t.Fatalf("ou_dave's approve = %+v, %v", o, err)
	}
	if done := c.expect("agent.confirm_resolved", withStep(step)); done.str("status") != "executed" {
		t.Fatalf("resolved = %v", done)
	}
	if n := s.erase.Runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want once", n)
	}
	if _, settled := rec.Views(); len(settled) != 1 || settled[0].Status != approval.StatusExecuted {
		rec, _ := s.engine.Get(context.Background(), id)
		t.Fatalf("the on-call card settled %d times; cards %+v", len(settled), rec.Cards)
	}
}

// TestApproveInFromTheWeb: a web user's HIGH call is decided in a Feishu
// approvers' chat (approve_in). The page gets no dialog (nothing to
// answer there), a notice that says where it waits instead; the card with
// its buttons goes to the approvers' chat; when someone there approves,
// the call runs once and the page reads how it ended.
func TestApproveInFromTheWeb(t *testing.T) {
	pc := approval.DefaultPolicyConfig()
	pc.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverChat}}
	pc.ApproveIn = map[string]approval.Place{"HIGH": {Channel: "feishu", ChatID: "oc_ops"}}
	rec := &chattest.Recorder{}
	s := newServerBeside(t, approval.EffectDestructive, nil, &pc, []channels.Channel{rec})
	c := s.connect(t, "", "s1")
	c.message("s1", "erase orders")
	waits := c.expect("agent.message", withContent("Waiting for approval in the approvers' chat"))
	if waits.str("kind") != "notice" {
		t.Fatalf("the status = %v", waits)
	}
	var shown []cards.View
	for deadline := time.Now().Add(10 * time.Second); len(shown) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		shown, _ = rec.Views()
	}
	if len(shown) != 1 || shown[0].Approve == nil || shown[0].WaitsIn != "" {
		t.Fatalf("the approvers' chat was shown %+v", shown)
	}
	id := shown[0].ApprovalID
	a, err := s.engine.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	o, err := s.engine.Decide(context.Background(), id, approval.Decision{Verb: approval.Approve, Actor: "ou_carol", Source: approval.SourceCard,
		PayloadSHA256: a.PayloadSHA256, Channel: "feishu", ChatID: "oc_ops"})
	if err != nil || o.Status != approval.StatusExecuted {
		t.Fatalf("the approvers' chat's approve = %+v, %v", o, err)
	}
	c.expect("agent.message", withContent("Executed"))
	if n := s.erase.Runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want once", n)
	}
	for _, f := range c.seen() {
		if f.str("type") == "agent.user_confirm" {
			t.Fatalf("the page was asked to decide: %v", f)
		}
	}
}
