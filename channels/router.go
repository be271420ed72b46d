package channels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/words"
)

// RouterConfig wires a Router.
type RouterConfig struct {
	// Registry holds the channels the router starts and hands messages
	// from. Required.
	Registry *Registry
	// Presenter says the router's answers. Required. (The channels that
	// re-show a pending card get its views in their own configs, as
	// channels.Views.)
	Presenter *Presenter
	// Decider decides approvals: the engine (usually the *approval.Engine
	// whose Notifier is the Presenter). Required.
	Decider Decider
	// Submitter is the agent that gets every message that is not a
	// decision (usually the *agent.Loop whose Speaker is the Presenter).
	// Required.
	Submitter Submitter
	// Store holds the de-duplication marks (Seen) and the session's last
	// approval (Latest); it is the engine's store. Share it between
	// replicas (the Redis store) so a message delivered to two replicas is
	// handled once. Required.
	Store approval.Store
	// Replies reads typed 确认 / 取消. Default: approval.DefaultReplyConfig().
	Replies *approval.ReplyParser
	// Scope is how session keys are built (per_chat, per_user, per_thread).
	// Default per_chat.
	Scope Scope
	// DedupTTL is how long a message or event id is remembered. Default 24h.
	DedupTTL time.Duration
	// MaxAge drops messages created before the process started minus this
	// grace (platforms re-deliver backlogs after a restart or reconnect).
	// Default 2m; negative keeps every message, however old.
	MaxAge time.Duration
	// Lang is the language of cards and of the router's own replies: "zh"
	// or "en". Default "en".
	Lang string
	// Zone is the time zone cards show times in (approval.time_zone);
	// Assemble gives it to the Presenter. Default UTC.
	Zone *time.Location
	// Text holds the words for each outcome status (approval.outcome_text);
	// missing statuses take the defaults of Lang.
	Text approval.OutcomeText
	// Logger receives operational logs. Default slog.Default().
	Logger *slog.Logger
	// Clock tells the process start time for MaxAge. Default the wall clock.
	Clock clock.Clock
	// Metrics counts inbound messages, duplicates and decisions. Optional.
	Metrics Metrics
	// Allow is who may use each channel, by channel name (YAML
	// channels.<name>.allow). A channel without an entry, or with an empty
	// one, lets everyone in. A message or click it refuses is answered
	// with one polite sentence (in a group chat at most once per
	// RefusalNoticeInterval per person), logged and counted, and goes no
	// further.
	Allow map[string]Allow
	// ReplyClockSkew is the allowance for the difference between the
	// platform's clock (a message's CreatedAt) and this process's (an
	// approval's CreatedAt): a typed reply written more than this before
	// the session's pending approval was created is not a decision for it
	// (a replayed or delayed old 确认 must not approve a newer approval);
	// it goes to the agent like any text. YAML approval.reply_clock_skew.
	// Default 5s; negative: 0.
	ReplyClockSkew time.Duration
	// LateReplyWindow is how long after the session's last approval ended
	// a typed 确认 / 取消 that finds nothing pending is answered with that
	// approval's outcome ("expired", "withdrawn", …) instead of going to
	// the agent, as a late click on its card is. Default 10m; negative:
	// never (late replies go to the agent).
	LateReplyWindow time.Duration
}

// Defaults of RouterConfig.
const (
	DefaultReplyClockSkew  = 5 * time.Second
	DefaultLateReplyWindow = 10 * time.Minute
)

// Metrics is what the router reports for /metrics. Implementations must be
// safe for concurrent use.
type Metrics interface {
	// Inbound counts one message or card action received from channel.
	Inbound(channel string)
	// Deduplicated counts one message or card action dropped as a duplicate.
	Deduplicated(channel string)
	// Decision counts one decision (typed reply or card action) by outcome.
	Decision(channel string, status approval.Status)
	// Refused counts one message or card action refused because its
	// sender or chat is not in the channel's allow-list.
	Refused(channel string)
}

type nopMetrics struct{}

func (nopMetrics) Inbound(string)                   {}
func (nopMetrics) Deduplicated(string)              {}
func (nopMetrics) Decision(string, approval.Status) {}
func (nopMetrics) Refused(string)                   {}

