package agent

import (
	"sync"

	"github.com/hitlbot/hitlbot/approval"
)

// Resumptions carries the outcomes of the approvals that end on this
// replica's engine to its loop: the engine is built with it as its Ended
// listener (approval.EngineConfig.Ended) and the loop with it as its
// LoopConfig.Resumptions, so neither needs the other to exist first. The
// loop hands each outcome that no Wait of this replica takes to Resume. It is an unbounded queue between two
// goroutines: Ended never blocks the engine, and the loop drains it as
// fast as it comes (each entry is a small record; a resumption is queued
// in its session, which bounds what waits there).
//
// A Resumptions serves one loop and is safe for concurrent use.
type Resumptions struct {
	mu     sync.Mutex
	q      []ended
	wake   chan struct{}
	closed bool
}

var _ approval.EndListener = (*Resumptions)(nil)

// NewResumptions returns an empty queue.
func NewResumptions() *Resumptions { return &Resumptions{wake: make(chan struct{}, 1)} }

// Ended queues the outcome o of a for the loop (approval.EndListener);
// waited reports that a Wait of this replica takes it. After the loop
// closed it is dropped: the session's next turn records it (resolveEnded).
func (r *Resumptions) Ended(a *approval.Approval, o approval.Outcome, waited bool) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.q = append(r.q, ended{a: a, o: o, waited: waited})
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// take returns what is queued, oldest first, and empties the queue.
func (r *Resumptions) take() []ended {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.q
	r.q = nil
	return q
}

// close drops what is queued and what comes later.
func (r *Resumptions) close() {
	r.mu.Lock()
	r.closed, r.q = true, nil
	r.mu.Unlock()
}
