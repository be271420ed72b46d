package web_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
)

// chatRecorder is a channel named feishu that records the cards it is
// given to show and settle: the chat an escalation step asks, beside the
// web page. (Feishu itself is tested against its fake in channels/feishu.)
type chatRecorder struct {
	mu      sync.Mutex
	shown   []cards.View
	settled []cards.View
}

func (c *chatRecorder) Name() string                                                   { return "feishu" }
func (c *chatRecorder) Start(context.Context, channels.Handler) error                  { return nil }
func (c *chatRecorder) Close(context.Context) error                                    { return nil }
func (c *chatRecorder) Ready() error                                                   { return nil }
func (c *chatRecorder) Send(context.Context, channels.Target, channels.Outgoing) error { return nil }

func (c *chatRecorder) ShowApproval(_ context.Context, to channels.Target, v cards.View) (approval.CardRef, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shown = append(c.shown, v)
	return approval.CardRef{Channel: "feishu", ChatID: to.ChatID, MessageID: fmt.Sprintf("om_%d", len(c.shown))}, nil
}

func (c *chatRecorder) SettleApproval(_ context.Context, _ approval.CardRef, v cards.View) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settled = append(c.settled, v)
	return nil
}

func (c *chatRecorder) views() (shown, settled []cards.View) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]cards.View(nil), c.shown...), append([]cards.View(nil), c.settled...)
}

var _ channels.Channel = (*chatRecorder)(nil)

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
	rec := &chatRecorder{}
	s := newServerBeside(t, approval.EffectDestructive, nil, &pc, []channels.Channel{rec})
	c := s.connect(t, "", "s1")
	c.message("s1", "erase orders")
	conf := c.expect("agent.user_confirm", nil)
	step := conf.str("step_id")
	id := approval.ID(conf.meta("approval_id").(string))

	s.clk.Advance(time.Minute)
	if n, err := s.engine.Sweep(context.Background()); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	told := c.expect("agent.message", withContent("also asked in oc_oncall"))
	if !strings.Contains(told.str("content"), "ou_dave may decide too") {
		t.Fatalf("the page was told %q", told.str("content"))
	}
	shown, _ := rec.views()
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
	if _, settled := rec.views(); len(settled) != 1 || settled[0].Status != approval.StatusExecuted {
		t.Fatalf("the on-call card settled as %+v", settled)
	}
}
