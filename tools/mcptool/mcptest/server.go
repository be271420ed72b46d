package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server is the test server and what it saw.
type Server struct {
	mcp     *mcp.Server
	callLog io.Writer // nil: none; one line per call: "<tool> <pid>"

	mu        sync.Mutex
	calls     map[string]int
	version   int
	release   chan struct{}
	slowIn    chan struct{} // one value per slow call that started
	cancelled chan bool     // per slow call: whether it saw cancellation
}

// Option configures New.
type Option func(*Server)

// WithCallLog makes the server write one line per tool call to w:
// "<tool> <pid>" (a subprocess tells its parent what it received).
func WithCallLog(w io.Writer) Option { return func(s *Server) { s.callLog = w } }

// New returns a server with all its tools.
func New(opts ...Option) *Server {
	s := &Server{
		calls:     map[string]int{},
		release:   make(chan struct{}),
		slowIn:    make(chan struct{}, 16),
		cancelled: make(chan bool, 16),
	}
	for _, o := range opts {
		o(s)
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "1.0.0"}, &mcp.ServerOptions{HasTools: true})
	s.addTools()
	return s
}

// MCP is the SDK server (Connect it to a transport).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Handler serves streamable HTTP. bearer, when not empty, is the
// Authorization header every request must carry (else 401).
func (s *Server) Handler(bearer string, stateless bool) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if bearer != "" && r.Header.Get("Authorization") != bearer {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Calls returns how many calls of tool the server received.
func (s *Server) Calls(tool string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[tool]
}

// SlowStarted delivers one value per slow call that started.
func (s *Server) SlowStarted() <-chan struct{} { return s.slowIn }

// SlowEnded delivers, per slow call that ended, whether it saw its
// context cancelled (the client's notifications/cancelled).
func (s *Server) SlowEnded() <-chan bool { return s.cancelled }

// Release lets every slow call (now and later) return.
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.release:
	default:
		close(s.release)
	}
}

// Change swaps the description and the input schema of the tool
// "changing" and notifies tools/list_changed.
func (s *Server) Change() {
	s.mu.Lock()
	s.version++
	s.mu.Unlock()
	s.addChanging()
}

// Add defines (or redefines) tools on the server as given, each answering
// "<name> ran", and notifies tools/list_changed: a test's own definitions
// (one whose name, description or schema carries a secret, two servers
// whose tools' full names collide).
func (s *Server) Add(tools ...*mcp.Tool) {
	for _, t := range tools {
		name := t.Name
		s.mcp.AddTool(t, func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.count(name)
			return text("%s ran", name), nil
		})
	}
}

// Remove deletes the named tools and notifies tools/list_changed.
func (s *Server) Remove(names ...string) { s.mcp.RemoveTools(names...) }

func (s *Server) count(tool string) {
	s.mu.Lock()
	s.calls[tool]++
	if s.callLog != nil {
		fmt.Fprintf(s.callLog, "%s %d\n", tool, os.Getpid())
	}
	s.mu.Unlock()
}

