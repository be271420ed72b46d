// Package channels connects chat platforms to the agent and the approval
// engine. Each platform is a Channel in a sub-package (feishu, dingtalk,
// web, cli, api); the Router between them de-duplicates events, turns card
// clicks and typed 确认 / 取消 into decisions, hands everything else to the
// agent, and implements approval.Notifier and agent.Speaker for all of them.
package channels

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
)

// Message is one inbound chat message, platform-neutral.
type Message struct {
	// Channel names the adapter ("feishu", "dingtalk", "web", "cli", "api").
	Channel string
	// ChatID, ChatType ("p2p" or "group") and ThreadID locate the message.
	ChatID   string
	ChatType string
	ThreadID string
	// UserID and UserName identify the sender.
	UserID   approval.UserID
	UserName string
	// MessageID is the platform's id of the message; EventID the id of the
	// event that carried it (Feishu). Both are de-duplicated.
	MessageID string
	EventID   string
	// Text is the message with mentions of the bot stripped.
	Text string
	// CreatedAt is when the platform says the message was sent (zero if unknown).
	CreatedAt time.Time
}

// CardAction is one click on a card button.
type CardAction struct {
	// Channel, ChatID and MessageID (of the card) locate the click.
	Channel   string
	ChatID    string
	MessageID string
	// EventID is the platform's id of the click event, de-duplicated.
	EventID string
	// UserID is who clicked.
	UserID approval.UserID
	// The button's value.
	ApprovalID    approval.ID
	Verb          approval.Verb
	PayloadSHA256 string
	// Comment is an optional note typed with the decision.
	Comment string
	// Resolution is a resolve button's choice (Verb approval.Resolve: a
	// frozen approval settled as done, retry or abandon).
	Resolution approval.Resolution
	// Grant is the approver's grant choice for a MEDIUM approval that may
	// grant a window: once, session, or unset (the default: session).
	Grant approval.GrantChoice
	// Calls, when set, decides call by call (approval.Decision.Calls: each
	// call, by its CallID or "#<n>", approve or reject); Verb is then
	// approve.
	Calls map[string]approval.Verb
	// Edits, when set, approves with changed arguments
	// (approval.Decision.Edits: call key -> new arguments); Verb is then
	// approve.
	Edits map[string]json.RawMessage
}

// Target is where something is said or shown.
type Target struct {
	Channel  string
	ChatID   string
	ThreadID string
	// ReplyTo is the message being answered, if any.
	ReplyTo string
	// UserID is the person the conversation is with.
	UserID approval.UserID
}

// OutKind is what kind of thing the bot says; a channel may show each
// differently (a tool result as a step, a notice in grey). The values are the
// wire names the web channel sends in a frame's "kind".
type OutKind string

// Kinds of Outgoing.
const (
	OutAnswer     OutKind = "answer"      // the model's reply
	OutNotice     OutKind = "notice"      // progress or a problem, in plain words
	OutToolResult OutKind = "tool_result" // a tool ran; Text is its result, Tool and Args name the call
)

// Outgoing is something the bot says.
type Outgoing struct {
	// Kind is what it is; empty is taken as OutNotice.
	Kind OutKind
	// Text is plain text or light Markdown.
	Text string
	// Tool and Args describe a tool result.
	Tool    string
	Args    []byte
	IsError bool
	// Mentions are people the message mentions by their platform id (a
	// reminder's approvers, at most approval.MaxMentions): a channel that
	// can (Feishu: <at user_id> elements of a text message; DingTalk:
	// at.atUserIds and @<id> in the text) mentions them before the text,
	// so they are notified; others say Text alone, which names them.
	Mentions []approval.UserID
}

// The router's own events about a message, of the agent's kind type: a
// turn's events are the agent's (agent.Say), and the router adds only
// these two, and the turn_ended of a message it answers itself
// (TurnEvent).
const (
	// SayQueued: the message is queued behind Approval, which waits for a
	// decision in the session; Text says so in words.
	SayQueued agent.SayKind = "queued"
	// SayRefused: the message was not taken; Refusal is ErrBusy or
	// ErrClosing, Text says so in words.
	SayRefused agent.SayKind = "refused"
)

// ErrBusy and ErrClosing are the Refusal of a refused message (SayRefused):
// too many messages wait in its conversation, or the bot is shutting down.
var (
	ErrBusy    = errors.New("channels: too many messages wait in this conversation")
	ErrClosing = errors.New("channels: shutting down")
)

