package channels

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/internal/clip"
	"github.com/hitlbot/hitlbot/words"
)

// Commander is what the router needs of the engine to answer the approval
// commands in the chat (/pending, /cancel <code>, 确认 <code>, /grants,
// /revoke): *approval.Engine is one. A Decider that is not one leaves
// those texts to the agent.
type Commander interface {
	// ChatPending returns the approvals pending in a chat, oldest first.
	ChatPending(ctx context.Context, channel, chatID string) ([]*approval.Approval, error)
	// ChatCode returns an approval's short code in its chat.
	ChatCode(ctx context.Context, a *approval.Approval) (string, error)
	// Grants returns the session's live grants, oldest first.
	Grants(ctx context.Context, s approval.SessionKey) ([]approval.Grant, error)
	// Revoke removes the session's grants with those keys (all: none
	// given) and audits each removal.
	Revoke(ctx context.Context, s approval.SessionKey, actor approval.UserID, src approval.Source, keys ...string) (int, error)
	// Cancel withdraws a pending approval as actor.
	Cancel(ctx context.Context, id approval.ID, actor approval.UserID, src approval.Source, reason string) (approval.Outcome, error)
}

var _ Commander = (*approval.Engine)(nil)

// command answers an approval command of m (ParseCommand), and a bare
// 确认 / 取消 that would be ambiguous because several approvals wait in
// the chat, or that names the only approval the sender may decide there
// when their own session (pending: its pending approval) has none and
// that approval is another agent's (approval.SessionKey.OfAgent: package
// gate asks in the chat); another person's or another thread's approval
// is never decided by a bare 确认. It reports whether it answered;
// if not, the message goes on as before (a typed reply to the session's
// pending approval, or the agent).
func (r *Router) command(ctx context.Context, ch Channel, to Target, m Message, session approval.SessionKey, pending *approval.Approval,
	reply approval.Reply, reason string, log *slog.Logger) bool {
	cmdr, ok := r.decider.(Commander)
	if !ok {
		return false
	}
	c := ParseCommand(m.Text, r.replies)
	l := words.Of(r.cfg.Lang)
	say := func(text string) bool { r.answer(ctx, ch, to, log, answer{text: text, command: true}); return true }
	unavailable := func(err error) bool {
		log.Error("an approval command could not reach the store; nothing was changed", "err", err)
		return say(words.Text(l, words.CmdUnavailable))
	}
	switch c.Kind {
	case CmdHelp:
		return say(words.Text(l, words.CmdHelp))
	case CmdGrants:
		gs, err := r.grantsOf(ctx, cmdr, session, m)
		if err != nil {
			return unavailable(err)
		}
		return say(r.grantList(l, gs, readerOf(m)))
	case CmdRevoke:
		return r.revoke(ctx, cmdr, c.Arg, session, m, l, say, unavailable)
	case CmdAnswer:
		return r.answerCommand(ctx, cmdr, ch, to, m, c, l, say, unavailable, log)
	case CmdPending, CmdCancel, CmdDecide:
	case CmdNone:
		if reply == approval.ReplyNone || reason != "" {
			return false
		}
	}
	waiting, err := cmdr.ChatPending(ctx, m.Channel, m.ChatID)
	if err != nil {
		if c.Kind == CmdNone {
			// A bare 确认: decided as before, on the session's pending
			// approval (the ambiguity cannot be told).
			log.Warn("listing the chat's pending approvals failed", "err", err)
			return false
		}
		return unavailable(err)
	}
	now := r.cfg.Clock.Now()
	live := waiting[:0]
	for _, a := range waiting {
		if now.Before(a.ExpiresAt) {
			live = append(live, a)
		}
	}
	codes := approval.Codes(live)
	switch c.Kind {
	case CmdPending:
		return say(r.pendingList(l, live, codes, now, readerOf(m)))
	case CmdNone:
		// A bare 确认 / 取消: ambiguous when the sender may decide more
		// than one approval waiting in the chat; then the bot asks which.
		// With one, it goes on as before (the session's pending one), or,
		// when the sender's session has none pending and that one is
		// another agent's, decides it.
		verb := approval.Approve
		if reply == approval.ReplyCancel {
			verb = approval.Reject
		}
		var theirs []*approval.Approval
		for _, a := range live {
			if a.AllowsIn(m.UserID, verb, m.Channel, m.ChatID) {
				theirs = append(theirs, a)
			}
		}
		switch {
		case len(theirs) == 1 && pending == nil && (theirs[0].Session.OfAgent() || theirs[0].ApproveIn != nil) && r.replyFor(r.writtenAt(m), theirs[0]):
			// Nothing of the sender's own conversation waits, and the one
			// they may decide is another agent's, or was sent here from
			// another chat to be decided (approve_in): no conversation of
			// this chat is behind it: that one.
			r.decideTyped(ctx, r.decider, ch, to, m, theirs[0], reply, "", nil, log)
			return true
		case len(theirs) < 2:
			return false
		}
		return say(words.Text(l, words.CmdAmbiguous, r.pendingLines(l, theirs, codes, now, readerOf(m))))
	}
	if c.Arg == "" {
		return say(words.Text(l, words.CmdCancelUsage))
	}
	found := approval.ByCode(live, c.Arg)
	switch {
	case len(found) == 0 && c.Kind == CmdDecide && c.Reply == approval.ReplyCancel:
		// "取消 abcd" naming no approval: a cancel with a reason, as before.
		return false
	case len(found) == 0:
		return say(words.Text(l, words.CmdNoSuchCode, c.Arg))
	case len(found) > 1:
		return say(words.Text(l, words.CmdAmbiguous, r.pendingLines(l, found, codes, now, readerOf(m))))
	}
	a := found[0]
	if c.Kind == CmdDecide && !r.replyFor(r.writtenAt(m), a) {
		// Written before the approval existed (a delayed or replayed
		// message): not a decision for it.
		log.Info("a typed decision written before the approval was created is not a decision for it", "approval_id", a.ID)
		return say(words.Text(l, words.CmdNoSuchCode, c.Arg))
	}
	if c.Kind == CmdDecide {
		r.decideTyped(ctx, r.decider, ch, to, m, a, c.Reply, "", nil, log)
		return true
	}
	// /cancel <code>: its requester or someone who may approve it.
	if m.UserID != a.Requester && !a.AllowsIn(m.UserID, approval.Approve, m.Channel, m.ChatID) {
		log.Info("a /cancel by someone who may not withdraw the approval", "approval_id", a.ID)
		return say(words.Text(l, words.CmdCancelDenied, a.ApproversIn(r.cfg.Lang, m.Channel, m.ChatID)))
	}
	o, err := cmdr.Cancel(ctx, a.ID, m.UserID, sourceOf(m.Channel), "")
	if err != nil {
		return unavailable(err)
	}
	log.Info("approval withdrawn by a command", "approval_id", a.ID, "status", o.Status)
	if o.Status != approval.StatusCancelled {
		return say(r.text.Text(o.Status))
	}
	return say(words.Text(l, words.CmdCancelled, codes[a.ID]))
}

