package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/internal/clock"
)

// quiet drops the engine logs of tests.
var quiet = slog.New(slog.DiscardHandler)

// backend builds two stores that share one truth, as two replicas do, and
// a counter of the store round trips made so far (nil when the store makes none).
type backend struct {
	name string
	new  func(t testing.TB, clk clock.Clock) (a, b approval.Store, roundTrips func() int64)
}

// backends lists the stores every engine test runs against; the Redis one
// is added by engine_redis_test.go.
var backends = []backend{
	{"memory", func(t testing.TB, clk clock.Clock) (approval.Store, approval.Store, func() int64) {
		s := memstore.New(memstore.Options{Clock: clk})
		return s, s, nil
	}},
}

// recorder is an Auditor that keeps records for assertions.
type recorder struct {
	mu   sync.Mutex
	recs []audit.Record
}

func (r *recorder) Append(rec audit.Record) {
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
}

func (r *recorder) count(id approval.ID, ev audit.Event) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, rec := range r.recs {
		if rec.ApprovalID == string(id) && rec.Event == ev {
			n++
		}
	}
	return n
}

// counterTool is a Dispatcher that counts runs and can be told to fail.
type counterTool struct {
	runs  atomic.Int64
	mode  atomic.Value // "", "fail", "panic", "unknown", "notrun"
	block chan struct{}
}

func (c *counterTool) Dispatch(ctx context.Context, call approval.Call) (approval.Result, error) {
	if c.block != nil {
		<-c.block
	}
	mode, _ := c.mode.Load().(string)
	if mode == "notrun" {
		return approval.Result{}, fmt.Errorf("%w: unknown tool %q", approval.ErrNotRun, call.Tool)
	}
	if mode == "changed" {
		return approval.Result{}, fmt.Errorf("%w: %w: %s", approval.ErrNotRun, approval.ErrToolChanged, call.Tool)
	}
	n := c.runs.Add(1)
	switch mode {
	case "fail":
		return approval.Result{Content: "constraint violated", IsError: true}, nil
	case "panic":
		panic("tool exploded")
	case "unknown":
		return approval.Result{}, errors.New("connection reset during commit")
	}
	return approval.Result{Content: fmt.Sprintf("run %d ok", n)}, nil
}

// notifier records Show and Settle calls.
type notifier struct {
	// Progress and Escalate do nothing (escalationNotes and progressNotes
	// record them).
	approval.NopNotifier

	mu      sync.Mutex
	failing bool
	// onShow, when set, runs inside Show before it returns: a decision
	// that arrives while the card is still being sent.
	onShow  func(a *approval.Approval)
	shown   []approval.ID
	settled map[approval.ID][]approval.Status
}

func (n *notifier) Show(ctx context.Context, a *approval.Approval) ([]approval.CardRef, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.failing {
		return nil, errors.New("chat API down")
	}
	n.shown = append(n.shown, a.ID)
	if n.onShow != nil {
		n.mu.Unlock()
		n.onShow(a)
		n.mu.Lock()
	}
	return []approval.CardRef{{Channel: "test", ChatID: a.ChatID, MessageID: "m-" + string(a.ID)}}, nil
}

func (n *notifier) Settle(ctx context.Context, a *approval.Approval, o approval.Outcome) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.settled == nil {
		n.settled = map[approval.ID][]approval.Status{}
	}
	if len(a.Cards) == 0 || a.Cards[0].MessageID != "m-"+string(a.ID) {
		return fmt.Errorf("settle of %s without its card reference: %+v", a.ID, a.Cards)
	}
	n.settled[a.ID] = append(n.settled[a.ID], o.Status)
	return nil
}

func (n *notifier) settledWith(id approval.ID) []approval.Status {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]approval.Status(nil), n.settled[id]...)
}

// fixture is two engines (two replicas) over one shared truth.
type fixture struct {
	a, b  *approval.Engine
	clk   *clock.Fake
	tool  *counterTool
	audit *recorder
	notes *notifier
	// sa and sb are the stores of the two replicas (one truth: two
	// clients of one Redis, or one memstore).
	sa, sb approval.Store
}

func newFixture(t *testing.T, be backend, wrap ...func(approval.Store) approval.Store) *fixture {
	t.Helper()
	f := &fixture{clk: clock.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)), tool: &counterTool{}, audit: &recorder{}, notes: &notifier{}}
	sa, sb, _ := be.new(t, f.clk)
	for _, w := range wrap {
		sa, sb = w(sa), w(sb)
	}
	f.sa, f.sb = sa, sb
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	mk := func(s approval.Store) *approval.Engine {
		e, err := approval.NewEngine(approval.EngineConfig{Store: s, Notifier: f.notes, Dispatcher: f.tool, Audit: f.audit, Clock: f.clk, PollInterval: time.Hour, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return e
	}
	f.a, f.b = mk(sa), mk(sb)
	return f
}

var sessionSeq atomic.Int64

func request(t *testing.T, e *approval.Engine, mods ...func(*approval.Request)) *approval.Approval {
	t.Helper()
	r := approval.Request{
		Session:   approval.SessionKey(fmt.Sprintf("test:chat-%d-%d", time.Now().UnixNano(), sessionSeq.Add(1))),
		Channel:   "test",
		ChatID:    "chat-1",
		Requester: "alice",
		Calls:     []approval.Call{{Tool: "sql_execute", Args: json.RawMessage(`{"statement": "DELETE FROM orders WHERE status = 'cancelled'", "database": "demo"}`), CallID: "c1"}},
		Verdict: approval.Verdict{NeedsApproval: true, Risk: approval.RiskHigh, Reason: "HIGH risk",
			Approvers: approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"alice", "bob"}}, Timeout: 5 * time.Minute},
		Summary:        "delete cancelled orders",
		IdempotencyKey: fmt.Sprintf("turn-%d", sessionSeq.Add(1)),
	}
	for _, m := range mods {
		m(&r)
	}
	a, err := e.Request(context.Background(), r)
	if err != nil {
		t.Fatalf("Request: %v", err)
	}
	return a
}

func decision(a *approval.Approval, verb approval.Verb, actor approval.UserID) approval.Decision {
	return approval.Decision{Verb: verb, Actor: actor, Source: approval.SourceCard, PayloadSHA256: a.PayloadSHA256}
}

func decide(t *testing.T, e *approval.Engine, id approval.ID, d approval.Decision) approval.Outcome {
	t.Helper()
	o, err := e.Decide(context.Background(), id, d)
	if err != nil {
		t.Fatalf("Decide(%s, %s by %s): %v", id, d.Verb, d.Actor, err)
	}
	return o
}

func forEachBackend(t *testing.T, fn func(t *testing.T, be backend)) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) { fn(t, be) })
	}
}

