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
const (
	SayNotice     SayKind = "notice"      // progress ("still working") or a problem, in plain words
	SayToolResult SayKind = "tool_result" // a tool ran; Text is its result
	SayAwaiting   SayKind = "awaiting"    // the turn waits for a person's decision on Approval (its card is out)
	SayAnswer     SayKind = "answer"      // the model's reply
	SayTurnEnded  SayKind = "turn_ended"  // the turn is over; Result says how. Nothing is said in a chat.
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
	// Approval is the approval an awaiting event waits for.
	Approval approval.ID
	// Result is the turn's result, on turn_ended.
	Result *TurnResult
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
	Tool    string          `json:"tool"`
	Input   json.RawMessage `json:"input"`
	Result  string          `json:"result"`
	Status  approval.Status `json:"status"` // an outcome status (executed, failed, rejected, …), or invalid or pending
	IsError bool            `json:"is_error,omitempty"`
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
	// Err is set when the turn failed; Text then holds a sentence safe to show.
	Err error
}
