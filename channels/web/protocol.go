package web

import (
	"encoding/json"
	"regexp"

	"github.com/hitlbot/hitlbot/approval"
)

// Frame types (see the package documentation for the protocol).
const (
	typeHello           = "hello"
	typeUserMessage     = "user.message"
	typeUserResponse    = "user.response"
	typeAgentMessage    = "agent.message"
	typeUserConfirm     = "agent.user_confirm"
	typeToolResult      = "agent.tool_result"
	typeConfirmResolved = "agent.confirm_resolved"
	typeDelta           = "agent.delta" // a piece of a streamed answer (stream.go)
	typeError           = "error"
)

// Error codes of "error" frames.
const (
	CodeInvalidStepID  = "INVALID_STEP_ID"
	CodeAlreadyDecided = "ALREADY_DECIDED"
	CodeExpired        = "EXPIRED"
	CodeInvalidMessage = "INVALID_MESSAGE"
	CodeUnauthorized   = "UNAUTHORIZED"
	CodeUnavailable    = "UNAVAILABLE"
	// CodeAwaitingQuorum answers an approve that counted towards a quorum
	// not reached yet (the message says the progress): the step stays
	// open, for the other approvers and for a reject.
	CodeAwaitingQuorum = "AWAITING_QUORUM"
)

