package approval_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/tracing"
	"github.com/hitlbot/hitlbot/internal/tracing/tracingtest"
)

// TestApprovalSpans: an approval requested under a turn's span and decided
// on another replica (a click's context knows nothing of the turn) is one
// trace: approval.request under the turn, approval.show under it, and
// approval.decide under the request with approval.claim and the call's
// execute_tool span (the GenAI conventions' attributes) under it. Every
// audit record of the approval names that trace; no span carries the
// call's arguments.
func TestApprovalSpans(t *testing.T) {
	col := tracingtest.New(t)
	p := tracing.New(tracing.Config{Endpoint: col.URL, SampleRatio: 1})
	defer p.Shutdown(context.Background())
	clk := clock.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	st := memstore.New(memstore.Options{Clock: clk})
	rec, tool := &recorder{}, &counterTool{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mk := func() *approval.Engine {
		e, err := approval.NewEngine(approval.EngineConfig{Store: st, Notifier: &notifier{}, Dispatcher: tool, Audit: rec,
			Clock: clk, PollInterval: time.Hour, Logger: quiet, Tracer: p.Tracer("hitlbot/approval")})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return e
	}
	ea, eb := mk(), mk()

	tctx, turn := p.Tracer("hitlbot/agent").Start(context.Background(), "invoke_agent hitlbot")
	r := approval.Request{Session: "test:traced", Channel: "test", ChatID: "chat-1", Requester: "alice",
		Calls: []approval.Call{{Tool: "sql_execute", Args: []byte(`{"statement":"DELETE FROM orders WHERE id = 7"}`), CallID: "call_7"}},
		Verdict: approval.Verdict{NeedsApproval: true, Risk: approval.RiskHigh, Reason: "HIGH risk",
			Approvers: approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"bob"}}, Timeout: 5 * time.Minute}}
	a, err := ea.Request(tctx, r)
	if err != nil {
		t.Fatal(err)
	}
	turn.End()
	if a.Trace == "" {
		t.Fatal("the approval holds no traceparent")
	}
	if o := decide(t, eb, a.ID, decision(a, approval.Approve, "bob")); o.Status != approval.StatusExecuted {
		t.Fatalf("outcome %s", o.Status)
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}

	turnSpan := col.Span(t, "invoke_agent hitlbot")
	req, show := col.Span(t, "approval.request"), col.Span(t, "approval.show")
	dec, claim := col.Span(t, "approval.decide"), col.Span(t, "approval.claim")
	run := col.Span(t, "execute_tool sql_execute")
	tid := turnSpan.TraceID()
	for _, c := range []struct {
		name          string
		child, parent string
		ok            bool
	}{
		{"request under the turn", "approval.request", "invoke_agent", req.ParentSpanID() == turnSpan.SpanID()},
		{"show under the request", "approval.show", "approval.request", show.ParentSpanID() == req.SpanID()},
		{"decide under the request", "approval.decide", "approval.request", dec.ParentSpanID() == req.SpanID()},
		{"claim under the decision", "approval.claim", "approval.decide", claim.ParentSpanID() == dec.SpanID()},
		{"the run under the decision", "execute_tool", "approval.decide", run.ParentSpanID() == dec.SpanID()},
	} {
		if !c.ok {
			t.Errorf("%s: %s is not a child of %s", c.name, c.child, c.parent)
		}
	}
	for _, s := range col.Spans() {
		if s.TraceID() != tid {
			t.Errorf("span %s is of trace %s, not the turn's %s", s.Name(), s.TraceID(), tid)
		}
		for k, v := range s.Attributes().All() {
			if strings.Contains(v.AsString(), "DELETE") {
				t.Errorf("span %s carries the call's arguments in %s", s.Name(), k)
			}
		}
	}
	for k, want := range map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "sql_execute",
		"gen_ai.tool.call.id": "call_7", "hitlbot.approval.id": string(a.ID), "hitlbot.payload_sha256": a.Calls[0].PayloadSHA256} {
		if got := tracingtest.Str(t, run, k); got != want {
			t.Errorf("execute_tool %s = %q, want %q", k, got, want)
		}
	}
	if got := tracingtest.Str(t, claim, "hitlbot.claim"); got != string(approval.ClaimOK) {
		t.Errorf("claim %q", got)
	}
	if got := tracingtest.Str(t, dec, "hitlbot.approval.status"); got != "executed" {
		t.Errorf("decision status %q", got)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.recs) < 3 {
		t.Fatalf("%d audit records", len(rec.recs))
	}
	for _, r := range rec.recs {
		if r.TraceID != tid.String() {
			t.Errorf("audit %s names trace %q, want %s", r.Event, r.TraceID, tid)
		}
	}
}

// TestNoTracer: an engine given no tracer records no traceparent and no
// trace id.
func TestNoTracer(t *testing.T) {
	f := newFixture(t, backends[0])
	a := request(t, f.a)
	decide(t, f.b, a.ID, decision(a, approval.Approve, "bob"))
	if a.Trace != "" {
		t.Errorf("Trace %q with tracing off", a.Trace)
	}
	f.audit.mu.Lock()
	defer f.audit.mu.Unlock()
	for _, r := range f.audit.recs {
		if r.TraceID != "" {
			t.Errorf("audit %s names trace %q with tracing off", r.Event, r.TraceID)
		}
	}
}