// waitAsync starts a Wait and returns a channel with its outcome.
func waitAsync(t *testing.T, e *approval.Engine, id approval.ID) <-chan approval.Outcome {
	t.Helper()
	ch := make(chan approval.Outcome, 1)
	go func() {
		o, err := e.Wait(context.Background(), id)
		if err != nil {
			t.Errorf("Wait(%s): %v", id, err)
		}
		ch <- o
	}()
	return ch
}

func recv(t *testing.T, ch <-chan approval.Outcome) approval.Outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(10 * time.Second):
		t.Fatal("no outcome within 10s")
	}
	return approval.Outcome{}
}

func TestConcurrentDecisions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		// Round 0: approves and duplicates only — the tool must run exactly
		// once. Rounds 1..: rejects in the mix — exactly one decision wins.
		const rounds, n = 4, 1000
		wantRuns := 0
		for round := range rounds {
			a := request(t, f.a)
			var wg sync.WaitGroup
			var won, already atomic.Int64
			var winner atomic.Value
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					e := f.a
					if i%2 == 1 {
						e = f.b
					}
					verb := approval.Approve
					if round > 0 && i%3 == 2 {
						verb = approval.Reject
					}
					o, err := e.Decide(context.Background(), a.ID, decision(a, verb, "bob"))
					switch {
					case err != nil:
						t.Error(err)
					case o.Status == approval.StatusAlreadyDecided:
						already.Add(1)
					case o.Status == approval.StatusExecuted || o.Status == approval.StatusRejected:
						won.Add(1)
						winner.Store(o.Status)
					default:
						t.Errorf("unexpected outcome %+v", o)
					}
				}()
			}
			wg.Wait()
			if won.Load() != 1 || already.Load() != n-1 {
				t.Fatalf("round %d: %d winners, %d already_decided; want 1 and %d", round, won.Load(), already.Load(), n-1)
			}
			if winner.Load() == approval.StatusExecuted {
				wantRuns++
			}
			if got := f.tool.runs.Load(); got != int64(wantRuns) {
				t.Fatalf("round %d: tool ran %d times in all, want %d", round, got, wantRuns)
			}
			execs, rejects := f.audit.count(a.ID, audit.EventExecute), f.audit.count(a.ID, audit.EventReject)
			if execs+rejects != 1 || f.audit.count(a.ID, audit.EventConfirm) != execs {
				t.Fatalf("round %d: audit has %d execute, %d reject, %d confirm", round, execs, rejects, f.audit.count(a.ID, audit.EventConfirm))
			}
		}
		if wantRuns == 0 {
			t.Fatal("no round executed the tool")
		}
	})
}

func TestWaitWokenByOtherReplica(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := request(t, f.a)
		ch := waitAsync(t, f.a, a.ID)
		// Decide only once A blocks, so the outcome must cross replicas
		// while A waits.
		for !f.a.Waiting(a.ID) {
			time.Sleep(time.Millisecond)
		}
		o := decide(t, f.b, a.ID, decision(a, approval.Approve, "bob"))
		if o.Status != approval.StatusExecuted {
			t.Fatalf("Decide on B = %+v", o)
		}
		w := recv(t, ch)
		if w.Status != approval.StatusExecuted || w.Content != "run 1 ok" || len(w.Results) != 1 || w.Results[0].CallID != "c1" {
			t.Fatalf("Wait on A = %+v, want executed with the tool's result", w)
		}
		if got := f.notes.settledWith(a.ID); len(got) != 1 || got[0] != approval.StatusExecuted {
			t.Fatalf("cards settled with %v, want [executed]", got)
		}
		// A Wait that starts after the outcome returns it at once.
		if o, err := f.a.Wait(context.Background(), a.ID); err != nil || o.Status != approval.StatusExecuted {
			t.Fatalf("late Wait = %+v, %v", o, err)
		}
	})
}

// countingGets counts the store reads of records.
type countingGets struct {
	approval.Store
	gets *atomic.Int64
}

func (s countingGets) Get(ctx context.Context, id approval.ID) (*approval.Approval, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, id)
}

// TestWaitOnRequesterReadsNothing: the replica that requested an approval
// keeps its outcome even when the decision (on the other replica) comes
// before its Wait begins, so that Wait reads nothing from the store; a
// Wait on a replica that did not request it reads the record.
func TestWaitOnRequesterReadsNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		var gets atomic.Int64
		f := newFixture(t, be, func(s approval.Store) approval.Store { return countingGets{s, &gets} })
		a := request(t, f.a)
		if o := decide(t, f.b, a.ID, decision(a, approval.Approve, "bob")); o.Status != approval.StatusExecuted {
			t.Fatalf("Decide on B = %+v", o)
		}
		if o := recv(t, waitAsync(t, f.a, a.ID)); o.Status != approval.StatusExecuted || o.Content != "run 1 ok" {
			t.Fatalf("Wait on the requester after the decision = %+v", o)
		}
		if n := gets.Load(); n != 0 {
			t.Fatalf("Wait on the requester read the store %d times, want 0", n)
		}
		if o := recv(t, waitAsync(t, f.b, a.ID)); o.Status != approval.StatusExecuted {
			t.Fatalf("Wait on the other replica = %+v", o)
		}
		if n := gets.Load(); n != 1 {
			t.Fatalf("Wait on the other replica read the store %d times, want 1", n)
		}
	})
}

// TestEarlyOutcomesArePruned: approvals requested but never waited on do
// not accumulate past their expiry.
func TestEarlyOutcomesArePruned(t *testing.T) {
	f := newFixture(t, backends[0])
	for range 1000 {
		request(t, f.a, func(r *approval.Request) { r.Verdict.Timeout = time.Minute })
	}
	if n := approval.EarlyLen(f.a); n != 1000 {
		t.Fatalf("%d early entries, want 1000", n)
	}
	f.clk.Advance(3 * time.Minute)
	for range 100 {
		request(t, f.a)
	}
	if n := approval.EarlyLen(f.a); n != 100 {
		t.Fatalf("%d early entries after the first ones expired, want the 100 live ones", n)
	}
}

func TestTimeoutAgainstClick(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		const rounds = 500
		var executed, expired int
		for round := range rounds {
			a := request(t, f.a, func(r *approval.Request) { r.Verdict.Timeout = time.Minute })
			runsBefore := f.tool.runs.Load()
			ch := waitAsync(t, f.a, a.ID)
			// Once the Wait is blocked (the engine's timer is set at its
			// expiry then, or at once when the clock is past it).
			for !f.a.Waiting(a.ID) {
				time.Sleep(10 * time.Microsecond)
			}
			var wg sync.WaitGroup
			var d approval.Outcome
			wg.Add(2)
			go func() { defer wg.Done(); d = decide(t, f.b, a.ID, decision(a, approval.Approve, "bob")) }()
			go func() { defer wg.Done(); f.clk.Advance(time.Minute) }()
			wg.Wait()
			w := recv(t, ch)
			runs := f.tool.runs.Load() - runsBefore
			switch {
			case w.Status == approval.StatusExecuted && d.Status == approval.StatusExecuted && runs == 1:
				executed++
			case w.Status == approval.StatusExpired && d.Status == approval.StatusExpired && runs == 0:
				expired++
			default:
				t.Fatalf("round %d: wait %s, decide %s, %d runs", round, w.Status, d.Status, runs)
			}
		}
		t.Logf("%d rounds: %d executed, %d expired", rounds, executed, expired)
	})
}

