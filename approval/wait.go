package approval

import (
	"container/heap"
	"context"
	"errors"
	"time"

	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/internal/clock"
)

// waiting is what an engine keeps for the Waits blocked on one approval:
// one small record and one channel, however many Waits, and no timer of
// its own (the engine's one timer, in watch, serves every expiry).
type waiting struct {
	id      ID
	n       int           // Waits blocked on it
	done    chan struct{} // closed once o is set
	o       *Outcome
	expires time.Time // known once a Wait has it (at >= 0 from then on, until it ends)
	at      int       // index in Engine.due; -1 when not in it
}

// dueHeap orders the waited approvals by expiry, earliest first
// (container/heap's interface).
type dueHeap []*waiting

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].expires.Before(h[j].expires) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].at = i; h[j].at = j }
func (h *dueHeap) Push(x any)        { w := x.(*waiting); w.at = len(*h); *h = append(*h, w) }
func (h *dueHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.at = -1
	return w
}

// endLocked gives w its outcome (the first one given wins) and wakes its
// Waits. e.mu is held.
func (e *Engine) endLocked(w *waiting, o Outcome) {
	if w.o != nil {
		return
	}
	w.o = &o
	close(w.done)
	if w.n > 0 {
		e.tookLocked(w.id)
	}
	if w.at >= 0 {
		heap.Remove(&e.due, w.at)
	}
}

// queueLocked puts w in the expiry order at expires, unless it is there
// or has ended, and wakes watch when it is the earliest. e.mu is held.
func (e *Engine) queueLocked(w *waiting, expires time.Time) {
	if w.at >= 0 || w.o != nil {
		return
	}
	w.expires = expires
	heap.Push(&e.due, w)
	if w.at == 0 {
		e.poke()
	}
}

// poke wakes watch to look at the earliest expiry again.
func (e *Engine) poke() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// Wait blocks until the approval's outcome arrives (from this process or
// another replica) or it expires; on expiry it ends the approval through
// the same claim gate a decision passes, so exactly one of a click and the
// timeout wins. It returns ctx.Err() if ctx ends first; the approval then
// stays as it is.
//
// A blocked Wait holds a share of one record per approval (waiting) and
// nothing else of its own: the engine's watch goroutine keeps the one
// timer of every expiry and the backstop poll (PollInterval).
func (e *Engine) Wait(ctx context.Context, id ID) (Outcome, error) {
	// Kept small: this frame stays on the stack of every blocked Wait,
	// and with join's cold paths inline it took the goroutine past its
	// first 2 KiB of stack (to 4 KiB, for as long as it waits).
	w, o, err := e.join(ctx, id)
	if w == nil {
		if err != nil {
			return Outcome{}, err
		}
		return *o, nil
	}
	defer e.leave(w)
	select {
	case <-w.done:
		return *w.o, nil
	case <-ctx.Done():
		return Outcome{}, ctx.Err()
	}
}

// join registers a Wait on id and returns its waiting; or, when the
// outcome is known already (it came before the Wait, or the record says
// the approval ended or is missing), no waiting and the outcome, or the
// error Wait returns.
//
//go:noinline
func (e *Engine) join(ctx context.Context, id ID) (*waiting, *Outcome, error) {
	e.mu.Lock()
	if !e.started {
		e.mu.Unlock()
		return nil, nil, E("approval.Wait", errkind.Internal, id, errors.New("engine not started"))
	}
	// The first Wait on an approval this engine requested takes its early
	// entry: every outcome since the Put is either in it or comes to w.
	eo := e.early[id]
	delete(e.early, id)
	if eo != nil && eo.o != nil {
		e.tookLocked(id)
		e.mu.Unlock()
		return nil, eo.o, nil
	}
	w := e.waiters[id]
	if w == nil {
		w = &waiting{id: id, done: make(chan struct{}), at: -1}
		e.waiters[id] = w
	}
	w.n++
	if eo != nil {
		e.queueLocked(w, eo.expires)
		e.mu.Unlock()
		return w, nil, nil
	}
	e.mu.Unlock()

	// Another replica requested it, or this process restarted: read the
	// record. Registered before this read, so an outcome published in
	// between is either in the record or delivered to w.
	a, err := e.cfg.Store.Get(ctx, id)
	if err != nil {
		e.leave(w)
		if KindOf(err) == errkind.NotFound {
			o := e.outcome(StatusMissing, "")
			return nil, &o, nil
		}
		return nil, nil, err
	}
	if a.State.Terminal() && a.Outcome != nil {
		e.leave(w)
		return nil, a.Outcome, nil
	}
	e.mu.Lock()
	e.queueLocked(w, a.ExpiresAt)
	e.mu.Unlock()
	return w, nil, nil
}