// revoke answers /revoke <n|all>: it revokes only grants the sender may
// revoke (approval.GrantMayRevoke: the grantee, or someone who may decide
// the approval that granted it); /revoke all by anyone else revokes
// nothing of theirs and says how many it left.
func (r *Router) revoke(ctx context.Context, cmdr Commander, arg string, session approval.SessionKey, m Message, l words.Lang,
	say func(string) bool, unavailable func(error) bool) bool {
	if arg == "" {
		return say(words.Text(l, words.CmdRevokeUsage))
	}
	n := 0
	if arg != "all" {
		var err error
		if n, err = strconv.Atoi(arg); err != nil || n < 1 {
			return say(words.Text(l, words.CmdRevokeUsage))
		}
	}
	gs, err := r.grantsOf(ctx, cmdr, session, m)
	if err != nil {
		return unavailable(err)
	}
	if n > len(gs) {
		return say(words.Text(l, words.CmdRevokeNoSuch, arg, len(gs)))
	}
	if n > 0 {
		gs = gs[n-1 : n]
	}
	// By session: the chat's own grants, and the standing rules allowed
	// in this chat (approval.RulesSession).
	keys := map[approval.SessionKey][]string{}
	var order []approval.SessionKey
	mayRevoke := 0
	for _, g := range gs {
		if approval.GrantMayRevoke(g.Grant, g.by, m.UserID, m.Channel, m.ChatID) {
			if keys[g.Session] == nil {
				order = append(order, g.Session)
			}
			keys[g.Session] = append(keys[g.Session], g.Key())
			mayRevoke++
		}
	}
	left := len(gs) - mayRevoke
	if n > 0 && left > 0 {
		return say(words.Text(l, words.CmdRevokeDenied, arg))
	}
	got := 0
	for _, s := range order { // never none: Revoke with no key revokes every grant
		k, err := cmdr.Revoke(ctx, s, m.UserID, sourceOf(m.Channel), keys[s]...)
		if err != nil {
			return unavailable(err)
		}
		got += k
	}
	text := words.Text(l, words.CmdRevoked, got)
	if left > 0 {
		text += "\n" + words.Text(l, words.CmdRevokeLeft, left)
	}
	return say(text)
}

