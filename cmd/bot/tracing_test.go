package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hitlbot/hitlbot/internal/tracing/tracingtest"
)

// TestServeTracing: bot serve with tracing.endpoint set sends a turn's and
// its approval's spans to the collector (decoded there by the OpenTelemetry
// Collector's own OTLP/JSON decoder), with the headers from the
// environment, and every audit record of the approval names the trace of
// its spans.
func TestServeTracing(t *testing.T) {
	col := tracingtest.New(t)
	t.Setenv("HITLBOT_TRACING_ENDPOINT", col.URL)
	t.Setenv("HITLBOT_TRACING_HEADERS", "Authorization=Bearer%20t0ken-for-otel")
	data := t.TempDir()
	s := serve(t, "-data", data)
	tok := token(t, chat(t, s.base, map[string]any{"message": deleteCancelled}))
	chat(t, s.base, map[string]any{"confirmationToken": tok, "confirmed": true})
	s.shutdown(t) // sends the spans left

	req, dec := col.Span(t, "approval.request"), col.Span(t, "approval.decide")
	run := col.Span(t, "execute_tool sql_execute")
	if dec.ParentSpanID() != req.SpanID() || run.ParentSpanID() != dec.SpanID() {
		t.Errorf("the decision is not under the request, or the run under the decision")
	}
	var turnOK bool
	for _, sp := range col.Spans() {
		if sp.Name() == "invoke_agent hitlbot" && req.ParentSpanID() == sp.SpanID() {
			turnOK = true
		}
	}
	if !turnOK {
		t.Error("approval.request is not under a turn's invoke_agent span")
	}
	if h := col.Headers(); len(h) == 0 || h[0].Get("Authorization") != "Bearer t0ken-for-otel" {
		t.Errorf("the export's Authorization: %v", h)
	}

	f, err := os.Open(filepath.Join(data, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var r struct {
			Event   string `json:"event"`
			TraceID string `json:"trace_id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		n++
		if r.TraceID != req.TraceID().String() {
			t.Errorf("audit %s names trace %q, the spans' is %s", r.Event, r.TraceID, req.TraceID())
		}
	}
	if n < 3 {
		t.Errorf("%d audit records", n)
	}
}
