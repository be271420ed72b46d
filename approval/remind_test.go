package approval_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

// remindNotes is the test notifier that records each reminder
// (Notifier.Remind): the approval and the reminder's number.
type remindNotes struct {
	*notifier
	mu   sync.Mutex
	sent []string
}

func (n *remindNotes) Remind(ctx context.Context, a *approval.Approval, k int) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if a.State != approval.StatePending {
		return fmt.Errorf("reminded of a %s approval", a.State)
	}
	n.sent = append(n.sent, fmt.Sprintf("%s#%d", a.ID, k))
	return nil
}

func (n *remindNotes) got() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.sent)
}

// sweepAll sweeps with every engine at once, as replicas do.
func sweepAll(t *testing.T, es ...*approval.Engine) {
	t.Helper()
	var wg sync.WaitGroup
	for _, e := range es {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.Sweep(t.Context()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

// TestRemindersOncePerApproval: two replicas (engines sharing one store)
// sweep together through a 10-minute approval with reminders at 50 % and
// 90 %: each reminder goes out exactly once, at its time (5m, 9m), none
// before; an approval decided before its reminders gets none.
func TestRemindersOncePerApproval(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		rn := &remindNotes{notifier: f.notes}
		mk := func(s approval.Store) *approval.Engine {
			e, err := approval.NewEngine(approval.EngineConfig{Store: s, Notifier: rn, Dispatcher: f.tool, Audit: f.audit, Clock: f.clk,
				PollInterval: time.Hour, Logger: quiet, Reminders: []float64{0.5, 0.9}})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			return e
		}
		e1, e2 := mk(f.sa), mk(f.sb)
		ten := func(r *approval.Request) { r.Verdict.Timeout = 10 * time.Minute }
		a := request(t, e1, ten)
		decided := request(t, e2, ten)
		if got := a.Reminders; !slices.Equal(got, []float64{0.5, 0.9}) {
			t.Fatalf("Reminders = %v", got)
		}
		if o := decide(t, e2, decided.ID, decision(decided, approval.Approve, "bob")); o.Status != approval.StatusExecuted {
			t.Fatalf("decide = %+v", o)
		}
		steps := []struct {
			advance time.Duration
			want    []string
		}{
			{4*time.Minute + 59*time.Second, nil},
			{time.Second, []string{string(a.ID) + "#0"}},
			{3 * time.Minute, []string{string(a.ID) + "#0"}},
			{time.Minute, []string{string(a.ID) + "#0", string(a.ID) + "#1"}},
			{30 * time.Second, []string{string(a.ID) + "#0", string(a.ID) + "#1"}},
		}
		for i, st := range steps {
			f.clk.Advance(st.advance)
			sweepAll(t, e1, e2)
			sweepAll(t, e1, e2)
			if got := rn.got(); !slices.Equal(got, st.want) {
				t.Fatalf("step %d (+%v): reminders %v, want %v", i, st.advance, got, st.want)
			}
		}
	})
}

// TestNoReminderAfterTheDecision: an approval decided between its two
// reminders gets no second one.
func TestNoReminderAfterTheDecision(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		rn := &remindNotes{notifier: f.notes}
		e, err := approval.NewEngine(approval.EngineConfig{Store: f.sa, Notifier: rn, Dispatcher: f.tool, Audit: f.audit, Clock: f.clk,
			PollInterval: time.Hour, Logger: quiet, Reminders: []float64{0.5, 0.9}})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		a := request(t, e)
		f.clk.Advance(150 * time.Second)
		sweepAll(t, e)
		if o := decide(t, e, a.ID, decision(a, approval.Reject, "bob")); o.Status != approval.StatusRejected {
			t.Fatalf("decide = %+v", o)
		}
		f.clk.Advance(2 * time.Minute)
		sweepAll(t, e)
		if got := rn.got(); !slices.Equal(got, []string{string(a.ID) + "#0"}) {
			t.Fatalf("reminders %v, want the first only", got)
		}
	})
}

// TestRemindersRefused: reminders that are not fractions of the window in
// order are a configuration error.
func TestRemindersRefused(t *testing.T) {
	f := newFixture(t, backends[0])
	for _, rs := range [][]float64{{0}, {1}, {0.9, 0.5}, {0.5, 0.5}, {0.1, 0.2, 0.3, 0.4, 0.5}, {-0.1}} {
		if _, err := approval.NewEngine(approval.EngineConfig{Store: f.sa, Dispatcher: f.tool, Audit: f.audit, Reminders: rs}); err == nil {
			t.Errorf("reminders %v accepted", rs)
		}
	}
}