// TestDecisionWhileCardIsSent: a click (or typed reply) decided on the
// other replica before the card's send returned, so the decision saw no
// card to settle. The card must still end in the final state, once.
func TestDecisionWhileCardIsSent(t *testing.T) {
	for _, verb := range []approval.Verb{approval.Approve, approval.Reject} {
		t.Run(string(verb), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, be backend) {
				f := newFixture(t, be)
				want := map[approval.Verb]approval.Status{approval.Approve: approval.StatusExecuted, approval.Reject: approval.StatusRejected}[verb]
				f.notes.onShow = func(a *approval.Approval) {
					if o, err := f.b.Decide(context.Background(), a.ID, decision(a, verb, "bob")); err != nil || o.Status != want {
						t.Errorf("Decide while the card is sent = %+v, %v", o, err)
					}
				}
				a := request(t, f.a)
				if got := f.notes.settledWith(a.ID); len(got) != 1 || got[0] != want {
					t.Fatalf("card settled with %v, want [%s] once", got, want)
				}
				if len(a.Cards) != 1 || a.State != approval.State(want) {
					t.Fatalf("Request returned state %s, cards %+v", a.State, a.Cards)
				}
			})
		})
	}
}

// TestDecisionOutlivesItsCaller: a click whose request is cancelled
// mid-way still claims and runs, instead of leaving the approval claimed
// with nobody to run it.
func TestDecisionOutlivesItsCaller(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := request(t, f.a)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		o, err := f.b.Decide(ctx, a.ID, decision(a, approval.Approve, "bob"))
		if err != nil || o.Status != approval.StatusExecuted {
			t.Fatalf("Decide with a cancelled caller = %+v, %v; want executed", o, err)
		}
		if n := f.tool.runs.Load(); n != 1 {
			t.Fatalf("tool ran %d times", n)
		}
	})
}

func TestTamperedHash(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := request(t, f.a)
		d := decision(a, approval.Approve, "bob")
		d.PayloadSHA256 = approval.PayloadHash("sql_execute", []byte(`{"statement":"DROP TABLE orders"}`))
		if o := decide(t, f.b, a.ID, d); o.Status != approval.StatusTampered || !o.IsError {
			t.Fatalf("tampered decision = %+v", o)
		}
		if f.tool.runs.Load() != 0 || f.audit.count(a.ID, audit.EventTampered) != 1 {
			t.Fatalf("after tampering: %d runs, %d tampered records", f.tool.runs.Load(), f.audit.count(a.ID, audit.EventTampered))
		}
		if o := decide(t, f.a, a.ID, decision(a, approval.Approve, "bob")); o.Status != approval.StatusExecuted {
			t.Fatalf("the honest decision after tampering = %+v", o)
		}
	})
}

// TestToolChangedAfterTheCard: the dispatcher says the tool's definition
// is no longer the one the call pinned. The approval ends failed (it can
// never run as approved), nothing ran, the audit trail has the attempt as
// tampered, and the pinned hash survives the store.
func TestToolChangedAfterTheCard(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := request(t, f.a, func(r *approval.Request) {
			r.Calls = []approval.Call{{Tool: "fs__write_file", Args: json.RawMessage(`{"path":"a.txt","content":"hi"}`), Definition: strings.Repeat("d", 64), CallID: "c1"}}
		})
		pinned := approval.PinnedHash("fs__write_file", []byte(`{"content":"hi","path":"a.txt"}`), strings.Repeat("d", 64))
		if a.PayloadSHA256 != pinned || a.Calls[0].PayloadSHA256 != pinned {
			t.Fatalf("the approval's hash %s is not the pinned one %s", a.PayloadSHA256, pinned)
		}
		f.tool.mode.Store("changed")
		o := decide(t, f.b, a.ID, decision(a, approval.Approve, "bob"))
		if o.Status != approval.StatusFailed || !strings.Contains(o.Content, "changed on its server") {
			t.Fatalf("outcome = %+v", o)
		}
		if f.tool.runs.Load() != 0 || f.audit.count(a.ID, audit.EventTampered) != 1 {
			t.Fatalf("%d runs, %d tampered records", f.tool.runs.Load(), f.audit.count(a.ID, audit.EventTampered))
		}
		if got, _ := f.a.Get(context.Background(), a.ID); got.State != approval.StateFailed {
			t.Fatalf("state = %s, want failed", got.State)
		}
	})
}

func TestReplay(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		first := request(t, f.a, func(r *approval.Request) { r.IdempotencyKey = "turn-7/call-1" })
		o1 := decide(t, f.a, first.ID, decision(first, approval.Approve, "bob"))
		// The same call again in the same session (say, after a restart the
		// model asks once more): the result is replayed, the tool does not run.
		again := request(t, f.b, func(r *approval.Request) {
			r.Session, r.IdempotencyKey = first.Session, "turn-7/call-1"
			r.Calls[0].Args = json.RawMessage(`{"database":"demo","statement":"DELETE FROM orders WHERE status = 'cancelled'"}`)
		})
		if again.PayloadSHA256 != first.PayloadSHA256 {
			t.Fatal("the same arguments in another key order hashed differently")
		}
		o2 := decide(t, f.b, again.ID, decision(again, approval.Approve, "bob"))
		if o2.Status != approval.StatusReplayed || o2.Content != o1.Content || f.tool.runs.Load() != 1 {
			t.Fatalf("replay = %+v (first %+v), %d runs", o2, o1, f.tool.runs.Load())
		}
		if f.audit.count(again.ID, audit.EventReplay) != 1 || f.audit.count(again.ID, audit.EventExecute) != 0 {
			t.Fatal("the replay was not audited as a replay")
		}
	})
}

