// Package fakellm is a fake OpenAI-compatible chat-completions server for
// tests. It speaks the real wire protocol (POST /v1/chat/completions and
// POST /chat/completions, JSON in and out, Bearer authorization), so the real
// openai-go client can be pointed at it.
//
// A test scripts the server's answers: Enqueue queues replies that are
// served in order (text, tool calls, HTTP errors, delays, raw bodies), and
// HandleFunc installs a function that computes a reply from the request when
// the queue is empty. Every request is recorded, with its decoded body, for
// assertions through Requests.
//
// A request with "stream": true is answered as OpenAI streams: server-sent
// events, one "data: <chat.completion.chunk>" per piece (the role first,
// then the content in pieces, then each tool call: its id and name, then its
// arguments in pieces, all with the call's index), a last chunk with the
// finish reason, and "data: [DONE]". Reply.Chunks, Hold, CutAfter and
// StreamError script a stream's pieces, a pause in it, a cut, and an error
// event; an error status or a raw Body is sent as it is, streamed or not.
//
//	s := fakellm.New(t)
//	s.Enqueue(fakellm.Status(429, "slow down"), fakellm.Text("hello"))
//	// configure the client with BaseURL s.URL and APIKey s.APIKey()
package fakellm

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// DefaultAPIKey is the key a new Server expects in the Authorization header.
const DefaultAPIKey = "fakellm-test-key"

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL to give a client, e.g. "http://127.0.0.1:4711/v1".
	URL string

	t         testing.TB
	srv       *httptest.Server
	done      chan struct{} // closed by Close; ends pending delays
	closeOnce sync.Once

	mu       sync.Mutex
	apiKey   string
	queue    []Reply
	handler  func(Request) Reply
	requests []Request
	served   int
}

// Reply is one scripted answer. The zero Reply is a 200 with empty content.
type Reply struct {
	// Text is the assistant message content.
	Text string
	// ToolCalls are the tool calls of the assistant message; several make
	// parallel tool calls. A call without an ID gets "call_<n>".
	ToolCalls []ToolCall
	// FinishReason overrides the finish reason ("stop", or "tool_calls"
	// when there are tool calls).
	FinishReason string

	// Status is the HTTP status; 0 means 200. A status of 400 or more sends
	// an OpenAI error body built from ErrorMessage, ErrorType and ErrorCode.
	Status int
	// ErrorMessage is the error.message of an error reply.
	ErrorMessage string
	// ErrorType is the error.type of an error reply.
	ErrorType string
	// ErrorCode is the error.code of an error reply.
	ErrorCode string

	// Header holds extra response headers, e.g. "Retry-After": "1" or
	// "Retry-After-Ms": "0".
	Header map[string]string
	// Body, when not empty, is sent verbatim as the response body (with
	// Status), instead of the body built from the other fields.
	Body string
	// Chunks are the pieces a streamed reply sends Text in (they should
	// join to Text); empty splits Text into pieces of a few runes.
	Chunks []string
	// Hold, when not nil, pauses a streamed reply after its first piece
	// of content (before the tool calls when there is none) until it is
	// closed, so a test can look at an answer in flight without timing.
	Hold <-chan struct{}
	// CutAfter, when > 0, ends a streamed reply's connection after that
	// many pieces of content: no finish reason, no [DONE].
	CutAfter int
	// StreamError, when set, is sent as an error event after the pieces
	// of content of a streamed reply (the way OpenAI reports a failure
	// mid-stream), instead of the rest of the reply.
	StreamError string

	// Delay makes the server wait this long before answering. The wait
	// ends early when the client goes away, so a timed-out client does not
	// keep the server busy.
	Delay time.Duration
}

// ToolCall is one tool call in a scripted reply.
type ToolCall struct {
	// ID is the call id; empty gets "call_<n>".
	ID string
	// Name is the function name.
	Name string
	// Arguments is the arguments string exactly as sent (it may be
	// malformed JSON on purpose).
	Arguments string
}

// Request is one request the server received.
type Request struct {
	// Method and Path are the HTTP method and URL path.
	Method, Path string
	// Header is the request header.
	Header http.Header
	// Body is the raw request body.
	Body []byte
	// Chat is Body decoded as a chat-completions request (zero when the
	// body is not JSON).
	Chat ChatRequest
	// Authorized reports whether the Authorization header carried the
	// expected bearer key. Unauthorized requests get a 401 and do not
	// consume a queued reply.
	Authorized bool
}

// ChatRequest is the decoded body of a chat-completions request; it holds
// the fields tests look at.
type ChatRequest struct {
	Model               string    `json:"model"`
	Messages            []Message `json:"messages"`
	Tools               []Tool    `json:"tools"`
	Temperature         *float64  `json:"temperature"`
	MaxTokens           *int64    `json:"max_tokens"`
	MaxCompletionTokens *int64    `json:"max_completion_tokens"`
	ParallelToolCalls   *bool     `json:"parallel_tool_calls"`
	Stream              bool      `json:"stream"`
}

// Message is one message of a chat-completions request.
type Message struct {
	Role string `json:"role"`
	// Content is a JSON string or an array of content parts; see Text.
	Content    json.RawMessage `json:"content"`
	ToolCalls  []WireToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	Name       string          `json:"name"`
}

// Text returns the message content as text: the string, or the text parts
// joined.
func (m Message) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}

// WireToolCall is a tool call as it appears on the wire (in an assistant
// message of a request, or in a response).
type WireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function WireFunction `json:"function"`
}

// WireFunction is the function part of a WireToolCall.
type WireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is one tool offered in a request.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// Text returns a reply with assistant text.
func Text(s string) Reply { return Reply{Text: s} }

