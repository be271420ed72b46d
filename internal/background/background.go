// Package background runs the goroutines a component starts on its own
// (a message handed on after the platform was answered, a click decided
// after its callback returned, a delayed card update) so that closing the
// component can refuse new ones and wait for those still running.
package background

import (
	"context"
	"sync"
)

// Group tracks the goroutines started by Go. After Close, Go starts
// nothing; Wait waits for those still running. The zero Group is ready to
// use; a Group must not be copied after first use.
type Group struct {
	mu     sync.Mutex
	closed bool
	n      int                 // goroutines running
	idle   chan struct{}       // closed when n drops to 0; nil while nobody waits
	lanes  map[string][]func() // GoInOrder's functions not yet started, by key
}

// Go runs f in a new goroutine tracked by the group and reports true, or,
// once Close has been called, runs nothing and reports false.
func (g *Group) Go(f func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.n++
	go func() {
		defer g.done()
		f()
	}()
	return true
}

// GoInOrder is Go for functions that must not overtake each other: those
// given the same key run one at a time, in the order of the calls (a chat's
// messages, which the platform SDK hands over from goroutines of its own);
// those of other keys run beside them. It reports false, running nothing,
// once Close has been called. Wait waits for the functions still queued.
func (g *Group) GoInOrder(key string, f func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.n++
	if q, busy := g.lanes[key]; busy {
		g.lanes[key] = append(q, f)
		return true
	}
	if g.lanes == nil {
		g.lanes = map[string][]func(){}
	}
	g.lanes[key] = nil
	go g.drain(key, f)
	return true
}

// drain runs f, then the functions queued behind it under key, and ends
// the lane when none is left.
func (g *Group) drain(key string, f func()) {
	for f != nil {
		f()
		g.mu.Lock()
		if q := g.lanes[key]; len(q) > 0 {
			f, g.lanes[key] = q[0], q[1:]
		} else {
			f = nil
			delete(g.lanes, key)
		}
		g.doneLocked()
		g.mu.Unlock()
	}
}

func (g *Group) done() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.doneLocked()
}

func (g *Group) doneLocked() {
	g.n--
	if g.n == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// Close makes later calls of Go refuse. It does not wait (see Wait);
// closing twice is harmless.
func (g *Group) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// Wait blocks until no goroutine of the group runs, or ctx ends: then it
// returns ctx.Err() and the goroutines go on. Before Close, goroutines that
// Go starts meanwhile are waited for too.
func (g *Group) Wait(ctx context.Context) error {
	g.mu.Lock()
	if g.n == 0 {
		g.mu.Unlock()
		return nil
	}
	if g.idle == nil {
		g.idle = make(chan struct{})
	}
	idle := g.idle
	g.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