// Router takes everything inbound: it is the Handler of every channel.
// It admits (the allow-lists), de-duplicates, turns a typed 确认 / 取消
// into a decision, answers the approval commands, and hands anything else
// to the agent. It is given what it needs when it is made: the channel
// registry, the Presenter (to answer), a Decider (the engine) and a
// Submitter (the loop). Assemble
// builds them in one order, registry → presenter → engine → loop →
// router; then the channels are registered and started:
//
//	as, _ := channels.Assemble(channels.Parts{
//		Engine: approval.EngineConfig{Store: store, Dispatcher: tools, Audit: auditLog},
//		Loop:   agent.LoopConfig{Model: model, Tools: tools, Policy: policy, History: history},
//		Router: channels.RouterConfig{Store: store, Lang: "zh", Logger: log},
//	})
//	_ = as.Registry.Register(webChannel) // and the other channels
//	_ = as.Engine.Start(ctx)
//	_ = as.Router.Start(ctx) // Start every channel with the router as its Handler
//	...
//	_ = as.Router.Close(shutdownCtx) // close the channels, let typed decisions finish
//
// The router needs neither an engine nor a loop of its own: any Decider
// and Submitter do (the tests give it fakes).
type Router struct {
	cfg     RouterConfig
	log     *slog.Logger
	start   time.Time
	text    approval.OutcomeText
	replies *approval.ReplyParser
	metrics Metrics
	allow   map[string]allowSet // channels with a non-empty allow-list
	refused refusals

	reg       *Registry
	pres      *Presenter
	decider   Decider
	submitter Submitter
	store     approval.Store

	mu      sync.Mutex
	closing bool

	inflight sync.WaitGroup // typed decisions running (they run tools)
}

// NewRouter checks cfg and returns a router. It does no I/O.
func NewRouter(cfg RouterConfig) (*Router, error) {
	switch {
	case cfg.Registry == nil:
		return nil, errors.New("channels.NewRouter: a Registry is required")
	case cfg.Presenter == nil:
		return nil, errors.New("channels.NewRouter: a Presenter is required")
	case cfg.Decider == nil:
		return nil, errors.New("channels.NewRouter: a Decider (the approval engine) is required")
	case cfg.Submitter == nil:
		return nil, errors.New("channels.NewRouter: a Submitter (the agent loop) is required")
	case cfg.Store == nil:
		return nil, errors.New("channels.NewRouter: a Store (the engine's) is required")
	}
	switch cfg.Scope {
	case "":
		cfg.Scope = ScopePerChat
	case ScopePerChat, ScopePerUser, ScopePerThread:
	default:
		return nil, fmt.Errorf("channels.NewRouter: unknown session scope %q (want per_chat, per_user or per_thread)", cfg.Scope)
	}
	if cfg.Lang == "" {
		cfg.Lang = string(words.EN)
	}
	l, err := words.Parse(cfg.Lang)
	if err != nil {
		return nil, fmt.Errorf("channels.NewRouter: %w", err)
	}
	cfg.Lang = string(l)
	if err := cfg.Text.Validate(); err != nil {
		return nil, fmt.Errorf("channels.NewRouter: %w", err)
	}
	if cfg.Replies == nil {
		p, err := approval.NewReplyParser(approval.DefaultReplyConfig())
		if err != nil {
			return nil, fmt.Errorf("channels.NewRouter: %w", err)
		}
		cfg.Replies = p
	}
	if cfg.DedupTTL <= 0 {
		cfg.DedupTTL = 24 * time.Hour
	}
	if cfg.MaxAge == 0 {
		cfg.MaxAge = 2 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Metrics == nil {
		cfg.Metrics = nopMetrics{}
	}
	switch {
	case cfg.ReplyClockSkew == 0:
		cfg.ReplyClockSkew = DefaultReplyClockSkew
	case cfg.ReplyClockSkew < 0:
		cfg.ReplyClockSkew = 0
	}
	if cfg.LateReplyWindow == 0 {
		cfg.LateReplyWindow = DefaultLateReplyWindow
	}
	allow := map[string]allowSet{}
	for name, a := range cfg.Allow {
		if err := a.Validate(); err != nil {
			return nil, fmt.Errorf("channels.NewRouter: channel %s: %w", name, err)
		}
		if !a.Empty() {
			allow[name] = newAllowSet(a)
		}
	}
	return &Router{
		cfg:     cfg,
		log:     cfg.Logger,
		start:   cfg.Clock.Now(),
		text:    cfg.Text.With(cfg.Lang),
		replies: cfg.Replies,
		metrics: cfg.Metrics,
		allow:   allow,

		reg:       cfg.Registry,
		pres:      cfg.Presenter,
		decider:   cfg.Decider,
		submitter: cfg.Submitter,
		store:     cfg.Store,
	}, nil
}

// Start starts every registered channel, in registration order, with the
// router as its Handler. If one fails, those already started are closed
// and the error names the channel.
func (r *Router) Start(ctx context.Context) error {
	order := r.reg.inOrder()
	for i, ch := range order {
		if err := ch.Start(ctx, r); err != nil {
			for j := i - 1; j >= 0; j-- {
				_ = order[j].Close(context.WithoutCancel(ctx))
			}
			return fmt.Errorf("channel %s: start: %w", ch.Name(), err)
		}
	}
	return nil
}

// Close closes every channel (in reverse registration order), then waits
// for the typed decisions in flight (they may be running a tool), all
// bounded by ctx. Pending approvals stay in the store.
func (r *Router) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closing = true
	r.mu.Unlock()
	order := r.reg.inOrder()
	var errs []error
	for i := len(order) - 1; i >= 0; i-- {
		if err := order[i].Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("channel %s: close: %w", order[i].Name(), err))
		}
	}
	done := make(chan struct{})
	go func() { r.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("channels: decisions still running: %w", ctx.Err()))
	}
	return errors.Join(errs...)
}

