package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// Nop is the tracer of a process whose tracing is off: Start returns its
// ctx as it is and one shared span that records nothing, so a span costs
// a call and no allocation.
var Nop trace.Tracer = nopTracer{}

// Off reports whether t is Nop: a caller may then skip building a span's
// options and attributes, which Nop would drop (they cost allocations on
// every approval and every turn).
func Off(t trace.Tracer) bool { return t == Nop }

// Span is the span Nop starts: one shared value that records nothing.
var Span trace.Span = nopSpan{}

// Or is t, or Nop when t is nil: what a component given no tracer uses.
func Or(t trace.Tracer) trace.Tracer {
	if t == nil {
		return Nop
	}
	return t
}

type nopTracer struct{ embedded.Tracer }

func (nopTracer) Start(ctx context.Context, _ string, _ ...trace.SpanStartOption) (context.Context, trace.Span) {
	return ctx, nopSpan{}
}

type nopProvider struct{ embedded.TracerProvider }

func (nopProvider) Tracer(string, ...trace.TracerOption) trace.Tracer { return Nop }

type nopSpan struct{ embedded.Span }

func (nopSpan) End(...trace.SpanEndOption)              {}
func (nopSpan) AddEvent(string, ...trace.EventOption)   {}
func (nopSpan) AddLink(trace.Link)                      {}
func (nopSpan) IsRecording() bool                       { return false }
func (nopSpan) RecordError(error, ...trace.EventOption) {}
func (nopSpan) SpanContext() trace.SpanContext          { return trace.SpanContext{} }
func (nopSpan) SetStatus(codes.Code, string)            {}
func (nopSpan) SetName(string)                          {}
func (nopSpan) SetAttributes(...attribute.KeyValue)     {}
func (nopSpan) TracerProvider() trace.TracerProvider    { return nopProvider{} }
