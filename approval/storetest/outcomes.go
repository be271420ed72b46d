package storetest

import (
	"reflect"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

func init() {
	tests = append(tests, storeTest{"Outcomes", testOutcomes}, storeTest{"OutcomesMany", testOutcomesMany})
}

// testOutcomes: Outcomes answers, per id and in order, the outcome of an
// ended approval (rejected, cancelled, executed) as Get has it, and nil
// for a pending, a claimed and a missing one.
func testOutcomes(t *testing.T, s approval.Store, _ func(time.Duration)) {
	pending, claimed, rejected, cancelled, executed := NewApproval(t), NewApproval(t), NewApproval(t), NewApproval(t), NewApproval(t)
	for _, a := range []*approval.Approval{pending, claimed, rejected, cancelled, executed} {
		put(t, s, a)
	}
	if r := claim(t, s, claimed.ID, approve(claimed)); r.Code != approval.ClaimOK {
		t.Fatalf("claim = %s", r.Code)
	}
	req := approve(rejected)
	req.Intent = approval.IntentReject
	req.Outcome = func(approval.Status) approval.Outcome { return approval.Outcome{Content: "declined", IsError: true} }
	if r := claim(t, s, rejected.ID, req); !r.Ended {
		t.Fatalf("reject = %s", r.Code)
	}
	if _, ok, err := s.Cancel(ctx(t), cancelled.ID, approval.Outcome{Content: "withdrawn", DecidedBy: "alice"}, T0.Add(time.Second)); !ok || err != nil {
		t.Fatalf("Cancel = %v, %v", ok, err)
	}
	if r := claim(t, s, executed.ID, approve(executed)); r.Code != approval.ClaimOK {
		t.Fatalf("claim = %s", r.Code)
	}
	if _, err := s.Complete(ctx(t), executed.ID, approval.StateExecuted, approval.Outcome{Status: approval.StatusExecuted, Content: "deleted 1 row"}, time.Minute); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	ids := []approval.ID{pending.ID, claimed.ID, rejected.ID, approval.NewID("nowhere"), cancelled.ID, "not-an-id", executed.ID}
	got, err := s.Outcomes(ctx(t), ids)
	if err != nil || len(got) != len(ids) {
		t.Fatalf("Outcomes = %d answers, %v; want %d", len(got), err, len(ids))
	}
	for i, id := range ids {
		var want *approval.Outcome
		if a, err := s.Get(ctx(t), id); err == nil && a.State.Terminal() {
			want = a.Outcome
		}
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("Outcomes[%d] (%s) = %+v, want %+v", i, id, got[i], want)
		}
	}
	for i, wantEnded := range []bool{false, false, true, false, true, false, true} {
		if (got[i] != nil) != wantEnded {
			t.Errorf("Outcomes[%d] = %+v, want ended %v", i, got[i], wantEnded)
		}
	}
	if got, err := s.Outcomes(ctx(t), nil); err != nil || len(got) != 0 {
		t.Fatalf("Outcomes(none) = %v, %v", got, err)
	}
}

// testOutcomesMany: more ids than one batch of a store (redisstore reads
// 1,000 to a round trip) keep their order: the ended approvals are found
// where they are among many that are not.
func testOutcomesMany(t *testing.T, s approval.Store, _ func(time.Duration)) {
	ids := make([]approval.ID, 2500)
	for i := range ids {
		ids[i] = approval.NewID("nowhere")
	}
	ended := map[int]*approval.Approval{0: NewApproval(t), 999: NewApproval(t), 1000: NewApproval(t), 2499: NewApproval(t)}
	for i, a := range ended {
		put(t, s, a)
		if _, ok, err := s.Cancel(ctx(t), a.ID, approval.Outcome{Content: "withdrawn " + string(a.ID)}, T0.Add(time.Second)); !ok || err != nil {
			t.Fatalf("Cancel = %v, %v", ok, err)
		}
		ids[i] = a.ID
	}
	pending := NewApproval(t)
	put(t, s, pending)
	ids[1500] = pending.ID
	got, err := s.Outcomes(ctx(t), ids)
	if err != nil || len(got) != len(ids) {
		t.Fatalf("Outcomes = %d answers, %v; want %d", len(got), err, len(ids))
	}
	for i := range ids {
		a := ended[i]
		switch {
		case a == nil && got[i] != nil:
			t.Errorf("Outcomes[%d] = %+v, want nil", i, got[i])
		case a != nil && (got[i] == nil || got[i].Status != approval.StatusCancelled || got[i].Content != "withdrawn "+string(a.ID)):
			t.Errorf("Outcomes[%d] = %+v, want the cancellation of %s", i, got[i], a.ID)
		}
	}
}
