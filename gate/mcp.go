package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/tracing"
)

// Names of the MCP tools. Claude Code calls request_approval as
// mcp__<server key>__request_approval.
const (
	ToolRequestApproval = "request_approval"
	ToolCreateApproval  = "create_approval"
	ToolGetApproval     = "get_approval"
	ToolWaitApproval    = "wait_approval"
)

// progressEvery is how often request_approval tells a caller that asked
// for progress (a progressToken) that it is still waiting.
const progressEvery = 10 * time.Second

// maxWait bounds one wait_approval call.
const maxWait = 5 * time.Minute

// schemas of the tools' inputs. They accept unknown fields: Claude Code
// adds fields (permission_suggestions) to what it sends.
var (
	askSchema = json.RawMessage(`{"type":"object","additionalProperties":true,"required":["tool_name","input"],"properties":{` +
		`"tool_name":{"type":"string","description":"the tool the agent wants to run, e.g. Bash"},` +
		`"input":{"type":"object","description":"its input, exactly as it would run"},` +
		`"tool_use_id":{"type":"string","description":"the call's id: the same id with the same tool_name and input asks the same approval again; with another, it is refused"},` +
		`"idempotency_key":{"type":"string","description":"instead of tool_use_id"},` +
		`"description":{"type":"string","description":"why, in a sentence for the person deciding"}}}`)
	idSchema = json.RawMessage(`{"type":"object","additionalProperties":true,"required":["approval_id"],"properties":{` +
		`"approval_id":{"type":"string"}}}`)
	waitSchema = json.RawMessage(`{"type":"object","additionalProperties":true,"required":["approval_id"],"properties":{` +
		`"approval_id":{"type":"string"},` +
		`"timeout_seconds":{"type":"number","description":"how long to wait, at most 300 (default 60)"}}}`)
)

// askInput is request_approval's and create_approval's input.
type askInput struct {
	ToolName       string          `json:"tool_name"`
	Input          json.RawMessage `json:"input"`
	ToolUseID      string          `json:"tool_use_id"`
	IdempotencyKey string          `json:"idempotency_key"`
	Description    string          `json:"description"`
}

func (in askInput) ask() Ask {
	key := in.ToolUseID
	if key == "" {
		key = in.IdempotencyKey
	}
	return Ask{Tool: in.ToolName, Input: in.Input, Key: key, Description: in.Description}
}