func TestToolFailures(t *testing.T) {
	cases := []struct {
		mode   string
		status approval.Status
		state  approval.State
		event  audit.Event
		runs   int64
	}{
		{"panic", approval.StatusFrozen, approval.StateFrozen, audit.EventExecuteUnknown, 1},
		{"unknown", approval.StatusFrozen, approval.StateFrozen, audit.EventExecuteUnknown, 1},
		{"fail", approval.StatusFailed, approval.StateFailed, audit.EventExecuteFailed, 1},
		{"notrun", approval.StatusFailed, approval.StateFailed, audit.EventExecuteFailed, 0},
	}
	forEachBackend(t, func(t *testing.T, be backend) {
		for _, c := range cases {
			t.Run(c.mode, func(t *testing.T) {
				f := newFixture(t, be)
				f.tool.mode.Store(c.mode)
				a := request(t, f.a)
				o := decide(t, f.b, a.ID, decision(a, approval.Approve, "bob"))
				if o.Status != c.status || !o.IsError {
					t.Fatalf("outcome = %+v, want %s", o, c.status)
				}
				if got, _ := f.a.Get(context.Background(), a.ID); got.State != c.state {
					t.Fatalf("state = %s, want %s", got.State, c.state)
				}
				if f.tool.runs.Load() != c.runs || f.audit.count(a.ID, c.event) != 1 {
					t.Fatalf("%d runs, %d %s records", f.tool.runs.Load(), f.audit.count(a.ID, c.event), c.event)
				}
				// Nothing re-runs it: a later decision is already_decided.
				f.tool.mode.Store("")
				if o := decide(t, f.a, a.ID, decision(a, approval.Approve, "bob")); o.Status != approval.StatusAlreadyDecided {
					t.Fatalf("later decision = %+v", o)
				}
				if f.tool.runs.Load() != c.runs {
					t.Fatal("the tool ran again")
				}
			})
		}
	})
}

// failingComplete fails Complete for executed results, as if the result
// cache could not be written.
type failingComplete struct{ approval.Store }

func (s failingComplete) Complete(ctx context.Context, id approval.ID, st approval.State, o approval.Outcome, ttl time.Duration) ([]approval.CardRef, error) {
	if st == approval.StateExecuted {
		return nil, approval.E("test.Complete", errkind.Unavailable, id, approval.ErrUnavailable)
	}
	return s.Store.Complete(ctx, id, st, o, ttl)
}

func TestFailingResultCacheFreezes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be, func(s approval.Store) approval.Store { return failingComplete{s} })
		a := request(t, f.a)
		ch := waitAsync(t, f.a, a.ID)
		o := decide(t, f.b, a.ID, decision(a, approval.Approve, "bob"))
		if o.Status != approval.StatusFrozen || f.tool.runs.Load() != 1 {
			t.Fatalf("outcome = %+v after %d runs, want frozen after 1", o, f.tool.runs.Load())
		}
		if w := recv(t, ch); w.Status != approval.StatusFrozen {
			t.Fatalf("Wait = %+v, want frozen", w)
		}
		if got, _ := f.a.Get(context.Background(), a.ID); got.State != approval.StateFrozen {
			t.Fatalf("state = %s, want frozen", got.State)
		}
		if o := decide(t, f.a, a.ID, decision(a, approval.Approve, "bob")); o.Status != approval.StatusAlreadyDecided {
			t.Fatalf("later decision = %+v", o)
		}
	})
}

func TestUnauthorized(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := request(t, f.a)
		o := decide(t, f.b, a.ID, decision(a, approval.Approve, "mallory"))
		if o.Status != approval.StatusUnauthorized || f.tool.runs.Load() != 0 {
			t.Fatalf("non-approver = %+v", o)
		}
		if want := "You may not decide this approval (only alice, bob)"; o.Content != want {
			t.Fatalf("non-approver's content = %q, want %q", o.Content, want)
		}
		if got, _ := f.a.Get(context.Background(), a.ID); got.State != approval.StatePending {
			t.Fatalf("state after an unauthorized click = %s", got.State)
		}
		if f.audit.count(a.ID, audit.EventUnauthorized) != 1 {
			t.Fatal("the unauthorized attempt was not audited")
		}
		if o := decide(t, f.a, a.ID, decision(a, approval.Approve, "bob")); o.Status != approval.StatusExecuted {
			t.Fatalf("approver after the attempt = %+v", o)
		}
	})
}

// TestUnauthorizedInLang: the unauthorized outcome names who may approve
// in the engine's language.
func TestUnauthorizedInLang(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	e, err := approval.NewEngine(approval.EngineConfig{Store: memstore.New(memstore.Options{Clock: clk}), Notifier: &notifier{},
		Dispatcher: &counterTool{}, Audit: &recorder{}, Clock: clk, PollInterval: time.Hour, Logger: quiet,
		Text: approval.DefaultOutcomeText("zh"), Lang: "zh"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	a := request(t, e)
	o := decide(t, e, a.ID, decision(a, approval.Approve, "mallory"))
	if want := "你无权处理此审批（仅 alice、bob）"; o.Status != approval.StatusUnauthorized || o.Content != want {
		t.Fatalf("outcome = %+v, want unauthorized %q", o, want)
	}
}

func TestRejectAndWait(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := request(t, f.a)
		ch := waitAsync(t, f.a, a.ID)
		d := decision(a, approval.Reject, "bob")
		d.Comment = "wrong table"
		o := decide(t, f.b, a.ID, d)
		w := recv(t, ch)
		for _, x := range []approval.Outcome{o, w} {
			if x.Status != approval.StatusRejected || x.DecidedBy != "bob" || !x.IsError || x.Comment != "wrong table" {
				t.Fatalf("rejection = %+v", x)
			}
		}
		if rec, err := f.a.Get(context.Background(), a.ID); err != nil || rec.Outcome == nil || rec.Outcome.Comment != "wrong table" {
			t.Fatalf("stored outcome of the rejection = %+v (%v)", rec, err)
		}
		if f.tool.runs.Load() != 0 || f.audit.count(a.ID, audit.EventReject) != 1 {
			t.Fatal("rejected call ran or was not audited")
		}
		if got := f.notes.settledWith(a.ID); len(got) != 1 || got[0] != approval.StatusRejected {
			t.Fatalf("settled %v", got)
		}
	})
}

func TestSupersede(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		first := request(t, f.a)
		ch := waitAsync(t, f.a, first.ID)
		second := request(t, f.b, func(r *approval.Request) { r.Session = first.Session })
		if w := recv(t, ch); w.Status != approval.StatusSuperseded {
			t.Fatalf("Wait on the first = %+v", w)
		}
		if o := decide(t, f.a, first.ID, decision(first, approval.Approve, "bob")); o.Status != approval.StatusSuperseded {
			t.Fatalf("deciding the first = %+v", o)
		}
		if f.audit.count(first.ID, audit.EventSupersede) != 1 {
			t.Fatal("supersession not audited once")
		}
		if got := f.notes.settledWith(first.ID); len(got) != 1 || got[0] != approval.StatusSuperseded {
			t.Fatalf("first card settled %v", got)
		}
		if p, _ := f.a.Pending(context.Background(), first.Session); p == nil || p.ID != second.ID {
			t.Fatalf("pending = %v, want the second", p)
		}
	})
}

// of returns the records of one approval and event.
func (r *recorder) of(id approval.ID, ev audit.Event) []audit.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []audit.Record
	for _, rec := range r.recs {
		if rec.ApprovalID == string(id) && rec.Event == ev {
			out = append(out, rec)
		}
	}
	return out
}

