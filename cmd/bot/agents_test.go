package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/open-dingtalk/dingtalk-stream-sdk-go/payload"

	"github.com/hitlbot/hitlbot/channels/dingtalk/dingtalktest"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
	"github.com/hitlbot/hitlbot/tools/mcptool/mcptest"
)

const agentToken = "agent-ci-token-0123456789abcdef"

// agentsConfig: one agent whose cards go to Feishu chat oc_ops, where
// ou_alice is the requester (she may approve), with the policy.
const agentsConfig = `agents:
  - name: ci-claude
    token_env: AGENT_CI_TOKEN
    approve_in: {channel: feishu, chat_id: oc_ops}
    requester: ou_alice
    policy:
      "Read|Glob|Grep": {risk: LOW}
      "Bash(rm *)|Bash(git push*)": {risk: HIGH}
      "*": {risk: MEDIUM}
`

// serveWithAgents serves a bot with the agents config and Feishu on a
// fake, and returns both.
func serveWithAgents(t *testing.T) (*server, *feishutest.Server) {
	t.Helper()
	fake := feishutest.New()
	t.Cleanup(fake.Close)
	for k, v := range map[string]string{
		"HITLBOT_CHANNELS_FEISHU_ENABLED":    "true",
		"HITLBOT_APPROVAL_LANG":              "en", // the assertions read English; the zh default is config.TestLanguages
		"HITLBOT_CHANNELS_FEISHU_APP_ID":     "cli_agents",
		"HITLBOT_CHANNELS_FEISHU_APP_SECRET": "feishu-secret-agents",
		"HITLBOT_CHANNELS_FEISHU_BASE_URL":   fake.URL,
		"AGENT_CI_TOKEN":                     agentToken,
	} {
		t.Setenv(k, v)
	}
	s := serve(t, "-config", writeConfig(t, agentsConfig), "-data", t.TempDir())
	waitFor(t, 30*time.Second, "the long connection", fake.Connected)
	return s, fake
}

// agentCard waits for the card of an agent's request in chat oc_ops.
func agentCard(t *testing.T, fake *feishutest.Server, n int) feishutest.Call {
	t.Helper()
	var card feishutest.Call
	waitFor(t, 20*time.Second, "the agent's card", func() bool {
		seen := 0
		for _, c := range fake.Calls() {
			if c.MsgType == "interactive" && c.Op == "create" && strings.Contains(c.Content, "ci-claude asks to run") {
				if seen++; seen == n {
					card = c
					return true
				}
			}
		}
		return false
	})
	return card
}

// click pushes a click on card's button verb by operator.
func click(t *testing.T, fake *feishutest.Server, card feishutest.Call, verb, operator, event string) {
	t.Helper()
	resp, err := fake.Push(feishutest.CardActionEvent{EventID: event, Operator: operator, MessageID: "om_agent_card",
		ChatID: "oc_ops", Value: buttonValue(t, card.Content, verb)}.JSON(), 5*time.Second)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("click: %+v, %v", resp, err)
	}
}

// TestClaudeCodeClientApprovesOnFeishu: an agent written with the official
// TypeScript SDK (Claude Code's) calls request_approval as Claude Code's
// --permission-prompt-tool does; the card appears in the Feishu chat; a
// click by someone the rule refuses decides nothing; the requester's click
// answers the agent, byte for byte the contract's JSON; the card ends
// "Allowed".
func TestClaudeCodeClientApprovesOnFeishu(t *testing.T) {
	modules := mcptest.NPMModules(t)
	s, fake := serveWithAgents(t)
	cmd := exec.Command("node", filepath.Join("testdata", "ts-agent.cjs"), s.base+"/mcp", "Bash", `{"command":"git push origin main"}`, "toolu_01")
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "AGENT_TOKEN="+agentToken)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	card := agentCard(t, fake, 1)
	if !strings.Contains(card.Content, "git push origin main") || !strings.Contains(card.Content, "HIGH") {
		t.Fatalf("the card: %s", card.Content)
	}
	click(t, fake, card, "approve", "ou_mallory", "ev-refused")
	select {
	case err := <-done:
		t.Fatalf("the agent got an answer from a refused click: %v %s %s", err, out.String(), errb.String())
	case <-time.After(300 * time.Millisecond):
	}
	click(t, fake, card, "approve", "ou_alice", "ev-ok")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the TypeScript agent failed: %v\n%s", err, errb.String())
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the TypeScript agent got no answer after the click")
	}
	want := `{"content":[{"type":"text","text":"{\"behavior\":\"allow\",\"updatedInput\":{\"command\":\"git push origin main\"}}"}]}` + "\n"
	if out.String() != want {
		t.Fatalf("the agent printed\n%s\nwant\n%s", out.String(), want)
	}
	waitFor(t, 20*time.Second, "the card patched to Allowed", func() bool {
		for _, c := range fake.Calls() {
			if c.Op == "patch" && strings.Contains(c.Content, "Allowed: ci-claude may run it now") {
				return true
			}
		}
		return false
	})
	if strings.Contains(s.stderr.String(), agentToken) {
		t.Fatal("the agent's token reached the log")
	}
}

