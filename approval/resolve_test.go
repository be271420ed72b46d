package approval_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

// freeze requests an approval on f.a and has bob approve it while the
// tool's effect comes back unknown: frozen after one run.
func freeze(t *testing.T, f *fixture) *approval.Approval {
	t.Helper()
	f.tool.mode.Store("unknown")
	a := request(t, f.a)
	if o := decide(t, f.a, a.ID, decision(a, approval.Approve, "bob")); o.Status != approval.StatusFrozen {
		t.Fatalf("decision = %+v, want frozen", o)
	}
	f.tool.mode.Store("")
	return a
}

func resolution(a *approval.Approval, r approval.Resolution, actor approval.UserID, comment string) approval.Decision {
	d := decision(a, approval.Resolve, actor)
	d.Resolution, d.Comment = r, comment
	return d
}

// TestResolveRetryRunsOnceMore: 重试 on a frozen approval runs its tool
// exactly once more (on another replica than the one that froze it), is
// audited as a retry before the run's own record, settles every card with
// the run's outcome (marked as a retry), and a second retry is refused.
func TestResolveRetryRunsOnceMore(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := freeze(t, f)
		o := decide(t, f.b, a.ID, resolution(a, approval.ResolveRetry, "bob", "the database is back"))
		if o.Status != approval.StatusExecuted || o.Resolution != approval.ResolveRetry || o.Content != "run 2 ok" || o.DecidedBy != "bob" {
			t.Fatalf("retry = %+v, want executed (run 2) as a retry by bob", o)
		}
		if n := f.tool.runs.Load(); n != 2 {
			t.Fatalf("tool ran %d times, want 2 (once, then the retry)", n)
		}
		for ev, want := range map[audit.Event]int{audit.EventRetry: 1, audit.EventExecute: 1, audit.EventExecuteUnknown: 1, audit.EventConfirm: 1} {
			if got := f.audit.count(a.ID, ev); got != want {
				t.Errorf("%s records = %d, want %d", ev, got, want)
			}
		}
		if got := f.notes.settledWith(a.ID); !slices.Equal(got, []approval.Status{approval.StatusFrozen, approval.StatusExecuted}) {
			t.Fatalf("cards settled with %v, want frozen then executed", got)
		}
		rec, err := f.a.Get(context.Background(), a.ID)
		if err != nil || rec.State != approval.StateExecuted || rec.Outcome.Resolution != approval.ResolveRetry || rec.DecidedBy != "bob" {
			t.Fatalf("record = %+v, %v", rec, err)
		}
		again := decide(t, f.a, a.ID, resolution(a, approval.ResolveRetry, "bob", ""))
		if again.Status != approval.StatusAlreadyDecided || again.Detail != string(approval.StatusExecuted) {
			t.Fatalf("second retry = %+v, want already_decided (executed)", again)
		}
		if n := f.tool.runs.Load(); n != 2 {
			t.Fatalf("a refused retry ran the tool: %d runs", n)
		}
	})
}

// TestRetryFreezesAgain: a retry whose effect is unknown again is frozen
// again (as a retry) and can be resolved again; 已完成 then records it as
// done by hand without running anything.
func TestRetryFreezesAgain(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := freeze(t, f)
		f.tool.mode.Store("unknown")
		o := decide(t, f.a, a.ID, resolution(a, approval.ResolveRetry, "bob", ""))
		if o.Status != approval.StatusFrozen || o.Resolution != approval.ResolveRetry {
			t.Fatalf("retry = %+v, want frozen again, as a retry", o)
		}
		if got := f.audit.count(a.ID, audit.EventExecuteUnknown); got != 2 {
			t.Fatalf("execute_unknown records = %d, want 2", got)
		}
		done := decide(t, f.b, a.ID, resolution(a, approval.ResolveDone, "bob", "row 1 is gone, checked"))
		if done.Status != approval.StatusExecuted || done.Resolution != approval.ResolveDone || done.Comment != "row 1 is gone, checked" ||
			!strings.Contains(done.Content, "row 1 is gone, checked") || done.IsError {
			t.Fatalf("done = %+v", done)
		}
		if n := f.tool.runs.Load(); n != 2 {
			t.Fatalf("tool ran %d times, want 2 (已完成 runs nothing)", n)
		}
	})
}

