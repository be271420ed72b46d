package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

// oncall is the chat of the suite's second escalation step (mode chat).
var oncall = approval.Place{Channel: "feishu", ChatID: "oc_oncall"}

// escalating returns a (NewApproval: bob and carol may approve, expiring
// at T0+5m) with two escalation steps: after 1m dave may decide too
// (mode users, shown in dingtalk cidleads), after 2m anyone deciding in
// oncall (mode chat). Alice, the requester, is listed in the first step
// and kept out by the rule's NotRequester, as high_needs_other does.
func escalating(t *testing.T) *approval.Approval {
	a := NewApproval(t)
	a.Approvers.NotRequester = true
	a.Escalation = []approval.Escalation{
		{After: time.Minute, To: approval.Place{Channel: "dingtalk", ChatID: "cidleads"},
			Approvers: approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"dave", "alice"}, NotRequester: true}},
		{After: 2 * time.Minute, To: oncall, Approvers: approval.ApproverRule{Mode: approval.ApproverChat, NotRequester: true}},
	}
	return a
}

func escalate(t *testing.T, s approval.Store, id approval.ID, now time.Time) approval.EscalateResult {
	t.Helper()
	r, err := s.Escalate(ctx(t), id, now)
	if err != nil {
		t.Fatalf("Escalate(%s, %v): %v", id, now, err)
	}
	return r
}

// testEscalationChatPending: once a step is taken, its chat lists the
// approval (/pending, a typed code there); before, it does not.
func testEscalationChatPending(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := escalating(t)
	a.Escalation[1].To = approval.Place{Channel: "feishu", ChatID: fmt.Sprintf("oc_%d", time.Now().UnixNano())}
	put(t, s, a)
	to := a.Escalation[1].To
	if got, err := s.ChatPending(ctx(t), to.Channel, to.ChatID); err != nil || len(got) != 0 {
		t.Fatalf("ChatPending of the step's chat before it = %v, %v", ids(got), err)
	}
	escalate(t, s, a.ID, T0.Add(time.Minute))
	escalate(t, s, a.ID, T0.Add(2*time.Minute))
	got, err := s.ChatPending(ctx(t), to.Channel, to.ChatID)
	if err != nil || len(got) != 1 || got[0].ID != a.ID || got[0].Escalated != 2 {
		t.Fatalf("ChatPending of the step's chat after it = %v, %v", ids(got), err)
	}
	if got, err := s.ChatPending(ctx(t), a.Channel, a.ChatID); err != nil || !contains(ids(got), a.ID) {
		t.Fatalf("ChatPending of its own chat = %v, %v", ids(got), err)
	}
}