// HandleMessage routes one inbound message:
//
//  0. A sender or chat not in the channel's allow-list (RouterConfig.Allow)
//     is refused before anything else: nothing is marked, queued or
//     decided; the sender is told so (see refuse).
//  1. De-duplicate: the message id ("msg:<channel>:<id>") and, when there
//     is one, the event id ("evt:<channel>:<id>") are marked in the store
//     for DedupTTL; a mark that exists already drops the message. A
//     message with neither id passes: losing a real message is worse than
//     answering twice. If the store cannot set the marks, the message is
//     not processed and its sender is asked to send it again (fail closed:
//     processed twice it would run a turn twice; a click, by contrast,
//     fails open, see HandleCardAction).
//  2. Drop a message created before the process start minus MaxAge (a
//     backlog re-delivered after a restart).
//  3. If the text is a typed 确认 / 取消 and the session has a pending
//     approval, decide it (as the sender, with the hash of that approval)
//     and answer with the outcome's words; it never reaches the agent. A
//     cancel keyword followed by a reason ("取消 用 orders_archive 表",
//     "cancel: wrong table"; see approval.ReplyParser.ParseReason) rejects
//     with the reason as the decision's comment. The
//     decision runs in the background (it runs the tool) and Close waits
//     for it. A reply written (by the platform's create time of the
//     message; its arrival when there is none) more than ReplyClockSkew
//     before the approval was created is not a decision for it: an old
//     message, delayed or replayed, never decides a newer approval.
//     Before that, an approval command (ParseCommand: /pending,
//     /cancel <code>, 确认 <code> / 取消 <code>, /grants, /revoke <n|all>,
//     /help) is answered here (see command), and so is a bare 确认 / 取消
//     while several approvals wait in the chat (the bot lists their codes
//     and asks which); only with a Decider that is a Commander.
//  4. A typed 确认 / 取消 that finds nothing pending, written after the
//     session's last approval was created and at most LateReplyWindow
//     after it ended, is answered with how it ended ("expired",
//     "withdrawn", "declined", "already decided: executed") and goes no
//     further, as a late click on its card would (see lateReply). This
//     lookup (Store.Latest) is the only extra store round trip, and only
//     such texts pay it.
//  5. Anything else goes to the agent's queue for the session; if an
//     approval is pending there, the sender is also told that one is
//     waiting and how to answer it.
//
// It returns an error only for a channel that is not registered or a
// Submitter error other than agent.ErrBusy and agent.ErrClosed; problems
// the sender should know about are answered in the chat.
func (r *Router) HandleMessage(ctx context.Context, m Message) error {
	eng, loop, store := r.decider, r.submitter, r.store
	log := agent.LogWith(r.log, slog.String("channel", m.Channel), slog.String("chat_id", m.ChatID), slog.Any("user_id", m.UserID), slog.String("msg_id", m.MessageID))
	ch, err := r.reg.Channel(m.Channel)
	if err != nil {
		return err
	}
	r.metrics.Inbound(m.Channel)
	if !r.allowed(m.Channel, m.UserID, m.ChatID) {
		// In a direct chat every refused message is answered (only the
		// sender reads it, and the API and the CLI wait for an answer);
		// in a group at most once per RefusalNoticeInterval.
		// A channel that listens for turn events is always answered: its
		// request waits for the message.
		_, listens := ch.(TurnListener)
		if r.refuse(ctx, m.Channel, m.UserID, m.ChatID, log) || m.ChatType == "p2p" || listens {
			to := Target{Channel: m.Channel, ChatID: m.ChatID, ThreadID: m.ThreadID, ReplyTo: m.MessageID, UserID: m.UserID}
			r.answer(ctx, ch, to, log, answer{text: r.words().refused})
		}
		return nil
	}
	session := SessionKey(r.cfg.Scope, m.Channel, m.ChatID, m.UserID, m.ThreadID)
	// The de-duplication marks and the pending lookup, in one round trip
	// where the store can (the lookup is wasted on a duplicate, which is
	// rare).
	var keys []string
	for _, k := range []string{dedupKey("msg:", m.Channel, m.MessageID), dedupKey("evt:", m.Channel, m.EventID)} {
		if k != "" {
			keys = append(keys, k)
		}
	}
	c := approval.CheckInbound(ctx, store, keys, r.cfg.DedupTTL, session)
	to := Target{Channel: m.Channel, ChatID: m.ChatID, ThreadID: m.ThreadID, ReplyTo: m.MessageID, UserID: m.UserID}
	if len(keys) > 0 && c.SeenErr != nil {
		// Fail closed: a message whose mark could not be set may be a
		// redelivery, and processed twice it would run a turn twice
		// (the model asked again, tools that need no approval run
		// again, the answer said twice). Its sender is told to send it
		// again; nothing else is done (docs/ARCHITECTURE.md, "When a
		// part is down").
		log.Error("de-duplication unavailable; the message was not processed and its sender was asked to send it again", "err", c.SeenErr)
		r.answer(ctx, ch, to, log, answer{text: r.words().unavailable, err: c.SeenErr})
		return nil
	}
	if slices.Contains(c.First, false) {
		r.metrics.Deduplicated(m.Channel)
		log.Debug("duplicate message dropped", "event_id", m.EventID)
		return nil
	}
	pending, perr := c.Pending, c.PendingErr
	if r.cfg.MaxAge >= 0 && !m.CreatedAt.IsZero() && m.CreatedAt.Before(r.start.Add(-r.cfg.MaxAge)) {
		log.Info("dropping a message sent before this process started", "created_at", m.CreatedAt, "started_at", r.start)
		return nil
	}

	reply, reason := r.replies.ParseReason(m.Text)
	if perr != nil {
		if reply != approval.ReplyNone {
			// It may be a decision and we cannot tell: run nothing, say so.
			log.Error("looking up the pending approval failed; the typed reply was not applied", "err", perr)
			r.answer(ctx, ch, to, log, answer{text: approval.UserMessageIn(perr, r.cfg.Lang), err: perr})
			return nil
		}
		log.Warn("looking up the pending approval failed", "err", perr)
		pending = nil
	}
	if r.command(ctx, ch, to, m, session, pending, reply, reason, log) {
		// An approval command (/pending, /cancel <code>, 确认 <code>,
		// /grants, /revoke, /help), or a bare 确认 that would be
		// ambiguous: answered here, never the agent's (router_commands.go).
		return nil
	}
	if pending != nil && reply != approval.ReplyNone {
		written := r.writtenAt(m)
		if !r.replyFor(written, pending) {
			// A reply to something older (or a replay of an old message):
			// not a decision for this approval; the agent reads it.
			log.Info("a typed reply written before the pending approval was created is not a decision for it; it goes to the agent",
				"approval_id", pending.ID, "created_at", written, "approval_created_at", pending.CreatedAt, "reply_clock_skew", r.cfg.ReplyClockSkew)
		} else {
			r.decideTyped(ctx, eng, ch, to, m, pending, reply, reason, nil, log)
			return nil
		}
	}
	if pending == nil && reply != approval.ReplyNone && r.cfg.LateReplyWindow >= 0 && r.lateReply(ctx, store, ch, to, m, session, log) {
		return nil
	}

	err = loop.Submit(agent.Inbound{Session: session, Channel: m.Channel, ChatID: m.ChatID, ThreadID: m.ThreadID,
		User: m.UserID, UserName: m.UserName, MessageID: m.MessageID, Text: m.Text, Group: m.ChatType != "p2p"})
	switch {
	case errors.Is(err, agent.ErrBusy):
		log.Warn("the session's queue is full; message refused")
		r.refuseTurn(ctx, ch, to, log, ErrBusy)
		return nil
	case errors.Is(err, agent.ErrClosed):
		r.refuseTurn(ctx, ch, to, log, ErrClosing)
		return nil
	case err != nil:
		return err
	}
	if pending != nil {
		if tl, listens := ch.(TurnListener); listens {
			tl.TurnEvent(ctx, to, TurnEvent{Say: agent.Say{Kind: SayQueued, Approval: pending.ID, Text: r.pres.waitingNotice(pending)}})
		} else {
			notice(ctx, ch, to, log, r.pres.waitingNotice(pending))
		}
	}
	return nil
}

