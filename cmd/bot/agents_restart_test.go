package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAgentRetryAfterRestart: an agent waits in request_approval on /mcp
// when hitlbot is killed (kill -9); hitlbot starts again on the same Redis,
// the agent retries with the same tool_use_id and finds the same approval
// (one approval in the requester's list, no second one), and the
// requester's decision answers the retried call with the contract's JSON.
func TestAgentRetryAfterRestart(t *testing.T) {
	bin := buildBin(t)
	sharedRedis(t)
	const alice = "api-alice-token-0123456789abcdef"
	t.Setenv("HITLBOT_CHANNELS_API_TOKENS", alice+" alice")
	t.Setenv("AGENT_CI_TOKEN", agentToken)
	cfg := strings.Replace(agentsConfig, "approve_in: {channel: feishu, chat_id: oc_ops}", "approve_in: {channel: api, chat_id: default}", 1)
	cfg = strings.Replace(cfg, "requester: ou_alice", "requester: alice", 1)
	conf := writeConfig(t, cfg)
	data := t.TempDir()

	connect := func(base string) *mcp.ClientSession {
		t.Helper()
		c := mcp.NewClient(&mcp.Implementation{Name: "restart-agent", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp",
			HTTPClient: &http.Client{Transport: bearerTransport{agentToken}}, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	pending := func(base string) []any {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"/api/approvals?state=pending", nil)
		req.Header.Set("Authorization", "Bearer "+alice)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ Approvals []any }
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("alice's list: %d, %v", resp.StatusCode, err)
		}
		return out.Approvals
	}
	args := map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "git push origin main"}, "tool_use_id": "toolu_restart"}
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	ask := func(cs *mcp.ClientSession) chan answer {
		done := make(chan answer, 1)
		go func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "request_approval", Arguments: args})
			done <- answer{res, err}
		}()
		return done
	}

	a, baseA := startBin(t, bin, data, "-config", conf)
	first := ask(connect(baseA))
	var list []any
	waitFor(t, 20*time.Second, "the approval on A", func() bool { list = pending(baseA); return len(list) == 1 })
	id, _ := list[0].(map[string]any)["id"].(string)
	if id == "" {
		t.Fatalf("no id in %v", list)
	}
	if err := a.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-first:
		if got.err == nil && !got.res.IsError {
			t.Fatalf("the call on the killed replica answered: %+v", got.res)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the agent's call did not end with its server")
	}

	_, baseB := startBin(t, bin, data, "-config", conf)
	retried := ask(connect(baseB))
	var hash string
	waitFor(t, 20*time.Second, "the retried request on B", func() bool {
		list = pending(baseB)
		if len(list) != 1 {
			return false
		}
		rec := list[0].(map[string]any)
		if rec["id"] != id {
			t.Fatalf("the retry made another approval: %v, want %s", rec["id"], id)
		}
		hash, _ = rec["payloadSha256"].(string)
		return hash != ""
	})
	select {
	case got := <-retried:
		t.Fatalf("the retry answered before anyone decided: %+v %v", got.res, got.err)
	case <-time.After(200 * time.Millisecond):
	}
	req, _ := http.NewRequest("POST", baseB+"/api/approvals/"+id+"/decision",
		strings.NewReader(`{"decision":"approve","payloadSha256":"`+hash+`"}`))
	req.Header.Set("Authorization", "Bearer "+alice)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("alice approves on B: %d", resp.StatusCode)
	}
	select {
	case got := <-retried:
		if got.err != nil || len(got.res.Content) != 1 {
			t.Fatalf("the retried call: %+v, %v", got.res, got.err)
		}
		want := `{"behavior":"allow","updatedInput":{"command":"git push origin main"}}`
		if text := got.res.Content[0].(*mcp.TextContent).Text; text != want {
			t.Fatalf("the answer %s, want %s", text, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the retried call got no answer after the decision")
	}
}
