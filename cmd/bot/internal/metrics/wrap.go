package metrics

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
)

// Notifier wraps the engine's notifier (the router) to count approvals:
// Show is a request (hitlbot_approvals_requested_total{tool,risk}, pending
// +1), Settle an end (hitlbot_approvals_decided_total{tool,risk,status},
// pending -1, the decision latency). The engine shows every approval it
// creates and settles every approval that ends, on whichever replica ends
// it, so the counts need nothing from the audit trail (whose records carry
// no risk). An approval whose card could not be shown is cancelled by the
// engine without a Settle: it is counted here as ended, cancelled. Progress
// and Escalate are forwarded as they are (approval.Notifier declares them,
// so the wrapper cannot hide them).
func (m *Metrics) Notifier(next approval.Notifier) approval.Notifier {
	if m == nil {
		return next
	}
	if next == nil {
		next = approval.NopNotifier{}
	}
	return &notifier{m: m, next: next}
}

type notifier struct {
	m    *Metrics
	next approval.Notifier
}

func (n *notifier) Show(ctx context.Context, a *approval.Approval) ([]approval.CardRef, error) {
	n.m.requestedApproval(a)
	refs, err := n.next.Show(ctx, a)
	if err != nil {
		n.m.endedApproval(a, approval.StatusCancelled)
	}
	return refs, err
}

func (n *notifier) Settle(ctx context.Context, a *approval.Approval, o approval.Outcome) error {
	n.m.endedApproval(a, o.Status)
	return n.next.Settle(ctx, a, o)
}

// Progress forwards: a redraw is neither a request nor an end.
func (n *notifier) Progress(ctx context.Context, a *approval.Approval) error {
	return n.next.Progress(ctx, a)
}

// Escalate forwards: an escalation step adds cards to an approval already
// counted, neither a request nor an end.
func (n *notifier) Escalate(ctx context.Context, a *approval.Approval, step int) ([]approval.CardRef, error) {
	return n.next.Escalate(ctx, a, step)
}

// Remind forwards: a reminder is a message about an approval already
// counted, neither a request nor an end.
func (n *notifier) Remind(ctx context.Context, a *approval.Approval, k int) error {
	return n.next.Remind(ctx, a, k)
}

// Tool wraps a tool to time its runs (hitlbot_tool_duration_seconds{tool})
// and count its failures (hitlbot_tool_errors_total{tool,kind}). Wrapping
// the tool, not the engine's dispatcher, covers both paths: calls the
// policy lets run at once and calls run after an approval.
func (m *Metrics) Tool(t agent.Tool) agent.Tool {
	if m == nil {
		return t
	}
	if as, ok := t.(agent.Assessor); ok {
		// Keep the tool's blast radius visible to the policy.
		return &assessingTool{tool{Tool: t, m: m}, as}
	}
	return &tool{Tool: t, m: m}
}

// Tools wraps every tool.
func (m *Metrics) Tools(ts []agent.Tool) []agent.Tool {
	out := make([]agent.Tool, len(ts))
	for i, t := range ts {
		out[i] = m.Tool(t)
	}
	return out
}

type tool struct {
	agent.Tool
	m *Metrics
}

func (t *tool) Run(ctx context.Context, args json.RawMessage) (agent.Output, error) {
	start := time.Now()
	out, err := t.Tool.Run(ctx, args)
	t.m.toolRun(t.Tool.Name(), time.Since(start), out.IsError, err)
	return out, err
}

// Unwrap returns the wrapped tool.
func (t *tool) Unwrap() agent.Tool { return t.Tool }

// Check asks the wrapped tool when it is an agent.Checker; one that is not
// refuses nothing beyond its schema, as the registry assumes.
func (t *tool) Check(args json.RawMessage) error {
	if c, ok := t.Tool.(agent.Checker); ok {
		return c.Check(args)
	}
	return nil
}

// assessingTool is a wrapped tool that is an agent.Assessor.
type assessingTool struct {
	tool
	as agent.Assessor
}

func (t *assessingTool) Assess(ctx context.Context, args json.RawMessage) (approval.Blast, approval.Words) {
	return t.as.Assess(ctx, args)
}

// Model wraps a model to time its requests
// (hitlbot_model_request_duration_seconds{provider}) and count its errors
// (hitlbot_model_errors_total{provider}). A request cancelled by its
// caller (a shutdown) is timed but not counted as an error.
func (m *Metrics) Model(next agent.Model, provider string) agent.Model {
	if m == nil {
		return next
	}
	return &model{next: next, m: m, provider: provider}
}

type model struct {
	next     agent.Model
	m        *Metrics
	provider string
}

func (md *model) Complete(ctx context.Context, req agent.Request) (agent.Response, error) {
	start := time.Now()
	resp, err := md.next.Complete(ctx, req)
	md.m.modelSecs.WithLabelValues(md.provider).Observe(time.Since(start).Seconds())
	if err != nil && ctx.Err() == nil {
		md.m.modelErrors.WithLabelValues(md.provider).Inc()
	}
	return resp, err
}

// Interface guards.
var (
	_ approval.Notifier = (*notifier)(nil)
	_ agent.Tool        = (*tool)(nil)
	_ agent.Checker     = (*tool)(nil)
	_ agent.Assessor    = (*assessingTool)(nil)
	_ agent.Model       = (*model)(nil)
)