// leave ends one Wait's share of w; the last one removes it.
func (e *Engine) leave(w *waiting) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if w.n--; w.n > 0 {
		return
	}
	if e.waiters[w.id] == w {
		delete(e.waiters, w.id)
	}
	if w.at >= 0 {
		if w.at == 0 {
			e.poke() // the timer is set for this one
		}
		heap.Remove(&e.due, w.at)
	}
}

// watch is the engine's one goroutine for its Waits, until ctx ends: it
// keeps one timer at the earliest expiry of the approvals waited on (and
// ends each as it comes, see expireWaiting), and every PollInterval
// re-reads them all (pollOnce).
func (e *Engine) watch(ctx context.Context, poll clock.Timer) {
	var expiry clock.Timer // nil: nothing waited on
	var expiryAt time.Time
	defer func() {
		poll.Stop()
		if expiry != nil {
			expiry.Stop()
		}
	}()
	for {
		var fired <-chan time.Time
		if expiry != nil {
			fired = expiry.C()
		}
		select {
		case <-ctx.Done():
			return
		case <-poll.C():
			e.pollOnce(ctx)
			poll = e.cfg.Clock.NewTimer(e.cfg.PollInterval)
		case <-fired:
			expiry = nil
			e.expireDue(ctx)
		case <-e.kick:
		}
		e.mu.Lock()
		var next time.Time
		some := len(e.due) > 0
		if some {
			next = e.due[0].expires
		}
		e.mu.Unlock()
		switch {
		case !some:
			if expiry != nil {
				expiry.Stop()
				expiry = nil
			}
		case expiry == nil || !next.Equal(expiryAt):
			if expiry != nil {
				expiry.Stop()
			}
			expiry, expiryAt = e.cfg.Clock.NewTimer(next.Sub(e.cfg.Clock.Now())), next
		}
	}
}

// expireDue takes the waited approvals whose expiry has come out of the
// order and ends each (expireWaiting, one goroutine each: a slow claim
// holds up no other).
func (e *Engine) expireDue(ctx context.Context) {
	now := e.cfg.Clock.Now()
	e.mu.Lock()
	var ws []*waiting
	for len(e.due) > 0 && !e.due[0].expires.After(now) {
		ws = append(ws, heap.Pop(&e.due).(*waiting))
	}
	e.mu.Unlock()
	for _, w := range ws {
		go e.expireWaiting(ctx, w)
	}
}

// expireWaiting tries to end a waited approval whose time is up, through
// the claim gate (expire): its outcome wakes the Waits; a claim that
// could not be made is tried again (after retry); a claimed approval is
// left to its decision, whose outcome comes as a message or by the poll.
func (e *Engine) expireWaiting(ctx context.Context, w *waiting) {
	o, done, retry := e.expire(ctx, w.id)
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case done:
		e.endLocked(w, o)
	case retry > 0 && e.waiters[w.id] == w:
		e.queueLocked(w, e.cfg.Clock.Now().Add(retry))
	}
}

// pollBatch is how many approvals one Store.Outcomes call of the poll
// reads.
const pollBatch = 1000

// pollOnce re-reads the approvals that Waits of this engine are blocked
// on, and wakes those whose approval ended: the backstop for an outcome
// message that never came (the subscription was down, or on a Redis that
// a failover left behind). A few store round trips per PollInterval,
// whatever the number of Waits.
func (e *Engine) pollOnce(ctx context.Context) {
	e.mu.Lock()
	ids := make([]ID, 0, len(e.waiters))
	for id, w := range e.waiters {
		if w.o == nil {
			ids = append(ids, id)
		}
	}
	e.mu.Unlock()
	for len(ids) > 0 {
		batch := ids[:min(len(ids), pollBatch)]
		ids = ids[len(batch):]
		os, err := e.cfg.Store.Outcomes(ctx, batch)
		if err != nil {
			if ctx.Err() == nil {
				e.log.Warn("re-reading the approvals waited on failed; trying again at the next poll", "waits", len(batch)+len(ids), "err", err)
			}
			return
		}
		for i, o := range os {
			if o != nil {
				e.deliver(batch[i], *o)
			}
		}
	}
}
