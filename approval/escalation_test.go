package approval_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
)

// escalationNotes is the test notifier that also carries out escalation
// steps (Notifier.Escalate): it records each step and returns one card
// in the step's chat, or fails when failing is set.
type escalationNotes struct {
	*notifier
	mu       sync.Mutex
	steps    []int
	failing  bool
	progress int
}

func (n *escalationNotes) Escalate(ctx context.Context, a *approval.Approval, step int) ([]approval.CardRef, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.steps = append(n.steps, step)
	if n.failing {
		return nil, context.DeadlineExceeded
	}
	to := a.Escalation[step].To
	return []approval.CardRef{{Channel: to.Channel, ChatID: to.ChatID, MessageID: "esc-" + string(a.ID)}}, nil
}

func (n *escalationNotes) Progress(ctx context.Context, a *approval.Approval) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.progress++
	return nil
}

func (n *escalationNotes) taken() []int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]int(nil), n.steps...)
}

// escalatesTo is a request modifier: after 1m, dave may decide too, and
// the approval is shown in feishu oc_oncall.
func escalatesTo(r *approval.Request) {
	r.Verdict.Approvers = approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"bob"}}
	r.Verdict.Escalation = []approval.Escalation{{After: time.Minute, To: approval.Place{Channel: "feishu", ChatID: "oc_oncall"},
		Approvers: approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"dave"}}}}
}

// TestEscalationEngine: two replicas sweep at once when nobody decided
// within the step's time; the step is taken once (one audit record, one
// card in the on-call chat, recorded on the approval), dave may decide
// from then on (not before), and his approve runs the tool once and
// settles both cards.
func TestEscalationEngine(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		en := &escalationNotes{notifier: f.notes}
		mk := func(s approval.Store) *approval.Engine {
			e, err := approval.NewEngine(approval.EngineConfig{Store: s, Notifier: en, Dispatcher: f.tool, Audit: f.audit, Clock: f.clk, PollInterval: time.Hour, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			return e
		}
		e1, e2 := mk(f.sa), mk(f.sa)
		a := request(t, e1, escalatesTo)
		if o := decide(t, e2, a.ID, decision(a, approval.Approve, "dave")); o.Status != approval.StatusUnauthorized {
			t.Fatalf("dave before the step = %+v", o)
		}
		f.clk.Advance(30 * time.Second)
		if n, err := e1.Sweep(t.Context()); err != nil || n != 0 {
			t.Fatalf("sweep before the step = %d, %v", n, err)
		}
		f.clk.Advance(30 * time.Second)
		var wg sync.WaitGroup
		var taken [2]int
		for i, e := range []*approval.Engine{e1, e2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := e.Sweep(t.Context())
				if err != nil {
					t.Error(err)
				}
				taken[i] = n
			}()
		}
		wg.Wait()
		if taken[0]+taken[1] != 1 || len(en.taken()) != 1 || f.audit.count(a.ID, audit.EventEscalate) != 1 {
			t.Fatalf("steps taken %v, shown %v, %d audit records; want one", taken, en.taken(), f.audit.count(a.ID, audit.EventEscalate))
		}
		rec, err := e1.Get(t.Context(), a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Escalated != 1 || len(rec.Cards) != 2 || rec.Cards[1].ChatID != "oc_oncall" {
			t.Fatalf("after the step: %d taken, cards %+v", rec.Escalated, rec.Cards)
		}
		if en.progress == 0 {
			t.Fatal("the cards were not redrawn after the step")
		}
		if got := rec.ApproversIn("en", "test", "chat-1"); !strings.Contains(got, "after escalation also dave") {
			t.Fatalf("ApproversIn = %q", got)
		}
		if n, _ := e2.Sweep(t.Context()); n != 0 {
			t.Fatalf("a later sweep took %d more steps", n)
		}
		o := decide(t, e2, a.ID, decision(a, approval.Approve, "dave"))
		if o.Status != approval.StatusExecuted || f.tool.runs.Load() != 1 {
			t.Fatalf("dave after the step = %+v, %d runs", o, f.tool.runs.Load())
		}
	})
}