// TestResolveDoneAndAbandon: 已完成 and 放弃 end a frozen approval without
// running anything, audited resolve_done / resolve_abandon with the
// resolver and what they wrote (cleaned), every card settled.
func TestResolveDoneAndAbandon(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		for _, tc := range []struct {
			r     approval.Resolution
			st    approval.Status
			state approval.State
			ev    audit.Event
		}{
			{approval.ResolveDone, approval.StatusExecuted, approval.StateExecuted, audit.EventResolveDone},
			{approval.ResolveAbandon, approval.StatusFailed, approval.StateFailed, audit.EventResolveAbandon},
		} {
			t.Run(string(tc.r), func(t *testing.T) {
				f := newFixture(t, be)
				a := freeze(t, f)
				o := decide(t, f.a, a.ID, resolution(a, tc.r, "bob", "token sk-live-0123456789abcdef0123 \x07checked"))
				if o.Status != tc.st || o.Resolution != tc.r || o.DecidedBy != "bob" {
					t.Fatalf("outcome = %+v", o)
				}
				if strings.Contains(o.Content, "sk-live-0123456789abcdef0123") || strings.Contains(o.Comment, "\x07") {
					t.Fatalf("the comment was not cleaned: %+v", o)
				}
				if n := f.tool.runs.Load(); n != 1 {
					t.Fatalf("tool ran %d times, want 1", n)
				}
				if got := f.audit.count(a.ID, tc.ev); got != 1 {
					t.Fatalf("%s records = %d", tc.ev, got)
				}
				f.audit.mu.Lock()
				var rec audit.Record
				for _, r := range f.audit.recs {
					if r.Event == tc.ev {
						rec = r
					}
				}
				f.audit.mu.Unlock()
				if rec.Actor != "bob" || rec.Source != string(approval.SourceCard) || rec.Outcome != string(tc.st) || rec.Reason != o.Comment {
					t.Fatalf("audit record = %+v", rec)
				}
				if got := f.notes.settledWith(a.ID); !slices.Equal(got, []approval.Status{approval.StatusFrozen, tc.st}) {
					t.Fatalf("cards settled with %v", got)
				}
				stored, err := f.b.Get(context.Background(), a.ID)
				if err != nil || stored.State != tc.state || stored.Outcome.Resolution != tc.r {
					t.Fatalf("record = %+v, %v", stored, err)
				}
			})
		}
	})
}

// TestResolveRefusals: who may not resolve (the approver rule, four eyes),
// a wrong hash, an approval that is not frozen, an unknown resolution.
func TestResolveRefusals(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := freeze(t, f)
		if o := decide(t, f.a, a.ID, resolution(a, approval.ResolveRetry, "mallory", "")); o.Status != approval.StatusUnauthorized {
			t.Fatalf("mallory: %+v", o)
		}
		d := resolution(a, approval.ResolveDone, "bob", "")
		d.PayloadSHA256 = strings.Repeat("a", 64)
		if o := decide(t, f.a, a.ID, d); o.Status != approval.StatusTampered {
			t.Fatalf("wrong hash: %+v", o)
		}
		if got := f.audit.count(a.ID, audit.EventUnauthorized) + f.audit.count(a.ID, audit.EventTampered); got != 2 {
			t.Fatalf("refusals audited %d times, want 2", got)
		}
		if _, err := f.a.Decide(context.Background(), a.ID, resolution(a, "maybe", "bob", "")); approval.KindOf(err) != errkind.Invalid {
			t.Fatalf("unknown resolution: err %v, want invalid", err)
		}
		if n := f.tool.runs.Load(); n != 1 {
			t.Fatalf("a refused resolution ran the tool: %d runs", n)
		}
		// Four eyes: the requester may approve nothing of their own.
		four := request(t, f.a, func(r *approval.Request) { r.Verdict.Approvers.NotRequester = true })
		f.tool.mode.Store("unknown")
		decide(t, f.a, four.ID, decision(four, approval.Approve, "bob"))
		f.tool.mode.Store("")
		if o := decide(t, f.a, four.ID, resolution(four, approval.ResolveRetry, "alice", "")); o.Status != approval.StatusUnauthorized {
			t.Fatalf("the requester under four eyes: %+v", o)
		}
		// Pending: nothing to resolve.
		p := request(t, f.a)
		if o := decide(t, f.a, p.ID, resolution(p, approval.ResolveDone, "bob", "")); o.Status != approval.StatusAlreadyDecided || o.Detail != "pending" {
			t.Fatalf("pending: %+v", o)
		}
	})
}

