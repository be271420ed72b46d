package agent

import (
	"context"
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hitlbot/hitlbot/approval"
	catalogue "github.com/hitlbot/hitlbot/words"
)

// Model turns a conversation into the next assistant message: text, tool
// calls, or both. Implementations (package agent/model): the
// OpenAI-compatible client and the deterministic rules model.
type Model interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// Role is who said a message.
type Role string

// Roles, as in the chat-completions API.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of a conversation.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Name is the tool's name on a tool message.
	Name string `json:"name,omitempty"`
	// Status, on a tool message, is what became of the call in the
	// outcome vocabulary (executed, failed, rejected, expired, superseded,
	// cancelled, frozen…; invalid when its arguments were refused, and
	// pending while a person has not decided). The loop sets it
	// where it writes the reply, so a model need not read the reply's
	// words to know; the OpenAI model does not send it.
	Status approval.Status `json:"status,omitempty"`
	// Private, when set, marks a message of a private turn (see Private):
	// only that turn sends it to the model; the others read one line in
	// its place. The OpenAI model does not send it.
	Private *Private `json:"private,omitempty"`
}

// ToolCall is one call the model asks for.
type ToolCall struct {
	// ID is the model's id for the call (generated when the model gives none).
	ID string `json:"id"`
	// Name is the tool name.
	Name string `json:"name"`
	// Args is the JSON arguments object, as the model wrote it.
	Args json.RawMessage `json:"args"`
	// Confidence is how sure the model is that this call is what the user
	// wants, 0..1. Models that give none (LLMs) report 1.
	Confidence float64 `json:"confidence"`
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string
	Description string
	Schema      *jsonschema.Schema
	// About says what a call does for a person, in each language (About
	// of the tool); the rules model's /tools shows it in a turn whose
	// language the description is not written in.
	About approval.Words
}

// Request is the input of Model.Complete.
type Request struct {
	// Messages is the conversation so far, oldest first.
	Messages []Message
	// Tools are the tools the model may call.
	Tools []ToolSpec
	// Lang is the turn's language ("zh", "en"): the language of the
	// person the turn answers. A model that words its own answers (the
	// rules) says them in it; an LLM follows the conversation.
	Lang string
	// Delta, when set, is called by a model that streams with each piece
	// of the assistant's text as it is generated, in order, from the
	// goroutine that called Complete (never after Complete returns). The
	// Response still holds the whole message. A model that does not
	// stream (the rules, an OpenAI model with stream off) never calls it.
	Delta func(text string)
}

// Response is the output of Model.Complete.
type Response struct {
	// Message is the assistant message (Role is RoleAssistant).
	Message Message
}

// ModelError is an error from a model whose Public text is safe to show a
// chat user (no keys, URLs or prompt fragments); Err keeps the detail for
// the logs.
type ModelError struct {
	// Public is the sentence in English. Key, when set, names it in the
	// catalogue (package words), for a turn that speaks another language.
	Public string
	Key    catalogue.Key
	Err    error
}

// NewModelError is the ModelError whose Public text is the catalogue's
// sentence k.
func NewModelError(k catalogue.Key, err error) *ModelError {
	return &ModelError{Public: catalogue.Text(catalogue.EN, k), Key: k, Err: err}
}

// PublicIn is e's sentence in lang: Key's in the catalogue when e has one,
// else Public.
func (e *ModelError) PublicIn(lang string) string {
	if e.Key.Valid() {
		return catalogue.In(lang, e.Key)
	}
	return e.Public
}

func (e *ModelError) Error() string {
	if e.Err == nil {
		return e.Public
	}
	return e.Public + ": " + e.Err.Error()
}

func (e *ModelError) Unwrap() error { return e.Err }

var _ error = (*ModelError)(nil)
