package channels_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/approval/memstore"
	. "github.com/hitlbot/hitlbot/channels"
)

// fakeDecider is a Decider with no engine behind it: it records the
// decisions and answers with outcome; Get and Pending read approvals.
type fakeDecider struct {
	outcome approval.Outcome

	mu        sync.Mutex
	decisions []fakeDecision
	approvals map[approval.ID]*approval.Approval
	pending   map[approval.SessionKey]*approval.Approval
}

type fakeDecision struct {
	id approval.ID
	d  approval.Decision
}

func (f *fakeDecider) Decide(_ context.Context, id approval.ID, d approval.Decision) (approval.Outcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.decisions = append(f.decisions, fakeDecision{id, d})
	return f.outcome, nil
}

func (f *fakeDecider) Get(_ context.Context, id approval.ID) (*approval.Approval, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a, ok := f.approvals[id]; ok {
		return a.Clone(), nil
	}
	return nil, approval.E("fake.Get", errkind.NotFound, id, errors.New("no such approval"))
}

func (f *fakeDecider) Pending(_ context.Context, s approval.SessionKey) (*approval.Approval, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pending[s].Clone(), nil
}

func (f *fakeDecider) decided() []fakeDecision {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeDecision(nil), f.decisions...)
}

// fakeSubmitter is a Submitter with no loop behind it: it records what it
// is given and refuses with err.
type fakeSubmitter struct {
	mu  sync.Mutex
	err error
	got []agent.Inbound
}

func (f *fakeSubmitter) Submit(in agent.Inbound) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.got = append(f.got, in)
	return nil
}

func (f *fakeSubmitter) submitted() []agent.Inbound {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]agent.Inbound(nil), f.got...)
}

