package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/fakellm"
	catalogue "github.com/hitlbot/hitlbot/words"
)

// newTestOpenAI returns a model pointed at s, with edit applied to the
// config first, and the buffer its logger writes to.
func newTestOpenAI(t *testing.T, s *fakellm.Server, edit func(*OpenAIConfig)) (*OpenAI, *syncBuffer) {
	t.Helper()
	cfg := OpenAIConfig{BaseURL: s.URL, Model: "test-model", APIKey: s.APIKey()}
	if edit != nil {
		edit(&cfg)
	}
	logs := new(syncBuffer)
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m, err := NewOpenAI(cfg, logger)
	if err != nil {
		t.Fatalf("NewOpenAI: %v", err)
	}
	return m, logs
}

// syncBuffer is a bytes.Buffer safe for concurrent writes and reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func userAsks(text string) agent.Request {
	return agent.Request{Messages: []agent.Message{
		{Role: agent.RoleSystem, Content: "You are a test."},
		{Role: agent.RoleUser, Content: text},
	}}
}

func taskCreateSpec() agent.ToolSpec {
	return agent.ToolSpec{
		Name:        "task_create",
		Description: "Create a task.",
		Schema: &jsonschema.Schema{
			Type:     "object",
			Required: []string{"title"},
			Properties: map[string]*jsonschema.Schema{
				"title": {Type: "string"},
				"due":   {Type: "string"},
			},
		},
	}
}

func wantModelError(t *testing.T, err error, k catalogue.Key) *agent.ModelError {
	t.Helper()
	var me *agent.ModelError
	if !errors.As(err, &me) {
		t.Fatalf("error %v (%T) is not a *agent.ModelError", err, err)
	}
	if public := catalogue.Text(catalogue.EN, k); me.Public != public {
		t.Errorf("Public = %q, want %q", me.Public, public)
	}
	if me.Key != k {
		t.Errorf("Key = %d, want %d", me.Key, k)
	}
	if zh, want := me.PublicIn("zh"), catalogue.Text(catalogue.ZH, k); zh != want || zh == me.Public {
		t.Errorf("PublicIn(zh) = %q, want %q", zh, want)
	}
	return me
}

func TestOpenAIText(t *testing.T) {
	t.Parallel()
	s := fakellm.New(t)
	s.Enqueue(fakellm.Text("Hello there."))
	m, _ := newTestOpenAI(t, s, func(c *OpenAIConfig) {
		temp := 0.0
		c.Temperature = &temp
		c.MaxTokens = 256
	})
	resp, err := m.Complete(context.Background(), userAsks("hi"))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got := resp.Message; got.Role != agent.RoleAssistant || got.Content != "Hello there." || len(got.ToolCalls) != 0 {
		t.Errorf("message = %+v, want assistant text %q", got, "Hello there.")
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/v1/chat/completions" || !r.Authorized {
		t.Errorf("path %q authorized %v", r.Path, r.Authorized)
	}
	c := r.Chat
	if c.Model != "test-model" {
		t.Errorf("model = %q", c.Model)
	}
	if c.Temperature == nil || *c.Temperature != 0 {
		t.Errorf("temperature = %v, want 0 sent", c.Temperature)
	}
	if c.MaxTokens == nil || *c.MaxTokens != 256 {
		t.Errorf("max_tokens = %v, want 256", c.MaxTokens)
	}
	if len(c.Tools) != 0 {
		t.Errorf("tools sent although none offered: %s", r.Body)
	}
	if len(c.Messages) != 2 || c.Messages[0].Role != "system" || c.Messages[1].Role != "user" || c.Messages[1].Text() != "hi" {
		t.Errorf("messages = %s", r.Body)
	}
}

