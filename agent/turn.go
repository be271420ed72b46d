package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/clip"
	catalogue "github.com/hitlbot/hitlbot/words"
)

// turnState is the working state of one turn.
type turnState struct {
	in       Inbound
	log      *slog.Logger
	conv     Conversation
	result   TurnResult
	declined map[string]bool // tool + "\x00" + payload hash the user declined in this turn
	id       string
	waiting  chan bool // tells the slow-notice watcher when an approval wait starts/ends
	// held reports that the turn holds a worker (it gives it up while it
	// waits for an approval, and may fail to get it back at shutdown).
	held bool
	// yielded is the approval whose outcome this turn waited for and
	// another took (it lost the claim, Loop.claim): the turn stands down,
	// saves nothing and says nothing more, and the winner continues it.
	yielded approval.ID
	// streaming is set while the model streams its text: a message that
	// grows in the chat is no silence, so the slow notice waits.
	streaming atomic.Bool
	// private, once the turn met a private approval, marks what it
	// writes to the history from message privateFrom on, and what it
	// says (privacy.go); roundAt is the index of the current round's
	// assistant message. Atomic: the slow notice reads it.
	private     atomic.Pointer[Private]
	privateFrom int
	roundAt     int
}

// signalWaiting tells the slow-notice watcher that an approval wait starts
// or ends; it never blocks (a watcher that has already spoken has left).
func (ts *turnState) signalWaiting(w bool) {
	select {
	case ts.waiting <- w:
	default:
	}
}

// newTurn returns the state of a turn of in, its id the message's (or a
// random one).
func (l *Loop) newTurn(in Inbound, log *slog.Logger) *turnState {
	ts := &turnState{in: in, log: log, declined: map[string]bool{}, id: in.MessageID, waiting: make(chan bool, 4), held: true}
	if ts.id == "" {
		ts.id = randomID()
	}
	return ts
}

