package storetest

import (
	"fmt"
	"sync"
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

func escalations(t *testing.T, s approval.Store, now time.Time) []approval.ID {
	t.Helper()
	ids, err := s.Escalations(ctx(t), now, 100)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// testEscalationRoundTrip: the steps are kept, none taken; an approval
// without steps has none and is not in the index.
func testEscalationRoundTrip(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := escalating(t)
	put(t, s, a)
	got := get(t, s, a.ID)
	if fmt.Sprint(got.Escalation) != fmt.Sprint(a.Escalation) || got.Escalated != 0 {
		t.Fatalf("Escalation = %+v (%d taken), want %+v", got.Escalation, got.Escalated, a.Escalation)
	}
	b := NewApproval(t)
	put(t, s, b)
	if got := get(t, s, b.ID); len(got.Escalation) != 0 {
		t.Fatalf("an approval without steps has %+v", got.Escalation)
	}
	if ids := escalations(t, s, T0.Add(time.Hour)); contains(ids, b.ID) || !contains(ids, a.ID) {
		t.Fatalf("Escalations = %v: want %s and not %s", ids, a.ID, b.ID)
	}
}

// testEscalateSteps: each step is taken once, at its time, in order; the
// index holds the approval at its next step's time, and drops it after
// the last.
func testEscalateSteps(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := escalating(t)
	put(t, s, a)
	if ids := escalations(t, s, T0.Add(59*time.Second)); contains(ids, a.ID) {
		t.Fatalf("due before its first step: %v", ids)
	}
	if r := escalate(t, s, a.ID, T0.Add(30*time.Second)); r.Code != approval.EscalateNotDue || r.Approval.Escalated != 0 {
		t.Fatalf("early Escalate = %s (%d taken), want not_due", r.Code, r.Approval.Escalated)
	}
	if ids := escalations(t, s, T0.Add(time.Minute)); !contains(ids, a.ID) {
		t.Fatalf("not due at its first step: %v", ids)
	}
	r := escalate(t, s, a.ID, T0.Add(time.Minute))
	if r.Code != approval.EscalateTaken || r.Step != 0 || r.Approval.Escalated != 1 || r.Approval.State != approval.StatePending {
		t.Fatalf("first step = %+v", r)
	}
	if got := get(t, s, a.ID); got.Escalated != 1 {
		t.Fatalf("Escalated = %d after the first step", got.Escalated)
	}
	if r := escalate(t, s, a.ID, T0.Add(time.Minute)); r.Code != approval.EscalateNotDue {
		t.Fatalf("the first step again = %s, want not_due (the second is later)", r.Code)
	}
	if ids := escalations(t, s, T0.Add(time.Minute+time.Second)); contains(ids, a.ID) {
		t.Fatalf("still due after its first step: %v", ids)
	}
	if ids := escalations(t, s, T0.Add(2*time.Minute)); !contains(ids, a.ID) {
		t.Fatalf("not due at its second step: %v", ids)
	}
	if r := escalate(t, s, a.ID, T0.Add(3*time.Minute)); r.Code != approval.EscalateTaken || r.Step != 1 || r.Approval.Escalated != 2 {
		t.Fatalf("second step = %+v", r)
	}
	if r := escalate(t, s, a.ID, T0.Add(3*time.Minute)); r.Code != approval.EscalateNone {
		t.Fatalf("after the last step = %s, want none", r.Code)
	}
	if ids := escalations(t, s, T0.Add(time.Hour)); contains(ids, a.ID) {
		t.Fatalf("in the index after its last step: %v", ids)
	}
	if r := escalate(t, s, approval.NewID("test:nobody"), T0); r.Code != approval.EscalateMissing {
		t.Fatalf("unknown id = %s", r.Code)
	}
}

// testEscalateEnded: no step is taken of an approval that is claimed,
// ended, or past its expiry (the expiry bounds the whole); it leaves the
// index.
func testEscalateEnded(t *testing.T, s approval.Store, _ func(time.Duration)) {
	claimed := escalating(t)
	put(t, s, claimed)
	claim(t, s, claimed.ID, approve(claimed))
	rejected := escalating(t)
	put(t, s, rejected)
	req := approve(rejected)
	req.Intent = approval.IntentReject
	claim(t, s, rejected.ID, req)
	late := escalating(t)
	put(t, s, late)
	for _, c := range []struct {
		name string
		a    *approval.Approval
		now  time.Time
	}{{"claimed", claimed, T0.Add(time.Minute)}, {"rejected", rejected, T0.Add(time.Minute)}, {"past its expiry", late, T0.Add(5 * time.Minute)}} {
		r := escalate(t, s, c.a.ID, c.now)
		if r.Code != approval.EscalateNone {
			t.Fatalf("%s: Escalate = %s, want none", c.name, r.Code)
		}
		if got := get(t, s, c.a.ID); got.Escalated != 0 {
			t.Fatalf("%s: a step was taken", c.name)
		}
		if ids := escalations(t, s, T0.Add(time.Hour)); contains(ids, c.a.ID) {
			t.Fatalf("%s: still in the index", c.name)
		}
	}
}

// testConcurrentEscalate: of many sweepers taking the same step at once,
// exactly one takes it.
func testConcurrentEscalate(t *testing.T, s approval.Store, _ func(time.Duration)) {
	for round := 0; round < 5; round++ {
		a := escalating(t)
		put(t, s, a)
		var wg sync.WaitGroup
		var mu sync.Mutex
		taken := 0
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := s.Escalate(ctx(t), a.ID, T0.Add(90*time.Second))
				if err != nil {
					t.Error(err)
					return
				}
				if r.Code == approval.EscalateTaken {
					mu.Lock()
					taken++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if got := get(t, s, a.ID); taken != 1 || got.Escalated != 1 {
			t.Fatalf("round %d: %d sweepers took the step; Escalated = %d", round, taken, got.Escalated)
		}
	}
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
