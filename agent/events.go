package agent

import (
	"context"
	"encoding/json"

	"github.com/hitlbot/hitlbot/approval"
)

// Inbound is one user message for the agent, or the start of a resumed
// turn (Resumed set, Text empty).
type Inbound struct {
	// Session is the conversation (see docs/ARCHITECTURE.md: session key).
	Session approval.SessionKey
	// Channel, ChatID and ThreadID locate it on its platform.
	Channel  string
	ChatID   string
	ThreadID string
	// User is the sender; MessageID the platform's id of the message. A
	// resumed turn carries those of the turn it continues, so what it says
	// answers the same message.
	User      approval.UserID
	MessageID string
	// UserName is the sender's name as the platform gave it (DingTalk's
	// senderNick), for the cards; empty when it gave none.
	UserName string
	// Text is the message, mentions stripped.
	Text string
	// Group reports that the chat is a group chat (not a 1:1 chat): an
	// approval's privacy applies there (approval.Approval.Group).
	Group bool
	// Resumed, when set, makes this no message: the turn that asked for
	// this approval stopped waiting before it ended, and its outcome
	// resumes it (Loop.Resume).
	Resumed approval.ID
}

// SayKind is the kind of a turn event: what the agent says, or where the
// turn stands.
type SayKind string

// The events of a turn, in the order they can come: any number of
// notices, tool results and awaiting events, then at most one answer, then
// exactly one turn_ended, always last.
//
// A model that streams (Request.Delta) adds deltas: the pieces of the text
// it writes, as they come. The deltas of one model round make one streamed
// message, and the next event of the round ends it: the answer (whose Text
// is the whole text, so a channel that ignores deltas loses nothing), or a
// stream_end when the round ends otherwise (the model goes on with tool
// calls, so an approval's card may follow; or it failed: then stream_end is
// an error whose Text is the sentence that ends the message, and it stands
// for the error notice). A round with no delta has no stream_end.
const (
	SayNotice     SayKind = "notice"      // progress ("still working") or a problem, in plain words
	SayToolResult SayKind = "tool_result" // a tool ran; Text is its result
	SayAwaiting   SayKind = "awaiting"    // the turn waits for a person's decision on Approval (its card is out)
	SayAnswer     SayKind = "answer"      // the model's reply
	SayTurnEnded  SayKind = "turn_ended"  // the turn is over; Result says how. Nothing is said in a chat.
	SayDelta      SayKind = "delta"       // a piece of the text the model is writing (Text), in order
	SayStreamEnd  SayKind = "stream_end"  // the streamed message ends without being the answer; IsError: the model failed, Text says so
)

// Say is one event of a turn.
type Say struct {
	Kind SayKind
	// Text is what is said (notice, tool result, answer).
	Text string
	// Tool and Args name the call of a tool result.
	Tool string
	Args json.RawMessage
	// IsError marks a failed tool result or a notice about a problem.
	IsError bool
	// Approval is the approval an awaiting event waits for; on the notice
	// that a live grant let a call run, the approval that granted it.
	Approval approval.ID
	// Result is the turn's result, on turn_ended.
	Result *TurnResult
	// Private is set on everything a private turn says, from the round
	// that made it private to its turn_ended (privacy.go): the turn's
	// requester (Inbound.User) is to read it alone. It is the one
	// decision of a turn's privacy, the same for the live turn, its
	// resumption on any replica and a frozen approval's resolution: the
	// channel obeys it, and never decides by the approval at hand.
	Private *Private
}

// Speaker is what the agent needs of a channel: a way to speak in the
// session a message came from, and to tell where a turn stands. The
// channels' router implements it. Say must not block on the chat for long:
// the turn waits for it.
type Speaker interface {
	Say(ctx context.Context, to Inbound, s Say) error
}

// Action is a tool call of a turn and what became of it.
type Action struct {
	Tool    string
	Input   json.RawMessage
	Result  string
	Status  approval.Status // an outcome status (executed, failed, rejected, …), or invalid or pending
	IsError bool
}

// TurnResult is the result of one turn.
type TurnResult struct {
	// Text is the final answer (or the notice that ended the turn).
	Text string
	// Actions are the tool calls of the turn (of a resumed turn: those of
	// the approval that resumed it, then any it made after).
	Actions []Action
	// Waiting is the approval the turn stopped waiting for while it was
	// still open (the turn ran out of time, or the loop closed): its
	// outcome will resume the turn.
	Waiting approval.ID
	// Resumed is the approval whose outcome resumed the turn
	// (Inbound.Resumed): the turn continues an earlier message's; "" for
	// a message's own turn.
	Resumed approval.ID
	// Err is set when the turn failed; Text then holds a sentence safe to show.
	Err error
	// private is the turn's privacy (Say.Private), for its turn_ended.
	private *Private
}