func TestOpenAIDefaultsOmitOptionalParams(t *testing.T) {
	t.Parallel()
	s := fakellm.New(t)
	s.Enqueue(fakellm.Text("ok"))
	m, _ := newTestOpenAI(t, s, nil)
	if _, err := m.Complete(context.Background(), userAsks("hi")); err != nil {
		t.Fatal(err)
	}
	c := s.Requests()[0].Chat
	if c.Temperature != nil || c.MaxTokens != nil || c.MaxCompletionTokens != nil || c.ParallelToolCalls != nil || c.Stream {
		t.Errorf("unexpected optional params: %s", s.Requests()[0].Body)
	}
}

func TestOpenAIOneToolCall(t *testing.T) {
	t.Parallel()
	s := fakellm.New(t)
	s.Enqueue(fakellm.Calls(fakellm.ToolCall{ID: "call_abc", Name: "task_create", Arguments: `{"title":"buy milk"}`}))
	m, _ := newTestOpenAI(t, s, nil)
	req := userAsks("add buy milk")
	req.Tools = []agent.ToolSpec{taskCreateSpec()}
	resp, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	calls := resp.Message.ToolCalls
	if len(calls) != 1 {
		t.Fatalf("%d tool calls, want 1", len(calls))
	}
	c := calls[0]
	if c.ID != "call_abc" || c.Name != "task_create" || string(c.Args) != `{"title":"buy milk"}` || c.Confidence != 1 {
		t.Errorf("call = %+v (args %s)", c, c.Args)
	}
	tools := s.Requests()[0].Chat.Tools
	if len(tools) != 1 || tools[0].Type != "function" || tools[0].Function.Name != "task_create" || tools[0].Function.Description != "Create a task." {
		t.Fatalf("tools = %s", s.Requests()[0].Body)
	}
	var params map[string]any
	if err := json.Unmarshal(tools[0].Function.Parameters, &params); err != nil {
		t.Fatalf("parameters: %v", err)
	}
	if params["type"] != "object" || params["required"].([]any)[0] != "title" {
		t.Errorf("parameters = %s", tools[0].Function.Parameters)
	}
	if _, ok := params["properties"].(map[string]any)["due"]; !ok {
		t.Errorf("parameters lack property due: %s", tools[0].Function.Parameters)
	}
}

func TestOpenAIToolWithoutSchema(t *testing.T) {
	t.Parallel()
	s := fakellm.New(t)
	s.Enqueue(fakellm.Text("ok"))
	m, _ := newTestOpenAI(t, s, nil)
	req := userAsks("x")
	req.Tools = []agent.ToolSpec{{Name: "task_list"}}
	if _, err := m.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	tools := s.Requests()[0].Chat.Tools
	if len(tools) != 1 || string(tools[0].Function.Parameters) != `{"properties":{},"type":"object"}` {
		t.Errorf("tools = %s", s.Requests()[0].Body)
	}
}

func TestOpenAIParallelToolCalls(t *testing.T) {
	t.Parallel()
	s := fakellm.New(t)
	s.Enqueue(fakellm.Reply{
		Text: "Doing three things.",
		ToolCalls: []fakellm.ToolCall{
			{ID: "a", Name: "task_create", Arguments: `{"title":"one"}`},
			{ID: "b", Name: "task_list", Arguments: `{}`},
			{ID: "c", Name: "task_complete", Arguments: `{"id":3}`},
		},
	})
	m, _ := newTestOpenAI(t, s, nil)
	resp, err := m.Complete(context.Background(), userAsks("do three things"))
	if err != nil {
		t.Fatal(err)
	}
	want := []agent.ToolCall{
		{ID: "a", Name: "task_create", Args: json.RawMessage(`{"title":"one"}`), Confidence: 1},
		{ID: "b", Name: "task_list", Args: json.RawMessage(`{}`), Confidence: 1},
		{ID: "c", Name: "task_complete", Args: json.RawMessage(`{"id":3}`), Confidence: 1},
	}
	got := resp.Message.ToolCalls
	if len(got) != len(want) {
		t.Fatalf("got %d calls, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].ID != want[i].ID || got[i].Name != want[i].Name || string(got[i].Args) != string(want[i].Args) || got[i].Confidence != 1 {
			t.Errorf("call %d = %+v (%s), want %+v (%s)", i, got[i], got[i].Args, want[i], want[i].Args)
		}
	}
	if resp.Message.Content != "Doing three things." {
		t.Errorf("content = %q", resp.Message.Content)
	}
}