// TestConcurrentResolutionsOneWinner: many resolutions of one frozen
// approval at once, across two replicas: exactly one wins, and the tool
// runs at most once more.
func TestConcurrentResolutionsOneWinner(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := freeze(t, f)
		const n = 30
		var wg sync.WaitGroup
		var mu sync.Mutex
		won := 0
		retried := false
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e := f.a
				if i%2 == 1 {
					e = f.b
				}
				r := approval.Resolutions[i%3]
				o, err := e.Decide(context.Background(), a.ID, resolution(a, r, "bob", ""))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if o.Status != approval.StatusAlreadyDecided {
					won++
					retried = r == approval.ResolveRetry
				}
			}()
		}
		wg.Wait()
		if won != 1 {
			t.Fatalf("%d resolutions won, want 1", won)
		}
		want := int64(1)
		if retried {
			want = 2
		}
		if got := f.tool.runs.Load(); got != want {
			t.Fatalf("tool ran %d times, want %d", got, want)
		}
	})
}

// TestRetryWhoseRunDiesIsFrozenAgain: a retry claimed by a replica that
// died before running it (the claim made, nothing completed) is found by
// the sweeper, as any stale claim: frozen again, audited execute_unknown,
// cards settled; and it can be resolved again.
func TestRetryWhoseRunDiesIsFrozenAgain(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := freeze(t, f)
		if _, err := f.a.Sweep(context.Background()); err != nil { // the frozen approval leaves the expiry index
			t.Fatal(err)
		}
		res, err := f.sa.Resolve(context.Background(), a.ID, approval.ResolveRequest{Resolution: approval.ResolveRetry, PayloadSHA256: a.PayloadSHA256,
			Actor: "bob", Source: approval.SourceCard, Now: f.clk.Now().UTC()})
		if err != nil || res.Code != approval.ClaimOK {
			t.Fatalf("retry claim: %+v, %v", res, err)
		}
		f.clk.Advance(10 * time.Minute)
		if n, err := f.b.Sweep(context.Background()); err != nil || n != 1 {
			t.Fatalf("sweep: %d, %v", n, err)
		}
		rec, err := f.a.Get(context.Background(), a.ID)
		if err != nil || rec.State != approval.StateFrozen {
			t.Fatalf("record after the sweep: %+v, %v", rec, err)
		}
		if got := f.audit.count(a.ID, audit.EventExecuteUnknown); got != 2 {
			t.Fatalf("execute_unknown records = %d, want 2", got)
		}
		if o := decide(t, f.a, a.ID, resolution(a, approval.ResolveAbandon, "bob", "")); o.Status != approval.StatusFailed {
			t.Fatalf("resolving it again: %+v", o)
		}
		if n := f.tool.runs.Load(); n != 1 {
			t.Fatalf("tool ran %d times, want 1", n)
		}
	})
}