// grant is a live grant with the approval that granted it (nil when its
// record could not be read: the checks then fail closed).
type grant struct {
	approval.Grant
	by *approval.Approval
}

// grantsOf returns the session's live grants, oldest first, then the
// standing rules allowed in m's chat for other agents
// (approval.RulesSession), oldest first (the numbers /grants and /revoke
// use), each with the approval that granted it. A record that is gone or
// cannot be read leaves that grant's approval nil (logged), not the
// command unanswered.
func (r *Router) grantsOf(ctx context.Context, cmdr Commander, session approval.SessionKey, m Message) ([]grant, error) {
	gs, err := cmdr.Grants(ctx, session)
	if err != nil {
		return nil, err
	}
	if rules := approval.RulesSession(m.Channel, m.ChatID); rules != session {
		rs, err := cmdr.Grants(ctx, rules)
		if err != nil {
			return nil, err
		}
		gs = append(gs, rs...)
	}
	out := make([]grant, len(gs))
	for i, g := range gs {
		out[i].Grant = g
		a, err := r.decider.Get(ctx, g.ApprovalID)
		if err != nil {
			if approval.KindOf(err) != errkind.NotFound {
				r.log.Warn("reading the approval of a grant failed; the grant is shown to its grantee only", "approval_id", g.ApprovalID, "err", err)
			}
			continue
		}
		out[i].by = a
	}
	return out, nil
}

// grantList words /grants for reader (readerOf the message): numbered,
// oldest first (the numbers /revoke takes), each with its tool, a short
// summary of its payload, who approved it and how long it has left; a
// grant whose approval reader may not see (approval.GrantMaySee: a
// private one, in a group, where the whole chat reads the answer) by one
// line that names its grantee only.
func (r *Router) grantList(l words.Lang, gs []grant, reader approval.UserID) string {
	if len(gs) == 0 {
		return words.Text(l, words.CmdGrantsNone)
	}
	now := r.cfg.Clock.Now()
	lines := []string{words.Text(l, words.CmdGrantsHead)}
	for i, g := range gs {
		left := remaining(g.ExpiresAt.Sub(now))
		if !approval.GrantMaySee(g.Grant, g.by, reader) {
			who := string(g.User)
			if g.by != nil {
				who = requesterName(g.by)
			}
			lines = append(lines, words.Text(l, words.CmdGrantLinePrivate, i+1, who, g.ApprovedBy, left))
			continue
		}
		if g.StandingRule() {
			lines = append(lines, words.Text(l, words.CmdGrantLineRule, i+1, g.Summary, g.Agent, g.ApprovedBy, left))
			continue
		}
		summary := g.Summary
		if summary == "" {
			summary = clip.Runes(g.PayloadSHA256, 12)
		}
		lines = append(lines, words.Text(l, words.CmdGrantLine, i+1, g.Tool, summary, g.ApprovedBy, left))
	}
	return strings.Join(lines, "\n")
}

// pendingList words /pending for reader (readerOf the message).
func (r *Router) pendingList(l words.Lang, as []*approval.Approval, codes map[approval.ID]string, now time.Time, reader approval.UserID) string {
	if len(as) == 0 {
		return words.Text(l, words.CmdPendingNone)
	}
	head := words.CmdPendingHead
	if slices.ContainsFunc(as, (*approval.Approval).IsQuestion) {
		head = words.CmdPendingHeadQuestion // 确认 answers no question
	}
	return words.Text(l, head) + "\n" + r.pendingLines(l, as, codes, now, reader)
}

// pendingLines lists approvals one a line for reader: code (as codes,
// computed over every approval waiting in the chat, gives it), summary,
// requester, time left; an approval reader may not see by its redacted
// line.
func (r *Router) pendingLines(l words.Lang, as []*approval.Approval, codes map[approval.ID]string, now time.Time, reader approval.UserID) string {
	lines := make([]string, len(as))
	for i, a := range as {
		if line, ok := r.pres.pendingLineOf(l, a, codes[a.ID], reader); ok {
			lines[i] = line // a private approval: its redacted line (privacy.go)
			continue
		}
		summary := clip.Runes(clip.FirstLine(a.Summary), 80)
		if summary == "" {
			summary = a.Tool()
		}
		lines[i] = words.Text(l, words.CmdPendingLine, codes[a.ID], summary, a.Requester, remaining(a.ExpiresAt.Sub(now)))
	}
	return strings.Join(lines, "\n")
}

// remaining writes a time left to the second, without trailing zero units
// (4m30s, 5m, 45s).
func remaining(d time.Duration) string {
	d = max(d.Round(time.Second), 0)
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
