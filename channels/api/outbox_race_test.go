package api_test

import (
	"context"
	"fmt"
	"runtime"
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

// TestOutboxManyConversations: many conversations at once, each saying a
// resumed turn's end (its answer held by the store) and then turn after
// turn, with Close racing the release of the writes and a resumed end
// heard while Close runs: in every conversation the resumed end comes
// first, its answer kept by then, and the rest in the order said; once
// Close has returned, no goroutine of the outbox is left.
func TestOutboxManyConversations(t *testing.T) {
	const convs, after = 24, 3
	var slow *heldTokens
	h := newHarness(t, func(s *setup) {
		s.clk = clock.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
		slow = &heldTokens{TokenStore: api.NewMemoryTokens(s.clk), held: make(chan approval.ID, 4*convs),
			ended: make(chan error, 4*convs), gate: make(chan struct{})}
		s.cfg.TokenStore = slow
		s.cfg.MaxPendingPerUser = convs + 1
	})
	t.Cleanup(slow.release)
	type conv struct {
		chat, token string
		id          approval.ID
		w           *api.Watcher
	}
	cs := make([]conv, convs+1)
	for i := range cs {
		pa := h.ask(tokAlice, fmt.Sprintf("c%d", i), "erase orders").PendingAction
		cs[i] = conv{chat: fmt.Sprintf("acme/alice/c%d", i), token: pa.Token, id: approval.ID(pa.ApprovalID)}
		cs[i].w = api.Watch(h.api, cs[i].chat)
		defer cs[i].w.Stop()
	}
	late := cs[convs] // its resumed end is heard while Close runs
	cs = cs[:convs]
	base := runtime.NumGoroutine()

	var said sync.WaitGroup
	for _, c := range cs {
		said.Add(1)
		go func() {
			defer said.Done()
			to := channels.Target{Channel: api.Name, ChatID: c.chat, ReplyTo: "m-" + c.chat}
			h.api.TurnEvent(context.Background(), to, resumedEnd(c.id, "answer of "+string(c.id)))
			for k := range after {
				h.api.TurnEvent(context.Background(), to, turnEnd(fmt.Sprint(k)))
			}
		}()
	}
	said.Wait() // none of them waited for the store
	for range cs {
		within(t, slow.held, "every resumed answer to be held")
	}
	for _, c := range cs {
		if evs := c.w.Ends(); len(evs) != 0 {
			t.Fatalf("%s: published before its resumed answer was kept: %+v", c.chat, evs)
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- h.api.Close(context.Background()) }()
	lateDone := make(chan struct{})
	go func() {
		defer close(lateDone)
		h.api.TurnEvent(context.Background(), channels.Target{Channel: api.Name, ChatID: late.chat}, resumedEnd(late.id, "late"))
	}()
	slow.release()
	for _, c := range cs {
		ev := c.w.NextEnd(t)
		if ev.Result == nil || ev.Result.Resumed != c.id {
			t.Fatalf("%s: first end %+v", c.chat, ev)
		}
		if got := slow.kept(t, c.token); got != "answer of "+string(c.id) {
			t.Fatalf("%s: the resumed end was published, the answer kept is %q", c.chat, got)
		}
		for k := range after {
			if ev := c.w.NextEnd(t); ev.Result == nil || ev.Result.Text != fmt.Sprint(k) {
				t.Fatalf("%s: end %d is %+v", c.chat, k, ev)
			}
		}
	}
	if err := within(t, closed, "Close to return"); err != nil {
		t.Fatal(err)
	}
	within(t, lateDone, "the resumed end heard during Close to be said")
	if ev := late.w.NextEnd(t); ev.Result == nil || ev.Result.Resumed != late.id || slow.kept(t, late.token) != "late" {
		t.Fatalf("the resumed end heard during Close: %+v, kept %q", ev, slow.kept(t, late.token))
	}
	waitfor.True(t, "the outbox's goroutines to end", func() bool { return runtime.NumGoroutine() <= base })
	_ = agent.SayTurnEnded
}

// TestRequestDuringAKeepGetsTheResumedAnswer: a request of the
// conversation made while a resumed turn's answer is held by the store
// ends behind that turn's end, so its answer carries the resumed one.
func TestRequestDuringAKeepGetsTheResumedAnswer(t *testing.T) {
	var slow *heldTokens
	h := newHarness(t, withHeldTokens(&slow))
	t.Cleanup(slow.release)
	id := approval.ID(h.ask(tokAlice, "c1", "erase orders").PendingAction.ApprovalID)
	within(t, listen(h, "acme/alice/c1", "m-resumed", resumedEnd(id, "7 orders erased")), "the listener to return")
	within(t, slow.held, "the store to hold the resumed answer")
	type answer struct {
		st  int
		res api.ChatResponse
	}
	got := make(chan answer, 1)
	go func() {
		st, res := h.chat(tokAlice, map[string]any{"message": "hello", "conversationId": "c1"})
		got <- answer{st, res}
	}()
	// The request's answer (its message queued behind the approval
	// waiting in the conversation) waits behind the resumed end.
	waitfor.True(t, "the request's answer to wait behind the resumed end", func() bool {
		k := api.QueuedKinds(h.api, "acme/alice/c1")
		return len(k) == 2 && k[1] == "queued"
	})
	select {
	case a := <-got:
		t.Fatalf("the request returned while the resumed answer was held: %d %+v", a.st, a.res)
	default:
	}
	slow.release()
	a := within(t, got, "the request to return")
	if a.st != 200 || len(a.res.Resumed) != 1 || a.res.Resumed[0].Text != "7 orders erased" {
		t.Fatalf("the request made during the keep: %d %+v", a.st, a.res)
	}
}