// writtenAt is when m was written: the platform's create time of the
// message, or, when the channel gives none, now (it has just arrived).
func (r *Router) writtenAt(m Message) time.Time {
	if m.CreatedAt.IsZero() {
		return r.cfg.Clock.Now()
	}
	return m.CreatedAt
}

// replyFor reports whether a typed reply written at written may be a
// decision for a: it was written after a was created, give or take
// ReplyClockSkew (the platform's clock against ours). A reply written
// before cannot be about a: it is an old message, delayed or replayed.
func (r *Router) replyFor(written time.Time, a *approval.Approval) bool {
	return !written.Before(a.CreatedAt.Add(-r.cfg.ReplyClockSkew))
}

// lateReply answers a typed 确认 / 取消 of m that found no pending
// approval, when the session's last approval has ended and the reply was
// written for it: after it was created (give or take ReplyClockSkew) and no
// later than LateReplyWindow after it ended. The answer is how it ended
// (endedWords), the router's answer to m (answer: an error notice in a
// chat, the reply decided nothing; a turn_ended to a channel that listens
// for turn events, so a request that waits for m ends). It reports whether
// it answered; if not, the text goes to the agent as any other.
func (r *Router) lateReply(ctx context.Context, store approval.Store, ch Channel, to Target, m Message, session approval.SessionKey, log *slog.Logger) bool {
	last, err := store.Latest(ctx, session)
	if err != nil {
		log.Warn("looking up the session's last approval failed; the typed reply goes to the agent", "err", err)
		return false
	}
	if last == nil || last.State == approval.StatePending || last.DecidedAt.IsZero() {
		return false
	}
	written := r.writtenAt(m)
	if !r.replyFor(written, last) || written.After(last.DecidedAt.Add(r.cfg.LateReplyWindow)) {
		return false
	}
	st, text := r.endedWords(last)
	log.Info("a typed reply came after the session's approval ended; answered with how it ended", "approval_id", last.ID,
		"status", st, "outcome", outcomeOf(last), "created_at", written, "decided_at", last.DecidedAt)
	r.answer(ctx, ch, to, log, answer{text: text, status: st})
	return true
}