// TestCancelByAPerson: the record and the audit trail name who cancelled,
// where, and why (cleaned and bounded); a cancel by the process names
// nobody and says system.
func TestCancelByAPerson(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := request(t, f.a)
		reason := "wrong table\x07 password=hunter2 " + strings.Repeat("x", 2000)
		o, err := f.b.Cancel(context.Background(), a.ID, "alice", approval.SourceAPI, reason)
		if err != nil || o.Status != approval.StatusCancelled || o.DecidedBy != "alice" {
			t.Fatalf("Cancel = %+v, %v", o, err)
		}
		rec, err := f.a.Get(context.Background(), a.ID)
		if err != nil || rec.DecidedBy != "alice" || rec.DecidedVia != approval.SourceAPI {
			t.Fatalf("record %+v, %v", rec, err)
		}
		recs := f.audit.of(a.ID, audit.EventCancel)
		if len(recs) != 1 || recs[0].Actor != "alice" || recs[0].Source != string(approval.SourceAPI) {
			t.Fatalf("cancel audit %+v", recs)
		}
		got := recs[0].Reason
		if !strings.HasPrefix(got, "wrong table password=[REDACTED] xxx") || strings.Contains(got, "hunter2") ||
			utf8.RuneCountInString(got) != approval.MaxNoteRunes+1 || strings.ContainsRune(got, '\x07') {
			t.Fatalf("cancel reason %q", got)
		}
		if strings.Contains(rec.Outcome.Content, "hunter2") {
			t.Fatalf("outcome %q", rec.Outcome.Content)
		}

		// The process cancels: system, nobody.
		b := request(t, f.a)
		if o, err := f.a.Cancel(context.Background(), b.ID, "", "", ""); err != nil || o.Status != approval.StatusCancelled {
			t.Fatalf("Cancel by the process = %+v, %v", o, err)
		}
		if rec, _ := f.a.Get(context.Background(), b.ID); rec.DecidedBy != "" || rec.DecidedVia != approval.SourceSystem {
			t.Fatalf("record %+v", rec)
		}
		if recs := f.audit.of(b.ID, audit.EventCancel); len(recs) != 1 || recs[0].Actor != "" || recs[0].Source != "system" {
			t.Fatalf("cancel audit %+v", recs)
		}
	})
}

// TestRejectCommentAudited: a rejection's comment is in the audit record,
// cleaned of control characters and secrets and bounded; the record and
// the outcome keep the same cleaned text.
func TestRejectCommentAudited(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := request(t, f.a)
		d := decision(a, approval.Reject, "bob")
		d.Comment = "not now\x1b[2J\nAuthorization: Bearer abcdefghijklmnop " + strings.Repeat("长", 900)
		o := decide(t, f.b, a.ID, d)
		if o.Status != approval.StatusRejected {
			t.Fatalf("reject = %+v", o)
		}
		recs := f.audit.of(a.ID, audit.EventReject)
		if len(recs) != 1 || recs[0].Actor != "bob" {
			t.Fatalf("reject audit %+v", recs)
		}
		got := recs[0].Reason
		if !strings.HasPrefix(got, "not now[2J Authorization: Bearer [REDACTED] 长长") || strings.Contains(got, "abcdefghijklmnop") ||
			utf8.RuneCountInString(got) != approval.MaxNoteRunes+1 {
			t.Fatalf("reject reason %q (%d runes)", got, utf8.RuneCountInString(got))
		}
		if rec, _ := f.a.Get(context.Background(), a.ID); rec.Comment != got || strings.Contains(o.Content, "abcdefghijklmnop") ||
			o.Comment != got || rec.Outcome == nil || rec.Outcome.Comment != got {
			t.Fatalf("record comment %q, outcome %+v", rec.Comment, o)
		}
	})
}

func TestExpiredWithoutWaiter(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := request(t, f.a)
		f.clk.Advance(6 * time.Minute)
		if o := decide(t, f.b, a.ID, decision(a, approval.Approve, "bob")); o.Status != approval.StatusExpired {
			t.Fatalf("late click = %+v", o)
		}
		if f.tool.runs.Load() != 0 || f.audit.count(a.ID, audit.EventExpire) != 1 {
			t.Fatal("late click ran the tool or expiry not audited")
		}
		if o, _ := f.a.Wait(context.Background(), a.ID); o.Status != approval.StatusExpired {
			t.Fatalf("Wait after expiry = %+v", o)
		}
	})
}

func TestCancelAndShowFailure(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := request(t, f.a)
		ch := waitAsync(t, f.a, a.ID)
		if o, err := f.b.Cancel(context.Background(), a.ID, "alice", approval.SourceAPI, "changed my mind"); err != nil || o.Status != approval.StatusCancelled {
			t.Fatalf("Cancel = %+v, %v", o, err)
		}
		if w := recv(t, ch); w.Status != approval.StatusCancelled {
			t.Fatalf("Wait = %+v", w)
		}
		if o, _ := f.b.Cancel(context.Background(), a.ID, "alice", approval.SourceAPI, ""); o.Status != approval.StatusAlreadyDecided {
			t.Fatalf("second Cancel = %+v", o)
		}
		// A card that cannot be shown leaves no approval behind.
		f.notes.mu.Lock()
		f.notes.failing = true
		f.notes.mu.Unlock()
		sess := approval.SessionKey("test:show-fails-" + be.name + fmt.Sprint(time.Now().UnixNano()))
		_, err := f.a.Request(context.Background(), approval.Request{Session: sess, Requester: "alice",
			Calls: []approval.Call{{Tool: "t", Args: json.RawMessage(`{}`)}}, Verdict: approval.Verdict{Timeout: time.Minute}})
		if err == nil {
			t.Fatal("Request succeeded although the card could not be shown")
		}
		if p, _ := f.a.Pending(context.Background(), sess); p != nil {
			t.Fatalf("an unshown approval is still pending: %s", p.ID)
		}
	})
}

func TestMissing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		for _, id := range []approval.ID{"", "ap_nonsense", approval.NewID("x")} {
			if o := decide(t, f.a, id, approval.Decision{Verb: approval.Approve, Actor: "bob", PayloadSHA256: "x"}); o.Status != approval.StatusMissing {
				t.Fatalf("Decide(%q) = %+v", id, o)
			}
		}
		if o, err := f.a.Wait(context.Background(), approval.NewID("x")); err != nil || o.Status != approval.StatusMissing {
			t.Fatalf("Wait(missing) = %+v, %v", o, err)
		}
	})
}

