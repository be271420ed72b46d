package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

// stepKind is a kind of timed step that the suite tests the same way: a
// reminder (reminderSteps) or an escalation step (escalationSteps). C is
// the kind's result code.
type stepKind[C ~string] struct {
	name string // in messages
	// new returns an approval (NewApproval, expiring at T0+5m) with two
	// steps of the kind, due at T0+at[0] and T0+at[1].
	new func(*testing.T) *approval.Approval
	at  [2]time.Duration
	// skips: a sweep that comes when both steps are due takes the later
	// one only (a reminder), not the first (an escalation step).
	skips bool
	// list, take: the Store's index and its step; count: the steps taken
	// of a; kept: whether got keeps want's steps.
	list  func(approval.Store, context.Context, time.Time, int) ([]approval.ID, error)
	take  func(context.Context, approval.Store, approval.ID, time.Time) (C, *approval.Approval, int, error)
	count func(a *approval.Approval) int
	kept  func(got, want *approval.Approval) bool
	// The kind's result codes.
	taken, notDue, none, missing C
}

// reminding returns a (NewApproval: expiring at T0+5m) with reminders at
// 50 % and 90 % of its window: T0+2m30s and T0+4m30s.
func reminding(t *testing.T) *approval.Approval {
	a := NewApproval(t)
	a.Reminders = []float64{0.5, 0.9}
	return a
}

var reminderSteps = stepKind[approval.RemindCode]{
	name: "reminder", new: reminding, at: [2]time.Duration{150 * time.Second, 270 * time.Second}, skips: true,
	list: approval.Store.Reminders,
	take: func(c context.Context, s approval.Store, id approval.ID, now time.Time) (approval.RemindCode, *approval.Approval, int, error) {
		r, err := s.Remind(c, id, now)
		return r.Code, r.Approval, r.N, err
	},
	count: func(a *approval.Approval) int { return a.Reminded },
	kept:  func(got, want *approval.Approval) bool { return slices.Equal(got.Reminders, want.Reminders) },
	taken: approval.RemindTaken, notDue: approval.RemindNotDue, none: approval.RemindNone, missing: approval.RemindMissing,
}

var escalationSteps = stepKind[approval.EscalateCode]{
	name: "escalation step", new: escalating, at: [2]time.Duration{time.Minute, 2 * time.Minute},
	list: approval.Store.Escalations,
	take: func(c context.Context, s approval.Store, id approval.ID, now time.Time) (approval.EscalateCode, *approval.Approval, int, error) {
		r, err := s.Escalate(c, id, now)
		return r.Code, r.Approval, r.Step, err
	},
	count: func(a *approval.Approval) int { return a.Escalated },
	kept: func(got, want *approval.Approval) bool {
		return fmt.Sprint(got.Escalation) == fmt.Sprint(want.Escalation)
	},
	taken: approval.EscalateTaken, notDue: approval.EscalateNotDue, none: approval.EscalateNone, missing: approval.EscalateMissing,
}

// stepResult is what one take returned.
type stepResult[C ~string] struct {
	Code     C
	Approval *approval.Approval
	N        int
}

func (k stepKind[C]) do(t *testing.T, s approval.Store, id approval.ID, now time.Time) stepResult[C] {
	t.Helper()
	code, a, n, err := k.take(ctx(t), s, id, now)
	if err != nil {
		t.Fatalf("taking the %s of %s at %v: %v", k.name, id, now, err)
	}
	return stepResult[C]{code, a, n}
}