// endedWords says how approval a ended, for a typed reply that came too
// late or lost a race: the words of its status when nothing ran (expired,
// cancelled, superseded, rejected), else "already decided" with what came
// of it (executed, failed, frozen, replayed), or "already decided" alone
// while it runs. The status is the one the words stand for: that status
// when nothing ran, else StatusAlreadyDecided (the reply ran nothing).
func (r *Router) endedWords(a *approval.Approval) (approval.Status, string) {
	if !a.State.Terminal() || a.Outcome == nil || a.Outcome.Status == "" {
		return approval.StatusAlreadyDecided, r.text.Text(approval.StatusAlreadyDecided)
	}
	switch st := a.Outcome.Status; st {
	case approval.StatusCancelled:
		if d := a.Outcome.Detail; d != "" {
			// Why it was withdrawn (a hook that gave up: the agent was
			// told no).
			return st, r.text.Text(st) + ": " + d
		}
		return st, r.text.Text(st)
	case approval.StatusExpired, approval.StatusSuperseded, approval.StatusRejected:
		return st, r.text.Text(st)
	default:
		return approval.StatusAlreadyDecided, fmt.Sprintf(r.words().decidedFmt, r.text.Text(approval.StatusAlreadyDecided), r.text.Text(st))
	}
}

// decidedBy reports whether a typed decision whose outcome has status st
// ended its approval as the sender asked (approved or declined it; the
// engine settled it before Decide returned), as opposed to finding it
// ended (expired, superseded, withdrawn) or deciding nothing.
func decidedBy(st approval.Status) bool {
	switch st {
	case approval.StatusExpired, approval.StatusSuperseded, approval.StatusCancelled:
		return false
	}
	return st.Final()
}

// outcomeOf is the status of a's outcome, "" while it has none (for logs).
func outcomeOf(a *approval.Approval) approval.Status {
	if a.Outcome == nil {
		return ""
	}
	return a.Outcome.Status
}

// answer is the router's own answer to an inbound message that goes no
// further (it never reaches the agent, so no turn of the agent ends it).
type answer struct {
	text string
	// status is the answer's typed status: a typed decision's outcome,
	// or how the approval ended for a reply that came too late or lost a
	// race (see endedWords); "" for none.
	status approval.Status
	// decided is the approval the message's typed decision ended; ""
	// when it ended none (a late reply, a lost race, a vote towards a
	// quorum, a refusal).
	decided approval.ID
	// about, when set, is the approval the message's typed decision was
	// about, and user its sender: a private approval's answer is said to
	// them alone (noticeAbout). An answer without it decided nothing.
	about *approval.Approval
	user  approval.UserID
	// err is why the message could not be handled, when that is the
	// answer (the store could not be asked).
	err error
	// command is set for the answer to an approval command (/pending,
	// /grants, 确认 <code> …, router_commands.go): what the message asked
	// for, said in a chat as an answer, as a turn's answer is.
	command bool
}

// answer ends message to's handling with ans, the one place that says
// the router's own answer to a message (a typed decision's outcome, a
// late reply, a refusal by the allow-list, a lookup that failed, an
// approval command's answer): to a channel that listens for turn events
// (the HTTP API) a turn_ended with it, so the request that waits for the
// message always ends; to the others the text in the chat: a command's
// as an answer, as a turn ends (the terminal chat gives its prompt back
// on an answer), privately for a private approval (noticeAbout), else as
// an error notice, the message having decided nothing (a client that
// waits for an answer, the terminal chat, stops waiting).
func (r *Router) answer(ctx context.Context, ch Channel, to Target, log *slog.Logger, ans answer) {
	if tl, ok := ch.(TurnListener); ok {
		// The answer reaches the request of the message's sender alone.
		tl.TurnEvent(ctx, to, TurnEvent{Say: agent.Say{Kind: agent.SayTurnEnded, Result: &agent.TurnResult{Text: ans.text, Err: ans.err}},
			Status: ans.status, Decided: ans.decided})
		return
	}
	out := Outgoing{Kind: OutNotice, Text: ans.text, IsError: true}
	switch {
	case ans.about != nil:
		r.pres.noticeAbout(ctx, ch, to, log, ans.about, ans.user, ans.text)
		return
	case ans.command:
		out = Outgoing{Kind: OutAnswer, Text: ans.text}
	}
	if err := ch.Send(ctx, to, out); err != nil {
		log.Warn("sending the router's answer failed", "err", err)
	}
}