func TestBatch(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := request(t, f.a, func(r *approval.Request) {
			r.Calls = []approval.Call{
				{Tool: "sql_execute", Args: json.RawMessage(`{"statement":"DELETE FROM orders WHERE id = 1"}`), CallID: "c1"},
				{Tool: "sql_execute", Args: json.RawMessage(`{"statement":"DELETE FROM orders WHERE id = 2"}`), CallID: "c2"},
			}
		})
		if a.PayloadSHA256 != approval.BatchHash(a.Calls) || a.Tool() != "batch" {
			t.Fatalf("batch hash/tool = %s/%s", a.PayloadSHA256, a.Tool())
		}
		o := decide(t, f.b, a.ID, decision(a, approval.Approve, "bob"))
		if o.Status != approval.StatusExecuted || len(o.Results) != 2 || o.Results[1].CallID != "c2" || f.tool.runs.Load() != 2 {
			t.Fatalf("batch outcome = %+v, %d runs", o, f.tool.runs.Load())
		}
		if o := decide(t, f.a, a.ID, decision(a, approval.Approve, "bob")); o.Status != approval.StatusAlreadyDecided || f.tool.runs.Load() != 2 {
			t.Fatal("a batch ran twice")
		}
	})
}

func TestGrants(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		p, err := approval.NewPolicy(approval.PolicyConfig{Enabled: true, ConfidenceThreshold: 0.85, GrantWindow: 5 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		sess := approval.SessionKey(fmt.Sprintf("test:grant-%d", time.Now().UnixNano()))
		args, hash, _ := approval.HashCall("task_create", []byte(`{"title":"buy milk"}`))
		ci := approval.CallInfo{Session: sess, User: "alice", Tool: "task_create", Effect: approval.EffectWrite, Hash: hash, Confidence: 1}
		v, err := f.a.Evaluate(context.Background(), p, ci)
		if err != nil || !v.NeedsApproval || !v.Grantable {
			t.Fatalf("first verdict = %+v, %v", v, err)
		}
		a := request(t, f.a, func(r *approval.Request) {
			r.Session, r.Verdict = sess, v
			r.Calls = []approval.Call{{Tool: "task_create", Args: args}}
		})
		if o := decide(t, f.b, a.ID, decision(a, approval.Approve, "alice")); o.Status != approval.StatusExecuted {
			t.Fatalf("decision = %+v", o)
		}
		v, err = f.a.Evaluate(context.Background(), p, ci)
		if err != nil || v.NeedsApproval {
			t.Fatalf("verdict after an approved MEDIUM call = %+v, %v; want no approval", v, err)
		}
		// Strict mode asks every time: the live grant does not count.
		strict, err := approval.NewPolicy(approval.PolicyConfig{Enabled: true, Strict: true, ConfidenceThreshold: 0.85, GrantWindow: 5 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if v, err := f.a.Evaluate(context.Background(), strict, ci); err != nil || !v.NeedsApproval || v.Grantable {
			t.Fatalf("strict verdict with a live grant = %+v, %v; want an approval, no grant", v, err)
		}
		ci.User = "bob"
		if v, _ := f.a.Evaluate(context.Background(), p, ci); !v.NeedsApproval {
			t.Fatal("the grant leaked to another user")
		}
	})
}

// brokenStore fails every operation, as a store whose Redis is gone.
type brokenStore struct{ approval.Store }

var errDown = approval.E("test", errkind.Unavailable, "", approval.ErrUnavailable)

func (brokenStore) Put(context.Context, *approval.Approval, approval.Outcome) (*approval.Approval, error) {
	return nil, errDown
}
func (brokenStore) Claim(context.Context, approval.ID, approval.ClaimRequest) (approval.ClaimResult, error) {
	return approval.ClaimResult{}, errDown
}

func TestStoreDownFailsClosed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := request(t, f.a)
		broken, err := approval.NewEngine(approval.EngineConfig{Store: brokenStore{f.sa}, Dispatcher: f.tool, Audit: f.audit, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := broken.Decide(context.Background(), a.ID, decision(a, approval.Approve, "bob")); approval.KindOf(err) != errkind.Unavailable {
			t.Fatalf("Decide with the store down = %v, want errkind.Unavailable", err)
		}
		if _, err := broken.Request(context.Background(), approval.Request{Session: "s:x", Calls: a.Calls}); approval.KindOf(err) != errkind.Unavailable {
			t.Fatalf("Request with the store down = %v", err)
		}
		if f.tool.runs.Load() != 0 {
			t.Fatal("a tool ran without a claim")
		}
		if msg := approval.UserMessage(errDown); msg == "" || len(msg) > 200 {
			t.Fatalf("user message = %q", msg)
		}
	})
}

func TestSweepExpiresWithoutWaiter(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		stale := request(t, f.a)                                                              // its waiter died
		decided := request(t, f.a)                                                            // decided in time
		fresh := request(t, f.a, func(r *approval.Request) { r.Verdict.Timeout = time.Hour }) // not due yet
		if o := decide(t, f.b, decided.ID, decision(decided, approval.Approve, "bob")); o.Status != approval.StatusExecuted {
			t.Fatalf("decision = %+v", o)
		}
		f.clk.Advance(6 * time.Minute)
		// Both replicas sweep at once: the claim gate lets one expire it.
		var wg sync.WaitGroup
		for _, e := range []*approval.Engine{f.a, f.b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := e.Sweep(context.Background()); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if got, _ := f.a.Get(context.Background(), stale.ID); got.State != approval.StateExpired {
			t.Fatalf("stale approval state = %s", got.State)
		}
		if n := f.audit.count(stale.ID, audit.EventExpire); n != 1 {
			t.Fatalf("%d expire records, want 1", n)
		}
		if got := f.notes.settledWith(stale.ID); len(got) != 1 || got[0] != approval.StatusExpired {
			t.Fatalf("stale card settled %v, want [expired]", got)
		}
		if got, _ := f.a.Get(context.Background(), decided.ID); got.State != approval.StateExecuted || f.audit.count(decided.ID, audit.EventExpire) != 0 {
			t.Fatal("the sweeper touched a decided approval")
		}
		if got, _ := f.a.Get(context.Background(), fresh.ID); got.State != approval.StatePending {
			t.Fatal("the sweeper expired an approval before its time")
		}
		// Swept entries leave the index; the fresh one stays until due.
		due, _ := f.sa.Due(context.Background(), f.clk.Now().Add(2*time.Hour), 0)
		for _, id := range due {
			if id == stale.ID || id == decided.ID {
				t.Fatalf("%s is still in the expiry index", id)
			}
		}
		if f.tool.runs.Load() != 1 {
			t.Fatalf("tool ran %d times", f.tool.runs.Load())
		}
	})
}

// sweepBoth runs Sweep on both replicas at once and returns how many
// entries they settled together.
func sweepBoth(t *testing.T, f *fixture) int {
	t.Helper()
	var wg sync.WaitGroup
	var n atomic.Int64
	for _, e := range []*approval.Engine{f.a, f.b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := e.Sweep(context.Background())
			if err != nil {
				t.Error(err)
			}
			n.Add(int64(k))
		}()
	}
	wg.Wait()
	return int(n.Load())
}