// fakeRouter is a router on a fake Decider and a fake Submitter: no
// engine, no loop.
func fakeRouter(t *testing.T) (*Router, *fakeDecider, *fakeSubmitter, *fakeChannel, approval.Store) {
	t.Helper()
	dec := &fakeDecider{approvals: map[approval.ID]*approval.Approval{}, pending: map[approval.SessionKey]*approval.Approval{}}
	sub := &fakeSubmitter{}
	store := memstore.New(memstore.Options{})
	reg := NewRegistry()
	pres, err := NewPresenter(PresenterConfig{Registry: reg, Store: store, Lang: "en", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRouter(RouterConfig{Registry: reg, Presenter: pres, Decider: dec, Submitter: sub, Store: store, Lang: "en", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ch := newFake("fake")
	if err := reg.Register(ch); err != nil {
		t.Fatal(err)
	}
	return r, dec, sub, ch, store
}

// pendingIn puts a pending approval requested by alice in session
// "fake:c1" of store, as an engine would have.
func pendingIn(t *testing.T, store approval.Store) *approval.Approval {
	t.Helper()
	now := time.Now()
	a := &approval.Approval{ID: approval.NewID("fake:c1"), Session: "fake:c1", Channel: "fake", ChatID: "c1", Requester: "alice",
		Calls: []approval.Call{{Tool: "erase", Args: []byte(`{"target":"orders"}`)}}, PayloadSHA256: "sha", Risk: approval.RiskHigh,
		Summary: "erase: orders", CreatedAt: now.Add(-time.Minute), ExpiresAt: now.Add(time.Hour), State: approval.StatePending}
	if _, err := store.Put(context.Background(), a, approval.Outcome{}); err != nil {
		t.Fatal(err)
	}
	return a
}

// The router needs "decide" and "submit", not an engine and a loop: with
// fakes for both, a message is submitted, a busy Submitter is answered,
// a typed reply and a click are decided, and a repeated click reads the
// approval through the Decider.
func TestRouterOnFakeDeciderAndSubmitter(t *testing.T) {
	ctx := context.Background()
	r, dec, sub, ch, store := fakeRouter(t)

	m := msg("alice", "list tasks")
	if err := r.HandleMessage(ctx, m); err != nil {
		t.Fatal(err)
	}
	got := sub.submitted()
	if len(got) != 1 || got[0].Session != "fake:c1" || got[0].Channel != "fake" || got[0].ChatID != "c1" ||
		got[0].User != "alice" || got[0].MessageID != m.MessageID || got[0].Text != "list tasks" {
		t.Fatalf("submitted %+v", got)
	}
	if len(dec.decided()) != 0 || len(ch.texts()) != 0 {
		t.Fatalf("a plain message decided %v or said %v", dec.decided(), ch.texts())
	}

	sub.err = agent.ErrBusy
	if err := r.HandleMessage(ctx, msg("alice", "and again")); err != nil {
		t.Fatal(err)
	}
	if !ch.hasText("notice", "Too many messages are waiting") {
		t.Fatalf("a busy Submitter was not answered: %v", ch.texts())
	}
	sub.err = nil

	// A typed 确认 for the session's pending approval is the Decider's.
	a := pendingIn(t, store)
	dec.outcome = approval.Outcome{Status: approval.StatusExecuted}
	if err := r.HandleMessage(ctx, msg("alice", "确认")); err != nil {
		t.Fatal(err)
	}
	r.Drain()
	ds := dec.decided()
	if len(ds) != 1 || ds[0].id != a.ID || ds[0].d.Verb != approval.Approve || ds[0].d.Actor != "alice" ||
		ds[0].d.Source != approval.SourceReply || ds[0].d.PayloadSHA256 != "sha" || ds[0].d.Channel != "fake" || ds[0].d.ChatID != "c1" {
		t.Fatalf("decisions %+v", ds)
	}
	if !ch.hasText("notice", "Executed") {
		t.Fatalf("the typed decision's outcome was not said: %v", ch.texts())
	}
	if n := len(sub.submitted()); n != 1 {
		t.Fatalf("the typed reply was submitted too (%d submissions)", n)
	}

	// A click is the Decider's; the same click again reads the approval.
	click := CardAction{Channel: "fake", ChatID: "c1", MessageID: "card-1", EventID: "click-1", UserID: "bob",
		ApprovalID: a.ID, Verb: approval.Reject, PayloadSHA256: "sha", Comment: "not now"}
	dec.outcome = approval.Outcome{Status: approval.StatusRejected, DecidedBy: "bob"}
	o, err := r.HandleCardAction(ctx, click)
	if err != nil || o.Status != approval.StatusRejected {
		t.Fatalf("click: %+v, %v", o, err)
	}
	ds = dec.decided()
	if len(ds) != 2 || ds[1].id != a.ID || ds[1].d.Verb != approval.Reject || ds[1].d.Actor != "bob" || ds[1].d.Comment != "not now" {
		t.Fatalf("decisions %+v", ds)
	}
	ended := *a
	ended.State, ended.Outcome = approval.StateRejected, &approval.Outcome{Status: approval.StatusRejected, DecidedBy: "bob"}
	dec.mu.Lock()
	dec.approvals[a.ID] = &ended
	dec.mu.Unlock()
	o, err = r.HandleCardAction(ctx, click)
	if err != nil || o.Status != approval.StatusRejected || o.DecidedBy != "bob" {
		t.Fatalf("repeated click: %+v, %v", o, err)
	}
	if n := len(dec.decided()); n != 2 {
		t.Fatalf("the repeated click was decided again (%d decisions)", n)
	}

	// The pending card is the Presenter's, read from the store.
	_, pres := r.Wiring()
	if v, err := pres.PendingView(ctx, Target{Channel: "fake", ChatID: "c2", UserID: "alice"}); err != nil || v != nil {
		t.Fatalf("PendingView with nothing pending: %+v, %v", v, err)
	}
	if v, err := pres.PendingView(ctx, Target{Channel: "fake", ChatID: "c1", UserID: "alice"}); err != nil || v == nil || v.ApprovalID != a.ID {
		t.Fatalf("PendingView: %+v, %v", v, err)
	}

	// Settling an approval's cards queues nothing for the agent: the
	// engine, not the router, tells the loop that it ended.
	sub.mu.Lock()
	before := len(sub.got)
	sub.mu.Unlock()
	if err := pres.Settle(ctx, &ended, *ended.Outcome); err != nil {
		t.Fatal(err)
	}
	sub.mu.Lock()
	after := len(sub.got)
	sub.mu.Unlock()
	if after != before {
		t.Fatalf("Settle submitted %d messages", after-before)
	}
}

// NewRouter refuses a config without a Registry, a Presenter, a Decider, a
// Submitter or a Store, naming what is missing; there is no half-built
// router to bind later. NewPresenter refuses one without a Registry or a
// Store.
func TestNewRouterNeedsItsParts(t *testing.T) {
	dec, sub, store := &fakeDecider{}, &fakeSubmitter{}, memstore.New(memstore.Options{})
	reg := NewRegistry()
	for _, tt := range []struct {
		name string
		cfg  PresenterConfig
		want string
	}{
		{"no registry", PresenterConfig{Store: store}, "Registry"},
		{"no store", PresenterConfig{Registry: reg}, "Store"},
	} {
		if _, err := NewPresenter(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("presenter, %s: err = %v, want one naming %s", tt.name, err, tt.want)
		}
	}
	pres, err := NewPresenter(PresenterConfig{Registry: reg, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		cfg  RouterConfig
		want string
	}{
		{"no registry", RouterConfig{Presenter: pres, Decider: dec, Submitter: sub, Store: store}, "Registry"},
		{"no presenter", RouterConfig{Registry: reg, Decider: dec, Submitter: sub, Store: store}, "Presenter"},
		{"no decider", RouterConfig{Registry: reg, Presenter: pres, Submitter: sub, Store: store}, "Decider"},
		{"no submitter", RouterConfig{Registry: reg, Presenter: pres, Decider: dec, Store: store}, "Submitter"},
		{"no store", RouterConfig{Registry: reg, Presenter: pres, Decider: dec, Submitter: sub}, "Store"},
	} {
		if _, err := NewRouter(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one naming %s", tt.name, err, tt.want)
		}
	}
	if _, err := NewRouter(RouterConfig{Registry: reg, Presenter: pres, Decider: dec, Submitter: sub, Store: store}); err != nil {
		t.Fatalf("a complete config: %v", err)
	}
}
