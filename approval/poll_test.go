package approval_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/waitfor"
)

// deaf is a store whose outcome messages never reach its engine (as when
// its subscription was down as they were published), and which counts its
// reads.
type deaf struct {
	approval.Store
	gets, outcomes, read atomic.Int64 // Get calls, Outcomes calls, ids read by Outcomes
}

func (d *deaf) Subscribe(ctx context.Context, _ func(approval.ID, approval.Outcome)) error {
	return d.Store.Subscribe(ctx, func(approval.ID, approval.Outcome) {})
}

func (d *deaf) Get(ctx context.Context, id approval.ID) (*approval.Approval, error) {
	d.gets.Add(1)
	return d.Store.Get(ctx, id)
}

func (d *deaf) Outcomes(ctx context.Context, ids []approval.ID) ([]*approval.Outcome, error) {
	d.outcomes.Add(1)
	d.read.Add(int64(len(ids)))
	return d.Store.Outcomes(ctx, ids)
}

// TestLostOutcomeFoundByPoll: the outcomes of approvals decided on
// another replica never reach the waiting engine's subscription; one
// PollInterval later (the injected clock) its poll finds them, and their
// Waits return the outcome, while the Waits of approvals still pending go
// on. The poll reads every approval waited on in one Store.Outcomes call
// per 1,000 (two for 1,500), never one read per Wait: before the batched
// poll every Wait had a timer of its own and a Get every PollInterval
// (1,500 Gets here, and the test failed on them). How many round trips a
// call takes is redisstore's TestOutcomesRoundTrips.
func TestLostOutcomeFoundByPoll(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		clk := clock.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
		sa, sb, _ := be.new(t, clk)
		da := &deaf{Store: sa}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		tool, audit, notes := &counterTool{}, &recorder{}, &notifier{}
		mk := func(s approval.Store) *approval.Engine {
			e, err := approval.NewEngine(approval.EngineConfig{Store: s, Notifier: notes, Dispatcher: tool, Audit: audit, Clock: clk,
				PollInterval: time.Second, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Start(ctx); err != nil {
				t.Fatal(err)
			}
			return e
		}
		a, b := mk(da), mk(sb)

		const n = 1500
		aps := make([]*approval.Approval, n)
		waits := make([]<-chan approval.Outcome, n)
		for i := range aps {
			aps[i] = request(t, a)
			waits[i] = waitAsync(t, a, aps[i].ID)
		}
		waitfor.True(t, "every Wait blocked", func() bool { return a.WaitingCount() == n })

		decided := []int{0, 999, 1000, n - 1}
		for _, i := range decided {
			if o := decide(t, b, aps[i].ID, decision(aps[i], approval.Approve, "bob")); o.Status != approval.StatusExecuted {
				t.Fatalf("Decide = %+v", o)
			}
		}
		for _, i := range decided {
			if !a.Waiting(aps[i].ID) {
				t.Fatalf("the Wait on %s ended with no outcome message and no poll", aps[i].ID)
			}
		}
		gets := da.gets.Load()
		clk.Advance(time.Second)
		for _, i := range decided {
			if o := recv(t, waits[i]); o.Status != approval.StatusExecuted {
				t.Fatalf("Wait on %s after the poll = %+v, want executed", aps[i].ID, o)
			}
		}
		waitfor.True(t, "the other Waits still blocked", func() bool { return a.WaitingCount() == n-len(decided) })
		if c, r, g := da.outcomes.Load(), da.read.Load(), da.gets.Load()-gets; c != 2 || r != n || g != 0 {
			t.Fatalf("one poll: %d Outcomes calls reading %d ids and %d Gets; want 2 calls reading %d, no Get", c, r, g, n)
		}
		if got := tool.runs.Load(); got != int64(len(decided)) {
			t.Fatalf("tool ran %d times, want %d", got, len(decided))
		}
	})
}

// TestWaitsShareOneTimer: 500 Waits blocked on approvals that expire at
// five different times hold no timer of their own: the engine keeps one
// for the earliest expiry (and one for its poll); as the clock passes each
// expiry, exactly the Waits due then end, expired. Before, each Wait had
// two timers of its own (1,000 here).
func TestWaitsShareOneTimer(t *testing.T) {
	f := newFixture(t, backends[0])
	const n = 500
	waits := make([]<-chan approval.Outcome, n)
	for i := range waits {
		a := request(t, f.a, func(r *approval.Request) { r.Verdict.Timeout = time.Duration(1+i%5) * time.Minute })
		waits[i] = waitAsync(t, f.a, a.ID)
	}
	waitfor.True(t, "every Wait blocked", func() bool { return f.a.WaitingCount() == n })
	// a's poll and expiry timers, b's poll timer.
	waitfor.True(t, "the engine's expiry timer set", func() bool { return f.clk.Timers() == 3 })
	for step := 1; step <= 5; step++ {
		f.clk.Advance(time.Minute)
		for i := step - 1; i < n; i += 5 {
			if o := recv(t, waits[i]); o.Status != approval.StatusExpired {
				t.Fatalf("minute %d: Wait %d = %+v, want expired", step, i, o)
			}
		}
		waitfor.True(t, "the expired Waits gone", func() bool { return f.a.WaitingCount() == n-step*n/5 })
		if got := f.clk.Timers(); got > 3 {
			t.Fatalf("minute %d: %d timers, want at most 3", step, got)
		}
	}
	if got := f.tool.runs.Load(); got != 0 {
		t.Fatalf("tool ran %d times", got)
	}
}
