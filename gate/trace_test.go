package gate_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/gate"
	"github.com/hitlbot/hitlbot/internal/tracing"
	"github.com/hitlbot/hitlbot/internal/tracing/tracingtest"
)

// TestMCPTraceparent: an agent's request over MCP that carries a W3C
// traceparent in _meta (MCP's convention for trace context) is asked in
// the agent's trace: the approval's request span is a child of the
// agent's span, and its audit records name the agent's trace id.
func TestMCPTraceparent(t *testing.T) {
	col, p, r := tracedRig(t)
	srv := httptest.NewServer(r.gate.MCPHandler("test"))
	t.Cleanup(srv.Close)
	cs, err := connect(t, srv.URL, ciToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "create_approval", Meta: mcp.Meta{"traceparent": tp},
		Arguments: map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "rm -rf /tmp/x"}, "idempotency_key": "k-trace"}})
	if err != nil || res.IsError {
		t.Fatalf("create_approval: %+v, %v", res, err)
	}
	a := r.card(t)
	if got := tracing.TraceID(a.Trace); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("the approval's trace %q, want the agent's", got)
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if req := col.Span(t, "approval.request"); req.ParentSpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("approval.request's parent %s, want the agent's span", req.ParentSpanID())
	}
	for _, rec := range r.trail.All() {
		if rec.ApprovalID == string(a.ID) && rec.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Errorf("audit %s names trace %q, want the agent's", rec.Event, rec.TraceID)
		}
	}
}

// TestHTTPTraceparent: an agent's POST /api/approvals that carries a W3C
// traceparent header is asked in the agent's trace, as over MCP; a request
// without an agent's token cannot choose a trace (it is refused anyway).
func TestHTTPTraceparent(t *testing.T) {
	col, p, r := tracedRig(t)
	srv := httptest.NewServer(r.gate.HTTP(http.NotFoundHandler()))
	t.Cleanup(srv.Close)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/api/approvals",
		strings.NewReader(`{"tool_name":"Bash","input":{"command":"rm -rf /tmp/x"},"idempotency_key":"k-http-trace"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+ciToken)
	req.Header.Set("traceparent", tp)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("POST /api/approvals: %s", resp.Status)
	}
	a := r.card(t)
	if got := tracing.TraceID(a.Trace); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("the approval's trace %q, want the agent's", got)
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if req := col.Span(t, "approval.request"); req.ParentSpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("approval.request's parent %s, want the agent's span", req.ParentSpanID())
	}
}

// tracedRig is a gate rig whose engine records every span with p, sent to
// the fake collector col; both end with the test.
func tracedRig(t *testing.T) (*tracingtest.Collector, *tracing.Provider, *rig) {
	t.Helper()
	col := tracingtest.New(t)
	p := tracing.New(tracing.Config{Endpoint: col.URL, SampleRatio: 1})
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	r := newRig(t)
	eng, err := approval.NewEngine(approval.EngineConfig{Store: memstore.New(memstore.Options{}), Notifier: r.shown,
		Dispatcher: gate.Dispatcher{Next: agent.NewRegistry()}, Audit: r.trail, Logger: slog.New(slog.DiscardHandler),
		PollInterval: time.Hour, Tracer: p.Tracer("hitlbot")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	r.withEngine(t, eng)
	return col, p, r
}
