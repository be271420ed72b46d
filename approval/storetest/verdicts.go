package storetest

import (
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

func init() {
	tests = append(tests, storeTest{"ClaimVerdicts", testClaimVerdicts})
}

// NewBatch returns NewApproval with three calls (ids call-1 … call-3) and
// their batch hash.
func NewBatch(t testing.TB) *approval.Approval {
	t.Helper()
	a := NewApproval(t)
	a.Calls = nil
	for i, st := range []string{"DELETE FROM orders WHERE id = 1", "DELETE FROM orders WHERE id = 2", "DELETE FROM orders WHERE id = 3"} {
		args, hash, err := approval.HashCall("sql_execute", []byte(`{"statement":"`+st+`","database":"demo"}`))
		if err != nil {
			t.Fatal(err)
		}
		a.Calls = append(a.Calls, approval.Call{Tool: "sql_execute", Args: args, PayloadSHA256: hash, Summary: st,
			CallID: "call-" + string(rune('1'+i))})
	}
	a.PayloadSHA256 = approval.BatchHash(a.Calls)
	return a
}

// testClaimVerdicts: a per-call decision's verdicts are part of the claim:
// recorded with it in one step, read back by Get, left alone by a refused
// claim and by a second claim, and absent from a plain claim.
func testClaimVerdicts(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewBatch(t)
	put(t, s, a)

	// Refused claims carry verdicts too, and record nothing.
	req := approve(a)
	req.Verdicts = "ara"
	req.Actor = "mallory"
	if r := claim(t, s, a.ID, req); r.Code != approval.ClaimUnauthorized {
		t.Fatalf("unauthorized claim = %s", r.Code)
	}
	req.Actor = "bob"
	req.PayloadSHA256 = a.Calls[0].PayloadSHA256
	if r := claim(t, s, a.ID, req); r.Code != approval.ClaimTampered {
		t.Fatalf("tampered claim = %s", r.Code)
	}
	if got := get(t, s, a.ID); got.Verdicts != "" || got.State != approval.StatePending {
		t.Fatalf("after refused claims: state %s, verdicts %q; want pending, none", got.State, got.Verdicts)
	}

	req.PayloadSHA256 = a.PayloadSHA256
	r := claim(t, s, a.ID, req)
	if r.Code != approval.ClaimOK || r.Ended || r.Approval == nil || r.Approval.Verdicts != "ara" {
		t.Fatalf("Claim = %+v, want claimed with verdicts ara", r)
	}
	if got := wantState(t, s, a.ID, approval.StateClaimed); got.Verdicts != "ara" || got.Comment != "ok" {
		t.Fatalf("Get after the claim: verdicts %q comment %q", got.Verdicts, got.Comment)
	}
	// A second decision loses and changes nothing.
	req.Verdicts = "aaa"
	if r := claim(t, s, a.ID, req); r.Code != approval.ClaimAlreadyClaimed || r.Approval.Verdicts != "ara" {
		t.Fatalf("second claim = %s, verdicts %q", r.Code, r.Approval.Verdicts)
	}
	o := approval.Outcome{Status: approval.StatusExecuted, Content: "done", Results: []approval.Result{
		{Tool: "sql_execute", CallID: "call-1", Status: approval.StatusExecuted, Content: "1 row"},
		{Tool: "sql_execute", CallID: "call-2", Status: approval.StatusRejected, Content: "bob", IsError: true},
		{Tool: "sql_execute", CallID: "call-3", Status: approval.StatusExecuted, Content: "1 row"},
	}}
	if _, err := s.Complete(ctx(t), a.ID, approval.StateExecuted, o, 0); err != nil {
		t.Fatal(err)
	}
	got := wantState(t, s, a.ID, approval.StateExecuted)
	if got.Verdicts != "ara" || got.Outcome == nil || len(got.Outcome.Results) != 3 || got.Outcome.Results[1].Status != approval.StatusRejected {
		t.Fatalf("completed record: verdicts %q outcome %+v", got.Verdicts, got.Outcome)
	}

	// A plain approve records no verdicts, even when a reject carries some.
	b := NewBatch(t)
	put(t, s, b)
	if r := claim(t, s, b.ID, approve(b)); r.Code != approval.ClaimOK || r.Approval.Verdicts != "" {
		t.Fatalf("plain claim = %s, verdicts %q", r.Code, r.Approval.Verdicts)
	}
	c := NewBatch(t)
	put(t, s, c)
	rej := approve(c)
	rej.Intent, rej.Verdicts = approval.IntentReject, "rrr"
	if r := claim(t, s, c.ID, rej); r.Code != approval.ClaimOK || !r.Ended || r.Approval.Verdicts != "" {
		t.Fatalf("reject claim = %s ended %v verdicts %q", r.Code, r.Ended, r.Approval.Verdicts)
	}
}