// inFrame is any frame a client sends. The frame's kind is in "type"
// (hitlbot's own clients) or "event" (the seed protocol's clients, as in
// seeds/003); a frame may carry both when they agree.
type inFrame struct {
	Type      string          `json:"type"`
	Event     string          `json:"event"`
	SessionID string          `json:"session_id"`
	MessageID string          `json:"message_id,omitempty"`
	StepID    string          `json:"step_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // a string (user.message) or a response object
	// Timestamp is the client's clock (the seed's clients send it); it is
	// not trusted: a message's time is when the server received it.
	Timestamp string `json:"timestamp,omitempty"`
}

// kind returns the frame's kind from "type" or "event", and false when
// the two are both set and differ.
func (f inFrame) kind() (string, bool) {
	switch {
	case f.Type == "":
		return f.Event, true
	case f.Event == "" || f.Event == f.Type:
		return f.Type, true
	}
	return "", false
}

// responseContent is the content of a user.response.
type responseContent struct {
	Confirmed *bool  `json:"confirmed"`
	Message   string `json:"message"`
	// Resolution answers a frozen step's resolve buttons (done, retry,
	// abandon) instead of Confirmed; Message is then the note.
	Resolution string `json:"resolution,omitempty"`
	// Grant, with confirmed true on a MEDIUM approval that may grant (its
	// card has approve_once and grant_window), is "once" (仅本次) or
	// "session" (本会话允许); absent means session, as a plain 确认. On
	// another agent's approval whose card has approve_always, "always"
	// also allows the agent the card's standing rule (always: its label).
	Grant string `json:"grant,omitempty"`
	// Calls, with confirmed true, decides a batch call by call: each
	// call_id of the card's calls, "approve" or "reject" (every call
	// once; see approval.Decision.Calls).
	Calls map[string]string `json:"calls,omitempty"`
	// Edits, with confirmed true, approves changed arguments in one step:
	// call key ("#1" for a confirmation of one call, else the card's
	// call_id or "#<n>") -> the call's new arguments (an object); see
	// approval.Decision.Edits. Not with calls.
	Edits map[string]json.RawMessage `json:"edits,omitempty"`
}

// Every server frame carries its kind twice: "type" (hitlbot's clients,
// the page) and "event" (the seed protocol's clients), with the same value.

type helloFrame struct {
	Type      string          `json:"type"`
	Event     string          `json:"event"`
	SessionID string          `json:"session_id"`
	User      approval.UserID `json:"user"`
	Timestamp string          `json:"timestamp"`
}

type messageFrame struct {
	Type      string `json:"type"`
	Event     string `json:"event"`
	SessionID string `json:"session_id"`
	Kind      string `json:"kind"`
	Content   string `json:"content"`
	ReplyTo   string `json:"reply_to,omitempty"`
	IsError   bool   `json:"is_error"`
	Timestamp string `json:"timestamp"`
	// StreamID, on the message that ends a streamed answer, names the
	// agent.delta frames it replaces.
	StreamID string `json:"stream_id,omitempty"`
}

type confirmFrame struct {
	Type      string          `json:"type"`
	Event     string          `json:"event"`
	SessionID string          `json:"session_id"`
	StepID    string          `json:"step_id"`
	Timestamp string          `json:"timestamp"`
	Content   string          `json:"content"`
	Metadata  confirmMetadata `json:"metadata"`
	Card      json.RawMessage `json:"card"`
}

type confirmMetadata struct {
	ToolName             string          `json:"tool_name"`
	ToolDescription      string          `json:"tool_description"`
	ToolArgs             json.RawMessage `json:"tool_args"`
	RequiresConfirmation bool            `json:"requires_confirmation"`
	Risk                 string          `json:"risk"`
	ExpiresAt            string          `json:"expires_at"`
	PayloadSHA256        string          `json:"payload_sha256"`
	ApprovalID           approval.ID     `json:"approval_id"`
	Summary              string          `json:"summary"`
	Preview              string          `json:"preview,omitempty"`
	Reason               string          `json:"reason,omitempty"`
	Requester            approval.UserID `json:"requester"`
	Approvers            string          `json:"approvers"`
	// About says what the call does for its approver (also in
	// tool_description, which falls back to the tool's own description);
	// RiskText is the risk in words; ShortHash the payload hash's first
	// 12 hex digits, as the cards show it.
	About     string `json:"about,omitempty"`
	RiskText  string `json:"risk_text,omitempty"`
	ShortHash string `json:"short_hash,omitempty"`
	// Progress says a quorum's votes so far ("1/2 approved: bob"), and
	// Escalated what a timed escalation has done ("Nobody decided within
	// 10 min: also asked in …"); the step's frame is sent again, with the
	// same step_id, when either changes while it waits.
	Progress  string `json:"progress,omitempty"`
	Escalated string `json:"escalated,omitempty"`
}

type toolResultFrame struct {
	Type      string          `json:"type"`
	Event     string          `json:"event"`
	SessionID string          `json:"session_id"`
	StepID    string          `json:"step_id,omitempty"` // the confirmation whose call this is; absent for calls that needed none
	ToolName  string          `json:"tool_name"`
	ToolArgs  json.RawMessage `json:"tool_args,omitempty"`
	Content   string          `json:"content"`
	IsError   bool            `json:"is_error"`
	Timestamp string          `json:"timestamp"`
	Metadata  resultMetadata  `json:"metadata"`
}

// resultMetadata is agent.tool_result's metadata, shaped like the
// metadata of agent.user_confirm (seeds/003).
type resultMetadata struct {
	ToolName string          `json:"tool_name"`
	ToolArgs json.RawMessage `json:"tool_args,omitempty"`
	IsError  bool            `json:"is_error"`
}

type resolvedFrame struct {
	Type       string          `json:"type"`
	Event      string          `json:"event"`
	SessionID  string          `json:"session_id"`
	StepID     string          `json:"step_id"`
	Content    string          `json:"content"` // the outcome in words, as status_text
	Status     approval.Status `json:"status"`
	StatusText string          `json:"status_text"`
	DecidedBy  approval.UserID `json:"decided_by,omitempty"`
	Result     string          `json:"result,omitempty"`
	Timestamp  string          `json:"timestamp"`
	// Resolve, on a frozen step (its effect unknown), are the three
	// choices that resolve it, answered with user.response {resolution,
	// message}; ResolveHow says what they do. Resolution names how a
	// person resolved it, once they did.
	Resolve    []resolveChoice     `json:"resolve,omitempty"`
	ResolveHow string              `json:"resolve_how,omitempty"`
	Resolution approval.Resolution `json:"resolution,omitempty"`
}

// resolveChoice is one resolve button of a frozen step.
type resolveChoice struct {
	Resolution approval.Resolution `json:"resolution"`
	Label      string              `json:"label"`
}

type errorFrame struct {
	Type  string `json:"type"`
	Event string `json:"event"`
	Code  string `json:"code"`
	// Error repeats Code under the name the seed's error objects use
	// ({"error":"INVALID_STEP_ID","message":"…"}).
	Error     string `json:"error"`
	Message   string `json:"message"`
	SessionID string `json:"session_id,omitempty"`
	StepID    string `json:"step_id,omitempty"`
	Timestamp string `json:"timestamp"`
}

// validID matches session and message ids chosen by clients.
var validID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// mustJSON marshals a frame built from plain fields; it cannot fail.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("web: marshal frame: " + err.Error())
	}
	return b
}
