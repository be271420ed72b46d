package channels

import (
	"context"
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