// TurnEvent is an event of the turn of a message, as a TurnListener hears
// it: one the agent said (notice, tool_result, awaiting, answer,
// stream_end; turn_ended, whose Result says how the
// turn ended, Result.Resumed set when it was not this message's turn but
// the resumption of an approval's), or one of the router's own: SayQueued,
// SayRefused, or the turn_ended of a message it answered itself, with no
// turn of the agent (a typed 确认 / 取消, a late one, a refusal by the
// allow-list, an approval command): Result.Text is the answer, Result.Err
// set when the message could not be handled, and Status and Decided say
// the rest.
type TurnEvent struct {
	agent.Say
	// Status and Decided are set on the turn_ended of a message the
	// router answered itself: the status of its answer (a typed
	// decision's outcome; how the approval ended, for a reply that came
	// too late or lost a race: already_decided when something ran), and
	// the approval its typed decision ended ("" when it ended none).
	Status  approval.Status
	Decided approval.ID
	// Refusal is why a message was refused (SayRefused).
	Refusal error
}

// TurnListener is implemented by a channel that answers each request when
// its turn ends (the HTTP API). The presenter and the router hand it the
// turn's events (TurnEvent), to the Target of the message (ReplyTo is the
// turn's message id): everything the turn says (notice, tool_result,
// awaiting, answer, stream_end, turn_ended; not the pieces of a streamed
// message, delta), and the router's own events in place of the notices
// that stand for them in a chat (an approval is waiting, the conversation
// is busy, the bot is shutting down, the router's own answer to a
// message). Nothing of a turn reaches it through Send. Every inbound
// message it hands to the router gets a turn_ended, SayQueued or
// SayRefused for its message id, whichever path it takes (a queued
// message's turn ends later with a turn_ended of its own); only a
// duplicate and a message older than MaxAge are dropped unanswered. It
// must not block.
type TurnListener interface {
	TurnEvent(ctx context.Context, to Target, ev TurnEvent)
}

// Handler receives what a Channel hears. The Router implements it.
type Handler interface {
	// HandleMessage takes an inbound message; it must return quickly (the
	// platform waits for the ack) and never runs the model or a tool itself.
	HandleMessage(ctx context.Context, m Message) error
	// HandleCardAction takes a click and returns its outcome (the channel
	// renders the answer card or toast from it).
	HandleCardAction(ctx context.Context, a CardAction) (approval.Outcome, error)
}

// Channel is one platform adapter.
//
// Lifecycle: the constructor validates its config and does no I/O; Start
// connects and begins delivering to the Handler, returning once it is
// ready (or failed); Close stops it and waits for its goroutines, bounded
// by ctx. Ready reports health for /readyz.
type Channel interface {
	// Name is the channel's name in config, logs and session keys.
	Name() string
	Start(ctx context.Context, h Handler) error
	Close(ctx context.Context) error
	Ready() error
	// Send says something in a chat.
	Send(ctx context.Context, to Target, out Outgoing) error
	// ShowApproval sends the card of a pending approval and returns the
	// reference used to update it later.
	ShowApproval(ctx context.Context, to Target, v cards.View) (approval.CardRef, error)
	// SettleApproval updates a card to its final state.
	SettleApproval(ctx context.Context, ref approval.CardRef, v cards.View) error
}

// ProgressShower is implemented by a channel that can update a card it
// showed in place while the approval still waits: ShowProgress redraws the
// card ref as the pending view v (a quorum's votes so far), buttons and
// all. Channels without it show the progress in the decider's answer only.
type ProgressShower interface {
	ShowProgress(ctx context.Context, ref approval.CardRef, v cards.View) error
}

// Scope is how session keys are built.
type Scope string

// Session scopes.
const (
	ScopePerChat   Scope = "per_chat"   // channel:chat_id (default)
	ScopePerUser   Scope = "per_user"   // channel:chat_id:user_id
	ScopePerThread Scope = "per_thread" // channel:chat_id:thread_id (chat_id alone outside threads)
)

// SessionKey builds the session key of a message under a scope.
func SessionKey(scope Scope, channel, chatID string, user approval.UserID, threadID string) approval.SessionKey {
	k := channel + ":" + chatID
	switch scope {
	case ScopePerUser:
		k += ":" + string(user)
	case ScopePerThread:
		if threadID != "" {
			k += ":" + threadID
		}
	}
	return approval.SessionKey(k)
}