func TestOpenAIToolResultRoundTrip(t *testing.T) {
	t.Parallel()
	s := fakellm.New(t)
	s.Enqueue(fakellm.Text("Created task 7."))
	m, _ := newTestOpenAI(t, s, nil)
	req := agent.Request{
		Messages: []agent.Message{
			{Role: agent.RoleSystem, Content: "sys"},
			{Role: agent.RoleUser, Content: "add buy milk and list"},
			{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{
				{ID: "call_1", Name: "task_create", Args: json.RawMessage(`{"title":"buy milk"}`), Confidence: 1},
				{ID: "call_2", Name: "task_list", Confidence: 1},
			}},
			{Role: agent.RoleTool, ToolCallID: "call_1", Name: "task_create", Content: "created task 7"},
			{Role: agent.RoleTool, ToolCallID: "call_2", Name: "task_list", Content: "7 buy milk"},
		},
		Tools: []agent.ToolSpec{taskCreateSpec()},
	}
	resp, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "Created task 7." {
		t.Errorf("content = %q", resp.Message.Content)
	}
	msgs := s.Requests()[0].Chat.Messages
	if len(msgs) != 5 {
		t.Fatalf("%d messages sent, want 5: %s", len(msgs), s.Requests()[0].Body)
	}
	a := msgs[2]
	if a.Role != "assistant" || len(a.ToolCalls) != 2 {
		t.Fatalf("assistant message = %+v", a)
	}
	if tc := a.ToolCalls[0]; tc.ID != "call_1" || tc.Type != "function" || tc.Function.Name != "task_create" || tc.Function.Arguments != `{"title":"buy milk"}` {
		t.Errorf("tool call 0 = %+v", tc)
	}
	if tc := a.ToolCalls[1]; tc.ID != "call_2" || tc.Function.Arguments != `{}` {
		t.Errorf("tool call 1 = %+v (empty args must be sent as {})", tc)
	}
	for i, want := range []struct{ id, content string }{{"call_1", "created task 7"}, {"call_2", "7 buy milk"}} {
		got := msgs[3+i]
		if got.Role != "tool" || got.ToolCallID != want.id || got.Text() != want.content {
			t.Errorf("tool message %d = role %q id %q content %q, want %q %q", i, got.Role, got.ToolCallID, got.Text(), want.id, want.content)
		}
	}
}

// schemaTool is a minimal Tool for the registry.
type schemaTool struct{ spec agent.ToolSpec }

func (s schemaTool) Name() string                                             { return s.spec.Name }
func (s schemaTool) Description() string                                      { return s.spec.Description }
func (s schemaTool) Schema() *jsonschema.Schema                               { return s.spec.Schema }
func (s schemaTool) Effect(json.RawMessage) approval.Effect                   { return approval.EffectWrite }
func (s schemaTool) Preview(context.Context, json.RawMessage) (string, error) { return "", nil }
func (s schemaTool) Run(context.Context, json.RawMessage) (agent.Output, error) {
	return agent.Output{Content: "ok"}, nil
}

func TestOpenAIMalformedArgumentsPassedThrough(t *testing.T) {
	t.Parallel()
	s := fakellm.New(t)
	const bad = `{"title": "buy milk"`
	s.Enqueue(fakellm.Calls(fakellm.Call("task_create", bad), fakellm.Call("task_create", "not json at all")))
	m, _ := newTestOpenAI(t, s, nil)
	resp, err := m.Complete(context.Background(), userAsks("x"))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	calls := resp.Message.ToolCalls
	if len(calls) != 2 || string(calls[0].Args) != bad || string(calls[1].Args) != "not json at all" {
		t.Fatalf("calls = %+v", calls)
	}
	if calls[0].ID == "" || calls[0].ID == calls[1].ID {
		t.Errorf("ids %q %q: want distinct, non-empty", calls[0].ID, calls[1].ID)
	}
	reg := agent.NewRegistry()
	if err := reg.Register(schemaTool{taskCreateSpec()}); err != nil {
		t.Fatal(err)
	}
	_, verr := reg.Validate(calls[0].Name, calls[0].Args)
	if verr == nil || !strings.Contains(verr.Error(), "not valid JSON") {
		t.Errorf("Validate = %v, want a not-valid-JSON error for the model", verr)
	}
}

