package api_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/api"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/waitfor"
)

// heldTokens is a token store whose writes of a resumed answer are held
// until gate is closed (or their context ends): a store that is slow, or
// down, just when a resumed turn ends. held receives once per write held,
// ended once per held write that has returned.
type heldTokens struct {
	api.TokenStore
	held  chan approval.ID
	ended chan error
	once  sync.Once
	gate  chan struct{}
}

func newHeldTokens(clk clock.Clock) *heldTokens {
	return &heldTokens{TokenStore: api.NewMemoryTokens(clk), held: make(chan approval.ID, 16), ended: make(chan error, 16),
		gate: make(chan struct{})}
}

func (s *heldTokens) Put(ctx context.Context, e api.TokenEntry, ttl time.Duration) (err error) {
	if e.Resumed == nil {
		return s.TokenStore.Put(ctx, e, ttl)
	}
	defer func() { s.ended <- err }()
	s.held <- e.Approval
	select {
	case <-s.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.TokenStore.Put(ctx, e, ttl)
}

// stillHeld fails the test if a held write has returned.
func (s *heldTokens) stillHeld(t *testing.T, what string) {
	t.Helper()
	select {
	case err := <-s.ended:
		t.Fatalf("%s only once the store's write had returned (%v)", what, err)
	default:
	}
}

// release lets the held writes (and every later one) through.
func (s *heldTokens) release() { s.once.Do(func() { close(s.gate) }) }

// withHeldTokens gives the harness a heldTokens on its clock.
func withHeldTokens(slow **heldTokens) func(*setup) {
	return func(s *setup) {
		s.clk = clock.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
		*slow = newHeldTokens(s.clk)
		s.cfg.TokenStore = *slow
	}
}

// within waits for ch to give a value (or close), failing the test with
// what if it does not within waitfor.Default: a bound that turns a hang
// into a failure on a loaded machine, not a measure of speed.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	bound := time.NewTimer(waitfor.Default)
	defer bound.Stop()
	select {
	case v := <-ch:
		return v
	case <-bound.C:
		t.Fatalf("timed out after %v waiting for %s", waitfor.Default, what)
	}
	panic("unreachable")
}

// kept returns the resumed answer kept with a token's entry ("" if none).
func (s *heldTokens) kept(t *testing.T, token string) string {
	t.Helper()
	e, err := s.TokenStore.Get(context.Background(), token)
	if err != nil {
		t.Fatal(err)
	}
	if e.Resumed == nil {
		return ""
	}
	return e.Resumed.Text
}

// listen calls the API's TurnEvent as the presenter does and returns a
// channel closed when the call has returned.
func listen(h *harness, chatID, msgID string, ev channels.TurnEvent) <-chan struct{} {
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		h.api.TurnEvent(context.Background(), channels.Target{Channel: api.Name, ChatID: chatID, ReplyTo: msgID}, ev)
	}()
	return returned
}

func resumedEnd(id approval.ID, text string) channels.TurnEvent {
	return channels.TurnEvent{Say: agent.Say{Kind: agent.SayTurnEnded, Result: &agent.TurnResult{Resumed: id, Text: text}}}
}

func turnEnd(text string) channels.TurnEvent {
	return channels.TurnEvent{Say: agent.Say{Kind: agent.SayTurnEnded, Result: &agent.TurnResult{Text: text}}}
}

// TestResumedAnswerIsKeptOffTheListenersPath: the API keeps a resumed
// turn's answer in the token store, but not on the path of the turn that
// says it (a listener must not block the turn): while the store holds the
// write, the listener has returned. The ordering holds all the same: the
// resumed turn's end is published only once its answer is kept, and what
// the conversation says after it waits behind it, so a client that sees
// the end finds the answer through GET /api/approvals/{id} and the next
// POST /agent/chat.
func TestResumedAnswerIsKeptOffTheListenersPath(t *testing.T) {
	var slow *heldTokens
	h := newHarness(t, withHeldTokens(&slow))
	t.Cleanup(slow.release)
	id := approval.ID(h.ask(tokAlice, "c1", "erase orders").PendingAction.ApprovalID)
	w := api.Watch(h.api, "acme/alice/c1")
	defer w.Stop()

	within(t, listen(h, "acme/alice/c1", "m-resumed", resumedEnd(id, "7 orders erased")),
		"the listener to return while the store holds the resumed answer")
	slow.stillHeld(t, "the listener returned")
	if got := within(t, slow.held, "the store to hold the resumed answer"); got != id {
		t.Fatalf("held the answer of %s, want %s", got, id)
	}
	if evs := w.Ends(); len(evs) != 0 {
		t.Fatalf("published before the answer was kept: %+v", evs)
	}
	// What the conversation says next waits behind it, and its listener
	// does not wait either.
	within(t, listen(h, "acme/alice/c1", "m-next", turnEnd("next answer")), "the next listener call to return")
	slow.stillHeld(t, "the next listener call returned")
	if evs := w.Ends(); len(evs) != 0 {
		t.Fatalf("a later event overtook the resumed turn's end: %+v", evs)
	}

	slow.release()
	if ev := w.NextEnd(t); ev.Kind != agent.SayTurnEnded || ev.Result == nil || ev.Result.Resumed != id {
		t.Fatalf("first published: %+v", ev)
	}
	// Seen the end: the answer is there.
	alice, _ := h.auditOf(tokAlice, string(id))
	if r, _ := alice["resumed"].(map[string]any); r == nil || r["text"] != "7 orders erased" {
		t.Fatalf("GET after the resumed turn's end was published: %v", alice)
	}
	if ev := w.NextEnd(t); ev.Result == nil || ev.Result.Text != "next answer" {
		t.Fatalf("second published: %+v", ev)
	}
	st, res := h.chat(tokAlice, map[string]any{"message": "hello", "conversationId": "c1"})
	if st != http.StatusOK || len(res.Resumed) != 1 || res.Resumed[0].Text != "7 orders erased" {
		t.Fatalf("the conversation's next answer: %d %+v", st, res.Resumed)
	}
}

