package approval_test

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

// batch makes a request of three calls (ids c1, c2, c3).
func batch(r *approval.Request) {
	r.Calls = []approval.Call{
		{Tool: "sql_execute", Args: json.RawMessage(`{"statement":"DELETE FROM orders WHERE id = 1","database":"demo"}`), CallID: "c1"},
		{Tool: "tasks_delete", Args: json.RawMessage(`{"id":7}`), CallID: "c2"},
		{Tool: "sql_execute", Args: json.RawMessage(`{"statement":"DELETE FROM orders WHERE id = 3","database":"demo"}`), CallID: "c3"},
	}
}

func perCall(a *approval.Approval, actor approval.UserID, calls map[string]approval.Verb) approval.Decision {
	d := decision(a, approval.Approve, actor)
	d.Calls, d.Comment = calls, "not task 7"
	return d
}

func TestPerCallDecision(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := request(t, f.a, batch)
		w := waitAsync(t, f.a, a.ID)
		// decided on the other replica, the second call named by its number
		o := decide(t, f.b, a.ID, perCall(a, "bob", map[string]approval.Verb{"c1": approval.Approve, "#2": approval.Reject, "c3": approval.Approve}))
		if o.Status != approval.StatusExecuted || len(o.Results) != 3 {
			t.Fatalf("outcome = %+v, want executed with three results", o)
		}
		want := []approval.Status{approval.StatusExecuted, approval.StatusRejected, approval.StatusExecuted}
		for i, r := range o.Results {
			if r.Status != want[i] || r.CallID != a.Calls[i].CallID {
				t.Fatalf("result %d = %+v, want %s", i, r, want[i])
			}
		}
		if c := o.Results[1].Content; c != `bob ("not task 7")` || !o.Results[1].IsError {
			t.Fatalf("declined call's result = %+v", o.Results[1])
		}
		if o.Comment != "not task 7" || o.DecidedBy != "bob" {
			t.Fatalf("outcome comment %q by %q", o.Comment, o.DecidedBy)
		}
		if n := f.tool.runs.Load(); n != 2 {
			t.Fatalf("tool ran %d times, want 2 (the declined call never)", n)
		}
		if got := recv(t, w); got.Status != approval.StatusExecuted || got.Results[1].Status != approval.StatusRejected {
			t.Fatalf("the waiter got %+v", got)
		}
		rec, err := f.sa.Get(t.Context(), a.ID)
		if err != nil || rec.Verdicts != "ara" || rec.State != approval.StateExecuted {
			t.Fatalf("record: %+v, %v", rec, err)
		}
		// A second decision, per call or not, runs nothing more.
		if o := decide(t, f.a, a.ID, perCall(a, "bob", map[string]approval.Verb{"c1": approval.Approve, "c2": approval.Approve, "c3": approval.Approve})); o.Status != approval.StatusAlreadyDecided {
			t.Fatalf("second decision = %s", o.Status)
		}
		if n := f.tool.runs.Load(); n != 2 {
			t.Fatalf("tool ran %d times after a second decision", n)
		}
		// Audit: the approval's confirm and execute, then each call's own.
		perCallRecs := map[int][]audit.Event{}
		f.audit.mu.Lock()
		for _, r := range f.audit.recs {
			if r.ApprovalID == string(a.ID) && r.Call > 0 {
				perCallRecs[r.Call] = append(perCallRecs[r.Call], r.Event)
				if r.PayloadSHA256 != a.Calls[r.Call-1].PayloadSHA256 || r.Tool != a.Calls[r.Call-1].Tool {
					t.Errorf("record of call %d names %s %s", r.Call, r.Tool, r.PayloadSHA256)
				}
				if r.Event == audit.EventReject && r.Reason != "not task 7" {
					t.Errorf("reject record of call %d: reason %q", r.Call, r.Reason)
				}
			}
		}
		f.audit.mu.Unlock()
		wantRecs := map[int][]audit.Event{
			1: {audit.EventConfirm, audit.EventExecute},
			2: {audit.EventReject},
			3: {audit.EventConfirm, audit.EventExecute},
		}
		for c, evs := range wantRecs {
			if strings.Join(evNames(perCallRecs[c]), ",") != strings.Join(evNames(evs), ",") {
				t.Errorf("call %d audited %v, want %v", c, perCallRecs[c], evs)
			}
		}
		if f.audit.count(a.ID, audit.EventConfirm) != 3 || f.audit.count(a.ID, audit.EventExecute) != 3 {
			t.Errorf("confirm %d, execute %d records; want the approval's and two calls'", f.audit.count(a.ID, audit.EventConfirm), f.audit.count(a.ID, audit.EventExecute))
		}
	})
}

func evNames(evs []audit.Event) []string {
	s := make([]string, len(evs))
	for i, e := range evs {
		s[i] = string(e)
	}
	return s
}