func TestOpenAIArgumentsOddShapes(t *testing.T) {
	t.Parallel()
	s := fakellm.New(t)
	// Some OpenAI-compatible servers send arguments as an object, or empty.
	s.Enqueue(fakellm.Reply{Body: `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[
		{"type":"function","function":{"name":"task_create","arguments":{"title":"obj"}}},
		{"id":"e","type":"function","function":{"name":"task_list","arguments":""}}]}}]}`})
	m, _ := newTestOpenAI(t, s, nil)
	resp, err := m.Complete(context.Background(), userAsks("x"))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	calls := resp.Message.ToolCalls
	if len(calls) != 2 {
		t.Fatalf("calls = %+v", calls)
	}
	var args map[string]any
	if err := json.Unmarshal(calls[0].Args, &args); err != nil || args["title"] != "obj" {
		t.Errorf("object arguments: %s (%v)", calls[0].Args, err)
	}
	if calls[0].ID != "call-1" {
		t.Errorf("generated id = %q, want call-1", calls[0].ID)
	}
	if string(calls[1].Args) != "{}" {
		t.Errorf("empty arguments = %q, want {}", calls[1].Args)
	}
}

func TestOpenAIRetries429ThenSuccess(t *testing.T) {
	t.Parallel()
	s := fakellm.New(t)
	s.Enqueue(fakellm.RateLimited(300), fakellm.Text("finally"))
	m, logs := newTestOpenAI(t, s, nil)
	start := time.Now()
	resp, err := m.Complete(context.Background(), userAsks("x"))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if resp.Message.Content != "finally" {
		t.Errorf("content = %q", resp.Message.Content)
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
	// Retry-After-Ms is honoured: the retry did not come sooner.
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("retried after %v, before the server's Retry-After-Ms of 300ms", d)
	}
	if !strings.Contains(logs.String(), "http_status=429") {
		t.Errorf("the failed attempt was not logged: %s", logs)
	}
}

func TestOpenAIRetries5xxThenSuccess(t *testing.T) {
	t.Parallel()
	s := fakellm.New(t)
	s.Enqueue(fakellm.Status(500, "boom"), fakellm.Status(502, "bad gateway"), fakellm.Text("ok"))
	m, _ := newTestOpenAI(t, s, nil) // default MaxRetries 3; back-off ~0.5s, ~1s
	resp, err := m.Complete(context.Background(), userAsks("x"))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if resp.Message.Content != "ok" {
		t.Errorf("content = %q", resp.Message.Content)
	}
	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for i, r := range reqs {
		if got, want := r.Header.Get("X-Stainless-Retry-Count"), fmt.Sprint(i); got != want {
			t.Errorf("request %d retry count %q, want %q", i, got, want)
		}
		if !bytes.Equal(r.Body, reqs[0].Body) {
			t.Errorf("request %d body differs from the first", i)
		}
	}
}

func TestOpenAIRateLimitedAfterRetries(t *testing.T) {
	t.Parallel()
	s := fakellm.New(t)
	s.Enqueue(fakellm.RateLimited(0), fakellm.RateLimited(0))
	m, _ := newTestOpenAI(t, s, func(c *OpenAIConfig) { c.MaxRetries = 1 })
	_, err := m.Complete(context.Background(), userAsks("x"))
	wantModelError(t, err, publicRateLimited)
	if n := len(s.Requests()); n != 2 {
		t.Errorf("%d requests, want 2 (1 + 1 retry)", n)
	}
}