// TestStdioForwarderAndRetry: an agent that only spawns commands talks to
// `bot mcp` over stdin/stdout; a retried request with the same tool_use_id
// (after the first call gave up) finds the same approval, and no second
// card is sent; a rejection reaches it as the contract's deny.
func TestStdioForwarderAndRetry(t *testing.T) {
	s, fake := serveWithAgents(t)
	t.Setenv("AGENT_TOKEN", agentToken)
	// bot mcp in process, on two pipes.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	fwd := make(chan int, 1)
	go func() { fwd <- cmdMCP(ctx, []string{"-url", s.base + "/mcp"}, inR, outW, io.Discard) }()
	t.Cleanup(func() { cancel(); inW.Close(); <-fwd })
	client := mcp.NewClient(&mcp.Implementation{Name: "spawning-agent", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"tool_name": "Write", "input": map[string]any{"file_path": "/etc/motd", "content": "hi"}, "tool_use_id": "toolu_w"}
	first, stop := context.WithTimeout(context.Background(), 500*time.Millisecond)
	_, _ = cs.CallTool(first, &mcp.CallToolParams{Name: "request_approval", Arguments: args})
	stop()
	card := agentCard(t, fake, 1)

	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "request_approval", Arguments: args})
		done <- result{res, err}
	}()
	click(t, fake, card, "reject", "ou_alice", "ev-no")
	var got result
	select {
	case got = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the retried request got no answer")
	}
	if got.err != nil || len(got.res.Content) != 1 {
		t.Fatalf("retry: %+v, %v", got.res, got.err)
	}
	text := got.res.Content[0].(*mcp.TextContent).Text
	var deny struct{ Behavior, Message string }
	if err := json.Unmarshal([]byte(text), &deny); err != nil || deny.Behavior != "deny" || !strings.Contains(deny.Message, "rejected by ou_alice") {
		t.Fatalf("the answer: %s", text)
	}
	n := 0
	for _, c := range fake.Calls() {
		if c.MsgType == "interactive" && c.Op == "create" && strings.Contains(c.Content, "ci-claude asks to run") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d cards for one tool_use_id, want 1", n)
	}
}

