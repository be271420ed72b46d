package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/api"
	"github.com/hitlbot/hitlbot/internal/clock"
)

var quiet = slog.New(slog.DiscardHandler)

// opTool is a tool of a given effect that counts its runs.
type opTool struct {
	name   string
	effect approval.Effect
	runs   atomic.Int64
}

type opArgs struct {
	Target string `json:"target" jsonschema:"what to act on"`
}

func (t *opTool) Name() string        { return t.name }
func (t *opTool) Description() string { return "does " + t.name }
func (t *opTool) Schema() *jsonschema.Schema {
	s, err := jsonschema.For[opArgs](nil)
	if err != nil {
		panic(err)
	}
	return s
}
func (t *opTool) Effect(json.RawMessage) approval.Effect { return t.effect }
func (t *opTool) Preview(_ context.Context, args json.RawMessage) (string, error) {
	var a opArgs
	_ = json.Unmarshal(args, &a)
	return t.name + " " + a.Target + " (password=<redacted>)", nil
}
func (t *opTool) Run(_ context.Context, args json.RawMessage) (agent.Output, error) {
	var a opArgs
	_ = json.Unmarshal(args, &a)
	n := t.runs.Add(1)
	return agent.Output{Content: fmt.Sprintf("%s %s done (run %d)", t.name, a.Target, n)}, nil
}

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
// HOST PASSWORD NOTE" calls connect, a tool result is summarised, "wait" blocks until release is closed, anything
// else is echoed.
type script struct{ release chan struct{} }

func (s script) Complete(ctx context.Context, req agent.Request) (agent.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Content == "wait" {
		select {
		case <-s.release:
		case <-ctx.Done():
		}
		return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "done waiting"}}, nil
	}
	if last.Role == agent.RoleTool {
		var parts []string
		for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role == agent.RoleTool; i-- {
			parts = append([]string{req.Messages[i].Content}, parts...)
		}
		return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "summary: " + strings.Join(parts, " | ")}}, nil
	}
	if rest, ok := strings.CutPrefix(last.Content, "connect "); ok {
		// "connect HOST PASSWORD NOTE"
		f := strings.SplitN(rest, " ", 3)
		for len(f) < 3 {
			f = append(f, "")
		}
		args, _ := json.Marshal(connectArgs{Host: f[0], Password: f[1], Note: f[2]})
		return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{
			Name: "connect", Args: args, Confidence: 1}}}}, nil
	}
	for _, tool := range []string{"erase", "look"} {
		if target, ok := strings.CutPrefix(last.Content, tool+" "); ok {
			return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{
				Name: tool, Args: json.RawMessage(`{"target":"` + target + `"}`), Confidence: 1}}}}, nil
		}
	}
	return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "echo: " + last.Content}}, nil
}

// auditTrail records the engine's audit records and serves them per approval.
type auditTrail struct {
	mu   sync.Mutex
	recs []audit.Record
}

func (a *auditTrail) Append(r audit.Record) {
	a.mu.Lock()
	a.recs = append(a.recs, r)
	a.mu.Unlock()
}

func (a *auditTrail) Records(_ context.Context, id string) ([]audit.Record, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []audit.Record
	for _, r := range a.recs {
		if r.ApprovalID == id {
			out = append(out, r)
		}
	}
	return out, nil
}

type harness struct {
	t       testing.TB
	clk     *clock.Fake
	engine  *approval.Engine
	api     *api.API
	srv     *httptest.Server
	erase   *opTool
	look    *opTool
	audit   *auditTrail
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
	h := &harness{t: t, clk: s.clk, audit: &auditTrail{}, release: make(chan struct{}),
		erase: &opTool{name: "erase", effect: approval.EffectDestructive}, look: &opTool{name: "look", effect: approval.EffectRead}}
	reg := agent.NewRegistry()
	if err := reg.Register(h.erase, h.look, connectTool{}); err != nil {
		t.Fatal(err)
	}
	store := s.store
	router, err := channels.NewRouter(channels.RouterConfig{Store: store, Logger: quiet, Clock: h.clk})
	if err != nil {
		t.Fatal(err)
	}
	h.engine, err = approval.NewEngine(approval.EngineConfig{Store: store, Notifier: router, Dispatcher: reg, Audit: h.audit,
		Clock: h.clk, Logger: quiet, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	pc := approval.DefaultPolicyConfig()
	if s.policy != nil {
		pc = *s.policy
	}
	pol, err := approval.NewPolicy(pc)
	if err != nil {
		t.Fatal(err)
	}
	loop, err := agent.NewLoop(agent.LoopConfig{Model: script{release: h.release}, Tools: reg, Engine: h.engine, Policy: func() *approval.Policy { return pol },
		History: agent.NewMemoryHistory(), Speaker: router, Logger: quiet, SlowNotice: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := router.Bind(h.engine, loop); err != nil {
		t.Fatal(err)
	}
	cfg := s.cfg
	cfg.Audit, cfg.Clock = h.audit, h.clk
	h.api, err = api.New(cfg, h.engine, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if err := router.Register(h.api); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := h.engine.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := router.Start(ctx); err != nil {
		t.Fatal(err)
	}
	h.srv = httptest.NewServer(h.api.Handler())
	t.Cleanup(func() {
		close(h.release)
		h.srv.Close()
		_ = router.Close(context.Background())
		_ = loop.Close(context.Background())
		cancel()
	})
	return h
}

// do sends a request and decodes the JSON answer into out (when non-nil).
func (h *harness) do(method, path, token string, body any, out any) int {
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