// refuseTurn answers a message that was not taken, why being ErrBusy
// (its session's queue is full) or ErrClosing (the router or the loop is
// shutting down): to a channel that listens for turn events a typed
// refused, to the others a notice.
func (r *Router) refuseTurn(ctx context.Context, ch Channel, to Target, log *slog.Logger, why error) {
	text := r.words().busy
	if errors.Is(why, ErrClosing) {
		text = r.words().closing
	}
	if tl, ok := ch.(TurnListener); ok {
		tl.TurnEvent(ctx, to, TurnEvent{Say: agent.Say{Kind: SayRefused, Text: text, IsError: true}, Refusal: why})
		return
	}
	notice(ctx, ch, to, log, text)
}

// dedupKey is the de-duplication key of an inbound id: prefix, channel,
// ":" and the id; "" for an empty id (never a duplicate).
func dedupKey(prefix, channel, id string) string {
	if id == "" {
		return ""
	}
	return prefix + channel + ":" + id
}

// duplicate marks a click's prefix+id and reports whether it was marked
// already. An empty id is never a duplicate; a store error is logged and
// the click goes on (fail open: the engine's claim is atomic, so a click
// decided twice decides once and the second reads already_decided; a
// click dropped would leave its clicker without an answer).
func (r *Router) duplicate(ctx context.Context, log *slog.Logger, store approval.Store, prefix, id string) bool {
	if id == "" {
		return false
	}
	first, err := store.Seen(ctx, prefix+id, r.cfg.DedupTTL)
	if err != nil {
		log.Warn("de-duplication unavailable; processing the event anyway", "key", prefix+id, "err", err)
		return false
	}
	return !first
}

// decideTyped applies a typed 确认 / 取消 to the pending approval in the
// background and answers with the outcome. reason, the reason typed after
// a cancel keyword ("取消 用 orders_archive 表", see
// approval.ReplyParser.ParseReason), is the decision's comment: the
// record, the audit trail, the card and the model's tool reply say it.
// typed, when set, is a typed answer to another agent's question (the
// answer command; approval.ParseAnswers): it approves with that edit of
// the question's call, bound to the hash pending shows, as a card's
// answer does.
func (r *Router) decideTyped(ctx context.Context, eng Decider, ch Channel, to Target, m Message, pending *approval.Approval, reply approval.Reply, reason string,
	typed json.RawMessage, log *slog.Logger) {
	verb := approval.Approve
	if reply == approval.ReplyCancel {
		verb = approval.Reject
	}
	log = log.With("approval_id", pending.ID)
	var edits map[string]json.RawMessage
	if typed != nil {
		edits = map[string]json.RawMessage{"#1": typed}
	}
	if verb == approval.Approve && pending.IsQuestion() && edits == nil {
		// Another agent's question: a typed 确认 holds no answer. Nothing
		// is decided; the sender is told where to answer (取消 declines).
		log.Info("a typed confirmation of a question decides nothing")
		r.answer(ctx, ch, to, log, answer{text: words.In(r.cfg.Lang, words.QuestionElsewhere)})
		return
	}
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		r.refuseTurn(ctx, ch, to, log, ErrClosing)
		return
	}
	r.inflight.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.inflight.Done()
		ctx := context.WithoutCancel(ctx)
		o, err := eng.Decide(ctx, pending.ID, approval.Decision{Verb: verb, Actor: m.UserID, Source: approval.SourceReply,
			PayloadSHA256: pending.PayloadSHA256, Channel: m.Channel, ChatID: m.ChatID, Comment: reason, Edits: edits})
		if err != nil {
			log.Error("typed decision failed; nothing was run", "err", err)
			r.answer(ctx, ch, to, log, answer{text: approval.UserMessageIn(err, r.cfg.Lang), err: err})
			return
		}
		r.metrics.Decision(m.Channel, o.Status)
		log.Info("typed decision", "status", o.Status)
		text, st := r.text.Text(o.Status), o.Status
		if o.Status == approval.StatusAlreadyDecided {
			// Lost a race (a cancel, another person's decision, an
			// expiry): say how the approval ended, not only that it did.
			if a, err := eng.Get(ctx, pending.ID); err == nil {
				st, text = r.endedWords(a)
				log.Info("the typed reply came after the approval ended", "final_status", outcomeOf(a))
			}
		}
		if o.Status == approval.StatusFailed || o.Status == approval.StatusFrozen {
			// Why, once: the sentence is the status's, the detail the
			// engine's (a failed call's result, a frozen call's cause).
			// Where no card is shown (DingTalk without a card template),
			// this is all a person reads.
			if d := cards.Detail(o); d != "" {
				text += ": " + d
			}
		}
		if o.Status == approval.StatusUnauthorized {
			text += r.words().mayApprove(pending.ApproversIn(r.cfg.Lang, m.Channel, m.ChatID))
		}
		if o.Status == approval.StatusAwaitingQuorum {
			// Counted (or counted before), with the progress: "1/2
			// approved: alice".
			text = o.Content
		}
		if edits != nil && o.Status == approval.StatusExecuted {
			// The question answered: the agent and the answers taken.
			agentName, _, _ := strings.Cut(pending.Tool(), "/")
			text = words.In(r.cfg.Lang, words.QuestionTypedAnswered, agentName, o.Content)
		}
		ans := answer{text: text, status: st, about: pending, user: m.UserID} // privately, for a private approval
		if decidedBy(o.Status) {
			ans.decided = pending.ID
		}
		r.answer(ctx, ch, to, log, ans)
	}()
}

