package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

// limitChecker is an EditChecker for sql_execute calls {"statement",
// "database", "limit"?}: a limit above 100 is HIGH and needs someone other
// than the requester; a statement "DROP …" is refused.
type limitChecker struct{}

func (limitChecker) CheckEdit(_ context.Context, _ *approval.Approval, c approval.Call, args json.RawMessage) (approval.EditedCall, error) {
	var v struct {
		Statement string `json:"statement"`
		Limit     int    `json:"limit"`
	}
	if err := json.Unmarshal(args, &v); err != nil {
		return approval.EditedCall{}, fmt.Errorf("arguments are not an object: %v", err)
	}
	if strings.HasPrefix(v.Statement, "DROP") {
		return approval.EditedCall{}, errors.New("DDL is not allowed")
	}
	canon, err := approval.Canonicalize(args)
	if err != nil {
		return approval.EditedCall{}, err
	}
	ec := approval.EditedCall{Args: canon, Summary: v.Statement, Risk: approval.RiskMedium, Reason: "MEDIUM",
		Approvers: approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"alice", "bob"}}}
	if v.Limit > 100 {
		ec.Risk, ec.Reason, ec.Approvers.NotRequester = approval.RiskHigh, "affects more than 100 rows", true
	}
	return ec, nil
}

func newEditFixture(t *testing.T, be backend) *fixture {
	t.Helper()
	f := newFixture(t, be)
	for _, e := range []**approval.Engine{&f.a, &f.b} {
		eng, err := approval.NewEngine(approval.EngineConfig{Store: (*e).Store(), Notifier: f.notes, Dispatcher: f.tool, Audit: f.audit, Clock: f.clk,
			PollInterval: 3600e9, Logger: quiet, Editor: limitChecker{}})
		if err != nil {
			t.Fatal(err)
		}
		if err := eng.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		*e = eng
	}
	return f
}

func withLimit(limit int) func(*approval.Request) {
	return func(r *approval.Request) {
		r.Verdict.Risk = approval.RiskMedium
		r.Calls = []approval.Call{{Tool: "sql_execute", CallID: "c1",
			Args: json.RawMessage(fmt.Sprintf(`{"statement":"DELETE FROM t","database":"demo","limit":%d}`, limit))}}
	}
}

func edit(a *approval.Approval, actor approval.UserID, key, args string) approval.Decision {
	d := decision(a, approval.Approve, actor)
	d.Edits = map[string]json.RawMessage{key: json.RawMessage(args)}
	return d
}

// TestEditBeforeApprove: an approver changes limit 1000 -> 10 and
// approves in one step: the claim binds the approval to the edited call's
// hash (the proposed one kept), the tool runs once with the edited
// arguments, the result says what changed, and the audit trail keeps the
// proposed, approved and executed hashes apart.
func TestEditBeforeApprove(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newEditFixture(t, be)
		a := request(t, f.a, withLimit(1000))
		w := waitAsync(t, f.a, a.ID)
		o := decide(t, f.b, a.ID, edit(a, "alice", "c1", `{"limit": 10, "database":"demo", "statement":"DELETE FROM t"}`))
		if o.Status != approval.StatusExecuted || len(o.Results) != 1 || o.Results[0].Edited != "limit: 1000 → 10" {
			t.Fatalf("outcome %+v", o)
		}
		if got := recv(t, w); got.Results[0].Edited != "limit: 1000 → 10" {
			t.Fatalf("the waiter got %+v", got)
		}
		rec, err := f.sa.Get(t.Context(), a.ID)
		if err != nil {
			t.Fatal(err)
		}
		wantArgs := `{"database":"demo","limit":10,"statement":"DELETE FROM t"}`
		if rec.ProposedSHA256 != a.PayloadSHA256 || rec.PayloadSHA256 == a.PayloadSHA256 || string(rec.Calls[0].Args) != wantArgs ||
			rec.PayloadSHA256 != approval.PayloadHash("sql_execute", []byte(wantArgs)) || rec.Calls[0].Edited != "limit: 1000 → 10" || rec.Risk != approval.RiskMedium {
			t.Fatalf("record %+v", rec)
		}
		if f.tool.runs.Load() != 1 {
			t.Fatalf("runs %d", f.tool.runs.Load())
		}
		var confirm, execute *audit.Record
		f.audit.mu.Lock()
		for i, r := range f.audit.recs {
			if r.ApprovalID == string(a.ID) && r.Event == audit.EventConfirm {
				confirm = &f.audit.recs[i]
			}
			if r.ApprovalID == string(a.ID) && r.Event == audit.EventExecute {
				execute = &f.audit.recs[i]
			}
		}
		f.audit.mu.Unlock()
		if confirm == nil || execute == nil || confirm.Proposed != a.PayloadSHA256 || confirm.PayloadSHA256 != rec.PayloadSHA256 ||
			execute.PayloadSHA256 != rec.PayloadSHA256 || strings.Contains(confirm.Reason+confirm.Error, "1000") {
			t.Fatalf("audit: confirm %+v execute %+v", confirm, execute)
		}
		// A second decision on the proposed hash runs nothing.
		if o := decide(t, f.a, a.ID, decision(a, approval.Approve, "alice")); o.Status != approval.StatusAlreadyDecided || f.tool.runs.Load() != 1 {
			t.Fatalf("second decision %s, runs %d", o.Status, f.tool.runs.Load())
		}
	})
}

