package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
	"github.com/hitlbot/hitlbot/internal/agentcli"
)

// claudeCodeVersion is the Claude Code CLI the end-to-end tests run
// (agentcli.ClaudeCodePackage).
const claudeCodeVersion = "2.1.328"

// claudeCLI returns the path of the pinned Claude Code CLI, installed from
// npm into the cache agentcli shares with the Codex tests the first time.
// Without npm, or when the registry cannot be reached, the test is
// skipped, saying why.
func claudeCLI(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the Claude Code CLI tests run the real CLI from npm")
	}
	bin := filepath.Join(agentcli.Install(t, agentcli.ClaudeCodePackage), "claude")
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), claudeCodeVersion+" ") {
		t.Skipf("%s --version: %q, %v; want %s", bin, out, err, claudeCodeVersion)
	}
	return bin
}

// fakeAnthropic is a local Anthropic Messages API that scripts Claude
// Code's turn: the main conversation's first request (its prompt "RUN:
// <command>") is answered with a Bash tool_use of that command, a request
// whose last message holds a tool_result with "done", and any other
// request (Claude Code's own side requests) with "ok". Every answer is
// streamed as server-sent events when asked.
type fakeAnthropic struct {
	*httptest.Server
	mu    sync.Mutex
	calls int
	// results are the tool_result texts Claude Code sent back.
	results []string
}

func newFakeAnthropic(t *testing.T) *fakeAnthropic {
	f := &fakeAnthropic{}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAnthropic) serve(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, "/v1/messages") {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Stream   bool                    `json:"stream"`
		Tools    []struct{ Name string } `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`, http.StatusBadRequest)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/count_tokens") {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"input_tokens":10}`))
		return
	}
	hasBash := false
	for _, tl := range req.Tools {
		hasBash = hasBash || tl.Name == "Bash"
	}
	first, last := blocks(req.Messages[0].Content), blocks(req.Messages[len(req.Messages)-1].Content)
	command := ""
	for _, b := range first {
		if i := strings.Index(b.Text, "RUN: "); b.Type == "text" && i >= 0 {
			command = strings.TrimSpace(strings.SplitN(b.Text[i+len("RUN: "):], "\n", 2)[0])
		}
	}
	f.mu.Lock()
	f.calls++
	n := f.calls
	var answer []map[string]any
	stop := "end_turn"
	switch {
	case hasBash && command != "" && hasToolResult(last):
		for _, b := range last {
			if b.Type == "tool_result" {
				f.results = append(f.results, b.resultText())
			}
		}
		answer = []map[string]any{{"type": "text", "text": "done"}}
	case hasBash && command != "":
		input, _ := json.Marshal(map[string]string{"command": command, "description": "run the scripted command"})
		answer = []map[string]any{{"type": "tool_use", "id": fmt.Sprintf("toolu_%02d", n), "name": "Bash", "input": json.RawMessage(input)}}
		stop = "tool_use"
	default:
		answer = []map[string]any{{"type": "text", "text": "ok"}}
	}
	f.mu.Unlock()
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant",
			"model": "claude-fake", "content": answer, "stop_reason": stop, "usage": map[string]int{"input_tokens": 10, "output_tokens": 5}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	bw := bufio.NewWriter(w)
	event := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(bw, "event: %s\ndata: %s\n\n", name, b)
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": fmt.Sprintf("msg_%d", n), "type": "message",
		"role": "assistant", "model": "claude-fake", "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": 10, "output_tokens": 1}}})
	for i, b := range answer {
		switch b["type"] {
		case "text":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		case "tool_use":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use",
				"id": b["id"], "name": b["name"], "input": map[string]any{}}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta",
				"partial_json": string(b["input"].(json.RawMessage))}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": 5}})
	event("message_stop", map[string]any{"type": "message_stop"})
	_ = bw.Flush()
}

// block is one content block of a message.
type block struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Content json.RawMessage `json:"content"`
}

