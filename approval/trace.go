package approval

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/internal/tracing"
)

// The spans of an approval (EngineConfig.Tracer). Their attributes are
// identifiers, the risk, the status and payload hashes: never a call's
// arguments or result, a comment or a preview, private approval or not.

// decisionSpans starts approval.decide, as a child of the approval's
// request span (a.Trace: the decision may be taken on another replica,
// by a click whose context knows nothing of it), linked to the span the
// decision's own context holds, if any; and records approval.claim in
// it, from claimed until now. started is when Decide began. a may be nil
// (the claim failed, or found no approval): then the decision span is a
// child of ctx.
func (e *Engine) decisionSpans(ctx context.Context, id ID, d Decision, a *Approval, code ClaimCode, err error, started, claimed time.Time) (context.Context, trace.Span) {
	if tracing.Off(e.tracer) {
		// The run goes on under the decision's span all the same (one
		// that records nothing), as it would below.
		return trace.ContextWithSpan(ctx, tracing.Span), tracing.Span
	}
	pctx := ctx
	var opts []trace.SpanStartOption
	if a != nil && a.Trace != "" {
		if own := trace.SpanContextFromContext(ctx); own.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: own}))
		}
		pctx = tracing.WithRemote(ctx, a.Trace)
	}
	attrs := []attribute.KeyValue{tracing.ApprovalID.String(string(id)), tracing.Verb.String(string(d.Verb)),
		tracing.Source.String(string(d.Source))}
	if a != nil {
		attrs = append(attrs, tracing.ApprovalRisk.String(a.Risk.String()), tracing.ToolName.String(a.Tool()),
			tracing.PayloadSHA256.String(a.PayloadSHA256))
	}
	opts = append(opts, trace.WithTimestamp(started), trace.WithAttributes(attrs...))
	dctx, span := e.tracer.Start(pctx, "approval.decide", opts...)
	_, claim := e.tracer.Start(dctx, "approval.claim", trace.WithTimestamp(claimed),
		trace.WithAttributes(tracing.Claim.String(string(code))))
	e.endSpan(claim, err)
	// The run goes on under the decision's span, with the caller's
	// deadline and values (ctx), not the parent the span context came
	// from.
	return trace.ContextWithSpan(ctx, span), span
}

// toolSpan starts the execute_tool span of call c of a.
func (e *Engine) toolSpan(ctx context.Context, a *Approval, c Call) (context.Context, trace.Span) {
	if tracing.Off(e.tracer) {
		return ctx, tracing.Span
	}
	return e.tracer.Start(ctx, tracing.ExecuteTool(c.Tool), trace.WithTimestamp(e.cfg.Clock.Now()), trace.WithAttributes(
		tracing.OperationName.String(tracing.OpExecuteTool), tracing.ToolName.String(c.Tool),
		tracing.ToolCallID.String(c.CallID), tracing.ToolType.String("function"),
		tracing.ApprovalID.String(string(a.ID)), tracing.PayloadSHA256.String(c.PayloadSHA256)))
}

// endTool ends an execute_tool span with what became of the call: a
// failure the tool reported or a run that failed is an error, named by
// its kind, never its text.
func (e *Engine) endTool(span trace.Span, r Result, err error) {
	switch {
	case err != nil:
		span.SetAttributes(tracing.ErrorType.String(errorKindName(err)))
		span.SetStatus(codes.Error, "the tool did not complete")
	case r.IsError:
		span.SetAttributes(tracing.ErrorType.String("tool_error"))
		span.SetStatus(codes.Error, "the tool reported a failure")
	}
	if !tracing.Off(e.tracer) {
		span.End(trace.WithTimestamp(e.cfg.Clock.Now()))
	}
}

// endSpan ends span, an error's kind its status (never the error's text:
// it may hold what a span must not).
func (e *Engine) endSpan(span trace.Span, err error) {
	if tracing.Off(e.tracer) {
		return // Nop's span records nothing
	}
	if err != nil {
		span.SetAttributes(tracing.ErrorType.String(errorKindName(err)))
		span.SetStatus(codes.Error, errorKindName(err))
	}
	span.End(trace.WithTimestamp(e.cfg.Clock.Now()))
}

func errorKindName(err error) string {
	if k := errkind.Of(err); k != errkind.Other {
		return k.String()
	}
	return "error"
}

// auditTraceID is the trace id an audit record of an approval names: its
// request's, when that trace is recorded (sampled).
func auditTraceID(traceparent string) string {
	sc, ok := tracing.Parse(traceparent)
	if !ok || !sc.IsSampled() {
		return ""
	}
	return sc.TraceID().String()
}