func inDueIndex(t *testing.T, f *fixture, id approval.ID) bool {
	t.Helper()
	due, err := f.sa.Due(context.Background(), f.clk.Now().Add(24*time.Hour), 10000)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(due, id)
}

// TestSweepFreezesAbandonedClaim: the process that claimed an approval died
// before running the tool (or lost the claim's reply for good). The
// approval stays claimed, in the expiry index, until the claim is stale;
// then the sweeper freezes it once (execute_unknown, the card settled, the
// waiting loop woken), and nothing runs.
func TestSweepFreezesAbandonedClaim(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := request(t, f.a)
		waited := waitAsync(t, f.a, a.ID)
		f.clk.Advance(4 * time.Minute)
		// The claimer: a claim and nothing after it.
		res, err := f.sa.Claim(context.Background(), a.ID, approval.ClaimRequest{Intent: approval.IntentApprove, PayloadSHA256: a.PayloadSHA256,
			Actor: "bob", Source: approval.SourceCard, Now: f.clk.Now()})
		if err != nil || res.Code != approval.ClaimOK {
			t.Fatalf("claim: %+v, %v", res, err)
		}
		// Past its expiry but only a minute after the claim: the tool
		// may still be running; the sweeper leaves it.
		f.clk.Advance(61 * time.Second)
		if n := sweepBoth(t, f); n != 0 {
			t.Fatalf("swept %d fresh claims", n)
		}
		if got, _ := f.a.Get(context.Background(), a.ID); got.State != approval.StateClaimed || !inDueIndex(t, f, a.ID) {
			t.Fatalf("a fresh claim: state %s, in the index %v", got.State, inDueIndex(t, f, a.ID))
		}
		// ExecTimeout (2m) + the claim's bound (10s) + a minute after the
		// claim, it is abandoned.
		f.clk.Advance(2*time.Minute + 10*time.Second)
		if n := sweepBoth(t, f); n < 1 { // each replica may count it
			t.Fatalf("swept %d, want 1", n)
		}
		got, _ := f.a.Get(context.Background(), a.ID)
		if got.State != approval.StateFrozen || got.Outcome == nil || got.Outcome.Status != approval.StatusFrozen {
			t.Fatalf("state %s, outcome %+v", got.State, got.Outcome)
		}
		if n := f.audit.count(a.ID, audit.EventExecuteUnknown); n != 1 {
			t.Fatalf("%d execute_unknown records, want 1", n)
		}
		if st := f.notes.settledWith(a.ID); len(st) != 1 || st[0] != approval.StatusFrozen {
			t.Fatalf("card settled %v, want [frozen]", st)
		}
		if o := recv(t, waited); o.Status != approval.StatusFrozen || !strings.Contains(o.Content, "not run again") {
			t.Fatalf("Wait = %+v", o)
		}
		if inDueIndex(t, f, a.ID) {
			t.Fatal("a frozen approval is still in the expiry index")
		}
		if o := decide(t, f.b, a.ID, decision(a, approval.Approve, "bob")); o.Status != approval.StatusAlreadyDecided || f.tool.runs.Load() != 0 {
			t.Fatalf("a later click: %+v, runs %d", o, f.tool.runs.Load())
		}
	})
}

// TestToolOutlivingItsClaim: a tool that ran longer than the stale bound
// (it ignored its context) finds its approval frozen by the sweeper; its
// run is audited, the cards keep the frozen state, and nothing runs twice.
func TestToolOutlivingItsClaim(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		f.tool.block = make(chan struct{})
		a := request(t, f.a)
		decided := make(chan approval.Outcome, 1)
		go func() { decided <- decide(t, f.b, a.ID, decision(a, approval.Approve, "bob")) }()
		// wait until the claim has happened
		for {
			got, err := f.a.Get(context.Background(), a.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.State == approval.StateClaimed {
				break
			}
			time.Sleep(time.Millisecond)
		}
		f.clk.Advance(6 * time.Minute)
		if n := sweepBoth(t, f); n < 1 {
			t.Fatalf("swept %d, want 1", n)
		}
		close(f.tool.block)
		if o := recv(t, decided); o.Status != approval.StatusExecuted {
			t.Fatalf("the decider got %+v", o)
		}
		if got, _ := f.a.Get(context.Background(), a.ID); got.State != approval.StateFrozen {
			t.Fatalf("state %s, want frozen", got.State)
		}
		if f.tool.runs.Load() != 1 || f.audit.count(a.ID, audit.EventExecuteUnknown) != 1 || f.audit.count(a.ID, audit.EventExecute) != 1 {
			t.Fatalf("runs %d, execute_unknown %d, execute %d", f.tool.runs.Load(), f.audit.count(a.ID, audit.EventExecuteUnknown), f.audit.count(a.ID, audit.EventExecute))
		}
		if st := f.notes.settledWith(a.ID); len(st) != 1 || st[0] != approval.StatusFrozen {
			t.Fatalf("card settled %v, want [frozen]", st)
		}
	})
}

// unreplicated is a store whose every approve claim comes back
// Unreplicated, as a Redis store with replica_acks does when the replicas
// do not acknowledge it in time.
type unreplicated struct{ approval.Store }

func (s unreplicated) Claim(ctx context.Context, id approval.ID, req approval.ClaimRequest) (approval.ClaimResult, error) {
	r, err := s.Store.Claim(ctx, id, req)
	if err == nil && r.Code == approval.ClaimOK && !r.Ended {
		r.Unreplicated = true
	}
	return r, err
}

// A claim the store's replicas did not acknowledge runs nothing: the
// approval fails (audited execute_failed, card settled failed) and the
// waiter learns it.
func TestUnreplicatedClaimRunsNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be, func(s approval.Store) approval.Store { return unreplicated{s} })
		a := request(t, f.a)
		waited := waitAsync(t, f.a, a.ID)
		o := decide(t, f.b, a.ID, decision(a, approval.Approve, "bob"))
		if o.Status != approval.StatusFailed || !strings.Contains(o.Content, "replicas") || f.tool.runs.Load() != 0 {
			t.Fatalf("outcome %+v, runs %d", o, f.tool.runs.Load())
		}
		if w := recv(t, waited); w.Status != approval.StatusFailed {
			t.Fatalf("Wait = %+v", w)
		}
		if f.audit.count(a.ID, audit.EventExecuteFailed) != 1 || f.audit.count(a.ID, audit.EventExecute) != 0 {
			t.Fatal("not audited as execute_failed")
		}
		if st := f.notes.settledWith(a.ID); len(st) != 1 || st[0] != approval.StatusFailed {
			t.Fatalf("card settled %v", st)
		}
	})
}