// TestCloseDrainsTheResumedAnswers: Close waits for the answers being
// kept and publishes what waits behind them; a Close whose context ends
// first says so, gives the writes up, and still publishes the turn's end
// (no request waits for it in vain). After Close, an answer is kept on
// the listener's path: no goroutine outlives Close.
func TestCloseDrainsTheResumedAnswers(t *testing.T) {
	t.Run("drained", func(t *testing.T) {
		var slow *heldTokens
		h := newHarness(t, withHeldTokens(&slow))
		t.Cleanup(slow.release)
		pa := h.ask(tokAlice, "c1", "erase orders").PendingAction
		id := approval.ID(pa.ApprovalID)
		w := api.Watch(h.api, "acme/alice/c1")
		defer w.Stop()
		within(t, listen(h, "acme/alice/c1", "m-resumed", resumedEnd(id, "kept at close")), "the listener to return")
		within(t, slow.held, "the store to hold the resumed answer")
		closed := make(chan error, 1)
		go func() { closed <- h.api.Close(context.Background()) }()
		slow.release()
		if err := within(t, closed, "Close to return"); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if evs := w.Ends(); len(evs) != 1 || evs[0].Result == nil || evs[0].Result.Resumed != id {
			t.Fatalf("published by the time Close returned: %+v", evs)
		}
		if got := slow.kept(t, pa.Token); got != "kept at close" {
			t.Fatalf("kept by the time Close returned: %q", got)
		}
	})
	t.Run("given up", func(t *testing.T) {
		var slow *heldTokens
		h := newHarness(t, withHeldTokens(&slow))
		t.Cleanup(slow.release)
		id := approval.ID(h.ask(tokAlice, "c1", "erase orders").PendingAction.ApprovalID)
		w := api.Watch(h.api, "acme/alice/c1")
		defer w.Stop()
		within(t, listen(h, "acme/alice/c1", "m-resumed", resumedEnd(id, "never kept")), "the listener to return")
		within(t, slow.held, "the store to hold the resumed answer")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := h.api.Close(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Close with its context ended while an answer was being kept: %v", err)
		}
		if ev := w.NextEnd(t); ev.Result == nil || ev.Result.Resumed != id {
			t.Fatalf("published after Close gave up: %+v", ev)
		}
	})
	t.Run("after", func(t *testing.T) {
		var slow *heldTokens
		h := newHarness(t, withHeldTokens(&slow))
		slow.release()
		pa := h.ask(tokAlice, "c1", "erase orders").PendingAction
		if err := h.api.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		h.api.TurnEvent(context.Background(), channels.Target{Channel: api.Name, ChatID: "acme/alice/c1"},
			resumedEnd(approval.ID(pa.ApprovalID), "after close"))
		if got := slow.kept(t, pa.Token); got != "after close" {
			t.Fatalf("kept once a resumed end heard after Close returned: %q", got)
		}
	})
}

// TestKeepingIsBounded: with as many answers being kept as the API keeps
// at once, the end of one more resumed turn is published at once, its
// answer not kept (logged; the conversation's history has it), rather
// than queued without bound.
func TestKeepingIsBounded(t *testing.T) {
	var slow *heldTokens
	h := newHarness(t, withHeldTokens(&slow))
	t.Cleanup(slow.release)
	api.SetMaxKeeping(h.api, 1)
	first := approval.ID(h.ask(tokAlice, "c1", "erase orders").PendingAction.ApprovalID)
	second := approval.ID(h.ask(tokAlice, "c2", "erase users").PendingAction.ApprovalID)
	w := api.Watch(h.api, "acme/alice/c2")
	defer w.Stop()
	within(t, listen(h, "acme/alice/c1", "m1", resumedEnd(first, "first")), "the first listener call to return")
	within(t, slow.held, "the store to hold the resumed answer")
	within(t, listen(h, "acme/alice/c2", "m2", resumedEnd(second, "second")), "the second listener call to return")
	slow.stillHeld(t, "the listener calls returned")
	if evs := w.Ends(); len(evs) != 1 || evs[0].Result == nil || evs[0].Result.Resumed != second {
		t.Fatalf("the end over the bound: %+v", evs)
	}
	if alice, _ := h.auditOf(tokAlice, string(second)); alice["resumed"] != nil {
		t.Fatalf("the answer over the bound was kept: %v", alice)
	}
}