// TestEscalationNotShownStillWaits: a step whose chat cannot be reached
// is audited with its error; the approval still waits, and the step's
// person may decide all the same.
func TestEscalationNotShownStillWaits(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		en := &escalationNotes{notifier: f.notes, failing: true}
		e, err := approval.NewEngine(approval.EngineConfig{Store: f.sa, Notifier: en, Dispatcher: f.tool, Audit: f.audit, Clock: f.clk, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		a := request(t, e, escalatesTo)
		f.clk.Advance(time.Minute)
		if n, err := e.Sweep(t.Context()); err != nil || n != 1 {
			t.Fatalf("sweep = %d, %v", n, err)
		}
		recs := f.audit.of(a.ID, audit.EventEscalate)
		if len(recs) != 1 || recs[0].Error == "" {
			t.Fatalf("escalate records %+v, want one with its error", recs)
		}
		if o := decide(t, e, a.ID, decision(a, approval.Reject, "dave")); o.Status != approval.StatusRejected {
			t.Fatalf("dave's veto = %+v", o)
		}
	})
}

// TestEscalationBoundedByExpiry: a step due at or after the expiry is
// never taken; the approval expires.
func TestEscalationBoundedByExpiry(t *testing.T) {
	f := newFixture(t, backends[0])
	en := &escalationNotes{notifier: f.notes}
	e, err := approval.NewEngine(approval.EngineConfig{Store: f.sa, Notifier: en, Dispatcher: f.tool, Audit: f.audit, Clock: f.clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	a := request(t, e, escalatesTo, func(r *approval.Request) { r.Verdict.Timeout = time.Minute })
	f.clk.Advance(time.Minute)
	if _, err := e.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(en.taken()) != 0 {
		t.Fatalf("a step was taken at the expiry: %v", en.taken())
	}
	if rec, _ := e.Get(t.Context(), a.ID); rec.State != approval.StateExpired {
		t.Fatalf("state %s, want expired", rec.State)
	}
}

// cardSettles counts the settles of each card (by message id).
type cardSettles struct {
	*escalationNotes
	mu sync.Mutex
	n  map[string]int
}

func (c *cardSettles) Settle(ctx context.Context, a *approval.Approval, o approval.Outcome) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ref := range a.Cards {
		c.n[ref.MessageID]++
	}
	return nil
}

// TestEscalationWhileTheCardIsSent: the approval's first card is still
// being sent when its escalation step is taken and a person decides it
// (a slow chat API): each card is settled once, the escalation's by the
// decision, the first one by the request when its send returns.
func TestEscalationWhileTheCardIsSent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		cs := &cardSettles{escalationNotes: &escalationNotes{notifier: f.notes}, n: map[string]int{}}
		e, err := approval.NewEngine(approval.EngineConfig{Store: f.sa, Notifier: cs, Dispatcher: f.tool, Audit: f.audit, Clock: f.clk, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		f.notes.onShow = func(a *approval.Approval) {
			f.clk.Advance(time.Minute)
			if n, err := e.Sweep(context.Background()); err != nil || n != 1 {
				t.Errorf("sweep while the card is sent: %d, %v", n, err)
			}
			if o, err := e.Decide(context.Background(), a.ID, decision(a, approval.Approve, "dave")); err != nil || o.Status != approval.StatusExecuted {
				t.Errorf("dave's approve while the card is sent = %+v, %v", o, err)
			}
		}
		a := request(t, e, escalatesTo)
		cs.mu.Lock()
		defer cs.mu.Unlock()
		if cs.n["m-"+string(a.ID)] != 1 || cs.n["esc-"+string(a.ID)] != 1 || len(cs.n) != 2 {
			t.Fatalf("settles per card %v, want each card once", cs.n)
		}
	})
}
