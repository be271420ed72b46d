package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/internal/tracing"
	"github.com/hitlbot/hitlbot/internal/tracing/tracingtest"
)

// TestTurnSpans: a turn is an invoke_agent span (its conversation the
// session) and a call it runs itself an execute_tool span under it, with
// the GenAI conventions' attributes and neither the message nor the
// call's arguments.
func TestTurnSpans(t *testing.T) {
	col := tracingtest.New(t)
	p := tracing.New(tracing.Config{Endpoint: col.URL, SampleRatio: 1})
	defer p.Shutdown(context.Background())
	h := newHarness(t, callThenSummarise(call("c1", "look", "secret-orders")), func(c *agent.LoopConfig) {
		c.Tracer = p.Tracer("hitlbot/agent")
	})
	result(t, h.submit(t, "s1", "look at the secret orders"))
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	turn, run := col.Span(t, "invoke_agent hitlbot"), col.Span(t, "execute_tool look")
	if run.ParentSpanID() != turn.SpanID() || run.TraceID() != turn.TraceID() {
		t.Errorf("execute_tool is not the turn's child")
	}
	for k, want := range map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "hitlbot"} {
		if got := tracingtest.Str(t, turn, k); got != want {
			t.Errorf("turn %s = %q, want %q", k, got, want)
		}
	}
	if got := tracingtest.Str(t, turn, "gen_ai.conversation.id"); !strings.HasSuffix(got, "s1") {
		t.Errorf("conversation %q, want the session", got)
	}
	for k, want := range map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "look",
		"gen_ai.tool.call.id": "c1", "gen_ai.tool.type": "function"} {
		if got := tracingtest.Str(t, run, k); got != want {
			t.Errorf("execute_tool %s = %q, want %q", k, got, want)
		}
	}
	for _, s := range col.Spans() {
		for k, v := range s.Attributes().All() {
			if strings.Contains(v.AsString(), "secret") {
				t.Errorf("span %s carries the message or the arguments in %s", s.Name(), k)
			}
		}
	}
}
