package web

import (
	"context"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/words"
)

// A frozen approval (its effect unknown) is resolved on the web page as on
// a card: its agent.confirm_resolved frame carries the three choices
// (resolve), and user.response {resolution: done|retry|abandon, message}
// on the step decides through the router as a click does. The step stays
// resolved (frozen) until the resolution settles it again.

// resolvedOf is the agent.confirm_resolved frame of step id in session
// sid for the final view v.
func (w *Web) resolvedOf(sid, id string, v cards.View) resolvedFrame {
	f := resolvedFrame{Type: typeConfirmResolved, Event: typeConfirmResolved, SessionID: sid, StepID: id, Content: statusText(v),
		Status: v.Status, StatusText: statusText(v), DecidedBy: v.DecidedBy, Result: v.Result, Timestamp: w.now(), Resolution: v.Resolution}
	if len(v.Resolve) > 0 {
		l := words.Of(w.cfg.Lang)
		labels := map[approval.Resolution]words.Key{approval.ResolveDone: words.CardResolveDone, approval.ResolveRetry: words.CardResolveRetry,
			approval.ResolveAbandon: words.CardResolveAbandon}
		for _, b := range v.Resolve {
			f.Resolve = append(f.Resolve, resolveChoice{Resolution: b.Resolution, Label: words.Text(l, labels[b.Resolution])})
		}
		f.ResolveHow = words.Text(l, words.CardResolveHow)
	}
	return f
}

// settleStepLocked ends st with the final view v, once; a step that froze
// is settled again by its resolution (or by a retry that froze again).
func (w *Web) settleStepLocked(st *step, v cards.View) {
	if st.state == stepResolved && !(st.status == approval.StatusFrozen && v.Resolution != "") {
		return
	}
	st.state, st.status, st.resolvedAt = stepResolved, v.Status, w.clk.Now()
	w.deliverLocked(w.chatLocked(st.chatID, st.user, st.sessionID), mustJSON(w.resolvedOf(st.sessionID, st.id, v)))
}

// respondResolve answers a frozen step's resolve choice: the step moves to
// "deciding" (a second answer gets ALREADY_DECIDED), the resolution is
// decided in the background (a retry runs the tool), and the settle that
// follows sends the step's new state.
func (c *conn) respondResolve(f inFrame, rc responseContent) {
	w, sid := c.w, f.SessionID
	r, err := approval.ParseResolution(rc.Resolution)
	if err != nil {
		c.fail(CodeInvalidMessage, `user.response on a frozen step needs content {"resolution": "done"|"retry"|"abandon", "message": "…"}`, sid, f.StepID)
		return
	}
	w.mu.Lock()
	st := w.steps[f.StepID]
	switch {
	case st == nil || st.chatID != chatID(c.user, sid):
		w.mu.Unlock()
		c.fail(CodeInvalidStepID, w.words().invalidStep, sid, f.StepID)
		return
	case st.state != stepResolved || st.status != approval.StatusFrozen:
		w.mu.Unlock()
		c.fail(CodeAlreadyDecided, w.words().alreadyDecided, sid, st.id)
		return
	case w.closed:
		w.mu.Unlock()
		c.fail(CodeUnavailable, w.words().unavailable, sid, st.id)
		return
	}
	st.state = stepDeciding
	w.wg.Add(1)
	w.mu.Unlock()
	go func() {
		defer w.wg.Done()
		c.resolve(st, r, rc.Message)
	}()
}

func (c *conn) resolve(st *step, r approval.Resolution, note string) {
	w := c.w
	log := c.log().With("chat_id", st.chatID, "approval_id", st.approvalID, "msg_id", st.id)
	ctx, cancel := context.WithTimeout(w.ctx, handleTimeout)
	defer cancel()
	o, err := c.h.HandleCardAction(ctx, channels.CardAction{Channel: Name, ChatID: st.chatID, MessageID: st.id, UserID: c.user,
		ApprovalID: st.approvalID, Verb: approval.Resolve, Resolution: r, PayloadSHA256: st.hash, Comment: note})
	w.mu.Lock()
	defer w.mu.Unlock()
	refrozen := func() {
		if st.state == stepDeciding {
			st.state = stepResolved // still frozen: it can be resolved again
		}
	}
	if err != nil {
		log.Error("resolving a frozen step failed; nothing was run", "err", err)
		refrozen()
		c.fail(CodeUnavailable, approval.UserMessageIn(err, w.cfg.Lang), st.sessionID, st.id)
		return
	}
	log.Info("frozen step resolved", "status", o.Status, "resolution", string(r))
	switch {
	case o.Resolution != "":
		// Settle normally sent the step's new state already; this covers
		// a card reference that was not recorded in time.
		if st.state == stepDeciding {
			st.state, st.status, st.resolvedAt = stepResolved, o.Status, w.clk.Now()
			w.deliverLocked(w.chatLocked(st.chatID, st.user, st.sessionID), mustJSON(w.resolvedOf(st.sessionID, st.id,
				cards.ApplyOutcome(st.view, o, approval.DefaultOutcomeText(w.cfg.Lang), w.cfg.Lang))))
		}
	case o.Status == approval.StatusUnauthorized:
		refrozen()
		c.fail(CodeUnauthorized, o.Content, st.sessionID, st.id)
	default: // already_decided (someone else resolved it), tampered, missing
		refrozen()
		c.fail(CodeAlreadyDecided, w.words().alreadyDecided, st.sessionID, st.id)
	}
}
