package api

import (
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/internal/waitfor"
)

// Watcher receives the turn events published in one conversation, as a
// request in flight there does.
type Watcher struct {
	a  *API
	id string
	c  *conv
	w  *waiter
}

// Watch subscribes to the events published in the conversation of chat id
// chatID ("tenant/user/conversation") until Stop.
func Watch(a *API, chatID string) *Watcher {
	c := a.convs.join(chatID)
	return &Watcher{a: a, id: chatID, c: c, w: a.convs.subscribe(c)}
}

// Stop ends the subscription.
func (w *Watcher) Stop() {
	w.a.convs.unsubscribe(w.c, w.w)
	w.a.convs.leave(w.id, w.c)
}

// Ends returns the turn_ended events published since the last call, in
// order, without waiting. (Other events, such as the awaiting a turn
// says after its request has returned, are passed over.)
func (w *Watcher) Ends() []channels.TurnEvent {
	var out []channels.TurnEvent
	for {
		e, ok := w.w.pop()
		if !ok {
			return out
		}
		if e.turnEv != nil && e.turnEv.Kind == agent.SayTurnEnded {
			out = append(out, *e.turnEv)
		}
	}
}

// NextEnd waits for the next turn_ended published, failing the test if
// none comes within waitfor.Default (a bound for a loaded machine, not a
// measure).
func (w *Watcher) NextEnd(t testing.TB) channels.TurnEvent {
	t.Helper()
	bound := time.NewTimer(waitfor.Default)
	defer bound.Stop()
	for {
		e, ok := w.w.pop()
		switch {
		case ok && e.turnEv != nil && e.turnEv.Kind == agent.SayTurnEnded:
			return *e.turnEv
		case ok:
			continue
		}
		select {
		case <-w.w.sig:
		case <-bound.C:
			t.Fatalf("no turn_ended was published in %s within %v", w.id, waitfor.Default)
		}
	}
}

// SetMaxKeeping sets how many resumed answers a may keep at once.
func SetMaxKeeping(a *API, n int) { a.out.max = n }

// QueuedKinds are the kinds of the turn events waiting in the outbox for
// chat chatID.
func QueuedKinds(a *API, chatID string) []string {
	a.out.mu.Lock()
	defer a.out.mu.Unlock()
	var out []string
	for _, j := range a.out.queues[chatID] {
		switch {
		case j.ev.turnEv != nil:
			out = append(out, string(j.ev.turnEv.Kind))
		case j.ev.shown != nil:
			out = append(out, "shown")
		case j.ev.settled != nil:
			out = append(out, "settled")
		}
	}
	return out
}