func (b block) resultText() string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var parts []block
	_ = json.Unmarshal(b.Content, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "\n")
}

// blocks reads a message's content: a string or a list of blocks.
func blocks(raw json.RawMessage) []block {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []block{{Type: "text", Text: s}}
	}
	var bs []block
	_ = json.Unmarshal(raw, &bs)
	return bs
}

func hasToolResult(bs []block) bool {
	for _, b := range bs {
		if b.Type == "tool_result" {
			return true
		}
	}
	return false
}

// hookAgentConfig: ci-claude, cards to Feishu chat oc_ops where ou_alice
// decides; echo low… is LOW (allowed at once), everything else MEDIUM.
const hookAgentConfig = `agents:
  - name: ci-claude
    token_env: AGENT_CI_TOKEN
    approve_in: {channel: feishu, chat_id: oc_ops}
    requester: ou_alice
    hook_timeout: 60s
    policy:
      "Bash(echo low*)": {risk: LOW}
      "*": {risk: MEDIUM}
`

// claudeRun is one `claude -p` run in a project of its own.
type claudeRun struct {
	dir  string
	done chan error
	out  bytes.Buffer
	errb bytes.Buffer
}

// runClaude starts `claude -p "RUN: <command>" --output-format json` in a
// new project whose .claude/settings.json makes hitlbot's /hooks/claude
// its PermissionRequest hook (type http, the token through
// allowedEnvVars), against the fake model API.
func runClaude(t *testing.T, bin, hitlbot, model, command string) *claudeRun {
	t.Helper()
	c := &claudeRun{dir: t.TempDir(), done: make(chan error, 1)}
	settings := `{"hooks":{"PermissionRequest":[{"matcher":"*","hooks":[{"type":"http","url":"` + hitlbot + `/hooks/claude",` +
		`"headers":{"Authorization":"Bearer $HITLBOT_AGENT_TOKEN"},"allowedEnvVars":["HITLBOT_AGENT_TOKEN"],"timeout":120}]}]}}`
	if err := os.MkdirAll(filepath.Join(c.dir, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.dir, ".claude", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, bin, "-p", "RUN: "+command, "--output-format", "json")
	cmd.Dir = c.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "ANTHROPIC_BASE_URL=" + model, "ANTHROPIC_API_KEY=sk-ant-fake-0123456789",
		"HITLBOT_AGENT_TOKEN=" + agentToken, "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1"}
	cmd.Stdout, cmd.Stderr = &c.out, &c.errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- cmd.Wait() }()
	return c
}

