package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

// Suspension is a turn that stopped at an approval: what its resumption
// needs besides the history (which holds the assistant's tool calls and a
// pending reply for each). It is bounded: a few ids per call.
type Suspension struct {
	// Approval is the approval the turn waits for.
	Approval approval.ID `json:"approval_id"`
	// Origin is where the turn came from; its resumption speaks there.
	Origin Origin `json:"origin"`
	// Calls are the tool calls the approval covers, in order.
	Calls []SuspendedCall `json:"calls"`
	// Until is when the suspension is dropped unresumed: the approval's
	// expiry plus LoopConfig.Retention.
	Until time.Time `json:"until"`
}

// Origin is where a turn came from.
type Origin struct {
	Channel  string          `json:"channel"`
	ChatID   string          `json:"chat_id"`
	ThreadID string          `json:"thread_id,omitempty"`
	User     approval.UserID `json:"user"`
	// UserName is the sender's name as the platform gave it, so that an
	// approval a resumed turn asks for names them as the first did.
	UserName  string `json:"user_name,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	// Group reports a group chat (Inbound.Group).
	Group bool `json:"group,omitempty"`
}

// SuspendedCall is one tool call of a suspended turn.
type SuspendedCall struct {
	ID   string `json:"id"`
	Tool string `json:"tool"`
	Hash string `json:"hash"`
}

// maxSuspended caps Conversation.Suspended. Every new approval of a
// session supersedes its pending one, so at most one of them is open and
// the others are written into the history at the next chance; the cap only
// bounds a store that stays unreachable.
const maxSuspended = 16

// suspension describes ts, waiting for approval id (expiring at expires)
// over batch.
func (l *Loop) suspension(ts *turnState, id approval.ID, expires time.Time, batch []*prepared) Suspension {
	s := Suspension{Approval: id, Until: expires.Add(l.cfg.Retention),
		Origin: Origin{Channel: ts.in.Channel, ChatID: ts.in.ChatID, ThreadID: ts.in.ThreadID, User: ts.in.User, UserName: ts.in.UserName, MessageID: ts.in.MessageID,
			Group: ts.in.Group}}
	for _, p := range batch {
		s.Calls = append(s.Calls, SuspendedCall{ID: p.call.ID, Tool: p.call.Name, Hash: p.hash})
	}
	return s
}

// withoutSuspension returns ss without the suspension of id.
func withoutSuspension(ss []Suspension, id approval.ID) []Suspension {
	return slices.DeleteFunc(slices.Clone(ss), func(s Suspension) bool { return s.Approval == id })
}

// inbound is the Inbound of the resumption of s.
func (s Suspension) inbound(session approval.SessionKey) Inbound {
	o := s.Origin
	return Inbound{Session: session, Channel: o.Channel, ChatID: o.ChatID, ThreadID: o.ThreadID, User: o.User, UserName: o.UserName,
		MessageID: o.MessageID, Resumed: s.Approval, Group: o.Group}
}

// resume continues the suspended turn of approval in.Resumed with its
// outcome o: under the session's lock and a worker, it loads the history
// and claims the continuation (Engine.ClaimResume: the one arbiter between
// this resumption, the same outcome's resumptions on other replicas and
// the turn that waited for it, which claims too); a claim taken already
// means another went on, and nothing is done. Having won, it writes the
// outcome into the history as the replies of the pending calls, says the results of the calls that
// ran, and lets the model go on: its answer reaches the chat the turn came
// from (to is its Inbound). ran reports whether anything was said (a
// turn_ended event follows). A turn the history no longer holds is told
// in one sentence (resumeGone). A superseded approval's turn is not
// continued: a newer turn replaced it, and the outcome is only written
// into the history.
func (l *Loop) resume(in Inbound, a *approval.Approval, o approval.Outcome) (to Inbound, res TurnResult, ran bool) {
	id := in.Resumed
	log := LogWith(l.log, slog.String("channel", in.Channel), slog.String("chat_id", in.ChatID), slog.Any("approval_id", id), slog.Any("status", o.Status))
	unlock, err := l.lockSession(in.Session)
	if err != nil {
		if l.ctx.Err() == nil {
			log.Warn("taking the conversation's lock to resume a turn failed; its next turn records the outcome", "err", err)
		}
		return in, res, false
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(l.ctx, l.cfg.TurnTimeout)
	defer cancel()
	// The claim first, before any other work: a resumption that loses it
	// (the turn that waited went on, or another replica's resumption)
	// costs one round trip. A resolution of a frozen outcome has its own
	// claim (resumeResolution), or this one when its turn is still
	// suspended, once the history says which.
	claimed := o.Resolution == ""
	if claimed {
		if won, _ := l.claim(ctx, id, log); !won {
			return in, res, false
		}
	}
	// Won, but unable to go on: the claim is given back, so that the
	// session's next turn resumes the turn (resolveEnded).
	giveBack := func() {
		if claimed {
			l.unclaim(id, log)
		}
	}
	if err := l.acquire(ctx); err != nil {
		giveBack()
		return in, res, false
	}
	conv, err := l.cfg.History.Load(ctx, in.Session)
	if err != nil {
		l.release()
		giveBack()
		log.Error("loading history to resume a turn failed; the outcome stays in the approval's record", "err", err)
		return in, res, false
	}
	i := slices.IndexFunc(conv.Suspended, func(s Suspension) bool { return s.Approval == id })
	if i < 0 && o.Resolution != "" {
		// A resolution of a frozen outcome the turn already took.
		return l.resumeResolution(ctx, in, conv, a, o, log)
	}
	if !claimed {
		if won, _ := l.claim(ctx, id, log); !won {
			l.release()
			return in, res, false
		}
	}
	if i < 0 {
		l.release()
		res, ran := l.resumeGone(ctx, in, o, log)
		return in, res, ran
	}
	s := conv.Suspended[i]
	ts := l.newTurn(s.inbound(in.Session), log)
	defer ts.releaseWith(l)
	ts.conv = conv
	// A private turn goes on private: its resumption reads its own
	// messages, and marks what it writes (privacy.go).
	p := privateAt(ts.conv, s.callIDs(), a)
	from := len(ts.conv.Messages)
	calls := s.continued(a)
	l.continueWith(ctx, ts, id, calls, o, func(cos []callOutcome) {
		l.settleSuspension(&ts.conv, s, a, o, cos)
		ts.goPrivate(p, min(from, len(ts.conv.Messages)))
		for j, co := range cos {
			c := calls[j]
			ts.result.Actions = append(ts.result.Actions, Action{Tool: c.tool, Input: c.args, Result: co.reply, Status: co.status, IsError: co.isError})
		}
	})
	if o.Status == approval.StatusSuperseded {
		l.end(ctx, ts)
		return ts.in, ts.result, false // a newer turn replaced it: nothing to say
	}
	log.Info("resuming the turn that asked for the approval")
	l.rounds(ctx, ts)
	l.end(ctx, ts)
	return ts.in, ts.result, true
}

// resumeGone handles a claimed resumption whose turn is not in the
// history: the history lost it (expired, trimmed, never saved). The chat
// is told so in one sentence (once: the resumption was claimed), except
// for a superseded approval, whose newer turn has said enough.
func (l *Loop) resumeGone(ctx context.Context, in Inbound, o approval.Outcome, log *slog.Logger) (TurnResult, bool) {
	if o.Status == approval.StatusSuperseded {
		return TurnResult{}, false
	}
	log.Warn("the approval ended but the turn that asked for it is no longer in the history; the chat is told")
	text := fmt.Sprintf(l.words.resumeGone, o.Status)
	l.say(ctx, in, Say{Kind: SayNotice, Text: text})
	return TurnResult{Text: text}, true
}

// claim claims the continuation of the turn that asked for approval id
// with its outcome (Engine.ClaimResume): the one way an outcome enters a
// turn, taken by the turn that waited for it (approve) and by every
// resumption of it (resume, and resolveEnded for a superseded one), each
// under the session's lock. It reports whether the caller won and goes on
// (continueWith); a store that cannot be reached is an error (logged): the
// turn stays suspended in the history, and its session's next turn queues
// its resumption again (resolveEnded).
func (l *Loop) claim(ctx context.Context, id approval.ID, log *slog.Logger) (bool, error) {
	won, err := l.cfg.Engine.ClaimResume(ctx, id)
	if err != nil {
		log.Warn("claiming the continuation of the turn failed; the turn stays suspended and its next turn resumes it", "approval_id", id, "err", err)
		return false, err
	}
	return won, nil
}

// continued is one call of a turn that its approval's outcome continues.
type continued struct {
	tool, id, hash string
	args           json.RawMessage
}

// continueWith continues turn ts with the outcome o of approval id over
// its calls: the one way an outcome enters a turn, run by whoever won the
// claim (Loop.claim): the turn that waited for it (approve) or a
// resumption of it (resume). It takes the turn's suspension at id out of
// its history and has place write what became of each call where the turn
// keeps the calls' replies (the waiting turn: its round's calls; a
// resumption: the history it loaded, settleSuspension, and the turn's
// privacy), then marks the calls that were declined (not proposed again
// in this turn) and says the results of those that ran. The caller lets
// the model go on.
func (l *Loop) continueWith(ctx context.Context, ts *turnState, id approval.ID, calls []continued, o approval.Outcome, place func([]callOutcome)) {
	ts.conv.Suspended = withoutSuspension(ts.conv.Suspended, id)
	cos := callOutcomes(o, approvalCalls(calls))
	place(cos)
	for i, co := range cos {
		c := calls[i]
		if o.Status == approval.StatusRejected || co.status == approval.StatusRejected {
			// (a call a per-call decision declined, too)
			ts.declined[c.tool+"\x00"+c.hash] = true
		}
		if co.ran {
			l.sayTurn(ctx, ts, Say{Kind: SayToolResult, Tool: c.tool, Args: c.args, Text: co.reply, IsError: co.isError})
		}
	}
}

// approvalCalls are calls as callOutcomes reads them.
func approvalCalls(calls []continued) []approval.Call {
	out := make([]approval.Call, len(calls))
	for i, c := range calls {
		out[i] = approval.Call{Tool: c.tool, CallID: c.id}
	}
	return out
}

// unclaim gives back a claim won by a resumption that could not go on
// (Engine.UnclaimResume); a failure is logged: the turn then stays
// suspended, its outcome in the approval's record.
func (l *Loop) unclaim(id approval.ID, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(l.ctx), 10*time.Second)
	defer cancel()
	if err := l.cfg.Engine.UnclaimResume(ctx, id); err != nil {
		log.Warn("giving back the claim of a resumption that could not go on failed", "approval_id", id, "err", err)
	}
}

// argsOf returns the arguments of call id of approval a (nil when a has
// no such call).
func argsOf(a *approval.Approval, id string) []byte {
	for _, c := range a.Calls {
		if c.CallID == id {
			return c.Args
		}
	}
	return nil
}

// settleSuspension writes the outcome o of s's approval (record a, when at
// hand) into conv: cos, what became of each of its calls (callOutcomes).
// The pending replies of the calls become their real replies (what the
// model is told). When they end the history (the turn stopped and nothing came
// after but the loop's own "still waiting" note, which goes), the model
// reads them as the replies to its calls, as if the wait had not ended;
// otherwise an update after the newer messages says the replies above
// changed, or, when the history no longer holds them, what became of each
// call.
func (l *Loop) settleSuspension(conv *Conversation, s Suspension, a *approval.Approval, o approval.Outcome, cos []callOutcome) {
	// The update on a private turn's approval is that turn's, whichever
	// turn writes it (privacy.go).
	private := privateAt(*conv, s.callIDs(), a)
	msgs := conv.Messages
	if n := len(msgs); n > 0 && msgs[n-1].Role == RoleAssistant && msgs[n-1].Status == approval.StatusPending {
		msgs = msgs[:n-1]
	}
	pos := map[string]int{}
	for i, c := range s.Calls {
		pos[c.ID] = i
	}
	var at []int // indexes of the pending replies in msgs
	for i, m := range msgs {
		if _, ok := pos[m.ToolCallID]; ok && m.Role == RoleTool && m.Status == approval.StatusPending {
			at = append(at, i)
		}
	}
	// The pending replies end the history when nothing but the replies of
	// their round's other calls follows them.
	tail := len(at) > 0 && len(at) == len(s.Calls) && !slices.ContainsFunc(msgs[at[0]:], func(m Message) bool { return m.Role != RoleTool })
	if tail {
		conv.Messages = msgs
	}
	for _, i := range at {
		co := cos[pos[msgs[i].ToolCallID]]
		conv.Messages[i].Content, conv.Messages[i].Status = co.reply, co.status
	}
	switch {
	case tail:
	case len(at) > 0:
		conv.Messages = append(conv.Messages, Message{Role: RoleSystem, Content: fmt.Sprintf(
			"Update on the earlier approval %s: it ended (%s), and the replies of its tool calls above now say what became of them.", s.Approval, o.Status),
			Private: private})
	default:
		conv.Messages = append(conv.Messages, Message{Role: RoleSystem, Content: describeEnded(s.Approval, a, o), Private: private})
	}
}

// continued are s's calls, their arguments those of record a.
func (s Suspension) continued(a *approval.Approval) []continued {
	out := make([]continued, len(s.Calls))
	for i, c := range s.Calls {
		out[i] = continued{tool: c.Tool, id: c.ID, hash: c.Hash, args: argsOf(a, c.ID)}
	}
	return out
}

// callIDs are the ids of s's calls.
func (s Suspension) callIDs() []string {
	ids := make([]string, len(s.Calls))
	for i, c := range s.Calls {
		ids[i] = c.ID
	}
	return ids
}

// resolveEnded deals with the suspended turns of conv (the conversation
// of session) whose approvals have ended (or whose records are gone),
// when no resumption did: the resumption was lost with its replica, or
// comes while this turn holds the session (queued behind this turn, here
// or on another replica). A superseded approval's outcome is written in here (claimed
// like a resumption, so once): its turn is not continued. Any other stays
// suspended, and its resumption is queued behind this turn: the turn that
// asked goes on and answers its requester (claimed under the lock, so it
// goes on once whoever else queued it). Writing such an outcome in here
// would take it from that resumption, and the requester would never be
// told. A suspension whose approval is still open stays; one past its
// Until is dropped with a note that its outcome is unknown.
func (l *Loop) resolveEnded(ctx context.Context, session approval.SessionKey, conv *Conversation, log *slog.Logger) {
	if len(conv.Suspended) == 0 {
		return
	}
	now := l.cfg.Clock.Now()
	var keep []Suspension
	for _, s := range conv.Suspended {
		a, err := l.cfg.Engine.Get(ctx, s.Approval)
		gone := err != nil && approval.KindOf(err) == errkind.NotFound || err == nil && a.State.Terminal() && a.Outcome == nil
		switch {
		case err == nil && a.State.Terminal() && a.Outcome != nil && a.Outcome.Status != approval.StatusSuperseded:
			keep = append(keep, s)
			if err := l.enqueue(job{in: s.inbound(session), resume: &ended{a: a, o: *a.Outcome}}, l.cfg.QueueSize+maxSuspended); err != nil && !errors.Is(err, ErrClosed) {
				log.Warn("too much queued in the conversation; the ended approval's turn resumes at a later turn", "approval_id", s.Approval, "err", err)
			}
			continue
		case err == nil && a.State.Terminal() && a.Outcome != nil:
		case gone || now.After(s.Until):
			conv.Messages = append(conv.Messages, Message{Role: RoleSystem, Content: fmt.Sprintf(
				"Update on the earlier approval %s: its record is no longer kept, so its outcome is unknown; do not assume its calls ran.", s.Approval)})
			continue
		default:
			keep = append(keep, s) // still open, or the store is unreachable
			continue
		}
		won, err := l.claim(ctx, s.Approval, log)
		if err != nil {
			keep = append(keep, s)
			continue
		}
		if won {
			l.settleSuspension(conv, s, a, *a.Outcome, callOutcomes(*a.Outcome, approvalCalls(s.continued(a))))
		}
	}
	conv.Suspended = keep
}
