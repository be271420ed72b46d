package storetest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

// reminding returns a (NewApproval: expiring at T0+5m) with reminders at
// 50 % and 90 % of its window: T0+2m30s and T0+4m30s.
func reminding(t *testing.T) *approval.Approval {
	a := NewApproval(t)
	a.Reminders = []float64{0.5, 0.9}
	return a
}

func remind(t *testing.T, s approval.Store, id approval.ID, now time.Time) approval.RemindResult {
	t.Helper()
	r, err := s.Remind(ctx(t), id, now)
	if err != nil {
		t.Fatalf("Remind(%s, %v): %v", id, now, err)
	}
	return r
}

func reminders(t *testing.T, s approval.Store, now time.Time) []approval.ID {
	t.Helper()
	ids, err := s.Reminders(ctx(t), now, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// testReminderRoundTrip: the reminders are kept, none behind; an approval
// without reminders has none and is not in the index.
func testReminderRoundTrip(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := reminding(t)
	put(t, s, a)
	got := get(t, s, a.ID)
	if !slices.Equal(got.Reminders, a.Reminders) || got.Reminded != 0 {
		t.Fatalf("Reminders = %v (%d behind), want %v", got.Reminders, got.Reminded, a.Reminders)
	}
	b := NewApproval(t)
	put(t, s, b)
	if got := get(t, s, b.ID); len(got.Reminders) != 0 {
		t.Fatalf("an approval without reminders has %v", got.Reminders)
	}
	if ids := reminders(t, s, T0.Add(time.Hour)); contains(ids, b.ID) || !contains(ids, a.ID) {
		t.Fatalf("Reminders = %v: want %s and not %s", ids, a.ID, b.ID)
	}
}

// testRemindSteps: each reminder is taken once, at its time, in order;
// the index holds the approval at its next reminder's time and drops it
// after the last.
func testRemindSteps(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := reminding(t)
	put(t, s, a)
	half, late := T0.Add(150*time.Second), T0.Add(270*time.Second)
	if ids := reminders(t, s, half.Add(-time.Millisecond)); contains(ids, a.ID) {
		t.Fatalf("due before 50 %%: %v", ids)
	}
	if r := remind(t, s, a.ID, half.Add(-time.Second)); r.Code != approval.RemindNotDue || r.Approval.Reminded != 0 {
		t.Fatalf("early Remind = %s (%d behind), want not_due", r.Code, r.Approval.Reminded)
	}
	if ids := reminders(t, s, half); !contains(ids, a.ID) {
		t.Fatalf("not due at 50 %%: %v", ids)
	}
	r := remind(t, s, a.ID, half)
	if r.Code != approval.RemindTaken || r.N != 0 || r.Approval.Reminded != 1 || r.Approval.State != approval.StatePending {
		t.Fatalf("the 50 %% reminder = %+v", r)
	}
	if got := get(t, s, a.ID); got.Reminded != 1 {
		t.Fatalf("Reminded = %d after the first", got.Reminded)
	}
	if r := remind(t, s, a.ID, half); r.Code != approval.RemindNotDue {
		t.Fatalf("the 50 %% reminder again = %s, want not_due (the next is later)", r.Code)
	}
	if ids := reminders(t, s, half.Add(time.Second)); contains(ids, a.ID) {
		t.Fatalf("still due after its first reminder: %v", ids)
	}
	if ids := reminders(t, s, late); !contains(ids, a.ID) {
		t.Fatalf("not due at 90 %%: %v", ids)
	}
	if r := remind(t, s, a.ID, late); r.Code != approval.RemindTaken || r.N != 1 || r.Approval.Reminded != 2 {
		t.Fatalf("the 90 %% reminder = %+v", r)
	}
	if r := remind(t, s, a.ID, late); r.Code != approval.RemindNone {
		t.Fatalf("after the last = %s, want none", r.Code)
	}
	if ids := reminders(t, s, T0.Add(time.Hour)); contains(ids, a.ID) {
		t.Fatalf("in the index after its last reminder: %v", ids)
	}
	if r := remind(t, s, approval.NewID("test:nobody"), T0); r.Code != approval.RemindMissing {
		t.Fatalf("unknown id = %s", r.Code)
	}
}

// testRemindLate: a sweep that comes when both reminders are due sends
// the later one only; the earlier is passed over.
func testRemindLate(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := reminding(t)
	put(t, s, a)
	r := remind(t, s, a.ID, T0.Add(280*time.Second))
	if r.Code != approval.RemindTaken || r.N != 1 || r.Approval.Reminded != 2 {
		t.Fatalf("late Remind = %+v, want the 90 %% one taken", r)
	}
	if r := remind(t, s, a.ID, T0.Add(280*time.Second)); r.Code != approval.RemindNone {
		t.Fatalf("again = %s, want none", r.Code)
	}
}

// testRemindEnded: no reminder is taken of an approval that is claimed,
// rejected, cancelled, or past its expiry; it leaves the index.
func testRemindEnded(t *testing.T, s approval.Store, _ func(time.Duration)) {
	claimed := reminding(t)
	put(t, s, claimed)
	claim(t, s, claimed.ID, approve(claimed))
	rejected := reminding(t)
	put(t, s, rejected)
	req := approve(rejected)
	req.Intent = approval.IntentReject
	claim(t, s, rejected.ID, req)
	cancelled := reminding(t)
	put(t, s, cancelled)
	if _, ok, err := s.Cancel(ctx(t), cancelled.ID, approval.Outcome{Status: approval.StatusCancelled}, T0.Add(time.Second)); err != nil || !ok {
		t.Fatalf("Cancel = %v, %v", ok, err)
	}
	late := reminding(t)
	put(t, s, late)
	for _, c := range []struct {
		name string
		a    *approval.Approval
		now  time.Time
	}{{"claimed", claimed, T0.Add(150 * time.Second)}, {"rejected", rejected, T0.Add(150 * time.Second)},
		{"cancelled", cancelled, T0.Add(150 * time.Second)}, {"past its expiry", late, T0.Add(5 * time.Minute)}} {
		r := remind(t, s, c.a.ID, c.now)
		if r.Code != approval.RemindNone {
			t.Fatalf("%s: Remind = %s, want none", c.name, r.Code)
		}
		if got := get(t, s, c.a.ID); got.Reminded != 0 {
			t.Fatalf("%s: a reminder was taken", c.name)
		}
		if ids := reminders(t, s, T0.Add(time.Hour)); contains(ids, c.a.ID) {
			t.Fatalf("%s: still in the index", c.name)
		}
	}
}

// testConcurrentRemind: of many sweepers (replicas) taking the same
// reminder at once, exactly one takes it.
func testConcurrentRemind(t *testing.T, s approval.Store, _ func(time.Duration)) {
	for round := 0; round < 5; round++ {
		a := reminding(t)
		put(t, s, a)
		var wg sync.WaitGroup
		var mu sync.Mutex
		taken := 0
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := s.Remind(ctx(t), a.ID, T0.Add(200*time.Second))
				if err != nil {
					t.Error(err)
					return
				}
				if r.Code == approval.RemindTaken {
					mu.Lock()
					taken++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if got := get(t, s, a.ID); taken != 1 || got.Reminded != 1 {
			t.Fatalf("round %d: %d sweepers took the reminder; Reminded = %d", round, taken, got.Reminded)
		}
	}
}
