package tracing_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hitlbot/hitlbot/internal/tracing"
	"github.com/hitlbot/hitlbot/internal/tracing/tracingtest"
)

func TestExportIsOTLP(t *testing.T) {
	c := tracingtest.New(t)
	p := tracing.New(tracing.Config{Endpoint: c.URL, SampleRatio: 1, ServiceName: "hitlbot-test",
		Headers: map[string]string{"Authorization": "Bearer s3cret"}})
	defer p.Shutdown(context.Background())
	tr := p.Tracer("hitlbot/agent", trace.WithInstrumentationVersion("v9"))

	// A turn that came with a traceparent (an MCP request's _meta).
	in := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ctx := tracing.WithRemote(context.Background(), in)
	ctx, turn := tr.Start(ctx, "invoke_agent hitlbot", trace.WithAttributes(tracing.OperationName.String(tracing.OpInvokeAgent)))
	_, call := tr.Start(ctx, tracing.ExecuteTool("sql_execute"), trace.WithAttributes(
		tracing.OperationName.String(tracing.OpExecuteTool), tracing.ToolName.String("sql_execute"),
		tracing.ToolCallID.String("call_1"), attribute.Int64("hitlbot.rows", 29), attribute.Bool("hitlbot.b", true),
		attribute.Float64("hitlbot.f", 0.5), attribute.StringSlice("hitlbot.s", []string{"a", "b"})))
	call.AddEvent("card shown", trace.WithAttributes(tracing.Cards.Int(2)))
	call.RecordError(errors.New("the secret is s3cret"))
	call.SetStatus(codes.Error, "failed")
	call.End()
	turn.SetStatus(codes.Ok, "")
	turn.End()
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p.Sent() != 2 {
		t.Fatalf("sent %d spans, want 2", p.Sent())
	}

	ts, cs := c.Span(t, "invoke_agent hitlbot"), c.Span(t, "execute_tool sql_execute")
	if got := ts.TraceID().String(); got != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("the turn's trace id %s, want the traceparent's", got)
	}
	if got := ts.ParentSpanID().String(); got != "b7ad6b7169203331" {
		t.Errorf("the turn's parent %s, want the traceparent's span", got)
	}
	if cs.TraceID() != ts.TraceID() || cs.ParentSpanID() != ts.SpanID() {
		t.Errorf("the call is not the turn's child: trace %s parent %s, turn %s/%s", cs.TraceID(), cs.ParentSpanID(), ts.TraceID(), ts.SpanID())
	}
	if cs.Kind() != ptrace.SpanKindInternal {
		t.Errorf("kind %v, want internal", cs.Kind())
	}
	if cs.Status().Code() != ptrace.StatusCodeError || cs.Status().Message() != "failed" || ts.Status().Code() != ptrace.StatusCodeOk {
		t.Errorf("status call %v %q, turn %v", cs.Status().Code(), cs.Status().Message(), ts.Status().Code())
	}
	if !(cs.EndTimestamp() >= cs.StartTimestamp() && cs.StartTimestamp() > 0) {
		t.Errorf("times %d..%d", cs.StartTimestamp(), cs.EndTimestamp())
	}
	for k, want := range map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "sql_execute",
		"gen_ai.tool.call.id": "call_1", "hitlbot.rows": "29", "hitlbot.b": "true", "hitlbot.f": "0.5", "hitlbot.s": `["a","b"]`} {
		if got := tracingtest.Str(t, cs, k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if v, _ := cs.Attributes().Get("hitlbot.rows"); v.Type() != pcommon.ValueTypeInt {
		t.Errorf("hitlbot.rows is %v, want an int", v.Type())
	}
	if cs.Events().Len() != 2 || cs.Events().At(0).Name() != "card shown" || cs.Events().At(1).Name() != "exception" {
		t.Fatalf("events: %d", cs.Events().Len())
	}
	if v, _ := cs.Events().At(1).Attributes().Get("exception.type"); v.AsString() != "*errors.errorString" {
		t.Errorf("exception.type %q", v.AsString())
	}
	if c.Scopes()[0] != "hitlbot/agent" {
		t.Errorf("scope %q", c.Scopes()[0])
	}
	if v, _ := c.Resources()[0].Get("service.name"); v.AsString() != "hitlbot-test" {
		t.Errorf("service.name %q", v.AsString())
	}
	if got := c.Headers()[0].Get("Authorization"); got != "Bearer s3cret" {
		t.Errorf("Authorization %q, want the configured header", got)
	}
	for _, s := range c.Spans() {
		for k, v := range s.Attributes().All() {
			if strings.Contains(v.AsString(), "s3cret") {
				t.Errorf("span %q carries the error's text in %s", s.Name(), k)
			}
		}
	}
}

// TestSampling: a new trace is recorded at the configured ratio (0: none,
// 1: all), a child follows its parent's decision, and a trace that is not
// recorded still has a context to pass on.
func TestSampling(t *testing.T) {
	c := tracingtest.New(t)
	p := tracing.New(tracing.Config{Endpoint: c.URL + "/v1/traces", SampleRatio: 0})
	defer p.Shutdown(context.Background())
	tr := p.Tracer("t")
	ctx, s := tr.Start(context.Background(), "unsampled root")
	if s.IsRecording() || !s.SpanContext().IsValid() || s.SpanContext().IsSampled() {
		t.Errorf("ratio 0: recording %v, context %v", s.IsRecording(), s.SpanContext())
	}
	_, child := tr.Start(ctx, "unsampled child")
	if child.IsRecording() || child.SpanContext().TraceID() != s.SpanContext().TraceID() {
		t.Error("the child of an unsampled span is recorded, or is of another trace")
	}
	child.End()
	s.End()
	sampled := tracing.WithRemote(context.Background(), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	_, r := tr.Start(sampled, "sampled by its parent")
	r.End()
	unsampledParent := tracing.WithRemote(context.Background(), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")
	_, u := tr.Start(unsampledParent, "not sampled by its parent")
	u.End()
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if spans := c.Spans(); len(spans) != 1 || spans[0].Name() != "sampled by its parent" {
		var names []string
		for _, s := range spans {
			names = append(names, s.Name())
		}
		t.Errorf("exported %v, want the span a sampled traceparent parents alone", names)
	}

	all := tracing.New(tracing.Config{Endpoint: c.URL, SampleRatio: 1})
	defer all.Shutdown(context.Background())
	if _, s := all.Tracer("t").Start(context.Background(), "x"); !s.IsRecording() || !s.SpanContext().IsSampled() {
		t.Error("ratio 1 did not record a new trace")
	}
}

// TestCollectorRefuses: an export the collector refuses is an error that
// names its status, never a header; the spans count as dropped.
func TestCollectorRefuses(t *testing.T) {
	c := tracingtest.New(t)
	c.Refuse(http.StatusUnauthorized)
	p := tracing.New(tracing.Config{Endpoint: c.URL, SampleRatio: 1, Headers: map[string]string{"X-Api-Key": "k3y-s3cret"}})
	defer p.Shutdown(context.Background())
	_, s := p.Tracer("t").Start(context.Background(), "x")
	s.End()
	err := p.Flush(context.Background())
	if err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "k3y-s3cret") {
		t.Fatalf("Flush: %v, want the 401 without the header", err)
	}
	if p.Dropped() != 1 || p.Sent() != 0 {
		t.Errorf("dropped %d sent %d", p.Dropped(), p.Sent())
	}
}

// TestShutdownSendsTheRest: spans ended before Shutdown are sent by it;
// one ended after is dropped.
func TestShutdownSendsTheRest(t *testing.T) {
	c := tracingtest.New(t)
	p := tracing.New(tracing.Config{Endpoint: c.URL, SampleRatio: 1})
	tr := p.Tracer("t")
	_, s := tr.Start(context.Background(), "before")
	_, late := tr.Start(context.Background(), "after")
	s.End()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	late.End()
	if p.Sent() != 1 || p.Dropped() != 1 {
		t.Errorf("sent %d dropped %d, want 1 and 1", p.Sent(), p.Dropped())
	}
	c.Span(t, "before")
}

var traceparents = []struct {
	in    string
	ok    bool
	trace string
}{
	{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", true, "0af7651916cd43dd8448eb211c80319c"},
	{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00", true, "0af7651916cd43dd8448eb211c80319c"},
	{"01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what-comes-later", true, "0af7651916cd43dd8448eb211c80319c"},
	{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra", false, ""},
	{"ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", false, ""},
	{"00-00000000000000000000000000000000-b7ad6b7169203331-01", false, ""},
	{"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", false, ""},
	{"00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01", false, ""},
	{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331", false, ""},
	{"", false, ""},
	{"garbage", false, ""},
}

func TestTraceparent(t *testing.T) {
	for _, tc := range traceparents {
		sc, ok := tracing.Parse(tc.in)
		if ok != tc.ok || tracing.TraceID(tc.in) != tc.trace {
			t.Errorf("Parse(%q) = %v, trace %q; want %v, %q", tc.in, ok, tracing.TraceID(tc.in), tc.ok, tc.trace)
			continue
		}
		if ok && strings.HasPrefix(tc.in, "00-") && tracing.Traceparent(sc) != tc.in {
			t.Errorf("Traceparent(Parse(%q)) = %q", tc.in, tracing.Traceparent(sc))
		}
	}
	if tracing.FromContext(context.Background()) != "" {
		t.Error("a context without a span has a traceparent")
	}
}

// TestNop: tracing off costs a call: no allocation, no context made, and
// nothing a traceparent could be written from.
func TestNop(t *testing.T) {
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		c, s := tracing.Or(nil).Start(ctx, "x")
		s.End()
		if c != ctx || s.SpanContext().IsValid() || s.IsRecording() {
			t.Fatal("the nop tracer made a context or a span context")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations a span with tracing off, want 0", allocs)
	}
}

func TestCheckEndpoint(t *testing.T) {
	for in, ok := range map[string]bool{"http://127.0.0.1:4318": true, "https://otel.example/v1/traces": true,
		"127.0.0.1:4318": false, "ftp://x": false, "https://user:pw@otel.example": false} {
		if err := tracing.CheckEndpoint(in); (err == nil) != ok {
			t.Errorf("CheckEndpoint(%q) = %v", in, err)
		}
	}
	if got := tracing.TracesURL("http://c:4318/"); got != "http://c:4318/v1/traces" {
		t.Errorf("TracesURL = %q", got)
	}
}
