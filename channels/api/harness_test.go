package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/api"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/hitltest"
)

var quiet = slog.New(slog.DiscardHandler)

// connectTool is a destructive tool whose arguments hold a secret and a
// long note, for the pending action's inputPreview.
type connectTool struct{}

type connectArgs struct {
	Host     string `json:"host" jsonschema:"the host"`
	Password string `json:"password" jsonschema:"the password"`
	Note     string `json:"note" jsonschema:"a note"`
}

func (connectTool) Name() string        { return "connect" }
func (connectTool) Description() string { return "connects" }
func (connectTool) Schema() *jsonschema.Schema {
	s, err := jsonschema.For[connectArgs](nil)
	if err != nil {
		panic(err)
	}
	return s
}
func (connectTool) Effect(json.RawMessage) approval.Effect { return approval.EffectDestructive }
func (connectTool) Preview(_ context.Context, args json.RawMessage) (string, error) {
	return "connect (password hidden)", nil
}
func (connectTool) Run(_ context.Context, args json.RawMessage) (agent.Output, error) {
	return agent.Output{Content: "connected"}, nil
}

// script is the model: "erase X" / "look X" call the tool on X, "connect
// HOST PASSWORD NOTE" calls connect, a tool result is summarised, "wait"
// blocks until release is closed, anything else is echoed.
func script(release chan struct{}) *hitltest.Model {
	return &hitltest.Model{Tools: []string{"erase", "look"}, JoinResults: true, NoIDs: true,
		Hook: func(ctx context.Context, req agent.Request) (agent.Response, bool, error) {
			last := req.Messages[len(req.Messages)-1]
			if last.Content == "wait" {
				select {
				case <-release:
				case <-ctx.Done():
				}
				return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "done waiting"}}, true, nil
			}
			rest, ok := strings.CutPrefix(last.Content, "connect ")
			if !ok || last.Role == agent.RoleTool {
				return agent.Response{}, false, nil
			}
			// "connect HOST PASSWORD NOTE"
			f := strings.SplitN(rest, " ", 3)
			for len(f) < 3 {
				f = append(f, "")
			}
			args, _ := json.Marshal(connectArgs{Host: f[0], Password: f[1], Note: f[2]})
			return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{
				Name: "connect", Args: args, Confidence: 1}}}}, true, nil
		}}
}

// opTool is a counting tool whose preview and result name the target.
func opTool(name string, effect approval.Effect) *hitltest.Tool {
	t := hitltest.NewTool(name, effect)
	t.Result = hitltest.TargetResult
	t.Show = func(name string, args json.RawMessage) string {
		var a hitltest.Args
		_ = json.Unmarshal(args, &a)
		return name + " " + a.Target + " (password=<redacted>)"
	}
	return t
}

type harness struct {
	t       testing.TB
	clk     *clock.Fake
	engine  *approval.Engine
	loop    *agent.Loop
	api     *api.API
	srv     *httptest.Server
	erase   *hitltest.Tool
	look    *hitltest.Tool
	audit   *hitltest.Trail
	release chan struct{} // ends the model's "wait" turns
}

// Bearer tokens of the test users.
const (
	tokAlice = "tok-alice"
	tokBob   = "tok-bob"   // same tenant as alice
	tokCarol = "tok-carol" // another tenant
)

// setup is what a test may change before the harness is built.
type setup struct {
	cfg api.Config
	// clk and store, when set, are shared with another harness (a second
	// replica).
	clk   *clock.Fake
	store approval.Store
	// policy, when set, replaces the default approval policy.
	policy *approval.PolicyConfig
	// loop, when set, changes the agent loop's configuration.
	loop func(*agent.LoopConfig)
	// beside are channels registered beside the API (an approvers'
	// chat of another platform).
	beside []channels.Channel
	// router, when set, changes the router's configuration.
	router func(*channels.RouterConfig)
}

// newHarness wires the real parts: memory store, engine, agent loop with
// the scripted model, router, and the API behind an httptest server.
func newHarness(t testing.TB, mod ...func(*setup)) *harness {
	t.Helper()
	s := &setup{cfg: api.Config{
		Tokens: map[string]api.User{
			tokAlice: {ID: "alice", Tenant: "acme"},
			tokBob:   {ID: "bob", Tenant: "acme"},
			tokCarol: {ID: "carol", Tenant: "globex"},
		},
		TurnTimeout: 10 * time.Second,
	}}
	for _, m := range mod {
		m(s)
	}
	if s.clk == nil {
		s.clk = clock.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	}
	if s.store == nil {
		s.store = memstore.New(memstore.Options{Clock: s.clk})
	}
	h := &harness{t: t, clk: s.clk, audit: &hitltest.Trail{}, release: make(chan struct{}),
		erase: opTool("erase", approval.EffectDestructive), look: opTool("look", approval.EffectRead)}
	store := s.store
	st := hitltest.New(t, hitltest.Config{Store: store, Model: script(h.release),
		Tools: []agent.Tool{h.erase, h.look, connectTool{}}, Audit: h.audit, Clock: h.clk, Policy: s.policy, Loop: s.loop,
		Router: func(rc *channels.RouterConfig) {
			rc.Clock = h.clk
			if s.router != nil {
				s.router(rc)
			}
		}})
	h.engine, h.loop = st.Engine, st.Loop
	cfg := s.cfg
	cfg.Audit, cfg.Clock = h.audit, h.clk
	var err error
	h.api, err = api.New(cfg, h.engine, quiet)
	if err != nil {
		t.Fatal(err)
	}
	st.Register(t, h.api)
	st.Register(t, s.beside...)
	st.Start(t)
	h.srv = httptest.NewServer(h.api.Handler())
	t.Cleanup(func() {
		close(h.release)
		h.srv.Close()
	})
	return h
}

// do sends a request and decodes the JSON answer into out (when non-nil).
func (h *harness) do(method, path, token string, body any, out any) int {
	h.t.Helper()
	return h.doIn("", method, path, token, body, out)
}

// doIn is do with an Accept-Language header (none when empty).
func (h *harness) doIn(acceptLang, method, path, token string, body any, out any) int {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, h.srv.URL+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	if acceptLang != "" {
		req.Header.Set("Accept-Language", acceptLang)
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		h.t.Fatalf("%s %s: Content-Type %q, body %s", method, path, ct, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			h.t.Fatalf("%s %s: decoding %s: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode
}

func (h *harness) chat(token string, req map[string]any) (int, api.ChatResponse) {
	h.t.Helper()
	var resp api.ChatResponse
	st := h.do("POST", "/agent/chat", token, req, &resp)
	return st, resp
}

// chatError sends a request expected to fail and returns its status and code.
func (h *harness) chatError(token string, body any) (int, api.ErrorResponse) {
	h.t.Helper()
	var e api.ErrorResponse
	st := h.do("POST", "/agent/chat", token, body, &e)
	return st, e
}

// ask sends a message that must end in a pending action and returns it.
func (h *harness) ask(token, conv, msg string) api.ChatResponse {
	h.t.Helper()
	st, r := h.chat(token, map[string]any{"message": msg, "conversationId": conv})
	if st != http.StatusOK || !r.RequiresConfirmation || r.PendingAction == nil {
		h.t.Fatalf("%q: status %d, response %+v", msg, st, r)
	}
	return r
}