// TestPerCallAllOrNone: a per-call decision that approves every call is a
// plain approve, one that rejects every call a plain reject (by the
// requester too, who may always withdraw); no verdicts are recorded.
func TestPerCallAllOrNone(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := request(t, f.a, batch)
		o := decide(t, f.a, a.ID, perCall(a, "bob", map[string]approval.Verb{"c1": approval.Approve, "c2": approval.Approve, "c3": approval.Approve}))
		if o.Status != approval.StatusExecuted || f.tool.runs.Load() != 3 {
			t.Fatalf("all approved: %s, %d runs", o.Status, f.tool.runs.Load())
		}
		if rec, _ := f.sa.Get(t.Context(), a.ID); rec.Verdicts != "" {
			t.Fatalf("verdicts recorded for a plain approve: %q", rec.Verdicts)
		}
		b := request(t, f.a, batch)
		o = decide(t, f.a, b.ID, perCall(b, "alice", map[string]approval.Verb{"c1": approval.Reject, "c2": approval.Reject, "c3": approval.Reject}))
		if o.Status != approval.StatusRejected || o.Comment != "not task 7" || f.tool.runs.Load() != 3 {
			t.Fatalf("all rejected: %+v, %d runs", o, f.tool.runs.Load())
		}
	})
}

// TestPerCallRefused: a per-call decision that does not name every call
// exactly once is refused as invalid, and one by someone who may not
// approve, or with another payload's hash, is refused by the claim; nothing
// runs and the approval stays pending.
func TestPerCallRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := request(t, f.a, batch)
		for _, calls := range []map[string]approval.Verb{
			{"c1": approval.Approve, "c2": approval.Reject},                                                 // one missing
			{"c1": approval.Approve, "c2": approval.Reject, "c9": approval.Approve},                         // unknown call
			{"c1": approval.Approve, "#1": approval.Reject, "c3": approval.Approve},                         // named twice
			{"c1": approval.Approve, "c2": "maybe", "c3": approval.Approve},                                 // unknown verdict
			{"c1": approval.Approve, "c2": approval.Reject, "c3": approval.Approve, "#3": approval.Approve}, // too many
			{},
		} {
			_, err := f.a.Decide(t.Context(), a.ID, perCall(a, "bob", calls))
			if approval.KindOf(err) != errkind.Invalid || !errors.Is(err, approval.ErrCallVerdicts) {
				t.Fatalf("Decide(%v) = %v, want invalid", calls, err)
			}
		}
		mixed := map[string]approval.Verb{"c1": approval.Approve, "c2": approval.Reject, "c3": approval.Reject}
		if o := decide(t, f.a, a.ID, perCall(a, "mallory", mixed)); o.Status != approval.StatusUnauthorized {
			t.Fatalf("mallory = %s", o.Status)
		}
		d := perCall(a, "bob", mixed)
		d.PayloadSHA256 = strings.Repeat("0", 64)
		if o := decide(t, f.a, a.ID, d); o.Status != approval.StatusTampered {
			t.Fatalf("wrong hash = %s", o.Status)
		}
		if o := decide(t, f.a, approval.NewID("test:none"), perCall(a, "bob", mixed)); o.Status != approval.StatusMissing {
			t.Fatalf("missing = %s", o.Status)
		}
		rec, _ := f.sa.Get(t.Context(), a.ID)
		if rec.State != approval.StatePending || f.tool.runs.Load() != 0 {
			t.Fatalf("after refused decisions: %s, %d runs", rec.State, f.tool.runs.Load())
		}
	})
}

// TestPerCallConcurrent: per-call decisions racing plain ones: exactly one
// wins, and the calls run as the winner chose, once.
func TestPerCallConcurrent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := request(t, f.a, batch)
		var wg sync.WaitGroup
		var won atomic.Int64
		var winner atomic.Value
		for i := range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e := f.a
				if i%2 == 1 {
					e = f.b
				}
				d := decision(a, approval.Approve, "bob")
				if i%3 != 0 {
					d = perCall(a, "bob", map[string]approval.Verb{"c1": approval.Reject, "c2": approval.Approve, "c3": approval.Reject})
				}
				o, err := e.Decide(t.Context(), a.ID, d)
				if err != nil {
					t.Error(err)
					return
				}
				if o.Status != approval.StatusAlreadyDecided {
					won.Add(1)
					winner.Store(d.Calls != nil)
				}
			}()
		}
		wg.Wait()
		if won.Load() != 1 {
			t.Fatalf("%d decisions won", won.Load())
		}
		want := int64(3)
		if winner.Load().(bool) {
			want = 1
		}
		if n := f.tool.runs.Load(); n != want {
			t.Fatalf("tool ran %d times, want %d", n, want)
		}
	})
}
