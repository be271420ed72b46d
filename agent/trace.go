package agent

import (
	"context"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/tracing"
)

// agentName is gen_ai.agent.name of a turn's span.
const agentName = "hitlbot"

// turnSpan starts the span of a turn of in: invoke_agent, as the GenAI
// conventions name an agent's invocation. It carries identifiers only:
// never the message's text or the model's answer.
func (l *Loop) turnSpan(ctx context.Context, in Inbound) (context.Context, trace.Span) {
	if tracing.Off(l.tracer) {
		return ctx, tracing.Span
	}
	return l.tracer.Start(ctx, tracing.OpInvokeAgent+" "+agentName, trace.WithAttributes(
		tracing.OperationName.String(tracing.OpInvokeAgent), tracing.AgentName.String(agentName),
		tracing.ConversationID.String(string(in.Session)), tracing.Channel.String(in.Channel)))
}

// endTurnSpan ends a turn's span; a turn that failed is an error.
func endTurnSpan(span trace.Span, r TurnResult) {
	if r.Err != nil {
		span.SetAttributes(tracing.ErrorType.String("turn_failed"))
		span.SetStatus(codes.Error, "the turn failed")
	}
	span.End()
}

// toolSpan starts the execute_tool span of a call the turn runs itself
// (no approval needed). Its arguments are not on it: the payload hash is.
func (l *Loop) toolSpan(ctx context.Context, p *prepared) (context.Context, trace.Span) {
	if tracing.Off(l.tracer) {
		return ctx, tracing.Span
	}
	typ := "function"
	if _, ok := AsForeign(p.tool); ok {
		typ = "extension" // another program's tool (an MCP server's)
	}
	return l.tracer.Start(ctx, tracing.ExecuteTool(p.call.Name), trace.WithAttributes(
		tracing.OperationName.String(tracing.OpExecuteTool), tracing.ToolName.String(p.call.Name),
		tracing.ToolCallID.String(p.call.ID), tracing.ToolType.String(typ),
		tracing.PayloadSHA256.String(p.hash), tracing.ApprovalRisk.String(p.verdict.Risk.String())))
}

// endToolSpan ends an execute_tool span with what became of the call.
func endToolSpan(span trace.Span, r approval.Result, err error) {
	switch {
	case err != nil:
		span.SetAttributes(tracing.ErrorType.String("tool_not_completed"))
		span.SetStatus(codes.Error, "the tool did not complete")
	case r.IsError:
		span.SetAttributes(tracing.ErrorType.String("tool_error"))
		span.SetStatus(codes.Error, "the tool reported a failure")
	}
	span.End()
}