// Calls returns a reply with the given tool calls (parallel when several).
func Calls(calls ...ToolCall) Reply { return Reply{ToolCalls: calls} }

// Call returns a tool call with the given name and arguments string and a
// generated id.
func Call(name, arguments string) ToolCall { return ToolCall{Name: name, Arguments: arguments} }

// Status returns an error reply with the HTTP status and an OpenAI error
// body whose message is msg.
func Status(code int, msg string) Reply {
	return Reply{Status: code, ErrorMessage: msg, ErrorType: errorType(code)}
}

// RateLimited returns a 429 reply that asks the client to wait retryAfterMs
// milliseconds (header Retry-After-Ms, which openai-go honours).
func RateLimited(retryAfterMs int) Reply {
	r := Status(http.StatusTooManyRequests, "Rate limit reached; please try again later.")
	r.ErrorCode = "rate_limit_exceeded"
	r.Header = map[string]string{"Retry-After-Ms": strconv.Itoa(retryAfterMs)}
	return r
}

// Delayed returns r answered after d.
func Delayed(d time.Duration, r Reply) Reply {
	r.Delay = d
	return r
}

func errorType(code int) string {
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return "invalid_request_error"
	case code == http.StatusTooManyRequests:
		return "rate_limit_error"
	case code >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

// New starts a fake server that expects DefaultAPIKey; it is closed when
// the test ends. A request that finds no queued reply and no HandleFunc
// fails the test and gets a 500.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, apiKey: DefaultAPIKey, done: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.srv.URL + "/v1"
	t.Cleanup(s.Close)
	return s
}

// Close stops the server. It is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.done) })
	s.srv.Close()
}

// APIKey returns the key the server expects.
func (s *Server) APIKey() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.apiKey
}

// SetAPIKey changes the expected key; "" accepts any Authorization header,
// or none.
func (s *Server) SetAPIKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apiKey = key
}

// Enqueue appends replies; each authorized request takes the next one.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// HandleFunc installs f to compute replies dynamically. Queued replies are
// still served first; f answers when the queue is empty. f may be called
// from several goroutines at once.
func (s *Server) HandleFunc(f func(Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = f
}

// Requests returns a copy of every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Pending returns the number of queued replies not served yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" && r.URL.Path != "/chat/completions" {
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "Unknown request URL: "+r.Method+" "+r.URL.Path)
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "", "Method not allowed")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "cannot read body")
		return
	}
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	_ = json.Unmarshal(body, &req.Chat)

	s.mu.Lock()
	key := s.apiKey
	presented := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	req.Authorized = key == "" || r.Header.Get("Authorization") == "Bearer "+key
	s.requests = append(s.requests, req)
	if !req.Authorized {
		s.mu.Unlock()
		// Echo the presented key, as some providers do, so that tests can
		// check that clients keep it out of their errors.
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key",
			"Incorrect API key provided: "+presented+".")
		return
	}
	var reply Reply
	var ok bool
	switch {
	case len(s.queue) > 0:
		reply, s.queue, ok = s.queue[0], s.queue[1:], true
	case s.handler != nil:
		h := s.handler
		s.mu.Unlock()
		reply, ok = h(req), true
		s.mu.Lock()
	}
	s.served++
	n := s.served
	s.mu.Unlock()

	if !ok {
		s.t.Errorf("fakellm: request %d to %s: no reply queued", n, r.URL.Path)
		writeError(w, http.StatusInternalServerError, "server_error", "", "fakellm: no reply queued")
		return
	}
	if reply.Delay > 0 {
		timer := time.NewTimer(reply.Delay)
		select {
		case <-timer.C:
		case <-r.Context().Done():
			timer.Stop()
			return
		case <-s.done:
			timer.Stop()
			return
		}
	}
	for k, v := range reply.Header {
		w.Header().Set(k, v)
	}
	status := reply.Status
	if status == 0 {
		status = http.StatusOK
	}
	if reply.Body != "" {
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, reply.Body)
		return
	}
	if status >= 400 {
		typ := reply.ErrorType
		if typ == "" {
			typ = errorType(status)
		}
		writeError(w, status, typ, reply.ErrorCode, reply.ErrorMessage)
		return
	}
	if req.Chat.Stream {
		s.stream(w, r, n, req.Chat.Model, reply)
		return
	}
	writeJSON(w, status, completion(n, req.Chat.Model, reply))
}

// completion builds a chat.completion object for reply.
func completion(n int, model string, reply Reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": reply.Text, "refusal": nil}
	if reply.Text == "" && len(reply.ToolCalls) > 0 {
		msg["content"] = nil
	}
	finish := "stop"
	if len(reply.ToolCalls) > 0 {
		calls := make([]WireToolCall, len(reply.ToolCalls))
		for i, c := range reply.ToolCalls {
			id := c.ID
			if id == "" {
				id = fmt.Sprintf("call_%d_%d", n, i+1)
			}
			calls[i] = WireToolCall{ID: id, Type: "function", Function: WireFunction{Name: c.Name, Arguments: c.Arguments}}
		}
		msg["tool_calls"] = calls
		finish = "tool_calls"
	}
	if reply.FinishReason != "" {
		finish = reply.FinishReason
	}
	if model == "" {
		model = "fake-model"
	}
	return map[string]any{
		"id":      fmt.Sprintf("chatcmpl-fake-%d", n),
		"object":  "chat.completion",
		"created": 1767225600,
		"model":   model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       msg,
			"logprobs":      nil,
			"finish_reason": finish,
		}},
		"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	}
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	var c any
	if code != "" {
		c = code
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": c,
	}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
