package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

func init() {
	tests = append(tests, storeTest{"ClaimEdited", testClaimEdited})
}

// testClaimEdited: an approve carrying an edit binds the approval to the
// edited calls in the claim's step (their hash, arguments, what changed,
// risk, reason, summary and preview; the proposed hash kept), only when
// the request names the stored (proposed) hash; a refused claim records
// nothing. The edited record is shorter than the proposed one, so nothing
// of the proposed one may linger.
func testClaimEdited(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewApproval(t)
	a.Preview = strings.Repeat("a long preview of the proposed call ", 20)
	put(t, s, a)
	ed := a.Clone()
	args, hash, err := approval.HashCall("sql_execute", []byte(`{"statement":"DELETE FROM orders WHERE id = 2","database":"demo"}`))
	if err != nil {
		t.Fatal(err)
	}
	ed.Calls[0].Args, ed.Calls[0].PayloadSHA256, ed.Calls[0].Edited, ed.Calls[0].Summary = args, hash, "statement: changed", "delete order 2"
	ed.PayloadSHA256, ed.Risk, ed.Reason, ed.ReasonZH, ed.Summary, ed.Preview = hash, approval.RiskMedium, "edited", "已编辑", "delete order 2", "short"

	req := approve(a)
	req.Edited = ed
	req.PayloadSHA256 = hash // the edited hash is not what the decider saw
	if r := claim(t, s, a.ID, req); r.Code != approval.ClaimTampered {
		t.Fatalf("claim naming the edited hash = %s", r.Code)
	}
	req.PayloadSHA256 = a.PayloadSHA256
	req.Actor = "mallory"
	if r := claim(t, s, a.ID, req); r.Code != approval.ClaimUnauthorized {
		t.Fatalf("unauthorized = %s", r.Code)
	}
	if got := get(t, s, a.ID); got.PayloadSHA256 != a.PayloadSHA256 || got.ProposedSHA256 != "" || got.Preview != a.Preview {
		t.Fatalf("refused claims changed the record: %+v", got)
	}
	req.Actor = "bob"
	r := claim(t, s, a.ID, req)
	if r.Code != approval.ClaimOK || r.Approval.PayloadSHA256 != hash || r.Approval.ProposedSHA256 != a.PayloadSHA256 {
		t.Fatalf("edited claim = %+v", r)
	}
	got := wantState(t, s, a.ID, approval.StateClaimed)
	c := got.Calls[0]
	if got.PayloadSHA256 != hash || got.ProposedSHA256 != a.PayloadSHA256 || string(c.Args) != string(args) || c.PayloadSHA256 != hash ||
		c.Edited != "statement: changed" || c.Summary != "delete order 2" || c.CallID != "call-1" || got.Risk != approval.RiskMedium ||
		got.Reason != "edited" || got.ReasonZH != "已编辑" || got.Summary != "delete order 2" || got.Preview != "short" ||
		!got.ExpiresAt.Equal(a.ExpiresAt) || !got.CreatedAt.Equal(a.CreatedAt) {
		t.Fatalf("edited record: %+v", got)
	}
	if _, err := s.Complete(ctx(t), a.ID, approval.StateExecuted, approval.Outcome{Status: approval.StatusExecuted, Content: "ok"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := wantState(t, s, a.ID, approval.StateExecuted); got.PayloadSHA256 != hash || got.ProposedSHA256 != a.PayloadSHA256 {
		t.Fatalf("completed: %+v", got)
	}
}