// TestEditRaisingRisk: an edit that makes the call HIGH (limit 5000) under
// four eyes cannot be approved by the requester: unauthorized, nothing
// claimed, the approval still pending with its proposed call; another
// approver can approve the same edit.
func TestEditRaisingRisk(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newEditFixture(t, be)
		a := request(t, f.a, withLimit(50))
		big := `{"limit":5000,"database":"demo","statement":"DELETE FROM t"}`
		o := decide(t, f.a, a.ID, edit(a, "alice", "c1", big))
		if o.Status != approval.StatusUnauthorized || !strings.Contains(o.Detail, "bob") {
			t.Fatalf("requester's risky edit: %+v", o)
		}
		rec, _ := f.sa.Get(t.Context(), a.ID)
		if rec.State != approval.StatePending || rec.PayloadSHA256 != a.PayloadSHA256 || f.tool.runs.Load() != 0 {
			t.Fatalf("after a refused edit: %+v", rec)
		}
		if f.audit.count(a.ID, audit.EventUnauthorized) != 1 {
			t.Fatal("the refused edit is not audited")
		}
		o = decide(t, f.a, a.ID, edit(a, "bob", "#1", big))
		if o.Status != approval.StatusExecuted || f.tool.runs.Load() != 1 {
			t.Fatalf("bob's edit: %+v", o)
		}
		rec, _ = f.sa.Get(t.Context(), a.ID)
		if rec.Risk != approval.RiskHigh || rec.Reason != "affects more than 100 rows" || rec.ProposedSHA256 != a.PayloadSHA256 {
			t.Fatalf("record after the risky edit %+v", rec)
		}
	})
}

// TestEditRefused: arguments the tool would not take, an unknown call, a
// stale hash, or an engine without an EditChecker decide nothing.
func TestEditRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newEditFixture(t, be)
		a := request(t, f.a, withLimit(50))
		for _, d := range []approval.Decision{
			edit(a, "alice", "c1", `{"statement":"DROP TABLE t"}`),
			edit(a, "alice", "c9", `{"limit":1}`),
			edit(a, "alice", "c1", `[1]`),
		} {
			if _, err := f.a.Decide(t.Context(), a.ID, d); approval.KindOf(err) != errkind.Invalid || !errors.Is(err, approval.ErrEdit) {
				t.Fatalf("%s: %v", d.Edits, err)
			}
		}
		d := edit(a, "alice", "c1", `{"limit":1,"database":"demo","statement":"DELETE FROM t"}`)
		d.PayloadSHA256 = strings.Repeat("0", 64)
		if o := decide(t, f.a, a.ID, d); o.Status != approval.StatusTampered {
			t.Fatalf("stale hash: %s", o.Status)
		}
		plain := newFixture(t, be) // no EditChecker
		b := request(t, plain.a, withLimit(50))
		if _, err := plain.a.Decide(t.Context(), b.ID, edit(b, "alice", "c1", `{"limit":1}`)); approval.KindOf(err) != errkind.Invalid {
			t.Fatalf("without an EditChecker: %v", err)
		}
		// Unchanged arguments are a plain approve.
		o := decide(t, f.a, a.ID, edit(a, "alice", "c1", `{"statement":"DELETE FROM t","limit":50,"database":"demo"}`))
		rec, _ := f.sa.Get(t.Context(), a.ID)
		if o.Status != approval.StatusExecuted || rec.ProposedSHA256 != "" || o.Results[0].Edited != "" {
			t.Fatalf("unchanged edit: %+v, %+v", o, rec)
		}
		if f.tool.runs.Load() != 1 {
			t.Fatalf("runs %d", f.tool.runs.Load())
		}
	})
}

// TestEditRaisingRiskPastStep: four eyes keeps the requester out of the
// escalation steps under the rule that applies to what is approved. An
// edit that makes the call HIGH (limit 5000, four eyes) is refused to the
// requester even when a step taken lists them: a step never lets in whom
// the rule keeps out (mayapprove.go, clause 3 before clause 5).
func TestEditRaisingRiskPastStep(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		en := &escalationNotes{notifier: f.notes}
		e, err := approval.NewEngine(approval.EngineConfig{Store: f.sa, Notifier: en, Dispatcher: f.tool, Audit: f.audit, Clock: f.clk,
			PollInterval: time.Hour, Logger: quiet, Editor: limitChecker{}})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		a := request(t, e, withLimit(50), func(r *approval.Request) {
			r.Verdict.Escalation = []approval.Escalation{{After: time.Minute, To: approval.Place{Channel: "feishu", ChatID: "oc_oncall"},
				Approvers: approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"alice", "dave"}}}}
		})
		f.clk.Advance(time.Minute)
		if n, err := e.Sweep(t.Context()); err != nil || n != 1 {
			t.Fatalf("sweep = %d, %v; want the step taken", n, err)
		}
		big := `{"limit":5000,"database":"demo","statement":"DELETE FROM t"}`
		if o := decide(t, e, a.ID, edit(a, "alice", "c1", big)); o.Status != approval.StatusUnauthorized || f.tool.runs.Load() != 0 {
			t.Fatalf("the requester's HIGH edit past a step listing them = %s, %d runs; want unauthorized, none", o.Status, f.tool.runs.Load())
		}
		if o := decide(t, e, a.ID, edit(a, "dave", "c1", big)); o.Status != approval.StatusExecuted || f.tool.runs.Load() != 1 {
			t.Fatalf("dave's HIGH edit past the step = %s, %d runs; want executed once", o.Status, f.tool.runs.Load())
		}
	})
}
