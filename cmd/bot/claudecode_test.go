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
// <command>" or "ASK: <question>") is answered with a Bash tool_use of
// that command or an AskUserQuestion of that question (options Small and
// Large), a request
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
	offered := map[string]bool{}
	for _, tl := range req.Tools {
		offered[tl.Name] = true
	}
	first, last := blocks(req.Messages[0].Content), blocks(req.Messages[len(req.Messages)-1].Content)
	// The prompt names the tool call: "RUN: <command>" a Bash call,
	// "ASK: <question>" an AskUserQuestion of that question.
	tool, arg := "", ""
	for _, b := range first {
		for prefix, name := range map[string]string{"RUN: ": "Bash", "ASK: ": "AskUserQuestion"} {
			if i := strings.Index(b.Text, prefix); b.Type == "text" && i >= 0 {
				tool, arg = name, strings.TrimSpace(strings.SplitN(b.Text[i+len(prefix):], "\n", 2)[0])
			}
		}
	}
	scripted := tool != "" && offered[tool]
	f.mu.Lock()
	f.calls++
	n := f.calls
	var answer []map[string]any
	stop := "end_turn"
	switch {
	case scripted && hasToolResult(last):
		for _, b := range last {
			if b.Type == "tool_result" {
				f.results = append(f.results, b.resultText())
			}
		}
		answer = []map[string]any{{"type": "text", "text": "done"}}
	case scripted:
		var input []byte
		if tool == "Bash" {
			input, _ = json.Marshal(map[string]string{"command": arg, "description": "run the scripted command"})
		} else {
			input, _ = json.Marshal(map[string]any{"questions": []map[string]any{{"question": arg, "header": "Size", "multiSelect": false,
				"options": []map[string]string{{"label": "Small", "description": "a small one"}, {"label": "Large", "description": "a large one"}}}}})
		}
		answer = []map[string]any{{"type": "tool_use", "id": fmt.Sprintf("toolu_%02d", n), "name": tool, "input": json.RawMessage(input)}}
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
	out  syncBuffer
	errb syncBuffer
}

// Bytes is what was written so far.
func (s *syncBuffer) Bytes() []byte { return []byte(s.String()) }

// runClaude starts `claude -p "RUN: <command>" --output-format json` in a
// new project whose .claude/settings.json makes hitlbot's /hooks/claude
// its PermissionRequest hook (type http, the token through
// allowedEnvVars), against the fake model API.
func runClaude(t *testing.T, bin, hitlbot, model, command string) *claudeRun {
	t.Helper()
	return startClaude(t, bin, claudeProject(t, hitlbot), model, nil, "-p", "RUN: "+command, "--output-format", "json")
}