// result waits for the run to end and returns its --output-format json
// result.
func (c *claudeRun) result(t *testing.T) claudeResult {
	t.Helper()
	select {
	case err := <-c.done:
		if err != nil {
			t.Fatalf("claude -p: %v\nstdout %s\nstderr %s", err, c.out.String(), c.errb.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("claude -p did not end")
	}
	var r claudeResult
	if err := json.Unmarshal(c.out.Bytes(), &r); err != nil {
		t.Fatalf("claude -p's output is not its JSON result: %v\n%s", err, c.out.String())
	}
	return r
}

// claudeResult is the part of `claude -p --output-format json` read here.
type claudeResult struct {
	IsError           bool   `json:"is_error"`
	Result            string `json:"result"`
	PermissionDenials []struct {
		ToolName  string          `json:"tool_name"`
		ToolInput json.RawMessage `json:"tool_input"`
	} `json:"permission_denials"`
}

// serveHookAgent serves a bot with hookAgentConfig and Feishu on a fake.
func serveHookAgent(t *testing.T) (*server, *feishutest.Server) {
	t.Helper()
	fake := feishutest.New()
	t.Cleanup(fake.Close)
	for k, v := range map[string]string{
		"HITLBOT_CHANNELS_FEISHU_ENABLED":    "true",
		"HITLBOT_CHANNELS_FEISHU_APP_ID":     "cli_agents",
		"HITLBOT_CHANNELS_FEISHU_APP_SECRET": "feishu-secret-agents",
		"HITLBOT_CHANNELS_FEISHU_BASE_URL":   fake.URL,
		"AGENT_CI_TOKEN":                     agentToken,
		"HITLBOT_APPROVAL_LANG":              "en", // the assertions read English; the zh default is config.TestLanguages
	} {
		t.Setenv(k, v)
	}
	s := serve(t, "-config", writeConfig(t, hookAgentConfig), "-data", t.TempDir())
	waitFor(t, 30*time.Second, "the long connection", fake.Connected)
	return s, fake
}

// TestClaudeCodeHook runs the real Claude Code CLI (2.1.328, from npm)
// with hitlbot's /hooks/claude as its PermissionRequest hook, the model
// a local fake scripting one Bash call, and the approvers' chat on a fake
// Feishu: an approved call runs once, a rejected one runs nothing and
// Claude Code lists the denial, a LOW one runs with no card.
func TestClaudeCodeHook(t *testing.T) {
	bin := claudeCLI(t)
	s, fake := serveHookAgent(t)
	model := newFakeAnthropic(t)
	// Claude Code's hook requests pass a recorder on their way to hitlbot.
	var hookMu sync.Mutex
	var hooks []map[string]any
	target, _ := url.Parse(s.base)
	proxy := httputil.NewSingleHostReverseProxy(target)
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		hookMu.Lock()
		hooks = append(hooks, m)
		hookMu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(rec.Close)
	hitlbot := rec.URL
	read := func(c *claudeRun, name string) string {
		b, _ := os.ReadFile(filepath.Join(c.dir, name))
		return string(b)
	}

	// Allowed on the card: it runs, once.
	allow := runClaude(t, bin, hitlbot, model.URL, "echo ran >> allowed.txt")
	card := agentCard(t, fake, 1)
	if !strings.Contains(card.Content, `echo ran \u003e\u003e allowed.txt`) || !strings.Contains(card.Content, "From Claude Code session") {
		t.Fatalf("the card: %s", card.Content)
	}
	click(t, fake, card, "approve", "ou_alice", "ev-cc-allow")
	if r := allow.result(t); r.IsError || len(r.PermissionDenials) != 0 {
		t.Fatalf("the allowed run: %+v\n%s", r, allow.out.String())
	}
	if got := read(allow, "allowed.txt"); got != "ran\n" {
		t.Fatalf("allowed.txt after the allowed run: %q", got)
	}

	// Rejected: nothing runs; Claude Code reports the denial.
	deny := runClaude(t, bin, hitlbot, model.URL, "echo ran >> denied.txt")
	card = agentCard(t, fake, 2)
	click(t, fake, card, "reject", "ou_alice", "ev-cc-deny")
	r := deny.result(t)
	if len(r.PermissionDenials) != 1 || r.PermissionDenials[0].ToolName != "Bash" || !strings.Contains(string(r.PermissionDenials[0].ToolInput), "denied.txt") {
		t.Fatalf("the denied run's permission_denials: %+v\n%s", r.PermissionDenials, deny.out.String())
	}
	if _, err := os.Stat(filepath.Join(deny.dir, "denied.txt")); !os.IsNotExist(err) {
		t.Fatalf("denied.txt exists after the denied run: %v", err)
	}

	// LOW: allowed at once, no card.
	low := runClaude(t, bin, hitlbot, model.URL, "echo low >> low.txt")
	if r := low.result(t); r.IsError || len(r.PermissionDenials) != 0 {
		t.Fatalf("the LOW run: %+v\n%s", r, low.out.String())
	}
	if got := read(low, "low.txt"); got != "low\n" {
		t.Fatalf("low.txt after the LOW run: %q", got)
	}
	n := 0
	for _, c := range fake.Calls() {
		if c.MsgType == "interactive" && c.Op == "create" && strings.Contains(c.Content, "ci-claude asks to run") {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d cards were sent; want 2 (the LOW call has none)", n)
	}
	model.mu.Lock()
	t.Logf("tool results Claude Code sent: %q", model.results)
	if len(model.results) != 3 || !strings.HasPrefix(model.results[1], "rejected by ou_alice after ") {
		t.Errorf("the model did not read the denial: %q", model.results)
	}
	model.mu.Unlock()
	// What Claude Code posted: one request per call, each the
	// PermissionRequest hook input, with no tool_use_id.
	hookMu.Lock()
	defer hookMu.Unlock()
	if len(hooks) != 3 {
		t.Fatalf("%d hook requests; want 3", len(hooks))
	}
	for _, h := range hooks {
		if h["hook_event_name"] != "PermissionRequest" || h["tool_name"] != "Bash" || h["session_id"] == "" || h["cwd"] == "" || h["tool_use_id"] != nil {
			t.Errorf("a hook request: %v", h)
		}
	}
	b, _ := json.Marshal(hooks[0])
	t.Logf("the first hook request: %s", b)
	if strings.Contains(s.stderr.String(), agentToken) {
		t.Fatal("the agent's token reached the log")
	}
}

// cardCodeRE is an approval's short code on its Feishu card.
var cardCodeRE = regexp.MustCompile(`Code: ([0-9A-Za-z]+)`)

// TestHookParallelTypedCode: two hook requests of one Claude Code
// session at once (as Claude Code asks in parallel) through `bot serve`:
// two cards, each with its own code, in the approvers' chat; a typed
// "确认 <code>" decides one, a click on the other rejects it, and each
// request gets its own answer.
func TestHookParallelTypedCode(t *testing.T) {
	s, fake := serveHookAgent(t)
	post := func(command string) <-chan string {
		ch := make(chan string, 1)
		body := `{"session_id":"sess-par","cwd":"/work/proj","hook_event_name":"PermissionRequest","permission_mode":"default",` +
			`"tool_name":"Bash","tool_input":{"command":"` + command + `"}}`
		go func() {
			req, _ := http.NewRequest("POST", s.base+"/hooks/claude", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+agentToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				ch <- err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			ch <- resp.Status + " " + string(b)
		}()
		return ch
	}
	build, deploy := post("make build"), post("make deploy")
	c1, c2 := agentCard(t, fake, 1), agentCard(t, fake, 2)
	if strings.Contains(c1.Content, "make deploy") {
		c1, c2 = c2, c1
	}
	m1, m2 := cardCodeRE.FindStringSubmatch(c1.Content), cardCodeRE.FindStringSubmatch(c2.Content)
	if m1 == nil || m2 == nil || m1[1] == m2[1] {
		t.Fatalf("the cards' codes: %v, %v\n%s\n%s", m1, m2, c1.Content, c2.Content)
	}
	ev := feishutest.MessageEvent{EventID: "ev-typed-code", MessageID: "om_typed_code", ChatID: "oc_ops", ChatType: "group",
		Sender: "ou_alice", Text: "@_user_1 确认 " + m1[1], Mentions: map[string]string{"@_user_1": fake.BotOpenID}}
	if _, err := fake.Push(ev.JSON(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	wait := func(ch <-chan string) string {
		select {
		case got := <-ch:
			return got
		case <-time.After(60 * time.Second):
			t.Fatal("a hook request got no answer")
		}
		return ""
	}
	if got := wait(build); !strings.HasPrefix(got, "200 OK ") || !strings.Contains(got, `"decision":{"behavior":"allow","updatedInput":{"command":"make build"}}`) {
		t.Fatalf("the typed code's request: %s", got)
	}
	click(t, fake, c2, "reject", "ou_alice", "ev-par-reject")
	if got := wait(deploy); !strings.Contains(got, `"behavior":"deny","message":"rejected by ou_alice after `) {
		t.Fatalf("the clicked request: %s", got)
	}
}
