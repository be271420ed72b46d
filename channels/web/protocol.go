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
)

// inFrame is any frame a client sends.
type inFrame struct {
	Type      string          `json:"type"`
	SessionID string          `json:"session_id"`
	MessageID string          `json:"message_id,omitempty"`
	StepID    string          `json:"step_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // a string (user.message) or a response object
}

// responseContent is the content of a user.response.
type responseContent struct {
	Confirmed *bool  `json:"confirmed"`
	Message   string `json:"message"`
}

type helloFrame struct {
	Type      string          `json:"type"`
	SessionID string          `json:"session_id"`
	User      approval.UserID `json:"user"`
}

type messageFrame struct {
	Type      string `json:"type"`
	SessionID string `json:"session_id"`
	Kind      string `json:"kind"`
	Content   string `json:"content"`
	ReplyTo   string `json:"reply_to,omitempty"`
	IsError   bool   `json:"is_error"`
	Timestamp string `json:"timestamp"`
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
}

type toolResultFrame struct {
	Type      string          `json:"type"`
	SessionID string          `json:"session_id"`
	ToolName  string          `json:"tool_name"`
	ToolArgs  json.RawMessage `json:"tool_args,omitempty"`
	Content   string          `json:"content"`
	IsError   bool            `json:"is_error"`
	Timestamp string          `json:"timestamp"`
}

type resolvedFrame struct {
	Type       string          `json:"type"`
	SessionID  string          `json:"session_id"`
	StepID     string          `json:"step_id"`
	Status     approval.Status `json:"status"`
	StatusText string          `json:"status_text"`
	DecidedBy  approval.UserID `json:"decided_by,omitempty"`
	Result     string          `json:"result,omitempty"`
	Timestamp  string          `json:"timestamp"`
}

type errorFrame struct {
	Type      string `json:"type"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	SessionID string `json:"session_id,omitempty"`
	StepID    string `json:"step_id,omitempty"`
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