// claudeProject makes a new project whose .claude/settings.json makes
// hitlbot's /hooks/claude its PermissionRequest hook (type http, the
// token through allowedEnvVars), and returns its directory.
func claudeProject(t *testing.T, hitlbot string) string {
	t.Helper()
	dir := t.TempDir()
	settings := `{"hooks":{"PermissionRequest":[{"matcher":"*","hooks":[{"type":"http","url":"` + hitlbot + `/hooks/claude",` +
		`"headers":{"Authorization":"Bearer $HITLBOT_AGENT_TOKEN"},"allowedEnvVars":["HITLBOT_AGENT_TOKEN"],"timeout":120}]}]}}`
	if err := os.MkdirAll(filepath.Join(dir, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startClaude runs the CLI with args in project dir against the fake
// model API, stdin (when not nil) its standard input.
func startClaude(t *testing.T, bin, dir, model string, stdin io.Reader, args ...string) *claudeRun {
	t.Helper()
	c := &claudeRun{dir: dir, done: make(chan error, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = c.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "ANTHROPIC_BASE_URL=" + model, "ANTHROPIC_API_KEY=sk-ant-fake-0123456789",
		"HITLBOT_AGENT_TOKEN=" + agentToken, "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1"}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &c.out, &c.errb
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
	hitlbot, recorded := hookRecorder(t, s.base)
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
	if n := agentCards(fake); n != 2 {
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
	hooks := recorded()
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

// hookRecorder is a proxy in front of hitlbot at base that keeps the
// bodies of Claude Code's hook requests on their way; it returns the
// proxy's URL and the bodies seen so far.
func hookRecorder(t *testing.T, base string) (string, func() []map[string]any) {
	t.Helper()
	var mu sync.Mutex
	var hooks []map[string]any
	target, _ := url.Parse(base)
	proxy := httputil.NewSingleHostReverseProxy(target)
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		mu.Lock()
		hooks = append(hooks, m)
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(rec.Close)
	return rec.URL, func() []map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return append([]map[string]any(nil), hooks...)
	}
}

// cardValue is the value of card's callback button whose value holds
// every key of want, or fails.
func cardValue(t *testing.T, content string, want map[string]any) map[string]any {
	t.Helper()
	var found map[string]any
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if val, ok := x["value"].(map[string]any); ok && x["type"] == "callback" && found == nil {
				match := true
				for k, w := range want {
					match = match && fmt.Sprint(val[k]) == fmt.Sprint(w)
				}
				if match {
					found = val
				}
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	var card any
	if err := json.Unmarshal([]byte(content), &card); err != nil {
		t.Fatalf("card content is not JSON: %v", err)
	}
	walk(card)
	if found == nil {
		t.Fatalf("no button %v on the card: %s", want, content)
	}
	return found
}

// agentCards counts the agent's approval cards sent to the fake Feishu.
func agentCards(fake *feishutest.Server) int {
	n := 0
	for _, c := range fake.Calls() {
		if c.MsgType == "interactive" && c.Op == "create" && strings.Contains(c.Content, "ci-claude asks to run") {
			n++
		}
	}
	return n
}

// makeProject is a Claude Code project (claudeProject) with a Makefile
// whose build target appends "built" to built.txt.
func makeProject(t *testing.T, hitlbot string) string {
	t.Helper()
	dir := claudeProject(t, hitlbot)
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte("build:\n\techo built >> built.txt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestClaudeCodeHookAlways: the real Claude Code CLI asks to run `make
// build`; its hook input suggests a rule (addRules), so the Feishu card
// offers "always"; a click on it runs the command once and Claude Code
// writes the rule into .claude/settings.local.json. Asked again in the
// same project, Claude Code's own rule allows it (no hook request, no
// card); asked in another project (no rule of Claude Code's), hitlbot's
// standing rule allows it: a hook request, no card, the command ran.
func TestClaudeCodeHookAlways(t *testing.T) {
	bin := claudeCLI(t)
	s, fake := serveHookAgent(t)
	model := newFakeAnthropic(t)
	hitlbot, hooks := hookRecorder(t, s.base)
	run := func(dir string) {
		t.Helper()
		c := startClaude(t, bin, dir, model.URL, nil, "-p", "RUN: make build", "--output-format", "json")
		if r := c.result(t); r.IsError || len(r.PermissionDenials) != 0 {
			t.Fatalf("the run in %s: %+v\n%s", dir, r, c.out.String())
		}
	}
	built := func(dir string) string {
		b, _ := os.ReadFile(filepath.Join(dir, "built.txt"))
		return string(b)
	}

	dir := makeProject(t, hitlbot)
	first := startClaude(t, bin, dir, model.URL, nil, "-p", "RUN: make build", "--output-format", "json")
	card := agentCard(t, fake, 1)
	if !strings.Contains(card.Content, "Always allow Bash(make build *) for ci-claude") {
		t.Fatalf("the card offers no always choice for the suggested rule: %s\nthe hook requests: %v", card.Content, hooks())
	}
	if _, err := fake.Push(feishutest.CardActionEvent{EventID: "ev-cc-always", Operator: "ou_alice", MessageID: "om_agent_card", ChatID: "oc_ops",
		Value: cardValue(t, card.Content, map[string]any{"decision": "approve", "grant": "always"})}.JSON(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if r := first.result(t); r.IsError || len(r.PermissionDenials) != 0 {
		t.Fatalf("the first run: %+v\n%s", r, first.out.String())
	}
	if got := built(dir); got != "built\n" {
		t.Fatalf("built.txt after the first run: %q", got)
	}
	local, _ := os.ReadFile(filepath.Join(dir, ".claude", "settings.local.json"))
	if !strings.Contains(string(local), `"Bash(make build *)"`) {
		t.Fatalf(".claude/settings.local.json: %s", local)
	}
	h := hooks()
	if len(h) != 1 {
		t.Fatalf("%d hook requests; want 1", len(h))
	}
	b, _ := json.Marshal(h[0]["permission_suggestions"])
	t.Logf("the hook's permission_suggestions: %s", b)

	// The same project again: Claude Code's own rule, no hook request.
	run(dir)
	if got := built(dir); got != "built\nbuilt\n" {
		t.Fatalf("built.txt after the second run: %q", got)
	}
	if n := len(hooks()); n != 1 {
		t.Fatalf("%d hook requests after the second run; want 1 (Claude Code's rule allows it)", n)
	}

	// Another project: Claude Code asks hitlbot, whose standing rule allows
	// it with no card.
	other := makeProject(t, hitlbot)
	run(other)
	if got := built(other); got != "built\n" {
		t.Fatalf("built.txt in the other project: %q", got)
	}
	if n := len(hooks()); n != 2 {
		t.Fatalf("%d hook requests after the third run; want 2", n)
	}
	if n := agentCards(fake); n != 1 {
		t.Fatalf("%d cards were sent; want 1 (the standing rule allows the later calls)", n)
	}
}

// TestClaudeCodeHookQuestion: the real Claude Code CLI as an SDK host
// runs it (stream-json in and out, --permission-prompt-tool stdio, stdin
// held open; the host here never answers) asks AskUserQuestion through
// the hook; the question's Feishu card is answered with the option
// "Large"; the model's next request holds the tool_result saying so.
func TestClaudeCodeHookQuestion(t *testing.T) {
	bin := claudeCLI(t)
	s, fake := serveHookAgent(t)
	model := newFakeAnthropic(t)
	hitlbot, hooks := hookRecorder(t, s.base)
	stdin, host, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Close(); _ = stdin.Close() })
	c := startClaude(t, bin, claudeProject(t, hitlbot), model.URL, stdin, "-p", "--input-format", "stream-json", "--output-format", "stream-json",
		"--verbose", "--permission-prompt-tool", "stdio")
	if _, err := io.WriteString(host, `{"type":"user","session_id":"","parent_tool_use_id":null,"message":{"role":"user","content":[{"type":"text","text":"ASK: Which size?"}]}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	var card feishutest.Call
	waitFor(t, 60*time.Second, "the question's card", func() bool {
		for _, k := range fake.Calls() {
			if k.MsgType == "interactive" && k.Op == "create" && strings.Contains(k.Content, "ci-claude asks you: Which size?") {
				card = k
				return true
			}
		}
		return false
	})
	if _, err := fake.Push(feishutest.CardActionEvent{EventID: "ev-cc-question", Operator: "ou_alice", MessageID: "om_agent_card", ChatID: "oc_ops",
		Value: cardValue(t, card.Content, map[string]any{"decision": "answer", "option": 2}), FormValue: map[string]any{"other_1": ""}, Name: "option_2"}.JSON(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "Claude Code's result", func() bool { return strings.Contains(c.out.String(), `"type":"result"`) })
	_ = host.Close()
	select {
	case err := <-c.done:
		if err != nil {
			t.Fatalf("claude: %v\nstderr %s", err, c.errb.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("claude did not end when its input ended")
	}
	model.mu.Lock()
	results := append([]string(nil), model.results...)
	model.mu.Unlock()
	t.Logf("tool results Claude Code sent: %q", results)
	if len(results) != 1 || !strings.Contains(results[0], `"Which size?"="Large"`) {
		t.Fatalf("the model did not read the answer: %q\n%s", results, c.out.String())
	}
	for _, line := range strings.Split(c.out.String(), "\n") {
		if strings.Contains(line, `"type":"control_request"`) {
			t.Logf("Claude Code asked the host (never answered): %s", line)
		}
	}
	h := hooks()
	if len(h) != 1 || h[0]["tool_name"] != "AskUserQuestion" {
		t.Fatalf("the hook requests: %v", h)
	}
}