// HandleCardAction takes one click on a card button (or its equivalent: a
// web confirmation, an API decision): a click by a person or in a chat not
// in the channel's allow-list is unauthorized and decides nothing (before
// any other check); a click event seen before returns
// the approval's current outcome (its final one, or already_decided) and
// never decides twice; a malformed value (bad id → missing; a verb other
// than approve / reject / resolve, a resolve without a valid resolution or
// no hash → tampered) decides nothing; anything
// else is Decider.Decide as the clicker. The error is non-nil only when
// the store could not be reached (nothing was run).
//
// A Decider that is an OnceDecider (*approval.Engine) sets a well-formed
// click's mark itself, on Redis in the claim's own round trip
// (approval.Engine.DecideOnce); any other click is marked here first.
// When Decide fails, the click's de-duplication mark is released (Forget):
// nothing was decided, so the same click tried again must be decided, not
// answered as a duplicate. (Some platforms, DingTalk among them, give every
// click of one button by one user the same event id.)
func (r *Router) HandleCardAction(ctx context.Context, a CardAction) (approval.Outcome, error) {
	eng, store := r.decider, r.store
	log := agent.LogWith(r.log, slog.String("channel", a.Channel), slog.String("chat_id", a.ChatID), slog.Any("user_id", a.UserID), slog.String("msg_id", a.MessageID), slog.Any("approval_id", a.ApprovalID))
	r.metrics.Inbound(a.Channel)
	if !r.allowed(a.Channel, a.UserID, a.ChatID) {
		// Nothing is marked or decided; the clicker reads the sentence
		// (the toast or the API's error), however often they click.
		r.refuse(ctx, a.Channel, a.UserID, a.ChatID, log)
		return approval.Outcome{Status: approval.StatusUnauthorized, Content: r.words().refused, IsError: true}, nil
	}
	evtPrefix := "evt:" + a.Channel + ":"
	od, once := eng.(OnceDecider)
	// A well-formed click with an event id is marked by the decision
	// itself (with a redisstore, in the claim's round trip); any other is
	// marked here first, as a click is for a Decider that cannot.
	once = once && a.EventID != "" && a.ApprovalID.Valid() && wellFormedAction(a)
	if !once && r.duplicate(ctx, log, store, evtPrefix, a.EventID) {
		r.metrics.Deduplicated(a.Channel)
		log.Debug("duplicate card event", "event_id", a.EventID)
		return r.currentOutcome(ctx, eng, a.ApprovalID)
	}
	if !a.ApprovalID.Valid() {
		log.Warn("card action with a malformed approval id", "status", approval.StatusMissing)
		return r.outcome(approval.StatusMissing), nil
	}
	if !wellFormedAction(a) {
		log.Warn("card action with a malformed value", "verb", a.Verb, "status", approval.StatusTampered)
		return r.outcome(approval.StatusTampered), nil
	}
	d := approval.Decision{Verb: a.Verb, Actor: a.UserID, Source: sourceOf(a.Channel),
		PayloadSHA256: a.PayloadSHA256, Comment: a.Comment, Channel: a.Channel, ChatID: a.ChatID, Resolution: a.Resolution, Grant: a.Grant,
		Calls: a.Calls, Edits: a.Edits}
	var o approval.Outcome
	var err error
	if once {
		var first bool
		// A failed decision releases its mark itself.
		o, first, err = od.DecideOnce(ctx, a.ApprovalID, d, evtPrefix+a.EventID, r.cfg.DedupTTL)
		if err == nil && !first {
			r.metrics.Deduplicated(a.Channel)
			log.Debug("duplicate card event", "event_id", a.EventID)
			return r.currentOutcome(ctx, eng, a.ApprovalID)
		}
	} else {
		o, err = eng.Decide(ctx, a.ApprovalID, d)
		if err != nil {
			r.release(ctx, log, store, evtPrefix, a.EventID)
		}
	}
	if err != nil {
		if approval.KindOf(err) == errkind.Invalid {
			// What the click carried was refused (an answer that names no
			// option, an edit the tool would not take): the clicker is told.
			log.Info("card decision refused; nothing was run", "err", err)
		} else {
			log.Error("card decision failed; nothing was run", "err", err)
		}
		return approval.Outcome{}, err
	}
	r.metrics.Decision(a.Channel, o.Status)
	log.Info("card decision", "status", o.Status)
	return o, nil
}