func (k stepKind[C]) due(t *testing.T, s approval.Store, now time.Time) []approval.ID {
	t.Helper()
	ids, err := k.list(s, ctx(t), now, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// testStepRoundTrip: the steps are kept, none taken; an approval without
// steps has none and is not in the index.
func testStepRoundTrip[C ~string](k stepKind[C]) func(*testing.T, approval.Store, func(time.Duration)) {
	return func(t *testing.T, s approval.Store, _ func(time.Duration)) {
		a := k.new(t)
		put(t, s, a)
		if got := get(t, s, a.ID); !k.kept(got, a) || k.count(got) != 0 {
			t.Fatalf("got %+v (%d taken), want the %ss of %+v", got, k.count(got), k.name, a)
		}
		b := NewApproval(t)
		put(t, s, b)
		if got := get(t, s, b.ID); !k.kept(got, b) {
			t.Fatalf("an approval without %ss has some: %+v", k.name, got)
		}
		if ids := k.due(t, s, T0.Add(time.Hour)); contains(ids, b.ID) || !contains(ids, a.ID) {
			t.Fatalf("due = %v: want %s and not %s", ids, a.ID, b.ID)
		}
	}
}

// testStepSteps: each step is taken once, at its time, in order; the
// index holds the approval at its next step's time and drops it after the
// last.
func testStepSteps[C ~string](k stepKind[C]) func(*testing.T, approval.Store, func(time.Duration)) {
	return func(t *testing.T, s approval.Store, _ func(time.Duration)) {
		a := k.new(t)
		put(t, s, a)
		first, second := T0.Add(k.at[0]), T0.Add(k.at[1])
		if ids := k.due(t, s, first.Add(-time.Millisecond)); contains(ids, a.ID) {
			t.Fatalf("due before its first %s: %v", k.name, ids)
		}
		if r := k.do(t, s, a.ID, first.Add(-time.Second)); r.Code != k.notDue || k.count(r.Approval) != 0 {
			t.Fatalf("early = %s (%d taken), want %s", r.Code, k.count(r.Approval), k.notDue)
		}
		if ids := k.due(t, s, first); !contains(ids, a.ID) {
			t.Fatalf("not due at its first %s: %v", k.name, ids)
		}
		r := k.do(t, s, a.ID, first)
		if r.Code != k.taken || r.N != 0 || k.count(r.Approval) != 1 || r.Approval.State != approval.StatePending {
			t.Fatalf("the first %s = %+v", k.name, r)
		}
		if got := get(t, s, a.ID); k.count(got) != 1 {
			t.Fatalf("%d taken after the first %s", k.count(got), k.name)
		}
		if r := k.do(t, s, a.ID, first); r.Code != k.notDue {
			t.Fatalf("the first %s again = %s, want %s (the second is later)", k.name, r.Code, k.notDue)
		}
		if ids := k.due(t, s, first.Add(time.Second)); contains(ids, a.ID) {
			t.Fatalf("still due after its first %s: %v", k.name, ids)
		}
		if ids := k.due(t, s, second); !contains(ids, a.ID) {
			t.Fatalf("not due at its second %s: %v", k.name, ids)
		}
		// A little after its time: still taken.
		if r := k.do(t, s, a.ID, second.Add(10*time.Second)); r.Code != k.taken || r.N != 1 || k.count(r.Approval) != 2 {
			t.Fatalf("the second %s = %+v", k.name, r)
		}
		if r := k.do(t, s, a.ID, second.Add(10*time.Second)); r.Code != k.none {
			t.Fatalf("after the last %s = %s, want %s", k.name, r.Code, k.none)
		}
		if ids := k.due(t, s, T0.Add(time.Hour)); contains(ids, a.ID) {
			t.Fatalf("in the index after its last %s: %v", k.name, ids)
		}
		if r := k.do(t, s, approval.NewID("test:nobody"), T0); r.Code != k.missing {
			t.Fatalf("unknown id = %s", r.Code)
		}
	}
}

// testStepLate: a sweep that comes when both steps are due takes the
// later one only, the earlier passed over (a reminder), or takes them one
// by one (an escalation step).
func testStepLate[C ~string](k stepKind[C]) func(*testing.T, approval.Store, func(time.Duration)) {
	return func(t *testing.T, s approval.Store, _ func(time.Duration)) {
		a := k.new(t)
		put(t, s, a)
		late := T0.Add(k.at[1] + 10*time.Second)
		want := 0
		if k.skips {
			want = 1
		}
		if r := k.do(t, s, a.ID, late); r.Code != k.taken || r.N != want || k.count(r.Approval) != want+1 {
			t.Fatalf("late = %+v, want %s %d taken", r, k.name, want)
		}
		if !k.skips {
			if r := k.do(t, s, a.ID, late); r.Code != k.taken || r.N != 1 || k.count(r.Approval) != 2 {
				t.Fatalf("late again = %+v, want the second %s taken", r, k.name)
			}
		}
		if r := k.do(t, s, a.ID, late); r.Code != k.none {
			t.Fatalf("after the last = %s, want %s", r.Code, k.none)
		}
	}
}

// testStepEnded: no step is taken of an approval that is claimed,
// rejected, cancelled, or past its expiry (the expiry bounds them all);
// it leaves the index.
func testStepEnded[C ~string](k stepKind[C]) func(*testing.T, approval.Store, func(time.Duration)) {
	return func(t *testing.T, s approval.Store, _ func(time.Duration)) {
		claimed := k.new(t)
		put(t, s, claimed)
		claim(t, s, claimed.ID, approve(claimed))
		rejected := k.new(t)
		put(t, s, rejected)
		req := approve(rejected)
		req.Intent = approval.IntentReject
		claim(t, s, rejected.ID, req)
		cancelled := k.new(t)
		put(t, s, cancelled)
		if _, ok, err := s.Cancel(ctx(t), cancelled.ID, approval.Outcome{Status: approval.StatusCancelled}, T0.Add(time.Second)); err != nil || !ok {
			t.Fatalf("Cancel = %v, %v", ok, err)
		}
		late := k.new(t)
		put(t, s, late)
		first := T0.Add(k.at[0])
		for _, c := range []struct {
			name string
			a    *approval.Approval
			now  time.Time
		}{{"claimed", claimed, first}, {"rejected", rejected, first}, {"cancelled", cancelled, first}, {"past its expiry", late, T0.Add(5 * time.Minute)}} {
			if r := k.do(t, s, c.a.ID, c.now); r.Code != k.none {
				t.Fatalf("%s: %s, want %s", c.name, r.Code, k.none)
			}
			if got := get(t, s, c.a.ID); k.count(got) != 0 {
				t.Fatalf("%s: a %s was taken", c.name, k.name)
			}
			if ids := k.due(t, s, T0.Add(time.Hour)); contains(ids, c.a.ID) {
				t.Fatalf("%s: still in the index", c.name)
			}
		}
	}
}

// testStepConcurrent: of many sweepers (replicas) taking the same step at
// once, exactly one takes it.
func testStepConcurrent[C ~string](k stepKind[C]) func(*testing.T, approval.Store, func(time.Duration)) {
	return func(t *testing.T, s approval.Store, _ func(time.Duration)) {
		now := T0.Add((k.at[0] + k.at[1]) / 2)
		for round := 0; round < 5; round++ {
			a := k.new(t)
			put(t, s, a)
			var wg sync.WaitGroup
			var mu sync.Mutex
			taken := 0
			for i := 0; i < 8; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					code, _, _, err := k.take(ctx(t), s, a.ID, now)
					if err != nil {
						t.Error(err)
						return
					}
					if code == k.taken {
						mu.Lock()
						taken++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if got := get(t, s, a.ID); taken != 1 || k.count(got) != 1 {
				t.Fatalf("round %d: %d sweepers took the %s; %d taken", round, taken, k.name, k.count(got))
			}
		}
	}
}
