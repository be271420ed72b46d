package approval

import (
	"context"
	"errors"
)

// Notifier is everything the engine tells the people deciding: it shows
// approvals, redraws their cards, carries out escalation steps and settles
// the cards. The channels package implements it (channels.Presenter): it
// renders cards with the cards package and sends them through the
// session's channel. Every method is part of the interface, so a
// wrapper (metrics) cannot hide one: the compiler makes it forward them
// all. NopNotifier does nothing for each.
type Notifier interface {
	// Show sends the card (or prompt) for a new approval and returns the
	// references of what it sent, so any replica can update them later.
	Show(ctx context.Context, a *Approval) ([]CardRef, error)
	// Settle updates every card of the approval to its final state.
	Settle(ctx context.Context, a *Approval, o Outcome) error
	// Progress redraws every card of a pending approval with how far it
	// has come towards its quorum (Approval.Votes) and the escalation
	// steps taken. A card it updates must still end in the approval's
	// final state when a Settle races the update.
	Progress(ctx context.Context, a *Approval) error
	// Escalate shows a, still pending, in the chat of its escalation step
	// step (just taken: a.Escalated counts it), with its buttons, and
	// tells the chat where it waited so far; it redraws none of a's other
	// cards (the engine does, through Progress). It returns the
	// references of the cards it sent, recorded like any card of a (a
	// decision on either settles both). An error means that no card
	// reached the step's chat; the notifier has said so where a waits.
	Escalate(ctx context.Context, a *Approval, step int) ([]CardRef, error)
	// Remind tells the people who may decide a, still pending, that it
	// waits (reminder n of a.Reminders, just taken: a.Reminded counts
	// it), where they decide it, mentioning them by name
	// (Approval.Mentioned). It names the approval by its code and who
	// asked, never what a private approval would run. An error means the
	// reminder reached nobody; it is not sent again.
	Remind(ctx context.Context, a *Approval, n int) error
}

// EndListener hears of every approval that ends on this engine (decided,
// expired, superseded, cancelled, and the resolution of a frozen one),
// once its cards are settled (Notifier.Settle). The agent loop's
// Resumptions is one: an outcome resumes its turn from there, unless a
// Wait of this engine takes it (waited: a Wait is blocked on a, or this
// engine requested a and its Wait has not begun; that Wait's caller
// claims the continuation itself, Engine.ClaimResume). Ended must not
// block; a and o are the listener's own.
type EndListener interface {
	Ended(a *Approval, o Outcome, waited bool)
}

// Dispatcher runs tool calls; the agent's tool registry implements it.
type Dispatcher interface {
	// Dispatch runs one call and returns its result. A result with IsError
	// is a failure the tool reports (nothing or a known part happened). An
	// error wrapping ErrNotRun means the tool never started (unknown tool,
	// invalid arguments). Any other error means the effect is unknown: the
	// approval is frozen and the call is never re-run by itself.
	Dispatch(ctx context.Context, c Call) (Result, error)
}

// ErrNotRun marks a dispatch error that happened before the tool started.
var ErrNotRun = errors.New("tool did not run")

// ErrToolChanged marks a dispatch refused because the tool's definition
// (an MCP server's input schema, annotations or description) is no longer
// the one the call's payload hash pinned: what a person approved is not
// what would run. It always comes with ErrNotRun.
var ErrToolChanged = errors.New("the tool's definition changed since the call was shown")

// NopNotifier shows nothing; it serves engines whose callers poll (tests,
// benchmarks, the HTTP API without a chat).
type NopNotifier struct{}

// Show returns no cards.
func (NopNotifier) Show(context.Context, *Approval) ([]CardRef, error) { return nil, nil }

// Settle does nothing.
func (NopNotifier) Settle(context.Context, *Approval, Outcome) error { return nil }

// Progress does nothing.
func (NopNotifier) Progress(context.Context, *Approval) error { return nil }

// Escalate sends no card.
func (NopNotifier) Escalate(context.Context, *Approval, int) ([]CardRef, error) { return nil, nil }

// Remind says nothing.
func (NopNotifier) Remind(context.Context, *Approval, int) error { return nil }

var _ Notifier = NopNotifier{}
