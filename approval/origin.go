package approval

import (
	"context"
	"strings"
)

// Origin is who a tool call runs for and where: the turn's conversation,
// its chat and the person whose message led to the call, with the
// approver rule of the call's verdict. The agent loop puts it in the
// context of a call it runs at once, the engine in that of an approved
// call it runs (from the approval's record); a tool that needs a person
// while it runs (an MCP server's elicitation, Engine.Elicit) asks there.
type Origin struct {
	// Session, Channel and ChatID locate the conversation.
	Session SessionKey
	Channel string
	ChatID  string
	// Requester is the person the call runs for; RequesterName their
	// name as the platform gave it.
	Requester     UserID
	RequesterName string
	// Group reports a group chat.
	Group bool
	// Turn is the id of the turn the call runs in (the message id it
	// started from), which the approvals a turn asks for carry in front
	// of their idempotency key ("<turn>/…"): a question asked while the
	// call runs does too, so a channel that waits for the turn (the HTTP
	// API) finds its card. Empty when unknown.
	Turn string
	// Approvers is the approver rule of the call's verdict (the tool's
	// policy, or the chat's).
	Approvers ApproverRule
	// ApproveIn is the approvers' chat, when the verdict names one.
	ApproveIn *Place
	// Risk is the call's risk.
	Risk Risk
	// Privacy is who sees the call's approval in a group chat: a
	// question asked for the call is as private.
	Privacy Privacy
}

// originKey is the context key of an Origin.
type originKey struct{}

// WithOrigin is ctx carrying o.
func WithOrigin(ctx context.Context, o Origin) context.Context {
	return context.WithValue(ctx, originKey{}, o)
}

// OriginOf is the Origin ctx carries; false when none (no turn behind the
// call).
func OriginOf(ctx context.Context) (Origin, bool) {
	o, ok := ctx.Value(originKey{}).(Origin)
	return o, ok && o.Session != ""
}

// origin is the Origin of a's calls.
func (a *Approval) origin() Origin {
	o := Origin{Session: a.Session, Channel: a.Channel, ChatID: a.ChatID, Requester: a.Requester, RequesterName: a.RequesterName,
		Group: a.Group, Approvers: a.Approvers, Risk: a.Risk, Privacy: a.Privacy}
	if i := strings.IndexByte(a.IdempotencyKey, '/'); i > 0 {
		o.Turn = a.IdempotencyKey[:i]
	}
	if a.ApproveIn != nil {
		in := *a.ApproveIn
		o.ApproveIn = &in
	}
	return o
}