// MCPServer returns the MCP server of the gate's tools.
func (g *Gate) MCPServer(version string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "hitlbot", Title: "hitlbot approvals", Version: version}, &mcp.ServerOptions{
		Instructions: "Ask a person in the team's chat (Feishu, DingTalk, web) to approve a risky step before you take it. " +
			"request_approval blocks until they decide; create_approval and wait_approval do the same in steps.",
	})
	s.AddTool(&mcp.Tool{Name: ToolRequestApproval, Title: "Ask a person for approval",
		Description: "Ask for approval of one tool call and wait for the decision. Returns one text content holding JSON: " +
			`{"behavior":"allow","updatedInput":{…}} (run exactly updatedInput) or {"behavior":"deny","message":"…"} (do not run it). ` +
			"Claude Code's --permission-prompt-tool contract.",
		InputSchema: askSchema}, g.withAgent(g.mcpRequest))
	s.AddTool(&mcp.Tool{Name: ToolCreateApproval, Title: "Create an approval request",
		Description: "Ask for approval of one tool call without waiting: returns JSON {approval_id, status, expires_at, …}; " +
			"status is allowed at once when the policy needs nobody. Then call wait_approval.",
		InputSchema: askSchema}, g.withAgent(g.mcpCreate))
	s.AddTool(&mcp.Tool{Name: ToolGetApproval, Title: "Read an approval request",
		Description: "Where an approval stands: JSON {approval_id, status: pending|allowed|denied, message, input, …}.",
		InputSchema: idSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, g.withAgent(g.mcpGet))
	s.AddTool(&mcp.Tool{Name: ToolWaitApproval, Title: "Wait for an approval",
		Description: "Wait up to timeout_seconds (at most 300) for a decision; returns the same JSON as get_approval " +
			"(status pending when the time ran out: call it again).",
		InputSchema: waitSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, g.withAgent(g.mcpWait))
	return s
}

// MCPHandler serves the MCP server over streamable HTTP at /mcp, for
// agents with a token; others get 401 and nothing is created. It is
// stateless, so any replica answers any request.
func (g *Gate) MCPHandler(version string) http.Handler {
	srv := g.MCPServer(version)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless: true,
		// Every request needs an agent's bearer token, so a page that
		// rebinds a name to 127.0.0.1 gains nothing; behind a reverse
		// proxy the Host header is the proxy's.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        maxBody,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := g.Authenticate(bearer(r.Header)); !ok {
			unauthorized(w)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// maxBody bounds a request's body.
const maxBody = 1 << 20

func unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="hitlbot"`)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write([]byte(`{"error":"unauthorized","message":"an agent's bearer token is required (agents[].token_env)"}` + "\n"))
}

// bearer is the token of an Authorization: Bearer header.
func bearer(h http.Header) string {
	v := h.Get("Authorization")
	if len(v) > 7 && strings.EqualFold(v[:7], "Bearer ") {
		return strings.TrimSpace(v[7:])
	}
	return ""
}

// withAgent runs h for the agent whose token the call came with (the HTTP
// handler let no other call in; a call without one is refused here too).
func (g *Gate) withAgent(h func(context.Context, *Agent, *mcp.CallToolRequest) (*mcp.CallToolResult, error)) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ag, ok := g.agentOf(req)
		if !ok {
			return toolError(errors.New("unauthorized")), nil
		}
		if req.Params != nil {
			// The agent's trace context, as MCP carries it
			// (_meta.traceparent): the approval is asked in its trace.
			if tp, ok := req.Params.Meta[tracing.MetaKey].(string); ok {
				ctx = tracing.WithRemote(ctx, tp)
			}
		}
		return h(ctx, ag, req)
	}
}

// agentOf is the agent a tool call came from.
func (g *Gate) agentOf(req *mcp.CallToolRequest) (*Agent, bool) {
	if req.Extra == nil {
		return nil, false
	}
	return g.Authenticate(bearer(req.Extra.Header))
}

func decode[T any](req *mcp.CallToolRequest) (T, error) {
	var v T
	if err := json.Unmarshal(req.Params.Arguments, &v); err != nil {
		return v, fmt.Errorf("%w: the arguments are not what the schema says: %v", ErrInvalid, err)
	}
	return v, nil
}

// toolError is a result the caller reads as a failure of the tool.
func toolError(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: message(err)}}}
}

// message says err for an agent.
func message(err error) string {
	switch {
	case errors.Is(err, ErrInvalid), errors.Is(err, ErrNotFound):
		return err.Error()
	case errors.Is(err, ErrBusy):
		return "too many requests of this agent are waiting for a decision; wait for one to end, then ask again"
	case errors.Is(err, ErrKeyConflict):
		which := "another request"
		if ae := (*approval.Error)(nil); errors.As(err, &ae) && ae.ID != "" {
			which += ", approval " + string(ae.ID) + ","
		}
		return codeKeyConflict + ": this tool_use_id (or idempotency_key) already names " + which +
			" with another tool or input; nothing was asked. Do not run this call: ask again with an id of its own."
	}
	return "approvals are unavailable right now (" + approval.UserMessageIn(err, "en") + "); nothing was decided"
}

func textResult(b []byte) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// mcpRequest is request_approval: ask, then wait for the decision (or
// the approval's expiry, which is a denial), telling a caller that asked
// for progress every progressEvery.
func (g *Gate) mcpRequest(ctx context.Context, ag *Agent, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	in, err := decode[askInput](req)
	if err != nil {
		return toolError(err), nil
	}
	ans, err := g.Ask(ctx, ag, in.ask())
	if err != nil {
		if errors.Is(err, ErrInvalid) {
			return toolError(err), nil
		}
		// Claude Code reads a denial better than an error.
		return textResult(Answer{Status: StatusDenied, Message: message(err)}.Behavior()), nil
	}
	token := req.Params.GetProgressToken()
	for step := 1; ans.Status == StatusPending; step++ {
		if token != nil {
			left := time.Until(ans.ExpiresAt).Round(time.Second)
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(step),
				Message: fmt.Sprintf("waiting for a person to decide approval %s (expires in %s)", ans.ID, left)})
		}
		ans, err = g.Wait(ctx, ag, ans.ID, progressEvery)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err() // the caller went away; the approval stays
			}
			return textResult(Answer{Status: StatusDenied, Message: message(err)}.Behavior()), nil
		}
	}
	return textResult(ans.Behavior()), nil
}

func (g *Gate) mcpCreate(ctx context.Context, ag *Agent, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	in, err := decode[askInput](req)
	if err != nil {
		return toolError(err), nil
	}
	ans, err := g.Ask(ctx, ag, in.ask())
	if err != nil {
		return toolError(err), nil
	}
	return answerResult(ans), nil
}

func (g *Gate) mcpGet(ctx context.Context, ag *Agent, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	in, err := decode[struct {
		ID string `json:"approval_id"`
	}](req)
	if err != nil {
		return toolError(err), nil
	}
	ans, err := g.Get(ctx, ag, approval.ID(in.ID))
	if err != nil {
		return toolError(err), nil
	}
	return answerResult(ans), nil
}

func (g *Gate) mcpWait(ctx context.Context, ag *Agent, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	in, err := decode[struct {
		ID      string   `json:"approval_id"`
		Timeout *float64 `json:"timeout_seconds"`
	}](req)
	if err != nil {
		return toolError(err), nil
	}
	d := time.Minute
	if in.Timeout != nil {
		d = time.Duration(*in.Timeout * float64(time.Second))
	}
	d = min(max(d, 0), maxWait)
	ans, err := g.Wait(ctx, ag, approval.ID(in.ID), d)
	if err != nil {
		return toolError(err), nil
	}
	return answerResult(ans), nil
}

// answerResult is an Answer as a tool result: its JSON as text, and as
// structured content.
func answerResult(ans Answer) *mcp.CallToolResult {
	b, _ := json.Marshal(ans)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}
}