func text(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

func ptr[T any](v T) *T { return &v }

// object is an input schema: an object with the given properties.
func object(props string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	if len(required) == 0 {
		req = []byte("[]")
	}
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{%s},"required":%s}`, props, req))
}

func (s *Server) addTools() {
	simple := func(name string, a *mcp.ToolAnnotations) {
		s.mcp.AddTool(&mcp.Tool{Name: name, Description: "a tool annotated " + name, InputSchema: object(`"x":{"type":"string"}`), Annotations: a},
			func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				s.count(name)
				return text("%s ran", name), nil
			})
	}
	simple("read_only", &mcp.ToolAnnotations{ReadOnlyHint: true})
	simple("not_destructive", &mcp.ToolAnnotations{DestructiveHint: ptr(false)})
	simple("destructive", &mcp.ToolAnnotations{DestructiveHint: ptr(true)})
	simple("plain", nil)

	s.mcp.AddTool(&mcp.Tool{Name: "echo", Description: "says text back", InputSchema: object(`"text":{"type":"string"}`, "text"),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.count("echo")
			var in struct{ Text string }
			_ = json.Unmarshal(r.Params.Arguments, &in)
			return text("%s", in.Text), nil
		})
	s.mcp.AddTool(&mcp.Tool{Name: "slow", Description: "blocks until released or cancelled", InputSchema: object("")},
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.count("slow")
			s.slowIn <- struct{}{}
			select {
			case <-s.release:
				s.cancelled <- false
				return text("released"), nil
			case <-ctx.Done():
				s.cancelled <- true
				return nil, ctx.Err()
			}
		})
	s.mcp.AddTool(&mcp.Tool{Name: "fail", Description: "always fails", InputSchema: object("")},
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.count("fail")
			res := text("the disk is full")
			res.IsError = true
			return res, nil
		})
	s.mcp.AddTool(&mcp.Tool{Name: "structured", Description: "returns structured content only", InputSchema: object("")},
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.count("structured")
			return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"rows": 7}}, nil
		})
	s.mcp.AddTool(&mcp.Tool{Name: "media", Description: "returns an image and resources", InputSchema: object("")},
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.count("media")
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "here"},
				&mcp.ImageContent{Data: make([]byte, 1234), MIMEType: "image/png"},
				&mcp.ResourceLink{URI: "file:///a.txt", Name: "a", MIMEType: "text/plain", Size: ptr(int64(99))},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b.txt", MIMEType: "text/plain", Text: "hello"}},
			}}, nil
		})
	s.mcp.AddTool(&mcp.Tool{Name: "whoami", Description: "says the Authorization header it got", InputSchema: object("")},
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.count("whoami")
			var h string
			if r.Extra != nil && r.Extra.Header != nil {
				h = r.Extra.Header.Get("Authorization")
			}
			return text("you sent %q", h), nil
		})
	s.mcp.AddTool(&mcp.Tool{Name: "change", Description: "changes the tool named changing", InputSchema: object("")},
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.count("change")
			go s.Change() // the notification is sent after this answer
			return text("changing"), nil
		})
	s.mcp.AddTool(&mcp.Tool{Name: "ask", Description: "asks the user for a deployment's settings (form elicitation) and says the answer", InputSchema: object(""),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// Multi round-trip (SEP-2322): the first call asks, the
			// client's retry carries the answer. The SDK serves a client
			// of a legacy revision with an elicitation/create request.
			res, ok := r.Params.InputResponses["deploy"].(*mcp.ElicitResult)
			if !ok {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
					"deploy": &mcp.ElicitParams{Message: "Deploy settings for <b>web</b>", RequestedSchema: AskSchema}}}, nil
			}
			s.count("ask")
			b, _ := json.Marshal(map[string]any{"action": res.Action, "content": res.Content})
			return text("%s", b), nil
		})
	s.addChanging()
}

// addChanging (re)defines the tool "changing" in its current version.
func (s *Server) addChanging() {
	s.mu.Lock()
	v := s.version
	s.mu.Unlock()
	props := `"path":{"type":"string"}`
	if v > 0 {
		props += fmt.Sprintf(`,"v%d":{"type":"boolean"}`, v)
	}
	s.mcp.AddTool(&mcp.Tool{Name: "changing", Description: fmt.Sprintf("version %d of a tool that changes", v), InputSchema: object(props)},
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.count("changing")
			return text("changing ran (version %d)", v), nil
		})
}

// ServeStdio serves over stdin/stdout until stdin closes.
func (s *Server) ServeStdio(ctx context.Context) error {
	return s.mcp.Run(ctx, &mcp.StdioTransport{})
}

// AskSchema is what the tool "ask" elicits: an enum (titled), a boolean,
// an integer with bounds and a string with a length, the first two
// required.
var AskSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"env": map[string]any{"type": "string", "title": "Environment", "oneOf": []any{
			map[string]any{"const": "staging", "title": "Staging"}, map[string]any{"const": "prod", "title": "Production"}}},
		"notify":   map[string]any{"type": "boolean", "title": "Notify the team", "description": "post in #deploys"},
		"replicas": map[string]any{"type": "integer", "title": "Replicas", "minimum": 1, "maximum": 10},
		"note":     map[string]any{"type": "string", "title": "Note", "maxLength": 20},
	},
	"required": []any{"env", "notify"},
}