// allowed reports whether the channel's allow-list lets user in chat in.
func (r *Router) allowed(channel string, user approval.UserID, chat string) bool {
	a, ok := r.allow[channel]
	return !ok || a.allows(user, chat)
}

// refuse counts and logs a refused message or click, and reports whether
// it is the first of its channel, chat and person in RefusalNoticeInterval
// on this replica: the log line is Info then, Debug otherwise, and a group
// chat is told only then, so a flood of refused messages floods neither a
// group nor the log (the counter counts every one).
func (r *Router) refuse(ctx context.Context, channel string, user approval.UserID, chat string, log *slog.Logger) bool {
	r.metrics.Refused(channel)
	tell := r.refused.due(channel+"\x00"+chat+"\x00"+string(user), r.cfg.Clock.Now())
	level := slog.LevelDebug
	if tell {
		level = slog.LevelInfo
	}
	log.Log(ctx, level, "refused: the sender or chat is not in the channel's allow-list (channels."+channel+".allow)")
	return tell
}

// forgetTimeout bounds the release of a de-duplication mark.
const forgetTimeout = 5 * time.Second

// release removes the de-duplication mark of prefix+id (set by duplicate)
// after the work it guarded failed; a failure is logged (the same event
// then stays a duplicate until the mark's TTL ends).
func (r *Router) release(ctx context.Context, log *slog.Logger, store approval.Store, prefix, id string) {
	if id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), forgetTimeout)
	defer cancel()
	if err := store.Forget(ctx, prefix+id); err != nil {
		log.Warn("releasing the de-duplication mark of a failed decision failed; the same click stays a duplicate until the mark expires",
			"key", prefix+id, "err", err)
	}
}

// currentOutcome is the answer to a repeated click: the final outcome if
// the approval has ended, else already_decided (the first click is being
// decided).
func (r *Router) currentOutcome(ctx context.Context, eng Decider, id approval.ID) (approval.Outcome, error) {
	if !id.Valid() {
		return r.outcome(approval.StatusMissing), nil
	}
	a, err := eng.Get(ctx, id)
	if err != nil {
		if approval.KindOf(err) == errkind.NotFound {
			return r.outcome(approval.StatusMissing), nil
		}
		return approval.Outcome{}, err
	}
	if a.State.Terminal() && a.Outcome != nil {
		return a.Outcome.Clone(), nil
	}
	return r.outcome(approval.StatusAlreadyDecided), nil
}

func (r *Router) outcome(st approval.Status) approval.Outcome {
	return approval.Outcome{Status: st, Content: r.text.Text(st), IsError: st != approval.StatusExecuted && st != approval.StatusReplayed}
}

// sourceOf names where a click came from, for the audit trail.
func sourceOf(channel string) approval.Source {
	switch channel {
	case "web":
		return approval.SourceWeb
	case "api":
		return approval.SourceAPI
	case "cli":
		return approval.SourceCLI
	}
	return approval.SourceCard
}

// notice says a short text in the chat; a failure is logged.
func notice(ctx context.Context, ch Channel, to Target, log *slog.Logger, text string) {
	if err := ch.Send(ctx, to, Outgoing{Kind: OutNotice, Text: text}); err != nil {
		log.Warn("sending a notice failed", "err", err)
	}
}

// routerWords are the router's own sentences in one language.
type routerWords struct {
	waiting, busy, closing, mayApproveFmt, refused, unavailable string
	// calls names a batch: its tool and its number of calls.
	calls string
	// decidedFmt joins "already decided" and what came of it.
	decidedFmt string
}

func (w routerWords) mayApprove(who string) string { return fmt.Sprintf(w.mayApproveFmt, who) }

// words returns the router's sentences in its language.
func (r *Router) words() routerWords { return routerWordsIn(r.cfg.Lang) }

// routerWordsIn returns the router's and the presenter's sentences in
// lang, from the catalogue of package words.
func routerWordsIn(lang string) routerWords {
	l := words.Of(lang)
	return routerWords{
		waiting: words.Text(l, words.RouterWaiting), calls: words.Text(l, words.RouterCalls),
		busy: words.Text(l, words.RouterBusy), closing: words.Text(l, words.RouterClosing),
		mayApproveFmt: words.Text(l, words.RouterMayApprove), refused: words.Text(l, words.RouterRefused),
		decidedFmt: words.Text(l, words.RouterDecided), unavailable: words.Text(l, words.RouterUnavailable),
	}
}

var (
	_ Handler           = (*Router)(nil)
	_ approval.Notifier = (*Presenter)(nil)
	_ agent.Speaker     = (*Presenter)(nil)
)
