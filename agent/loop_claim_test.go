package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/internal/hitltest"
)

// A resumption whose claim is taken (another resumption, or the turn that
// waited, went on) does nothing: it says nothing, runs nothing, and leaves
// the history as it was. Two messages queued behind it in the session
// show that it has run (the first one's turn queues the resumption once
// more, resolveEnded, and the second comes after that one).
func TestResumptionThatLosesItsClaimDoesNothing(t *testing.T) {
	h := newHarness(t, eraseOnRequest(nil))
	a := h.suspend(t, "s1", "erase x")
	if won, err := h.engine.ClaimResume(context.Background(), a.ID); err != nil || !won {
		t.Fatalf("the test's claim: %v, %v", won, err)
	}
	h.decide(t, a, approval.Approve) // the outcome is handed to the loop: a resumption is queued
	for _, text := range []string{"hello", "hello again"} {
		if r := result(t, h.submit(t, "s1", text)); r.Text != "ok" {
			t.Fatalf("turn %q = %+v", text, r)
		}
	}
	select {
	case r := <-h.speak.resumed:
		t.Fatalf("a resumption went on without the claim: %+v", r)
	default:
	}
	if got := h.speak.saidOf(agent.SayToolResult); len(got) != 0 {
		t.Fatalf("tool results said: %q", got)
	}
	conv, _ := h.history.Load(context.Background(), "s1")
	if len(conv.Suspended) != 1 || conv.Suspended[0].Approval != a.ID {
		t.Fatalf("suspended = %+v; the turn stays as the loser found it", conv.Suspended)
	}
}

// claimGate is a store whose first claim of a resumption (the turn that
// waits, woken by the outcome) is held until release, and reported on
// claiming: a resumption on another replica claims meanwhile, as when the
// waiter's session lock was lost.
type claimGate struct {
	approval.Store
	once     sync.Once
	claiming chan struct{}
	release  chan struct{}
}

func (g *claimGate) Seen(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if strings.HasPrefix(key, "resume:") {
		first := false
		g.once.Do(func() { first = true })
		if first {
			close(g.claiming)
			<-g.release
		}
	}
	return g.Store.Seen(ctx, key, ttl)
}

// A turn that waits and loses the claim to a resumption that went on
// meanwhile (its session's lock was lost: two loops on one history, no
// lock) stands down: it says nothing more, saves nothing, and its result
// names the approval it waited for; the winner answers once, and the
// history is the winner's (the waiter did not save over it).
func TestWaiterThatLosesTheClaimStandsDown(t *testing.T) {
	gate := &claimGate{Store: memstore.New(memstore.Options{}), claiming: make(chan struct{}), release: make(chan struct{})}
	var eng *approval.Engine
	h := newHarness(t, eraseOnRequest(nil), func(c *agent.LoopConfig) {
		var err error
		eng, err = approval.NewEngine(approval.EngineConfig{Store: gate, Notifier: &approval.NopNotifier{}, Dispatcher: c.Tools,
			Audit: hitltest.NopAudit{}, Logger: quiet, PollInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		if err := eng.Start(ctx); err != nil {
			t.Fatal(err)
		}
		c.Engine = eng
	})
	other, err := agent.NewLoop(h.cfg) // another replica: the same engine, history and chat
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close(context.Background()) })

	waiter := h.submit(t, "s1", "erase x")
	var a *approval.Approval
	waitFor(t, "the approval is asked", func() bool {
		p, err := eng.Pending(context.Background(), "s1")
		a = p
		return err == nil && p != nil
	})
	o, err := eng.Decide(context.Background(), a.ID, approval.Decision{Verb: approval.Approve, Actor: "alice", Source: approval.SourceCard, PayloadSHA256: a.PayloadSHA256})
	if err != nil || o.Status != approval.StatusExecuted {
		t.Fatalf("decision = %+v, %v", o, err)
	}
	<-gate.claiming // the waiter woke and claims; the other replica's resumption claims first
	rec, err := eng.Get(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	other.Resume(rec, o)
	r := h.nextResumed(t)
	if r.to.Resumed != a.ID || r.res.Text != "after: erase done (run 1)" {
		t.Fatalf("the winner's turn = %+v", r)
	}
	close(gate.release)
	if res := result(t, waiter); res.Waiting != a.ID || res.Text != "" || len(res.Actions) != 0 {
		t.Fatalf("the waiter's turn = %+v; want it to stand down, naming the approval", res)
	}
	if got := h.speak.saidOf(agent.SayAnswer); len(got) != 1 || got[0] != "after: erase done (run 1)" {
		t.Fatalf("answers said = %q", got)
	}
	if got := h.speak.saidOf(agent.SayNotice); len(got) != 0 {
		t.Fatalf("notices said = %q", got)
	}
	conv, _ := h.history.Load(context.Background(), "s1")
	if len(conv.Suspended) != 0 || len(conv.Messages) != 4 || conv.Messages[3].Content != "after: erase done (run 1)" {
		t.Fatalf("history = %+v, suspended %+v; want the winner's", conv.Messages, conv.Suspended)
	}
	if h.del.Runs.Load() != 1 {
		t.Fatalf("erase ran %d times", h.del.Runs.Load())
	}
}

// failOnce is a History whose next Load, once armed, fails (and says so).
type failOnce struct {
	agent.History
	mu     sync.Mutex
	armed  bool
	failed chan struct{}
}

func (f *failOnce) Load(ctx context.Context, s approval.SessionKey) (agent.Conversation, error) {
	f.mu.Lock()
	armed := f.armed
	f.armed = false
	f.mu.Unlock()
	if armed {
		close(f.failed)
		return agent.Conversation{}, errors.New("history unreachable")
	}
	return f.History.Load(ctx, s)
}

// A resumption that wins the claim but cannot read the history gives the
// claim back: the session's next turn queues the resumption again, which
// claims it and goes on, once.
func TestResumptionThatCannotGoOnGivesTheClaimBack(t *testing.T) {
	var hist *failOnce
	h := newHarness(t, eraseOnRequest(nil), func(c *agent.LoopConfig) {
		hist = &failOnce{History: c.History, failed: make(chan struct{})}
		c.History = hist
	})
	a := h.suspend(t, "s1", "erase x")
	hist.mu.Lock()
	hist.armed = true
	hist.mu.Unlock()
	h.decide(t, a, approval.Approve)
	<-hist.failed // the resumption claimed, and could not load the history
	if r := result(t, h.submit(t, "s1", "hello")); r.Text != "ok" {
		t.Fatalf("next turn = %+v", r)
	}
	// (It comes after "hello": the model reads an update on the approval.)
	if r := h.nextResumed(t); r.to.Resumed != a.ID || len(r.res.Actions) != 1 || r.res.Actions[0].Status != approval.StatusExecuted {
		t.Fatalf("resumed = %+v", r)
	}
	if got := h.speak.saidOf(agent.SayToolResult); len(got) != 1 || got[0] != "erase done (run 1)" {
		t.Fatalf("tool results said = %q", got)
	}
	conv, _ := h.history.Load(context.Background(), "s1")
	if len(conv.Suspended) != 0 || len(updates(conv.Messages, a.ID)) != 1 {
		t.Fatalf("after the resumption: suspended %+v, history %+v", conv.Suspended, conv.Messages)
	}
}
