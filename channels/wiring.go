package channels

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
)

// Decider is what the router needs of the approval engine: decide an
// approval, and read one by id or by session. *approval.Engine is one.
type Decider interface {
	// Decide applies a decision to approval id (see approval.Engine.Decide).
	Decide(ctx context.Context, id approval.ID, d approval.Decision) (approval.Outcome, error)
	// Get returns approval id, or an error of kind not_found.
	Get(ctx context.Context, id approval.ID) (*approval.Approval, error)
	// Pending returns the session's pending approval, or nil.
	Pending(ctx context.Context, s approval.SessionKey) (*approval.Approval, error)
}

// OnceDecider is a Decider that de-duplicates a decision itself
// (approval.Engine.DecideOnce): the router hands it a click's event key
// rather than marking it first, so that a store that can (redisstore)
// sets the mark in the claim's round trip. first false is a duplicate:
// nothing was decided. A failed decision has released its mark.
type OnceDecider interface {
	DecideOnce(ctx context.Context, id approval.ID, d approval.Decision, key string, ttl time.Duration) (o approval.Outcome, first bool, err error)
}

// Submitter is what the router needs of the agent: queue a message for
// its session's next turn. *agent.Loop is one.
type Submitter interface {
	// Submit queues in; agent.ErrBusy and agent.ErrClosed refuse it.
	Submit(in agent.Inbound) error
}

var (
	_ Decider     = (*approval.Engine)(nil)
	_ OnceDecider = (*approval.Engine)(nil)
	_ Submitter   = (*agent.Loop)(nil)
)

// ErrNoRouter is returned by a Relay that no router has taken yet.
var ErrNoRouter = errors.New("channels: the relay has no router yet (give it to NewRouter in RouterConfig.Relay)")

// Relay is the router's face to the engine and the loop, made before them.
// The engine needs the router as its Notifier and the loop needs it as its
// Speaker, while the router needs the engine (its Decider) and the loop
// (its Submitter). A Relay breaks that circle in one declared order, which
// Assemble follows (bot serve and the tests build their stack with it):
//
//  1. relay := channels.NewRelay()
//  2. the engine, with the relay (or a wrapper of it) as its Notifier
//  3. the loop, with the relay as its Speaker
//  4. the router, with the engine, the loop and the relay in its
//     RouterConfig; NewRouter hands the relay the router
//
// After step 4 every call is the router's (Show, Settle, Progress, Escalate and Say, as
// documented on Router); before it they return ErrNoRouter (for Show the
// engine then cancels the approval, as for any card nobody could see).
// Nothing calls them before then in that order: the engine shows a card
// only for an approval a turn asked for, and turns start from the
// router's handlers.
//
// A Relay is safe for concurrent use and serves one router.
type Relay struct {
	r atomic.Pointer[Router]
}

// NewRelay returns a Relay for a router not built yet.
func NewRelay() *Relay { return &Relay{} }

var (
	_ approval.Notifier = (*Relay)(nil)
	_ agent.Speaker     = (*Relay)(nil)
)

// attach gives the relay its router; a relay serves one router.
func (l *Relay) attach(r *Router) error {
	if !l.r.CompareAndSwap(nil, r) {
		return errors.New("channels.NewRouter: the relay already serves another router")
	}
	return nil
}

// Show is the router's Show (approval.Notifier).
func (l *Relay) Show(ctx context.Context, a *approval.Approval) ([]approval.CardRef, error) {
	r := l.r.Load()
	if r == nil {
		return nil, ErrNoRouter
	}
	return r.Show(ctx, a)
}

// Settle is the router's Settle (approval.Notifier).
func (l *Relay) Settle(ctx context.Context, a *approval.Approval, o approval.Outcome) error {
	r := l.r.Load()
	if r == nil {
		return ErrNoRouter
	}
	return r.Settle(ctx, a, o)
}

// Progress is the router's Progress (approval.Notifier).
func (l *Relay) Progress(ctx context.Context, a *approval.Approval) error {
	r := l.r.Load()
	if r == nil {
		return ErrNoRouter
	}
	return r.Progress(ctx, a)
}

// Escalate is the router's Escalate (approval.Notifier).
func (l *Relay) Escalate(ctx context.Context, a *approval.Approval, step int) ([]approval.CardRef, error) {
	r := l.r.Load()
	if r == nil {
		return nil, ErrNoRouter
	}
	return r.Escalate(ctx, a, step)
}

// Say is the router's Say (agent.Speaker).
func (l *Relay) Say(ctx context.Context, in agent.Inbound, s agent.Say) error {
	r := l.r.Load()
	if r == nil {
		return ErrNoRouter
	}
	return r.Say(ctx, in, s)
}
