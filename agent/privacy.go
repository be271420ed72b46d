package agent

import (
	"context"
	"slices"

	"github.com/hitlbot/hitlbot/approval"
)

// Privacy in groups, in the history. A turn that meets a private approval
// (approval.Approval.Private: it asks for one, or a call runs under a
// grant one gave) is a private turn from that round on: the router says
// what it says to its requester only, and the loop marks every message it
// writes to the history from that round on (Message.Private): the
// assistant's calls, their replies, updates on them, the answer. The
// history stays one, so a suspended private turn is found and resumed as
// any other; but only that turn (and its resumptions and resolutions)
// sends those messages to the model. Every other turn of the
// conversation, another person's or a later one of the requester's (its
// answer is said in the group), reads one line in their place: that a
// private action took place, not what it did or returned.

// Private marks a message of a private turn.
type Private struct {
	// Turn names the private turn: the first private approval it met,
	// or a name of its own when a grant made it private.
	Turn string `json:"turn"`
	// By is who asked, as the chat names them (for the line other turns
	// read).
	By string `json:"by,omitempty"`
}

// privateNote is the line a turn that is not p's reads in place of p's
// messages: that a private action took place, nothing of what it did.
func privateNote(p *Private) Message {
	who := p.By
	if who == "" {
		who = "a user"
	}
	return Message{Role: RoleSystem, Content: "A private action requested by " + who + " took place here. What it did and returned " +
		"was shown only to the people allowed to see it and is not given to you. Do not guess or reveal its details; " +
		"if asked about it, say that it was private and that " + who + " has the answer."}
}

// forModel returns msgs as a turn may send them to the model: the
// messages of the private turn own (nil: the turn is not private) as
// they are, every other private turn's run of messages as one
// privateNote. msgs is not changed.
func forModel(msgs []Message, own *Private) []Message {
	if !slices.ContainsFunc(msgs, func(m Message) bool { return m.Private != nil }) {
		return msgs
	}
	out := make([]Message, 0, len(msgs))
	for i, m := range msgs {
		switch {
		case m.Private == nil, own != nil && m.Private.Turn == own.Turn:
			out = append(out, m)
		case i > 0 && msgs[i-1].Private != nil && msgs[i-1].Private.Turn == m.Private.Turn:
			// The run's line is there already.
		default:
			out = append(out, privateNote(m.Private))
		}
	}
	return out
}

// goPrivate makes ts a private turn from message from on (the assistant
// message of the round that met the private approval), marked p; a turn
// already private stays as it is. It is where a turn's privacy is
// decided, for the live turn (it asks for a private approval, or a call
// runs under a grant one gave) and for every resumption and resolution
// (the mark on its calls' replies in the history: privateAt); and once
// decided, it holds to the turn's end.
func (ts *turnState) goPrivate(p *Private, from int) {
	if ts.private.Load() != nil || p == nil {
		return
	}
	ts.privateFrom = max(from, 0)
	ts.private.Store(p)
	ts.markPrivate()
}

// markPrivate marks the messages a private turn wrote from its private
// round on (called before the history is sent to the model or saved).
func (ts *turnState) markPrivate() {
	p := ts.private.Load()
	if p == nil {
		return
	}
	for i := ts.privateFrom; i < len(ts.conv.Messages); i++ {
		if ts.conv.Messages[i].Private == nil {
			ts.conv.Messages[i].Private = p
		}
	}
}

// sayTurn says s for the turn ts, with the turn's privacy (Say.Private):
// everything a turn says goes through here, so what a private turn says
// is said to its requester alone whatever approval is at hand, on the
// replica that waited as on any that resumes it.
func (l *Loop) sayTurn(ctx context.Context, ts *turnState, s Say) {
	s.Private = ts.private.Load()
	l.say(ctx, ts.in, s)
}

// requesterName is how the history names the sender of in.
func requesterName(in Inbound) string {
	if in.UserName != "" {
		return in.UserName
	}
	return string(in.User)
}

// privateAt returns the mark of the private turn that asked for a, whose
// calls are ids: the mark on a reply of one of them in conv, or, when the
// history holds none but a is private, a new mark for a. Nil: not
// private.
func privateAt(conv Conversation, ids []string, a *approval.Approval) *Private {
	for _, m := range conv.Messages {
		if m.Private != nil && m.Role == RoleTool && slices.Contains(ids, m.ToolCallID) {
			return m.Private
		}
	}
	if a.Private() {
		by := a.RequesterName
		if by == "" {
			by = string(a.Requester)
		}
		return &Private{Turn: string(a.ID), By: by}
	}
	return nil
}

// grantPrivate returns the mark that makes a turn private because a
// call of it ran under g, when the approval that gave g is private, or
// cannot be read (fail closed); nil otherwise.
func (l *Loop) grantPrivate(ctx context.Context, ts *turnState, g *approval.Grant) *Private {
	if g == nil || !ts.in.Group {
		return nil
	}
	a, err := l.cfg.Engine.Get(ctx, g.ApprovalID)
	if err == nil && !a.Private() {
		return nil
	}
	if err != nil {
		ts.log.Warn("reading the approval of a grant failed; the turn is kept out of the others' history", "approval_id", g.ApprovalID, "err", err)
	}
	return &Private{Turn: "grant:" + ts.id, By: requesterName(ts.in)}
}

// roundPrivacy decides, before any call of the round runs or anything of
// it is said, whether the round makes ts private: a call that runs at
// once (direct) under a grant of a private approval (grantPrivate), or
// the approval id of verdict v the round's other calls will ask for
// ("" when none) being private. The history marks the whole round, so
// the whole round is said as private: a call that runs in the open
// before a private one of the same round is said to the requester too.
func (l *Loop) roundPrivacy(ctx context.Context, ts *turnState, direct []*prepared, id approval.ID, v approval.Verdict) {
	for _, p := range direct {
		ts.goPrivate(l.grantPrivate(ctx, ts, p.verdict.Grant), ts.roundAt)
	}
	if id != "" && (&approval.Approval{Privacy: v.Privacy, Group: ts.in.Group, Approvers: v.Approvers}).Private() {
		// Engine.Request copies these into the approval.
		ts.goPrivate(&Private{Turn: string(id), By: requesterName(ts.in)}, ts.roundAt)
	}
}