func TestOpenAINoRetriesWhenNegative(t *testing.T) {
	t.Parallel()
	s := fakellm.New(t)
	s.Enqueue(fakellm.Status(503, "unavailable"))
	m, _ := newTestOpenAI(t, s, func(c *OpenAIConfig) { c.MaxRetries = -1 })
	_, err := m.Complete(context.Background(), userAsks("x"))
	me := wantModelError(t, err, publicFailed)
	if !strings.Contains(me.Err.Error(), "HTTP 503") || !strings.Contains(me.Err.Error(), "unavailable") {
		t.Errorf("detail = %q, want status and provider message", me.Err)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestOpenAIUnauthorized(t *testing.T) {
	t.Parallel()
	s := fakellm.New(t)
	const key = "sk-very-secret-key-123456"
	m, logs := newTestOpenAI(t, s, func(c *OpenAIConfig) { c.APIKey = key })
	_, err := m.Complete(context.Background(), userAsks("x"))
	me := wantModelError(t, err, publicAuth)
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Errorf("%d requests, want 1 (401 is not retried)", len(reqs))
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer "+key {
		t.Errorf("Authorization = %q", got)
	}
	// The fake echoes the presented key in its error message, as some
	// providers do; it must not reach the error or the logs.
	for _, text := range []string{err.Error(), me.Err.Error(), fmt.Sprintf("%v %+v %#v", err, err, me), logs.String()} {
		if strings.Contains(text, key) {
			t.Errorf("the API key leaked: %q", text)
		}
	}
	if !strings.Contains(me.Err.Error(), "[redacted]") {
		t.Errorf("detail = %q, want the echoed key replaced by [redacted]", me.Err)
	}
	if !strings.Contains(me.Err.Error(), "HTTP 401") || !strings.Contains(me.Err.Error(), "invalid_api_key") {
		t.Errorf("detail = %q, want the status and code", me.Err)
	}
}

func TestOpenAIForbidden(t *testing.T) {
	t.Parallel()
	s := fakellm.New(t)
	s.Enqueue(fakellm.Status(http.StatusForbidden, "project has no access"))
	m, _ := newTestOpenAI(t, s, nil)
	_, err := m.Complete(context.Background(), userAsks("x"))
	wantModelError(t, err, publicAuth)
}

func TestOpenAIOtherError(t *testing.T) {
	t.Parallel()
	s := fakellm.New(t)
	s.Enqueue(fakellm.Status(http.StatusBadRequest, "context too long"))
	m, _ := newTestOpenAI(t, s, nil)
	_, err := m.Complete(context.Background(), userAsks("x"))
	me := wantModelError(t, err, publicFailed)
	if strings.Contains(me.Public, "context too long") || strings.Contains(err.Error(), s.URL) {
		t.Errorf("error leaks detail: %q", err)
	}
}

func TestOpenAIRequestTimeout(t *testing.T) {
	t.Parallel()
	s := fakellm.New(t)
	s.Enqueue(fakellm.Delayed(time.Minute, fakellm.Text("too late")))
	m, _ := newTestOpenAI(t, s, func(c *OpenAIConfig) { c.RequestTimeout = 200 * time.Millisecond })
	_, err := m.Complete(context.Background(), userAsks("x"))
	wantModelError(t, err, publicTimeout)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("errors.Is(err, DeadlineExceeded) = false for %v", err)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("%d requests, want 1 (a timed-out attempt is not retried)", n)
	}
}

