package agent

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/hitlbot/hitlbot/approval"
)

// A frozen approval (its effect unknown) is resolved by a person after its
// outcome was already handed to the turn that asked (the model was told
// the result is unknown). The resolution's outcome (Outcome.Resolution
// set: done, retry, abandon) reaches Loop.Resume like any outcome; it
// continues the conversation once more, in the chat the approval came
// from: the model is told what the person decided (and, for a retry, what
// the run gave), and answers.

// resumeResolution continues the conversation of a's session with the
// outcome o of a resolution, when the history no longer holds the turn
// suspended (it took the frozen outcome): claimed once per resolution
// (Engine.ClaimResolutionResume) across replicas, the replies of a's
// calls in the history are brought up to date, an update says what
// became of them, and the model goes on. The caller holds the session's
// lock and a worker and has loaded conv.
func (l *Loop) resumeResolution(ctx context.Context, in Inbound, conv Conversation, a *approval.Approval, o approval.Outcome, log *slog.Logger) (Inbound, TurnResult, bool) {
	won, err := l.cfg.Engine.ClaimResolutionResume(ctx, a)
	if err != nil || !won {
		l.release()
		if err != nil {
			log.Warn("claiming the resolution's resumption failed; the chat is not told", "err", err)
		}
		return in, TurnResult{}, false
	}
	ts := l.newTurn(in, log)
	defer ts.releaseWith(l)
	ts.conv = conv
	calls := make([]approval.Call, len(a.Calls))
	for i, c := range a.Calls {
		calls[i] = approval.Call{Tool: c.Tool, CallID: c.CallID}
	}
	ids := make([]string, len(a.Calls))
	for i, c := range a.Calls {
		ids[i] = c.CallID
	}
	// A private turn's approval: its conversation goes on private, from
	// the update on (what it says, the retry's results first).
	ts.goPrivate(privateAt(ts.conv, ids, a), len(ts.conv.Messages))
	cos := callOutcomes(o, calls)
	for i, co := range cos {
		c := a.Calls[i]
		// The reply the model read (frozen) now says what became of the call.
		for j := range ts.conv.Messages {
			if m := &ts.conv.Messages[j]; m.Role == RoleTool && c.CallID != "" && m.ToolCallID == c.CallID {
				m.Content, m.Status = co.reply, co.status
			}
		}
		ts.result.Actions = append(ts.result.Actions, Action{Tool: c.Tool, Input: c.Args, Result: co.reply, Status: co.status, IsError: co.isError})
		if co.ran {
			l.sayTurn(ctx, ts, Say{Kind: SayToolResult, Tool: c.Tool, Args: c.Args, Text: co.reply, IsError: co.isError})
		}
	}
	ts.conv.Messages = append(ts.conv.Messages, Message{Role: RoleSystem, Content: resolutionUpdate(a, o, calls, cos)})
	log.Info("continuing the conversation with a frozen approval's resolution", "resolution", string(o.Resolution))
	l.rounds(ctx, ts)
	l.end(ctx, ts)
	return ts.in, ts.result, true
}

// resolutionUpdate tells the model how a person resolved the frozen
// approval a, and what became of each call.
func resolutionUpdate(a *approval.Approval, o approval.Outcome, calls []approval.Call, cos []callOutcome) string {
	who := string(o.DecidedBy)
	if who == "" {
		who = "an approver"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Update on the earlier approval %s, whose result was unknown (frozen): %s resolved it", a.ID, who)
	switch o.Resolution {
	case approval.ResolveDone:
		b.WriteString(" as done: it took effect, as checked by hand.")
	case approval.ResolveAbandon:
		b.WriteString(" as abandoned: take it as not done.")
	case approval.ResolveRetry:
		fmt.Fprintf(&b, " by running it once more; the retry ended %s.", o.Status)
	}
	if o.Comment != "" {
		fmt.Fprintf(&b, " Their note: %s.", strings.TrimRight(o.Comment, ".。"))
	}
	b.WriteString(" The tool replies above say so now. Tell the user what this means for their request.")
	for i, co := range cos {
		fmt.Fprintf(&b, "\n- %s", calls[i].Tool)
		if calls[i].CallID != "" {
			fmt.Fprintf(&b, " (call %s)", calls[i].CallID)
		}
		fmt.Fprintf(&b, ", %s: %s", co.status, co.reply)
	}
	return b.String()
}

// resolvedReply tells the model what became of one call of a frozen
// approval a person resolved as done or abandoned (a retry's calls are
// replied to from its run's results).
func resolvedReply(o approval.Outcome) callOutcome {
	who := string(o.DecidedBy)
	if who == "" {
		who = "an approver"
	}
	note := ""
	if o.Comment != "" {
		note = " (" + strings.TrimRight(o.Comment, ".。") + ")"
	}
	if o.Resolution == approval.ResolveDone {
		return callOutcome{status: approval.StatusExecuted,
			reply: "Done: its result had been unknown; " + who + " checked by hand and recorded that it took effect" + note + "."}
	}
	return callOutcome{status: approval.StatusFailed, isError: true,
		reply: "Not done: its result had been unknown; " + who + " abandoned it" + note + ". Take it as not done; do not retry it on your own, ask the user."}
}