// TestAgentDecidedThroughTheAPI: approve_in {channel: api}: the agent asks
// over HTTP; the requester finds it in GET /api/approvals with her own
// token, reads its payloadSha256 and approves; the agent's long poll
// answers allowed. The agent's token cannot decide; a person's token
// cannot create.
func TestAgentDecidedThroughTheAPI(t *testing.T) {
	const alice = "api-alice-token-0123456789abcdef"
	t.Setenv("HITLBOT_CHANNELS_API_TOKENS", alice+" alice")
	t.Setenv("AGENT_CI_TOKEN", agentToken)
	cfg := strings.Replace(agentsConfig, "approve_in: {channel: feishu, chat_id: oc_ops}", "approve_in: {channel: api, chat_id: default}", 1)
	cfg = strings.Replace(cfg, "requester: ou_alice", "requester: alice", 1)
	s := serve(t, "-config", writeConfig(t, cfg), "-data", t.TempDir())

	do := func(method, path, tok, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, s.base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	if code, _ := do("POST", "/api/approvals", alice, `{"tool_name":"Bash","input":{"command":"make release"}}`); code != http.StatusUnauthorized {
		t.Fatalf("a person's token created an agent's approval: %d", code)
	}
	code, created := do("POST", "/api/approvals", agentToken, `{"tool_name":"Bash","input":{"command":"make release"},"tool_use_id":"toolu_api"}`)
	if code != http.StatusCreated || created["status"] != "pending" {
		t.Fatalf("create: %d %v", code, created)
	}
	id := created["id"].(string)
	code, list := do("GET", "/api/approvals?state=pending", alice, "")
	if code != http.StatusOK || !strings.Contains(mustJSON(t, list), id) {
		t.Fatalf("alice's pending list: %d %v", code, list)
	}
	code, one := do("GET", "/api/approvals/"+id, alice, "")
	rec, _ := one["approval"].(map[string]any)
	hash, _ := rec["payloadSha256"].(string)
	if code != http.StatusOK || hash == "" {
		t.Fatalf("alice reads it: %d %v", code, one)
	}
	if code, _ := do("POST", "/api/approvals/"+id+"/decision", agentToken, `{"decision":"approve","payloadSha256":"`+hash+`"}`); code != http.StatusForbidden {
		t.Fatalf("the agent decided its own approval: %d", code)
	}
	polled := make(chan map[string]any, 1)
	go func() {
		_, v := do("GET", "/api/approvals/"+id+"?wait=30s", agentToken, "")
		polled <- v
	}()
	if code, res := do("POST", "/api/approvals/"+id+"/decision", alice, `{"decision":"approve","payloadSha256":"`+hash+`"}`); code != http.StatusOK {
		t.Fatalf("alice approves: %d %v", code, res)
	}
	select {
	case v := <-polled:
		if v["status"] != "allowed" || !strings.Contains(mustJSON(t, v), `"input":{"command":"make release"}`) {
			t.Fatalf("the agent's poll: %v", v)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent's poll did not end with alice's decision")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAgentApprovedOnDingTalk: approve_in {channel: dingtalk}: an agent's
// request over HTTP shows a card in the DingTalk group, a click by someone
// the rule refuses decides nothing, the requester's click answers the
// agent's long poll with the input shown, and the card ends "Allowed".
func TestAgentApprovedOnDingTalk(t *testing.T) {
	fake := dingtalktest.New(t)
	for k, v := range map[string]string{
		"HITLBOT_CHANNELS_DINGTALK_ENABLED":          "true",
		"HITLBOT_APPROVAL_LANG":                      "en", // the assertions read English; the zh default is config.TestLanguages
		"HITLBOT_CHANNELS_DINGTALK_CLIENT_ID":        "ding-app",
		"HITLBOT_CHANNELS_DINGTALK_CLIENT_SECRET":    "dingtalk-secret-agents",
		"HITLBOT_CHANNELS_DINGTALK_ROBOT_CODE":       "robot-1",
		"HITLBOT_CHANNELS_DINGTALK_API_BASE_URL":     fake.URL(),
		"HITLBOT_CHANNELS_DINGTALK_WEBHOOK_BASE_URL": fake.URL(),
		"HITLBOT_CHANNELS_DINGTALK_CARD_TEMPLATE_ID": "tpl.schema",
		"AGENT_CI_TOKEN":                             agentToken,
	} {
		t.Setenv(k, v)
	}
	cfg := strings.Replace(agentsConfig, "approve_in: {channel: feishu, chat_id: oc_ops}", "approve_in: {channel: dingtalk, chat_id: cid_ops}", 1)
	cfg = strings.Replace(cfg, "requester: ou_alice", "requester: alice", 1)
	s := serve(t, "-config", writeConfig(t, cfg), "-data", t.TempDir())
	fake.WaitConn(30 * time.Second)

	req, _ := http.NewRequest("POST", s.base+"/api/approvals", strings.NewReader(`{"tool_name":"Bash","input":{"command":"git push origin release"},"tool_use_id":"toolu_dt"}`))
	req.Header.Set("Authorization", "Bearer "+agentToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var created map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %v", resp.StatusCode, created)
	}
	id := created["id"].(string)
	waitFor(t, 20*time.Second, "the DingTalk card", func() bool { return len(fake.Calls("/v1.0/card/instances/createAndDeliver")) == 1 })
	card := fake.Calls("/v1.0/card/instances/createAndDeliver")[0]
	params := cardParamMap(t, card.Body)
	if params["approval_id"] != id || card.Body["openSpaceId"] != "dtv1.card//IM_GROUP.cid_ops" || !strings.Contains(params["preview"], "git push origin release") {
		t.Fatalf("the card: %v", card.Body)
	}
	polled := make(chan map[string]any, 1)
	go func() {
		req, _ := http.NewRequest("GET", s.base+"/api/approvals/"+id+"?wait=30s", nil)
		req.Header.Set("Authorization", "Bearer "+agentToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			polled <- nil
			return
		}
		defer resp.Body.Close()
		var v map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&v)
		polled <- v
	}()
	clickAs := func(user string) {
		content, _ := json.Marshal(map[string]any{"cardPrivateData": map[string]any{"actionIds": []string{"confirm"},
			"params": map[string]any{"action": "confirm", "approval_id": id, "payload_sha256": params["payload_sha256"]}}})
		fake.Push(payload.CardInstanceCallbackTopic, map[string]any{"outTrackId": id, "userId": user, "userIdType": 1,
			"spaceType": "IM_GROUP", "spaceId": "cid_ops", "type": "actionCallback", "content": string(content)})
	}
	clickAs("mallory")
	select {
	case v := <-polled:
		t.Fatalf("a refused click answered the agent: %v", v)
	case <-time.After(300 * time.Millisecond):
	}
	clickAs("alice")
	select {
	case v := <-polled:
		if v["status"] != "allowed" || !strings.Contains(mustJSON(t, v), `"input":{"command":"git push origin release"}`) {
			t.Fatalf("the agent's poll: %v", v)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent's poll did not end with the click")
	}
	waitFor(t, 20*time.Second, "the card's final state", func() bool {
		for _, u := range fake.Calls("/v1.0/card/instances") {
			if u.Method == http.MethodPut && strings.Contains(cardParamMap(t, u.Body)["status_text"], "Allowed: ci-claude may run it now") {
				return true
			}
		}
		return false
	})
}