// turn handles one message: the session's lock, a worker, the history,
// the model's rounds, and the history saved.
func (l *Loop) turn(in Inbound) TurnResult {
	log := LogWith(l.log, slog.String("channel", in.Channel), slog.String("chat_id", in.ChatID), slog.Any("user_id", in.User), slog.String("msg_id", in.MessageID))
	// The session's lock first: waiting for another replica's turn
	// occupies no worker. It is held until the history is saved.
	unlock, err := l.lockSession(in.Session)
	if err != nil {
		return l.lockFailed(in, err, log)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(l.ctx, l.cfg.TurnTimeout)
	defer cancel()
	if err := l.acquire(ctx); err != nil {
		return TurnResult{Err: err, Text: l.words.shuttingDown}
	}
	ts := l.newTurn(in, log)
	defer ts.releaseWith(l)
	ctx, span := l.turnSpan(ctx, in)
	defer func() { endTurnSpan(span, ts.result) }()

	conv, err := l.cfg.History.Load(ctx, in.Session)
	if err != nil {
		log.Error("loading history failed", "err", err)
		return l.fail(ctx, ts, err, l.words.noHistory)
	}
	ts.conv = conv
	// Turns that stopped at an approval which has ended since, and whose
	// resumption did not come (its replica died in between), are written
	// into the history first, so the model reads them before the message.
	l.resolveEnded(ctx, ts.in.Session, &ts.conv, log)
	ts.conv.Messages = append(ts.conv.Messages, Message{Role: RoleUser, Content: in.Text})
	l.rounds(ctx, ts)
	l.end(ctx, ts)
	return ts.result
}

// releaseWith gives back the turn's worker, if it holds one.
func (ts *turnState) releaseWith(l *Loop) {
	if ts.held {
		ts.held = false
		l.release()
	}
}

// rounds asks the model and runs its tool calls until it answers, a
// round limit, a failure, or an approval the turn stopped waiting for.
func (l *Loop) rounds(ctx context.Context, ts *turnState) {
	log := ts.log
	stopSlow := l.watchSlow(ctx, ts)
	defer stopSlow()
	specs := l.specs()
	for round := 0; ; round++ {
		if round == l.cfg.MaxToolRounds {
			ts.result.Text = fmt.Sprintf(l.words.maxRounds, round)
			l.sayTurn(ctx, ts, Say{Kind: SayNotice, Text: ts.result.Text})
			return
		}
		ts.markPrivate()
		msgs := forModel(ts.conv.Messages, ts.private.Load())
		if l.cfg.SystemPrompt != "" {
			msgs = append([]Message{{Role: RoleSystem, Content: l.cfg.SystemPrompt}}, msgs...)
		}
		streamed := false // the model said a delta this round: a streamed message is open
		resp, err := l.cfg.Model.Complete(ctx, Request{Messages: msgs, Tools: specs, Lang: l.cfg.Lang, Delta: func(text string) {
			if text != "" {
				streamed = true
				ts.streaming.Store(true)
				l.sayTurn(ctx, ts, Say{Kind: SayDelta, Text: text})
			}
		}})
		ts.streaming.Store(false)
		if err != nil && l.ctx.Err() != nil {
			// The loop is closing (shutdown, the end of `bot chat`): the
			// turn was stopped, the model did not fail. As at any
			// shutdown, the turn says nothing, but a streamed message is
			// ended, not left streaming.
			log.Info("turn stopped by shutdown while the model was answering", "err", err)
			ts.result.Err, ts.result.Text = err, l.words.shuttingDown
			if streamed {
				l.sayTurn(ctx, ts, Say{Kind: SayStreamEnd})
			}
			return
		}
		if err != nil {
			log.Warn("model request failed", "err", err)
			public := l.words.modelFailed
			var me *ModelError
			if errors.As(err, &me) {
				public = me.PublicIn(l.cfg.Lang)
			} else if errors.Is(err, context.DeadlineExceeded) {
				public = l.words.tooLong
			}
			ts.result.Err = err
			ts.result.Text = public
			if streamed {
				// The sentence ends the streamed message (and stands for
				// the notice where nothing streams).
				l.sayTurn(ctx, ts, Say{Kind: SayStreamEnd, Text: public, IsError: true})
				return
			}
			l.sayTurn(ctx, ts, Say{Kind: SayNotice, Text: public, IsError: true})
			return
		}
		msg := resp.Message
		msg.Role = RoleAssistant
		for i := range msg.ToolCalls {
			if msg.ToolCalls[i].ID == "" {
				msg.ToolCalls[i].ID = fmt.Sprintf("call_%s_%d_%d", ts.id, round, i)
			}
		}
		ts.conv.Messages = append(ts.conv.Messages, forHistory(msg))
		ts.roundAt = len(ts.conv.Messages) - 1
		if len(msg.ToolCalls) == 0 {
			ts.result.Text = msg.Content
			l.sayTurn(ctx, ts, Say{Kind: SayAnswer, Text: msg.Content})
			return
		}
		if streamed {
			// The text the model wrote before its calls was streamed: end
			// that message before any card of the calls is shown.
			l.sayTurn(ctx, ts, Say{Kind: SayStreamEnd})
		}
		l.handleCalls(ctx, ts, msg.ToolCalls)
		if !ts.held || ts.yielded != "" {
			// The turn gave up its worker and could not get it back
			// (shutdown), or another took the outcome it waited for.
			return
		}
		if ts.result.Waiting != "" {
			// The deadline passed while an approval was open. It stays
			// open and may still run; its outcome resumes the turn. Say
			// so, not that the work stopped. The note is marked pending,
			// so the resumption can take it back.
			ts.result.Text = l.words.stillWaiting
			ts.conv.Messages = append(ts.conv.Messages, Message{Role: RoleAssistant, Content: l.words.stillWaiting, Status: approval.StatusPending})
			l.sayTurn(ctx, ts, Say{Kind: SayNotice, Text: l.words.stillWaiting})
			return
		}
	}
}

// end closes a turn: the approvals that ended meanwhile (those the turn
// superseded) are written into the history, which is trimmed and saved.
// A turn that stood down (yielded) saves nothing: the history keeps it
// suspended, as it was saved before its approval was asked, for the
// winner to continue; its result only says which approval it waited for.
func (l *Loop) end(ctx context.Context, ts *turnState) {
	if ts.yielded != "" {
		ts.result = TurnResult{Waiting: ts.yielded}
		return
	}
	if l.ctx.Err() == nil {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		l.resolveEnded(rctx, ts.in.Session, &ts.conv, ts.log)
		rcancel()
	}
	ts.markPrivate()
	ts.result.private = ts.private.Load() // its turn_ended says it too
	ts.conv.Trim(l.cfg.MaxHistory)
	if err := l.cfg.History.Save(context.WithoutCancel(ctx), ts.in.Session, ts.conv); err != nil {
		ts.log.Error("saving history failed", "err", err)
	}
}

// lockFailed ends a turn whose session lock could not be taken: the loop
// shuts down, another replica kept the session for longer than a turn
// lasts, or the lock's store failed. Nothing of the turn was done, and the
// sender is told (except at shutdown, when no turn says anything).
func (l *Loop) lockFailed(in Inbound, err error, log *slog.Logger) TurnResult {
	if l.ctx.Err() != nil {
		return TurnResult{Err: err, Text: l.words.shuttingDown}
	}
	public := l.words.unavailable
	if errors.Is(err, context.DeadlineExceeded) {
		log.Warn("gave up waiting for the conversation's lock (another replica kept it for longer than a turn lasts)", "err", err)
		public = l.words.busy
	} else {
		log.Error("taking the conversation's lock failed", "err", err)
	}
	l.say(l.ctx, in, Say{Kind: SayNotice, Text: public, IsError: true})
	return TurnResult{Err: err, Text: public}
}

func (l *Loop) fail(ctx context.Context, ts *turnState, err error, public string) TurnResult {
	l.sayTurn(ctx, ts, Say{Kind: SayNotice, Text: public, IsError: true})
	return TurnResult{Err: err, Text: public}
}

// watchSlow says once that the turn is still working, unless it ends or
// waits for an approval first.
func (l *Loop) watchSlow(ctx context.Context, ts *turnState) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := l.cfg.Clock.NewTimer(l.cfg.SlowNotice)
		defer func() { t.Stop() }()
		for {
			select {
			case <-done:
				return
			case w := <-ts.waiting:
				t.Stop()
				if !w {
					t = l.cfg.Clock.NewTimer(l.cfg.SlowNotice)
				}
			case <-t.C():
				if ts.streaming.Load() {
					// The answer is showing as it is written: wait again.
					t = l.cfg.Clock.NewTimer(l.cfg.SlowNotice)
					continue
				}
				l.sayTurn(ctx, ts, Say{Kind: SayNotice, Text: l.words.stillWorking})
				return
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}

func (l *Loop) specs() []ToolSpec {
	tools := l.cfg.Tools.Tools()
	out := make([]ToolSpec, len(tools))
	for i, t := range tools {
		out[i] = ToolSpec{Name: t.Name(), Description: t.Description(), Schema: t.Schema(), About: About(t)}
	}
	return out
}

// prepared is one tool call after validation and policy.
type prepared struct {
	call ToolCall
	tool Tool
	args json.RawMessage
	hash string
	// definition is the digest of a Foreign tool's definition, which
	// hash pins; empty for a built-in tool.
	definition string
	verdict    approval.Verdict
	preview    approval.Words
	assessed   bool // preview was made by the tool's Assess
	// reply (what the model is told), status and isError are the call's
	// answer, set by answer.
	reply   string
	status  approval.Status
	isError bool
	// shown, when set, is what a person reads of the answer (in the
	// turn's language) where reply is written for the model alone.
	shown string
}

// said is what a person reads of the call's answer.
func (p *prepared) said() string {
	if p.shown != "" {
		return p.shown
	}
	return p.reply
}

// answer records the call's answer: the action's status, whether it is an
// error, and what the model is told.
func (p *prepared) answer(st approval.Status, isError bool, reply string) {
	p.status, p.isError, p.reply = st, isError, reply
}

// tooManyCalls answers each call of a round past approval.MaxCalls.
var tooManyCalls = fmt.Sprintf("Not run: too many calls in one round (at most %d); ask again for the rest.", approval.MaxCalls)

// handleCalls answers every tool call of one assistant message: invalid
// and declined calls, and those past approval.MaxCalls, at once; then, once every call is evaluated and the
// round's privacy decided (roundPrivacy), the calls the policy lets
// through by running them, in order, and the rest as one (batch)
// approval.
func (l *Loop) handleCalls(ctx context.Context, ts *turnState, calls []ToolCall) {
	log := ts.log
	policy := l.cfg.Policy()
	ps := make([]*prepared, len(calls))
	var direct, batch []*prepared // run at once; asked for as one approval
	for i, c := range calls {
		p := &prepared{call: c, args: c.Args}
		ps[i] = p
		if i >= approval.MaxCalls {
			// One approval holds at most MaxCalls calls (a card announces
			// no more): the rest are not run, and the model is told.
			p.answer(approval.StatusInvalid, true, tooManyCalls)
			continue
		}
		t, err := l.cfg.Tools.Validate(c.Name, c.Args)
		if err != nil {
			p.answer(approval.StatusInvalid, true, "Error: "+err.Error()+". The call was not run; fix the arguments and try again.")
			continue
		}
		p.tool = t
		args, hash, err := HashCall(t, c.Name, c.Args)
		if err != nil {
			p.answer(approval.StatusInvalid, true, "Error: "+err.Error())
			continue
		}
		p.args, p.hash = args, hash
		if ts.declined[c.Name+"\x00"+hash] {
			p.answer(approval.StatusRejected, true, "Not run: the user already declined this exact call in this turn. Do not propose it again; ask what they want instead.")
			continue
		}
		conf := c.Confidence
		if conf <= 0 {
			conf = 1
		}
		var blast approval.Blast
		if as, ok := t.(Assessor); ok {
			blast, p.preview = as.Assess(ctx, args)
			p.assessed = true
		}
		info := approval.CallInfo{Session: ts.in.Session, User: ts.in.User, Tool: c.Name, Effect: t.Effect(args), Hash: hash, Confidence: conf, Blast: blast}
		if f, ok := AsForeign(t); ok {
			info.EffectSource, p.definition = f.EffectSource(), f.Definition()
		}
		v, err := l.cfg.Engine.Evaluate(ctx, policy, info)
		if err != nil {
			log.Error("policy evaluation failed; not running the call", "tool", c.Name, "err", err)
			p.answer(approval.StatusFailed, true, l.words.notRun+approval.UserMessageIn(err, l.cfg.Lang))
			continue
		}
		p.verdict = v
		if v.NeedsApproval {
			batch = append(batch, p)
		} else {
			direct = append(direct, p)
		}
	}
	// The round's privacy is decided before any of its calls runs or
	// anything of it is said: the history marks the whole round, so a
	// call that runs at once is as private as a later call of the same
	// round (a grant of a private approval, or a private approval asked).
	var id approval.ID
	var v approval.Verdict
	if len(batch) > 0 {
		id, v = approval.NewID(ts.in.Session), batchVerdict(batch)
	}
	l.roundPrivacy(ctx, ts, direct, id, v)
	for _, p := range direct {
		l.sayGranted(ctx, ts, p.verdict.Grant)
		tctx, span := l.toolSpan(ctx, p)
		// Who the call runs for and where: a tool that needs a person
		// while it runs (an MCP server's elicitation) asks there.
		tctx = approval.WithOrigin(tctx, approval.Origin{Session: ts.in.Session, Channel: ts.in.Channel, ChatID: ts.in.ChatID,
			Requester: ts.in.User, RequesterName: ts.in.UserName, Group: ts.in.Group, Turn: ts.id,
			Approvers: p.verdict.Approvers, ApproveIn: p.verdict.ApproveIn, Risk: p.verdict.Risk, Privacy: p.verdict.Privacy})
		res, err := l.cfg.Tools.Dispatch(catalogue.WithLang(tctx, catalogue.Of(l.cfg.Lang)), approval.Call{Tool: p.call.Name, Args: p.args, PayloadSHA256: p.hash, CallID: p.call.ID})
		endToolSpan(span, res, err)
		switch {
		case err != nil && errors.Is(err, approval.ErrNotRun):
			p.answer(approval.StatusFailed, true, "Error: "+err.Error())
		case err != nil:
			log.Error("tool failed with an unknown effect", "tool", p.call.Name, "err", err)
			p.answer(approval.StatusFrozen, true, "The tool failed and its effect is unknown; do not retry it automatically.")
			p.shown = catalogue.In(l.cfg.Lang, catalogue.AgentEffectUnknown)
		default:
			p.answer(res.Status, res.IsError, res.Content)
		}
		l.sayTurn(ctx, ts, Say{Kind: SayToolResult, Tool: p.call.Name, Args: p.args, Text: p.said(), IsError: p.isError})
	}
	if len(batch) > 0 {
		l.approve(ctx, ts, ps, batch, id, v)
	}
	for _, p := range ps {
		ts.conv.Messages = append(ts.conv.Messages, Message{Role: RoleTool, ToolCallID: p.call.ID, Name: p.call.Name, Content: p.reply, Status: p.status})
		ts.result.Actions = append(ts.result.Actions, Action{Tool: p.call.Name, Input: p.args, Result: p.reply, Status: p.status, IsError: p.isError})
	}
}

// batchVerdict is the verdict of one approval covering batch: that of its
// riskiest call, private when any call is, grantable when every call is,
// asked in an approvers' chat when a call's tool asks there, and every
// call's reason.
func batchVerdict(batch []*prepared) approval.Verdict {
	v := batch[0].verdict
	var reasons, reasonsZH []string
	for _, p := range batch {
		if p.verdict.Risk > v.Risk {
			v.Risk, v.Approvers, v.ApproveIn, v.Timeout, v.Escalation = p.verdict.Risk, p.verdict.Approvers, p.verdict.ApproveIn, p.verdict.Timeout, p.verdict.Escalation
		}
		v.Grantable = v.Grantable && p.verdict.Grantable
		if p.verdict.Privacy == approval.PrivacyGroup {
			// A batch is private if any of its calls is.
			v.Privacy = approval.PrivacyGroup
		}
		reasons = append(reasons, p.verdict.Reason)
		reasonsZH = append(reasonsZH, p.verdict.ReasonZH)
	}
	for _, p := range batch {
		if v.ApproveIn != nil {
			break
		}
		// A call whose tool asks in an approvers' chat takes the batch
		// there, even when another call set the batch's rule.
		v.ApproveIn = p.verdict.ApproveIn
	}
	v.Reason = strings.Join(dedupe(reasons), "; ")
	v.ReasonZH = strings.Join(dedupe(reasonsZH), "；")
	return v
}

// approve asks for approval id, of verdict v (batchVerdict), covering the
// batch of the round's calls, waits for it, and turns its outcome into
// each call's reply.
func (l *Loop) approve(ctx context.Context, ts *turnState, round, batch []*prepared, id approval.ID, v approval.Verdict) {
	log := ts.log
	calls := make([]approval.Call, len(batch))
	var summaries, summariesZH, previews, previewsZH []string
	zh := false // a tool said its preview in Chinese
	for i, p := range batch {
		if !p.assessed {
			p.preview = previewWords(ctx, p.tool, p.args)
		}
		preview, previewZH := p.preview.EN, p.preview.In("zh")
		zh = zh || p.preview.ZH != ""
		calls[i] = approval.Call{Tool: p.call.Name, Args: p.args, Definition: p.definition, Summary: clip.Runes(clip.FirstLine(preview), 200), CallID: p.call.ID}
		if p.preview.ZH != "" {
			calls[i].SummaryZH = clip.Runes(clip.FirstLine(previewZH), 200)
		}
		summaries = append(summaries, p.call.Name+": "+clip.Runes(clip.FirstLine(preview), 200))
		summariesZH = append(summariesZH, p.call.Name+": "+clip.Runes(clip.FirstLine(previewZH), 200))
		previews = append(previews, preview)
		previewsZH = append(previewsZH, previewZH)
	}
	keys := make([]string, len(batch))
	for i, p := range batch {
		keys[i] = p.call.ID
	}
	// The turn is saved, suspended at this approval, before its card can
	// be shown and decided: whatever happens to this process from then on,
	// the approval's outcome finds the turn and resumes it. This turn
	// takes the outcome itself if it is still waiting when it comes (it
	// claims it, below). (Whether the approval makes the turn private was
	// decided with the round: roundPrivacy.)
	timeout := v.Timeout
	if timeout <= 0 {
		timeout = approval.DefaultTimeout
	}
	ts.conv.Suspended = append(ts.conv.Suspended, l.suspension(ts, id, l.cfg.Clock.Now().Add(timeout), batch))
	if n := len(ts.conv.Suspended); n > maxSuspended {
		log.Warn("too many suspended turns; forgetting the oldest", "approval_id", ts.conv.Suspended[0].Approval)
		ts.conv.Suspended = append([]Suspension(nil), ts.conv.Suspended[n-maxSuspended:]...)
	}
	ts.markPrivate() // this round's calls, when the turn was private before it
	saved := withPlaceholders(ts.conv, round, batch, id, ts.private.Load())
	saved.Trim(l.cfg.MaxHistory)
	if err := l.cfg.History.Save(ctx, ts.in.Session, saved); err != nil {
		log.Warn("saving history before the approval failed; its outcome may not resume the turn if this wait ends first", "approval_id", id, "err", err)
	}
	req := approval.Request{
		ID:      id,
		Session: ts.in.Session, Channel: ts.in.Channel, ChatID: ts.in.ChatID, Requester: ts.in.User, RequesterName: ts.in.UserName,
		Group: ts.in.Group, Calls: calls, Verdict: v,
		Summary:        strings.Join(summaries, "\n"),
		Preview:        strings.Join(previews, "\n\n"),
		IdempotencyKey: ts.id + "/" + strings.Join(keys, ","),
	}
	if zh {
		req.SummaryZH, req.PreviewZH = strings.Join(summariesZH, "\n"), strings.Join(previewsZH, "\n\n")
	}
	if len(batch) == 1 { // a batch's card lists its calls instead
		req.About = About(batch[0].tool)
	}
	a, err := l.cfg.Engine.Request(ctx, req)
	if err != nil {
		ts.conv.Suspended = withoutSuspension(ts.conv.Suspended, id)
		log.Error("requesting approval failed; not running the calls", "err", err)
		for _, p := range batch {
			p.answer(approval.StatusFailed, true, l.words.notRun+approval.UserMessageIn(err, l.cfg.Lang))
		}
		l.sayTurn(ctx, ts, Say{Kind: SayNotice, Text: approval.UserMessageIn(err, l.cfg.Lang), IsError: true})
		return
	}
	if a.Private() {
		ts.goPrivate(&Private{Turn: string(a.ID), By: requesterName(ts.in)}, ts.roundAt)
	}
	l.sayTurn(ctx, ts, Say{Kind: SayAwaiting, Approval: a.ID})
	ts.signalWaiting(true)
	ts.releaseWith(l) // waiting is not work: let other sessions use the worker
	o, werr := l.cfg.Engine.Wait(ctx, a.ID)
	if werr != nil && l.ctx.Err() == nil {
		// The turn ran out of time. One look at the record catches an
		// outcome that came in between (and its resumption, if any,
		// waits for this turn's lock: the claim below decides).
		gctx, gcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if rec, err := l.cfg.Engine.Get(gctx, a.ID); err == nil && rec.State.Terminal() && rec.Outcome != nil {
			o, werr = *rec.Outcome, nil
		}
		gcancel()
	}
	if l.acquire(l.ctx) == nil {
		ts.held = true
	}
	ts.signalWaiting(false)
	if werr == nil {
		// The one way into the turn: the claim (Loop.claim). This turn
		// holds the session's lock, under which every resumption of it
		// claims too, so it wins unless its lock was lost (it stalled past
		// the lock's TTL) and a resumption went on elsewhere meanwhile:
		// then it stands down (yielded). A store that cannot be reached
		// leaves the turn suspended (below), for its resumption to come.
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		won, err := l.claim(cctx, a.ID, log)
		ccancel()
		switch {
		case err != nil:
			werr = err
		case !won:
			log.Warn("another resumption took the approval's outcome first (this turn's session lock was lost); standing down", "approval_id", a.ID)
			ts.yielded = a.ID
			for _, p := range batch {
				p.answer(approval.StatusPending, true, "")
			}
			return
		}
	}
	if werr != nil {
		log.Warn("stopped waiting for the approval; its outcome will resume the turn", "approval_id", a.ID, "err", werr)
		for _, p := range batch {
			p.answer(approval.StatusPending, true, "Not run yet: still waiting for a person's approval ("+string(a.ID)+"). The outcome will be recorded when it comes.")
		}
		if l.ctx.Err() == nil {
			ts.result.Waiting = a.ID
		}
		return
	}
	// The outcome is here and claimed: this turn goes on with it (its
	// calls' replies are written with the round's, in handleCalls), and
	// its end takes its suspension out of the history.
	cont := make([]continued, len(batch))
	for i, p := range batch {
		cont[i] = continued{tool: p.call.Name, id: p.call.ID, hash: p.hash, args: p.args}
	}
	l.continueWith(ctx, ts, a.ID, cont, o, func(cos []callOutcome) {
		for i, co := range cos {
			batch[i].answer(co.status, co.isError, co.reply)
		}
	})
}

// withPlaceholders returns conv with a reply for every call of the round,
// in order, so that a history saved mid-wait is valid on its own (a
// process killed while it waits saves nothing more): the answer of a call
// answered already (it ran at once, or was invalid or declined), a
// provisional reply for a call of the batch. A private turn's (private
// set) are marked as its.
func withPlaceholders(conv Conversation, round, batch []*prepared, id approval.ID, private *Private) Conversation {
	c := conv
	c.Messages = append([]Message(nil), conv.Messages...)
	for _, p := range round {
		m := Message{Role: RoleTool, ToolCallID: p.call.ID, Name: p.call.Name, Content: p.reply, Status: p.status, Private: private}
		if slices.Contains(batch, p) {
			m.Content, m.Status = "Not run yet: waiting for a person's approval ("+string(id)+").", approval.StatusPending
		}
		c.Messages = append(c.Messages, m)
	}
	return c
}

// forHistory returns msg with tool-call arguments that are not valid JSON
// replaced by {} (the tool's reply says what was wrong), so the history can
// be stored and sent back to the model.
func forHistory(msg Message) Message {
	copied := false
	for i, c := range msg.ToolCalls {
		if !json.Valid(c.Args) {
			if !copied {
				msg.ToolCalls = append([]ToolCall(nil), msg.ToolCalls...)
				copied = true
			}
			msg.ToolCalls[i].Args = json.RawMessage(`{}`)
		}
	}
	return msg
}

func dedupe(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