func TestOpenAIContextBoundsRetries(t *testing.T) {
	t.Parallel()
	s := fakellm.New(t)
	s.Enqueue(fakellm.RateLimited(60_000)) // the server asks for a minute
	m, _ := newTestOpenAI(t, s, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := m.Complete(ctx, userAsks("x"))
	wantModelError(t, err, publicTimeout)
}

func TestOpenAICancelled(t *testing.T) {
	t.Parallel()
	s := fakellm.New(t)
	s.Enqueue(fakellm.Delayed(time.Minute, fakellm.Text("too late")))
	m, _ := newTestOpenAI(t, s, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for len(s.Requests()) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	_, err := m.Complete(ctx, userAsks("x"))
	wantModelError(t, err, publicFailed)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("errors.Is(err, Canceled) = false for %v", err)
	}
}

func TestOpenAIUnknownRole(t *testing.T) {
	t.Parallel()
	s := fakellm.New(t)
	m, _ := newTestOpenAI(t, s, nil)
	_, err := m.Complete(context.Background(), agent.Request{Messages: []agent.Message{{Role: "robot", Content: "x"}}})
	wantModelError(t, err, publicFailed)
	if len(s.Requests()) != 0 {
		t.Errorf("a request was sent")
	}
}

func TestOpenAIIgnoresOpenAIEnvironment(t *testing.T) {
	elsewhere := fakellm.New(t)
	s := fakellm.New(t)
	t.Setenv("OPENAI_BASE_URL", elsewhere.URL)
	t.Setenv("OPENAI_API_KEY", "env-key-must-not-be-used")
	t.Setenv("OPENAI_ADMIN_KEY", "env-admin-key")
	t.Setenv("OPENAI_ORG_ID", "org-from-env")
	t.Setenv("OPENAI_PROJECT_ID", "proj-from-env")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-From-Env: injected\nX-Other: also")

	s.Enqueue(fakellm.Text("ok"))
	m, _ := newTestOpenAI(t, s, nil)
	if _, err := m.Complete(context.Background(), userAsks("x")); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if n := len(elsewhere.Requests()); n != 0 {
		t.Errorf("OPENAI_BASE_URL received %d requests", n)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	h := reqs[0].Header
	if got := h.Get("Authorization"); got != "Bearer "+s.APIKey() {
		t.Errorf("Authorization = %q", got)
	}
	for _, name := range []string{"OpenAI-Organization", "OpenAI-Project", "X-From-Env", "X-Other"} {
		if v := h.Values(name); len(v) != 0 {
			t.Errorf("header %s = %q came from the environment", name, v)
		}
	}

	// Without a configured key, none is taken from OPENAI_API_KEY.
	s.SetAPIKey("")
	s.Enqueue(fakellm.Text("ok"))
	m2, _ := newTestOpenAI(t, s, func(c *OpenAIConfig) { c.APIKey = "" })
	if _, err := m2.Complete(context.Background(), userAsks("x")); err != nil {
		t.Fatalf("Complete without key: %v", err)
	}
	if got := s.Requests()[1].Header.Get("Authorization"); got != "" {
		t.Errorf("Authorization = %q without a configured key", got)
	}
}

func TestOpenAIHeadersAndChatCompletionsPath(t *testing.T) {
	t.Parallel()
	s := fakellm.New(t)
	s.Enqueue(fakellm.Text("ok"))
	// A base URL without /v1 reaches /chat/completions.
	m, _ := newTestOpenAI(t, s, func(c *OpenAIConfig) {
		c.BaseURL = strings.TrimSuffix(s.URL, "/v1")
		c.Headers = map[string]string{"X-Gateway-Route": "team-a"}
	})
	if _, err := m.Complete(context.Background(), userAsks("x")); err != nil {
		t.Fatal(err)
	}
	r := s.Requests()[0]
	if r.Path != "/chat/completions" || r.Header.Get("X-Gateway-Route") != "team-a" {
		t.Errorf("path %q, header %q", r.Path, r.Header.Get("X-Gateway-Route"))
	}
}

func TestFakeLLMHandleFunc(t *testing.T) {
	t.Parallel()
	s := fakellm.New(t)
	s.HandleFunc(func(r fakellm.Request) fakellm.Reply {
		msgs := r.Chat.Messages
		return fakellm.Text("echo: " + msgs[len(msgs)-1].Text())
	})
	m, _ := newTestOpenAI(t, s, nil)
	for _, in := range []string{"one", "two"} {
		resp, err := m.Complete(context.Background(), userAsks(in))
		if err != nil {
			t.Fatal(err)
		}
		if want := "echo: " + in; resp.Message.Content != want {
			t.Errorf("got %q, want %q", resp.Message.Content, want)
		}
	}
}

var newOpenAIErrorTests = []struct {
	name string
	cfg  OpenAIConfig
	want string
}{
	{"no model", OpenAIConfig{}, "model is required"},
	{"bad scheme", OpenAIConfig{Model: "m", BaseURL: "ftp://x"}, "base_url"},
	{"no host", OpenAIConfig{Model: "m", BaseURL: "http://"}, "base_url"},
	{"credentials in url", OpenAIConfig{Model: "m", BaseURL: "https://user:secret-pw@example.com/v1"}, "credentials"},
	{"negative timeout", OpenAIConfig{Model: "m", RequestTimeout: -time.Second}, "request_timeout"},
	{"temperature", OpenAIConfig{Model: "m", Temperature: ptr(2.5)}, "temperature"},
	{"max tokens", OpenAIConfig{Model: "m", MaxTokens: -1}, "max_tokens"},
	{"missing key file", OpenAIConfig{Model: "m", APIKeyFile: "/nonexistent/key"}, "api_key_file"},
	{"key with newline", OpenAIConfig{Model: "m", APIKey: "sk-abc\nX-Evil: 1"}, "line break"},
}

func ptr[T any](v T) *T { return &v }

func TestNewOpenAIErrors(t *testing.T) {
	for _, test := range newOpenAIErrorTests {
		_, err := NewOpenAI(test.cfg, nil)
		if err == nil || !strings.Contains(err.Error(), test.want) {
			t.Errorf("%s: error %v, want one mentioning %q", test.name, err, test.want)
			continue
		}
		if strings.Contains(err.Error(), "secret-pw") || strings.Contains(err.Error(), "sk-abc") {
			t.Errorf("%s: error leaks a secret: %v", test.name, err)
		}
	}
}

func TestNewOpenAIDefaultsAndKeyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "key")
	if err := os.WriteFile(file, []byte("  sk-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := NewOpenAI(OpenAIConfig{Model: "m", APIKeyFile: file}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.cfg.APIKey != "sk-from-file" || m.cfg.BaseURL != DefaultOpenAIBaseURL ||
		m.cfg.RequestTimeout != DefaultOpenAIRequestTimeout || m.cfg.MaxRetries != DefaultOpenAIMaxRetries {
		t.Errorf("cfg = %v", m.cfg)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewOpenAI(OpenAIConfig{Model: "m", APIKeyFile: empty}, nil); err == nil {
		t.Errorf("an empty key file was accepted")
	}
}

func TestOpenAIConfigRedacted(t *testing.T) {
	t.Parallel()
	cfg := OpenAIConfig{Model: "m", APIKey: "sk-hidden", Headers: map[string]string{"X-Token": "hdr-secret"}}
	var logs bytes.Buffer
	slog.New(slog.NewTextHandler(&logs, nil)).Info("config", "cfg", cfg)
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), logs.String()} {
		if strings.Contains(s, "sk-hidden") || strings.Contains(s, "hdr-secret") {
			t.Errorf("secret printed: %s", s)
		}
		if !strings.Contains(s, "X-Token") {
			t.Errorf("header name missing: %s", s)
		}
	}
}

// TestModelErrorPublicIn: an error with a catalogue key is said in the
// turn's language; one without (a model of its own words) says Public.
func TestModelErrorPublicIn(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  *agent.ModelError
		lang string
		want string
	}{
		{"keyed, zh", agent.NewModelError(publicTimeout, nil), "zh", "语言模型未能及时回答，请稍后重试。"},
		{"keyed, en", agent.NewModelError(publicTimeout, nil), "en", "The language model did not answer in time; please try again."},
		{"no key", &agent.ModelError{Public: "The model is down."}, "zh", "The model is down."},
	} {
		if got := tc.err.PublicIn(tc.lang); got != tc.want {
			t.Errorf("%s: PublicIn(%q) = %q, want %q", tc.name, tc.lang, got, tc.want)
		}
	}
}