// twoReplicasExactlyOnce checks a fixture's two engines on a shared store:
// a Wait on A is woken by a decision on B and the tool runs once; then n
// concurrent approvals of one approval (requested on requester), half on
// each engine, run the tool exactly once and audit one execute.
func twoReplicasExactlyOnce(t *testing.T, f *fixture, requester *approval.Engine, n int) {
	t.Helper()
	a := request(t, f.a)
	ch := waitAsync(t, f.a, a.ID)
	if o := decide(t, f.b, a.ID, decision(a, approval.Approve, "bob")); o.Status != approval.StatusExecuted {
		t.Fatalf("Decide on B = %+v", o)
	}
	if w := recv(t, ch); w.Status != approval.StatusExecuted {
		t.Fatalf("Wait on A = %+v, want executed", w)
	}
	if got := f.tool.runs.Load(); got != 1 {
		t.Fatalf("tool ran %d times, want 1", got)
	}

	a = request(t, requester)
	var wg sync.WaitGroup
	var won, already atomic.Int64
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := f.a
			if i%2 == 1 {
				e = f.b
			}
			o, err := e.Decide(context.Background(), a.ID, decision(a, approval.Approve, "bob"))
			switch {
			case err != nil:
				t.Error(err)
			case o.Status == approval.StatusExecuted:
				won.Add(1)
			case o.Status == approval.StatusAlreadyDecided:
				already.Add(1)
			default:
				t.Errorf("unexpected outcome %+v", o)
			}
		}()
	}
	wg.Wait()
	if won.Load() != 1 || already.Load() != int64(n-1) {
		t.Fatalf("%d executed, %d already_decided; want 1 and %d", won.Load(), already.Load(), n-1)
	}
	if got := f.tool.runs.Load(); got != 2 {
		t.Fatalf("tool ran %d times in all, want 2", got)
	}
	if c := f.audit.count(a.ID, audit.EventExecute); c != 1 {
		t.Fatalf("audit has %d execute records, want 1", c)
	}
}

// endListener records what the engine's Ended listener hears, with the
// settles the notifier had recorded by then.
type endListener struct {
	n      *notifier
	mu     sync.Mutex
	heard  []approval.Status
	after  [][]approval.Status // the notifier's settles of the approval when heard
	waited []bool
}

func (l *endListener) Ended(a *approval.Approval, o approval.Outcome, waited bool) {
	settled := l.n.settledWith(a.ID)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.heard = append(l.heard, o.Status)
	l.after = append(l.after, settled)
	l.waited = append(l.waited, waited)
}

// endedEngine is an engine on a memory store whose notifier and Ended
// listener record what they hear.
func endedEngine(t *testing.T) (*approval.Engine, *notifier, *endListener) {
	t.Helper()
	notes := &notifier{}
	ends := &endListener{n: notes}
	e, err := approval.NewEngine(approval.EngineConfig{Store: memstore.New(memstore.Options{}), Notifier: notes, Ended: ends,
		Dispatcher: &counterTool{}, Audit: &recorder{}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return e, notes, ends
}

// TestEndedHeardAfterSettle: the Ended listener hears of an approval that
// ends once, on the engine that ended it, after its cards were settled;
// a decision that comes too late is not heard again.
func TestEndedHeardAfterSettle(t *testing.T) {
	e, _, ends := endedEngine(t)
	a := request(t, e)
	if o, err := e.Decide(context.Background(), a.ID, decision(a, approval.Approve, "bob")); err != nil || o.Status != approval.StatusExecuted {
		t.Fatalf("decide: %+v, %v", o, err)
	}
	if o, err := e.Decide(context.Background(), a.ID, decision(a, approval.Reject, "carol")); err != nil || o.Status != approval.StatusAlreadyDecided {
		t.Fatalf("second decision: %+v, %v", o, err)
	}
	ends.mu.Lock()
	defer ends.mu.Unlock()
	if len(ends.heard) != 1 || ends.heard[0] != approval.StatusExecuted {
		t.Fatalf("heard %v, want [executed]", ends.heard)
	}
	if len(ends.after[0]) != 1 || ends.after[0][0] != approval.StatusExecuted {
		t.Fatalf("heard before the cards were settled (settled %v)", ends.after[0])
	}
}

// TestEndedSaysWhetherAWaitTakesIt: the Ended listener hears that a Wait
// of its engine takes the outcome when that engine requested the approval
// (its Wait is blocked on it, or begins with the outcome kept for it), and
// not when the approval was requested by another engine that waits for it
// (the turn there claims it; the one here must resume it or stand aside
// by the claim alone).
func TestEndedSaysWhetherAWaitTakesIt(t *testing.T) {
	st := memstore.New(memstore.Options{})
	here, there := &endListener{n: &notifier{}}, &endListener{n: &notifier{}}
	mk := func(l *endListener) *approval.Engine {
		e, err := approval.NewEngine(approval.EngineConfig{Store: st, Notifier: l.n, Ended: l, Dispatcher: &counterTool{}, Audit: &recorder{}, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	a, b := mk(here), mk(there)
	mine := request(t, a)
	if _, err := a.Decide(context.Background(), mine.ID, decision(mine, approval.Approve, "bob")); err != nil {
		t.Fatal(err)
	}
	theirs := request(t, b)
	if _, err := a.Decide(context.Background(), theirs.ID, decision(theirs, approval.Approve, "bob")); err != nil {
		t.Fatal(err)
	}
	here.mu.Lock()
	defer here.mu.Unlock()
	if want := []bool{true, false}; !slices.Equal(here.waited, want) {
		t.Fatalf("waited %v, want %v (its own approval, then another engine's)", here.waited, want)
	}
}

// TestEndedHeardOnceWhenDecidedDuringShow: a decision that ends an
// approval while its card is still being sent settles the card late
// (Request settles what the decision could not know of), and the Ended
// listener still hears of the approval once, with the Wait that takes it:
// a second hearing, without it, queued a resumption that raced the
// waiting turn (channels/api TestTypedConfirmAndCancel, 5 in 100 under
// load).
func TestEndedHeardOnceWhenDecidedDuringShow(t *testing.T) {
	e, notes, ends := endedEngine(t)
	notes.onShow = func(a *approval.Approval) {
		if o, err := e.Decide(context.Background(), a.ID, decision(a, approval.Reject, "bob")); err != nil || o.Status != approval.StatusRejected {
			t.Errorf("decide during show: %+v, %v", o, err)
		}
	}
	a := request(t, e)
	if got := notes.settledWith(a.ID); !slices.Equal(got, []approval.Status{approval.StatusRejected}) {
		t.Fatalf("settled %v, want the late card settled once: [rejected]", got)
	}
	ends.mu.Lock()
	defer ends.mu.Unlock()
	if !slices.Equal(ends.heard, []approval.Status{approval.StatusRejected}) || !slices.Equal(ends.waited, []bool{true}) {
		t.Fatalf("heard %v (waited %v), want [rejected] once, taken by the Wait to come", ends.heard, ends.waited)
	}
}
