package approval

import (
	"context"
	"errors"
	"fmt"
	"go.opentelemetry.io/otel/trace"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/redact"
	"github.com/hitlbot/hitlbot/words"

	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/internal/tracing"
)

// Auditor receives the audit records of the engine. *audit.Log implements it.
type Auditor interface {
	Append(r audit.Record)
}

// Flusher is implemented by an Auditor that queues records before writing
// them (*audit.Log does): Flush returns once every record appended so far
// has been written by every sink. The engine flushes before it runs a tool,
// so an action is never taken without its confirm record on disk or in
// Redis.
type Flusher interface {
	Flush(ctx context.Context) error
}

// Refuser is implemented by an Auditor that may refuse a record (*audit.Log
// does, while its queue is full because a sink is down): TryAppend is
// Append, saying whether the record was taken. An approval one of whose
// records was refused runs nothing.
type Refuser interface {
	TryAppend(r audit.Record) error
}

var (
	_ Auditor = (*audit.Log)(nil)
	_ Flusher = (*audit.Log)(nil)
	_ Refuser = (*audit.Log)(nil)
)

// EngineConfig wires an Engine.
type EngineConfig struct {
	// Store holds the approvals; shared by every replica.
	Store Store
	// Notifier shows and settles cards. Default NopNotifier.
	Notifier Notifier
	// Ended hears of every approval that ends here, after its cards are
	// settled (the agent loop's Resumptions). Nil: nobody.
	Ended EndListener
	// Dispatcher runs approved tool calls.
	Dispatcher Dispatcher
	// Audit receives one record per event. Required: an engine without an
	// audit trail is a configuration error.
	Audit Auditor
	// Clock judges expiry. Default the wall clock.
	Clock clock.Clock
	// Logger receives operational logs. Default slog.Default().
	Logger *slog.Logger
	// Text holds the words for each outcome status. Default English.
	Text OutcomeText
	// Lang is the language ("zh" or "en") of the cause the engine adds to a
	// frozen outcome ("timed out after 2m0s"). Default English.
	Lang string
	// ResultTTL is how long an executed result is kept for idempotent
	// replay. Default 24h.
	ResultTTL time.Duration
	// ExecTimeout bounds one approved tool run. Default 2m.
	ExecTimeout time.Duration
	// SettleTimeout bounds updating the cards of one approval. Default 10s.
	SettleTimeout time.Duration
	// AuditTimeout bounds the wait for the audit trail to write an
	// approval's confirm record before its tool runs (when Audit is a
	// Flusher). When the trail cannot write it in time, the tool is not
	// run and the approval fails. Default 10s.
	AuditTimeout time.Duration
	// Editor checks the arguments an approver edits before approving
	// (Decision.Edits): the agent's tool registry and policy. Nil: edits
	// are refused as invalid.
	Editor EditChecker
	// Tracer makes the spans of each approval: approval.request (with
	// approval.show, the cards), approval.decide (with approval.claim and
	// one execute_tool span per call run), under the span in Request's
	// context and, for a decision, under the request's span wherever it
	// is taken (Approval.Trace). Nil: tracing.Nop, nothing recorded.
	Tracer trace.Tracer
	// PollInterval is how often the engine re-reads the approvals its
	// Waits are blocked on, a backstop for an outcome message lost while
	// the store's subscription reconnected: one goroutine per engine
	// reads them all at once (Store.Outcomes, pollBatch to a call) and
	// wakes the Waits of those that ended. Default 5s.
	PollInterval time.Duration
	// Reminders are the moments of an approval's window (CreatedAt to
	// ExpiresAt), as fractions of it, at which the sweeper reminds the
	// people who may decide a pending approval (Notifier.Remind), once
	// each whichever replica sweeps: ascending, each above 0 and below
	// 1, at most MaxReminders (ValidReminders). Empty: no reminders.
	Reminders []float64
}

// Engine requests, decides and waits on approvals. Several engines (one per
// replica) share one Store; a decision taken on any of them wakes the
// waiter on whichever replica waits.
//
// Lifecycle: NewEngine (no I/O) -> Start (subscribes to outcomes; must
// succeed before Wait is used) -> Request / Decide / Wait / Cancel -> the
// context given to Start ends, which stops the subscription.
type Engine struct {
	cfg    EngineConfig
	log    *slog.Logger
	tracer trace.Tracer

	mu sync.Mutex
	// waiters holds, per approval, the Waits blocked on it (see wait.go);
	// due orders them by expiry for the engine's one timer; kick wakes
	// the engine's watch goroutine when the earliest expiry changed.
	waiters map[ID]*waiting
	due     dueHeap
	kick    chan struct{}
	// early holds the approvals this engine requested whose Wait has not
	// begun: an outcome that arrives before Wait is kept here, so Wait on
	// the requesting replica needs no read of the store. Entries whose
	// Wait never comes are pruned once past their expiry (see remember).
	early   map[ID]*earlyOutcome
	pruneAt int
	// took holds the approvals whose outcome a Wait of this engine has
	// been given, until this engine settles them (settle tells its Ended
	// listener so: the waiting turn claims the outcome itself). An
	// approval settled elsewhere leaves its entry, pruned a minute on
	// (see tookLocked).
	took map[ID]time.Time
	// asking cancels the elicitations this engine waits on (Elicit);
	// noAsking, once EndElicitations ran, refuses new ones.
	asking    map[*context.CancelFunc]struct{}
	noAsking  bool
	tookPrune int
	started   bool
}

// earlyOutcome is an entry of Engine.early.
type earlyOutcome struct {
	expires time.Time
	o       *Outcome // set when the outcome arrived before Wait began
}

// minPrune is the size of Engine.early below which it is never pruned.
const minPrune = 1024

// NewEngine checks cfg and returns an engine; call Start before Wait.
func NewEngine(cfg EngineConfig) (*Engine, error) {
	if cfg.Store == nil || cfg.Dispatcher == nil || cfg.Audit == nil {
		return nil, errors.New("approval.NewEngine: Store, Dispatcher and Audit are required")
	}
	if cfg.Notifier == nil {
		cfg.Notifier = NopNotifier{}
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Text == nil {
		cfg.Text = DefaultOutcomeText("en")
	}
	if cfg.ResultTTL <= 0 {
		cfg.ResultTTL = 24 * time.Hour
	}
	if cfg.ExecTimeout <= 0 {
		cfg.ExecTimeout = 2 * time.Minute
	}
	if cfg.SettleTimeout <= 0 {
		cfg.SettleTimeout = 10 * time.Second
	}
	if cfg.AuditTimeout <= 0 {
		cfg.AuditTimeout = 10 * time.Second
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 5 * time.Second
	}
	if !ValidReminders(cfg.Reminders) {
		return nil, fmt.Errorf("approval.NewEngine: reminders %v: at most %d fractions of the window, each above 0 and below 1, ascending", cfg.Reminders, MaxReminders)
	}
	return &Engine{cfg: cfg, log: cfg.Logger, tracer: tracing.Or(cfg.Tracer), waiters: map[ID]*waiting{}, kick: make(chan struct{}, 1), early: map[ID]*earlyOutcome{}, pruneAt: minPrune,
		took: map[ID]time.Time{}, tookPrune: minPrune}, nil
}

// Start subscribes to the outcomes published through the store, until ctx ends.
func (e *Engine) Start(ctx context.Context) error {
	var err error
	if ws, ok := e.cfg.Store.(WantSubscriber); ok {
		err = ws.SubscribeWanted(ctx, e.wants, e.deliver)
	} else {
		err = e.cfg.Store.Subscribe(ctx, e.deliver)
	}
	if err != nil {
		return fmt.Errorf("approval: subscribe to outcomes: %w", err)
	}
	e.mu.Lock()
	e.started = true
	e.mu.Unlock()
	// The first timer is set before Start returns, so that a test's fake
	// clock moved after Start fires it.
	go e.watch(ctx, e.cfg.Clock.NewTimer(e.cfg.PollInterval))
	return nil
}

// Text returns the engine's outcome words.
func (e *Engine) Text() OutcomeText { return e.cfg.Text }

// Store returns the engine's store.
func (e *Engine) Store() Store { return e.cfg.Store }

// waited reports whether a Wait of this engine takes (or took) the
// outcome of id: one is blocked on it, it is kept for the Wait to come
// (early), or a Wait was given it (took, which this forgets).
func (e *Engine) waited(id ID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, took := e.took[id]
	delete(e.took, id)
	return took || e.early[id] != nil || e.waiters[id] != nil
}

// tookLocked notes that a Wait of this engine was given the outcome of id
// (see Engine.took); entries older than a minute are pruned whenever the
// map has doubled since the last pruning. e.mu is held.
func (e *Engine) tookLocked(id ID) {
	now := e.cfg.Clock.Now()
	e.took[id] = now
	if len(e.took) < e.tookPrune {
		return
	}
	for k, at := range e.took {
		if now.Sub(at) > time.Minute {
			delete(e.took, k)
		}
	}
	e.tookPrune = max(minPrune, 2*len(e.took))
}

// wants reports whether an outcome of approval id has somewhere to go in
// this engine: a Wait blocked on it, or an approval this engine requested
// whose Wait has not begun (see deliver). The others are not decoded.
func (e *Engine) wants(id ID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.early[id] != nil || e.waiters[id] != nil
}

// deliver hands an outcome to the local waiters of its approval, or keeps
// it for the Wait to come when this engine requested the approval.
func (e *Engine) deliver(id ID, o Outcome) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if eo := e.early[id]; eo != nil && eo.o == nil {
		eo.o = &o
	}
	if w := e.waiters[id]; w != nil {
		e.endLocked(w, o)
	}
}

// WaitingCount reports how many approvals have a Wait blocked on them in
// this process.
func (e *Engine) WaitingCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.waiters)
}

// Waiting reports whether a Wait on this process is blocked on id.
func (e *Engine) Waiting(id ID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.waiters[id] != nil
}

// outcome words an outcome of status st that did not simply succeed:
// Content is its status sentence, then ": " and detail when there is one.
func (e *Engine) outcome(st Status, detail string) Outcome {
	o := Outcome{Status: st, Content: e.cfg.Text.Text(st), Detail: detail}
	if detail != "" {
		o.Content += ": " + detail
	}
	switch st {
	case StatusExecuted, StatusReplayed:
	default:
		o.IsError = true
	}
	return o
}

// noted words an outcome of status st whose sentence is followed by a
// note in parentheses (who may decide, how the approval ended): Content
// is "<sentence> (<note>)", Detail the note.
func (e *Engine) noted(st Status, note string) Outcome {
	o := e.outcome(st, "")
	if note != "" {
		o.Content += " (" + note + ")"
		o.Detail = note
	}
	return o
}

// Request is the input of Engine.Request.
type Request struct {
	// ID, when set, is the new approval's id: NewID(Session), made by a
	// caller that records it before the card can be shown (the agent saves
	// its turn first). Empty: the engine makes one.
	ID ID
	// Session, Channel and ChatID locate the conversation.
	Session SessionKey
	Channel string
	ChatID  string
	// Requester is the person whose message led to the calls;
	// RequesterName their name as the platform gave it (optional).
	Requester     UserID
	RequesterName string
	// Group reports that the chat is a group chat (Approval.Group): the
	// verdict's privacy applies there only.
	Group bool
	// Calls are the tool calls (arguments as the model gave them; the
	// engine canonicalizes and hashes them).
	Calls []Call
	// Verdict is the policy's answer (risk, approvers, timeout, reason).
	Verdict Verdict
	// Summary and Preview describe the calls for the card; Preview must
	// already be sanitised.
	Summary string
	Preview string
	// SummaryZH and PreviewZH are the same in Chinese, when the tools said
	// them in both languages.
	SummaryZH string
	PreviewZH string
	// About says what the call does for its approver, in both languages
	// (Approval.About); zero when the tool says nothing.
	About Words
	// Standing is the standing rule the card offers (Approval.Standing);
	// nil: none.
	Standing *Standing
	// IdempotencyKey names the effect (e.g. the turn and call ids); empty
	// disables replay.
	IdempotencyKey string
}

// Request stores a new pending approval, audits it and shows its card. If
// the card cannot be shown the approval is cancelled, so that no approval
// is left that nobody can answer. A pending approval of the same session is
// superseded.
func (e *Engine) Request(ctx context.Context, r Request) (_ *Approval, err error) {
	const op = "approval.Request"
	if len(r.Calls) == 0 {
		return nil, E(op, errkind.Invalid, "", errors.New("no calls"))
	}
	if r.Session == "" {
		return nil, E(op, errkind.Invalid, "", errors.New("no session"))
	}
	calls := make([]Call, len(r.Calls))
	for i, c := range r.Calls {
		args, hash, err := HashCall(c.Tool, c.Args)
		if err != nil {
			return nil, E(op, errkind.Invalid, "", fmt.Errorf("call %d (%s): %w", i, c.Tool, err))
		}
		c.Args, c.PayloadSHA256 = args, hash
		if c.Definition != "" {
			c.PayloadSHA256 = c.Hash()
		}
		calls[i] = c
	}
	timeout := r.Verdict.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	id := r.ID
	if id == "" {
		id = NewID(r.Session)
	} else if shard, ok := id.Shard(); !ok || shard != Shard(r.Session) {
		return nil, E(op, errkind.Invalid, "", fmt.Errorf("id %q is not an approval id of session %q", id, r.Session))
	}
	now := e.cfg.Clock.Now().UTC()
	span := tracing.Span
	if !tracing.Off(e.tracer) {
		ctx, span = e.tracer.Start(ctx, "approval.request", trace.WithTimestamp(now), trace.WithAttributes(
			tracing.ApprovalID.String(string(id)), tracing.ApprovalRisk.String(r.Verdict.Risk.String()),
			tracing.ToolName.String(calls[0].Tool), tracing.PayloadSHA256.String(BatchHash(calls)), tracing.Channel.String(r.Channel)))
	}
	defer func() { e.endSpan(span, err) }()
	a := &Approval{
		ID:             id,
		Session:        r.Session,
		Channel:        r.Channel,
		ChatID:         r.ChatID,
		Requester:      r.Requester,
		RequesterName:  r.RequesterName,
		Approvers:      r.Verdict.Approvers,
		Calls:          calls,
		PayloadSHA256:  BatchHash(calls),
		Risk:           r.Verdict.Risk,
		Summary:        r.Summary,
		Preview:        r.Preview,
		Reason:         r.Verdict.Reason,
		ReasonZH:       r.Verdict.ReasonZH,
		SummaryZH:      r.SummaryZH,
		PreviewZH:      r.PreviewZH,
		About:          r.About.EN,
		AboutZH:        r.About.ZH,
		CreatedAt:      now,
		ExpiresAt:      now.Add(timeout),
		IdempotencyKey: r.IdempotencyKey,
		State:          StatePending,
		Privacy:        r.Verdict.Privacy,
		Group:          r.Group,
		Trace:          tracing.FromContext(ctx),
	}
	if a.Approvers.Mode == "" {
		a.Approvers.Mode = ApproverRequester
	}
	if p := r.Verdict.ApproveIn; p != nil && (p.Channel != a.Channel || p.ChatID != a.ChatID) {
		// The approvers' chat (approve_in); asked in that very chat, it
		// is the approval's own.
		in := *p
		a.ApproveIn = &in
	}
	if a.ApproveIn != nil && a.ApproveIn.Direct && (a.Approvers.Mode != ApproverUsers || len(a.Approvers.Users) == 0) {
		// 1:1 to the people the rule lists, and it lists nobody.
		return nil, E(op, errkind.Invalid, "", fmt.Errorf("%w: approve_in direct needs approvers of mode users (rule %s)", ErrApproversUnreachable, a.Approvers.DescribeIn("en")))
	}
	if len(e.cfg.Reminders) > 0 {
		a.Reminders = append([]float64(nil), e.cfg.Reminders...)
	}
	if len(r.Verdict.Escalation) > 0 {
		a.Escalation = append([]Escalation(nil), r.Verdict.Escalation...)
	}
	if !a.Approvers.Reachable(a.Requester) {
		// Fail closed, and say so: a card nobody can ever complete would
		// only wait for its expiry.
		return nil, E(op, errkind.Invalid, "", fmt.Errorf("%w (%d needed, rule %s)", ErrQuorumUnreachable, a.Approvers.Needed(), a.Approvers.DescribeIn("en")))
	}
	if r.Verdict.Grantable && r.Verdict.Risk == RiskMedium {
		a.GrantWindow = r.Verdict.GrantWindow
	}
	if r.Standing != nil {
		if err := r.Standing.Valid(); err != nil {
			return nil, E(op, errkind.Invalid, "", err)
		}
		if a.Risk != RiskHigh && len(calls) == 1 {
			// A HIGH call always asks (rule 4): no standing rule for it.
			st := r.Standing.Clone()
			a.Standing = &st
		}
	}
	// Remembered before the Put, so that no outcome of it can arrive
	// unseen before its Wait begins.
	e.remember(a.ID, a.ExpiresAt)
	old, err := e.cfg.Store.Put(ctx, a, e.outcome(StatusSuperseded, ""))
	if err != nil {
		e.forget(a.ID)
		return nil, err
	}
	e.audit(a, audit.EventWriteRequest, a.Requester, "", "", "")
	e.log.Info("approval requested", "approval_id", a.ID, "tool", a.Tool(), "risk", a.Risk.String(), "chat_id", a.ChatID, "user_id", a.Requester)
	if old != nil {
		e.audit(old, audit.EventSupersede, "", SourceSystem, StatusSuperseded, "")
		e.settle(old, *old.Outcome)
	}
	sctx, show := ctx, tracing.Span
	if !tracing.Off(e.tracer) {
		sctx, show = e.tracer.Start(ctx, "approval.show", trace.WithTimestamp(e.cfg.Clock.Now()))
	}
	cards, err := e.cfg.Notifier.Show(sctx, a.Clone())
	if !tracing.Off(e.tracer) {
		show.SetAttributes(tracing.Cards.Int(len(cards)))
	}
	e.endSpan(show, err)
	if err != nil {
		e.log.Warn("showing the approval failed; cancelling it", "approval_id", a.ID, "err", err)
		defer e.forget(a.ID) // nobody will wait on it
		o := e.outcome(StatusCancelled, words.In(e.cfg.Lang, words.CancelNotShown))
		if c, ok, cerr := e.cfg.Store.Cancel(context.WithoutCancel(ctx), a.ID, o, e.cfg.Clock.Now().UTC()); cerr == nil && ok {
			e.audit(c, audit.EventCancel, "", SourceSystem, StatusCancelled, "card could not be shown")
		}
		return nil, E(op, errkind.Unavailable, a.ID, fmt.Errorf("show approval: %w", err))
	}
	if len(cards) > 0 {
		rec, err := e.cfg.Store.AddCards(ctx, a.ID, cards)
		if err != nil {
			// The card is out; without its reference it cannot be settled
			// from another replica, but the approval itself is sound.
			e.log.Warn("recording the approval's cards failed", "approval_id", a.ID, "err", err)
		}
		if rec == nil { // still pending or claimed (or not recorded)
			a.Cards = append(a.Cards, cards...)
			return a, nil
		}
		if rec.State == StatePending && len(rec.Votes) > 0 {
			// Votes towards the quorum came while the card was being
			// sent: the cards they redrew did not include these.
			e.progress(rec)
		}
		if rec.State.Terminal() && rec.Outcome != nil {
			// A decision (a fast click, a typed reply, another replica)
			// ended the approval while its card was being sent, and
			// settled the cards it knew of: none of these. Settle them
			// here, so no card keeps live buttons (and only them: the
			// others are settled already). The decision told the Ended
			// listener; telling it again would resume the turn twice.
			e.settleCards(withCards(rec, cards), *rec.Outcome)
		}
		return rec, nil
	}
	return a, nil
}

// withCards is a copy of a that names cards alone: what a caller settles
// when a decision settled a's other cards already.
func withCards(a *Approval, cards []CardRef) *Approval {
	c := a.Clone()
	c.Cards = append([]CardRef(nil), cards...)
	return c
}

// remember notes an approval this engine is about to request (see
// Engine.early). The map is pruned of entries past their expiry whenever
// it has doubled since the last pruning, so its upkeep stays O(1) per
// request and its size bounded by the approvals still pending.
func (e *Engine) remember(id ID, expires time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.early[id] = &earlyOutcome{expires: expires}
	if len(e.early) < e.pruneAt {
		return
	}
	now := e.cfg.Clock.Now()
	for k, eo := range e.early {
		// Past expiry, a Wait would read the store anyway; keep a minute
		// of slack for a Wait that is about to begin.
		if now.After(eo.expires.Add(time.Minute)) {
			delete(e.early, k)
		}
	}
	e.pruneAt = max(minPrune, 2*len(e.early))
}

// forget drops an approval from Engine.early.
func (e *Engine) forget(id ID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.early, id)
}

// claimTimeout bounds the store round trip of one claim.
const claimTimeout = 10 * time.Second

// MaxNoteRunes bounds what a person writes with a decision (a rejection's
// comment, a cancellation's reason) as the record, the outcome and the
// audit trail keep it.
const MaxNoteRunes = 500

// Decide takes one person's decision on an approval. The returned Outcome
// says what happened; an error means the store could not be reached and
// nothing was run (fail closed). The decision's comment is cleaned first
// (redact.Clean: no control characters, secrets redacted, at most
// MaxNoteRunes runes): that is what the record, the outcome and the audit
// trail keep. A decision with Verb Resolve settles a frozen approval
// instead (see Resolution and resolve.go).
func (e *Engine) Decide(ctx context.Context, id ID, d Decision) (Outcome, error) {
	o, _, err := e.decide(ctx, id, d, "", 0)
	return o, err
}

// DecideOnce is Decide for a decision that carries a de-duplication key (a
// click's event id): the first decision with key is taken; a later one
// with the same key within ttl is a duplicate, and nothing is decided
// (first false, the Outcome zero). Where the store is a MarkClaimer and d
// is a plain approve or reject (no Calls, no Edits), the claim itself sets
// the mark, in its own round trip; otherwise Seen marks it first (a store
// that cannot tell is logged and the decision goes on, as a duplicate
// check that cannot answer must not stop a decision). When the decision
// fails (an error: nothing was decided), the mark is released, so that the
// same decision tried again is taken, not answered as a duplicate.
func (e *Engine) DecideOnce(ctx context.Context, id ID, d Decision, key string, ttl time.Duration) (o Outcome, first bool, err error) {
	if key == "" || ttl <= 0 {
		o, err = e.Decide(ctx, id, d)
		return o, true, err
	}
	mc, inClaim := e.cfg.Store.(MarkClaimer)
	inClaim = inClaim && id.Valid() && d.Calls == nil && d.Edits == nil && (d.Verb == Approve || d.Verb == Reject)
	if inClaim {
		o, first, err = e.decide(ctx, id, d, key, ttl)
	} else {
		first, err = e.cfg.Store.Seen(ctx, key, ttl)
		if err != nil {
			e.log.Warn("de-duplication unavailable; deciding anyway", "approval_id", id, "key", key, "err", err)
			first = true
		}
		if !first {
			return Outcome{}, false, nil
		}
		o, err = e.Decide(ctx, id, d)
	}
	if err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), forgetTimeout)
		defer cancel()
		var ferr error
		if inClaim {
			ferr = mc.ForgetClaimMark(rctx, id, key)
		} else {
			ferr = e.cfg.Store.Forget(rctx, key)
		}
		if ferr != nil {
			e.log.Warn("releasing the de-duplication mark of a failed decision failed; the same decision stays a duplicate until the mark expires",
				"approval_id", id, "key", key, "err", ferr)
		}
	}
	return o, first, err
}

// forgetTimeout bounds the release of a de-duplication mark.
const forgetTimeout = 5 * time.Second

// decide is Decide; with a mark (key, for ttl), the claim sets it, and a
// duplicate returns first false.
func (e *Engine) decide(ctx context.Context, id ID, d Decision, mark string, markTTL time.Duration) (Outcome, bool, error) {
	o, err := e.decideMarked(ctx, id, d, mark, markTTL)
	if errors.Is(err, errDuplicate) {
		return Outcome{}, false, nil
	}
	return o, true, err
}

// errDuplicate is decideMarked's answer to a claim that found its mark set.
var errDuplicate = errors.New("duplicate decision")

func (e *Engine) decideMarked(ctx context.Context, id ID, d Decision, mark string, markTTL time.Duration) (o Outcome, err error) {
	started := e.cfg.Clock.Now()
	if !id.Valid() {
		return e.outcome(StatusMissing, ""), nil
	}
	d.Comment = redact.Clean(d.Comment, MaxNoteRunes)
	if early, err := e.checkAlways(ctx, id, d); err != nil || early != nil {
		if early != nil {
			return *early, nil
		}
		return Outcome{}, err
	}
	var verdicts Verdicts
	var edited *Approval
	if d.Edits != nil {
		var early *Outcome
		var err error
		if d, edited, early, err = e.editDecision(ctx, id, d); err != nil || early != nil {
			if early != nil {
				return *early, nil
			}
			return Outcome{}, err
		}
	} else if d.Calls != nil {
		var early *Outcome
		var err error
		if d, verdicts, early, err = e.perCall(ctx, id, d); err != nil || early != nil {
			if early != nil {
				return *early, nil
			}
			return Outcome{}, err
		}
	}
	intent := IntentApprove
	switch d.Verb {
	case Approve:
	case Reject:
		intent = IntentReject
	case Resolve:
		return e.resolve(ctx, id, d)
	default:
		return Outcome{}, E("approval.Decide", errkind.Invalid, id, fmt.Errorf("unknown verb %q", d.Verb))
	}
	// The claim does not end with the caller (a click's HTTP request may
	// be cancelled): a claim that ran but whose caller went away would
	// leave the approval claimed with nobody to run it.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	claimed := e.cfg.Clock.Now()
	res, err := e.cfg.Store.Claim(cctx, id, ClaimRequest{
		Intent:        intent,
		PayloadSHA256: d.PayloadSHA256,
		Actor:         d.Actor,
		Source:        d.Source,
		Comment:       d.Comment,
		Verdicts:      verdicts,
		Edited:        edited,
		Channel:       d.Channel,
		ChatID:        d.ChatID,
		Grant:         d.Grant,
		Now:           e.cfg.Clock.Now().UTC(),
		Outcome:       e.endOutcome(d),
		Mark:          mark,
		MarkTTL:       markTTL,
	})
	ctx, span := e.decisionSpans(ctx, id, d, res.Approval, res.Code, err, started, claimed)
	defer func() {
		if !tracing.Off(e.tracer) {
			span.SetAttributes(tracing.ApprovalStatus.String(string(o.Status)))
		}
		e.endSpan(span, err)
	}()
	if err != nil {
		e.log.Error("claim failed; nothing was run", "approval_id", id, "user_id", d.Actor, "err", err)
		return Outcome{}, err
	}
	a := res.Approval
	switch res.Code {
	case ClaimDuplicate:
		if mark == "" {
			return Outcome{}, E("approval.Decide", errkind.Internal, id, errors.New("a claim without a mark answered duplicate"))
		}
		return Outcome{}, errDuplicate
	case ClaimMissing:
		return e.outcome(StatusMissing, ""), nil
	case ClaimUnauthorized:
		return e.unauthorized(a, d, ""), nil
	case ClaimTampered:
		e.audit(a, audit.EventTampered, d.Actor, d.Source, StatusTampered, "payload hash mismatch")
		return e.outcome(StatusTampered, ""), nil
	case ClaimAlreadyClaimed:
		note := ""
		if a.Outcome != nil {
			note = string(a.Outcome.Status)
			if a.Outcome.Status == StatusCancelled && a.Outcome.Detail != "" {
				// Why it was withdrawn (a hook that gave up: the agent
				// was told no), so a late decider knows what stands.
				note += ": " + a.Outcome.Detail
			}
		} else if a.State == StateClaimed {
			note = "running"
		}
		return e.noted(StatusAlreadyDecided, note), nil
	case ClaimSuperseded, ClaimExpired:
		st, ev := StatusSuperseded, audit.EventSupersede
		if res.Code == ClaimExpired {
			st, ev = StatusExpired, audit.EventExpire
		}
		if res.Ended {
			e.audit(a, ev, "", SourceSystem, st, "")
			e.settle(a, *a.Outcome)
			return *a.Outcome, nil
		}
		return e.outcome(st, ""), nil
	case ClaimVoted:
		e.auditNote(a, audit.EventVote, d.Actor, d.Source, StatusAwaitingQuorum, "", d.Comment)
		e.log.Info("approval counted towards the quorum", "approval_id", id, "user_id", d.Actor,
			"approvals", len(a.Votes), "quorum", a.Approvers.Needed())
		e.progress(a)
		return e.quorumOutcome(a, words.OutcomeAwaitingQuorum), nil
	case ClaimVotedBefore:
		return e.quorumOutcome(a, words.QuorumVotedBefore), nil
	case ClaimOK:
	default:
		return Outcome{}, E("approval.Decide", errkind.Internal, id, fmt.Errorf("unknown claim code %q", res.Code))
	}
	if intent == IntentReject {
		e.auditNote(a, audit.EventReject, d.Actor, d.Source, StatusRejected, "", d.Comment)
		e.log.Info("approval rejected", "approval_id", id, "user_id", d.Actor, "status", StatusRejected)
		e.settle(a, *a.Outcome)
		return *a.Outcome, nil
	}
	e.auditGrant(a, d.Actor, d.Source, d.Comment, d.Grant.For(a))
	e.auditVerdicts(a)
	if res.Unreplicated {
		// The claim may not survive a failover of the store: running the
		// tool now could run it twice. Nothing runs; the approval fails.
		return e.notRun(ctx, a, words.NotRunUnreplicated, "claim not replicated; not run"), nil
	}
	return e.execute(ctx, a, res.Cached), nil
}

// notRun ends a claimed approval as failed without running any of its
// calls: why (a sentence of the catalogue) is said to the people, errText
// recorded in the audit trail.
func (e *Engine) notRun(ctx context.Context, a *Approval, why words.Key, errText string) Outcome {
	results := make([]Result, len(a.Calls))
	for i, c := range a.Calls {
		if !a.Verdicts.Approved(i) {
			results[i] = declinedResult(a, c)
			continue
		}
		results[i] = Result{Tool: c.Tool, CallID: c.CallID, Status: StatusFailed, IsError: true, Content: words.In(e.cfg.Lang, why)}
	}
	o := e.outcome(StatusFailed, joinResults(results))
	o.Results, o.DecidedBy = results, a.DecidedBy
	return e.complete(context.WithoutCancel(ctx), a, StateFailed, o, audit.EventExecuteFailed, errText)
}

// endOutcome builds the outcomes a claim may end an approval with.
func (e *Engine) endOutcome(d Decision) func(Status) Outcome {
	return func(st Status) Outcome {
		detail := ""
		if st == StatusRejected {
			detail = string(d.Actor)
			if d.Comment != "" {
				detail += ` ("` + d.Comment + `")`
			}
		}
		o := e.outcome(st, detail)
		if st == StatusRejected {
			o.DecidedBy, o.Comment = d.Actor, d.Comment
		}
		return o
	}
}

// execute runs a claimed approval's calls, records the result and settles
// the cards. It runs on the decision path, detached from the caller's
// cancellation, so a click whose HTTP request ends still completes.
func (e *Engine) execute(ctx context.Context, a *Approval, cached *Outcome) Outcome {
	ctx = context.WithoutCancel(ctx)
	if cached != nil {
		o := cached.Clone()
		o.Status = StatusReplayed
		o.IsError = false
		o.DecidedBy = a.DecidedBy
		for i := range o.Results {
			o.Results[i].Status = StatusReplayed
		}
		e.complete(ctx, a, StateExecuted, o, audit.EventReplay, "")
		return o
	}
	if err := e.auditWritten(ctx, a); err != nil {
		// No action without its record: the confirm record (and every
		// one before it) must be written before the tool runs.
		e.log.Error("the audit trail could not be written; the tool is not run", "approval_id", a.ID, "tool", a.Tool(), "err", err)
		return e.notRun(ctx, a, words.NotRunNoAudit, "audit trail unavailable; not run")
	}
	results := make([]Result, 0, len(a.Calls))
	state := StateExecuted
	var errText string
	for i, c := range a.Calls {
		if !a.Verdicts.Approved(i) {
			results = append(results, declinedResult(a, c))
			continue
		}
		if state == StateFrozen {
			results = append(results, Result{Tool: c.Tool, CallID: c.CallID, Status: StatusFrozen, IsError: true,
				Content: frozenCauseText(e.cfg.Lang, causeEarlier)})
			continue
		}
		cctx, span := e.toolSpan(ctx, a, c)
		r, err := e.dispatch(cctx, a, c)
		e.endTool(span, r, err)
		switch {
		case err != nil && errors.Is(err, ErrToolChanged):
			// The server changed the tool between the card and the
			// decision: the decision approved another tool than the
			// one that would run. Refused as tampered; nothing runs.
			e.audit(a, audit.EventTampered, a.DecidedBy, SourceSystem, StatusTampered, "tool definition changed: "+c.Tool)
			e.log.Warn("the tool changed after its card was shown; not run", "approval_id", a.ID, "tool", c.Tool)
			r = Result{Tool: c.Tool, CallID: c.CallID, Status: StatusFailed, IsError: true, Content: words.In(e.cfg.Lang, words.NotRunToolChanged, c.Tool)}
			if state == StateExecuted {
				state, errText = StateFailed, "tool definition changed; not run"
			}
		case err != nil && errors.Is(err, ErrNotRun):
			r = Result{Tool: c.Tool, CallID: c.CallID, Status: StatusFailed, IsError: true, Content: err.Error()}
			if state == StateExecuted {
				state, errText = StateFailed, "tool did not run"
			}
		case err != nil:
			e.log.Error("tool effect unknown; freezing the approval", "approval_id", a.ID, "tool", c.Tool, "err", err)
			// The outcome says the frozen sentence once (below); the call
			// says why, never the tool's own error (it may hold a secret).
			r = Result{Tool: c.Tool, CallID: c.CallID, Status: StatusFrozen, IsError: true, Content: e.frozenCause(err)}
			state, errText = StateFrozen, "tool effect unknown"
		case r.IsError:
			r.Status = StatusFailed
			if state == StateExecuted {
				state, errText = StateFailed, "tool reported a failure"
			}
		default:
			r.Status = StatusExecuted
		}
		r.Edited = c.Edited
		results = append(results, r)
	}
	st := map[State]Status{StateExecuted: StatusExecuted, StateFailed: StatusFailed, StateFrozen: StatusFrozen}[state]
	ev := map[State]audit.Event{StateExecuted: audit.EventExecute, StateFailed: audit.EventExecuteFailed, StateFrozen: audit.EventExecuteUnknown}[state]
	o := Outcome{Status: st, Content: joinResults(results)}
	if st != StatusExecuted {
		o = e.outcome(st, o.Content)
	}
	o.Results, o.DecidedBy = results, a.DecidedBy
	if a.Verdicts.Mixed() {
		o.Comment = a.Comment
	}
	o = e.complete(ctx, a, state, o, ev, errText)
	e.auditResults(a, o)
	switch {
	case o.Status != StatusExecuted:
	case a.Grant.For(a) == GrantSession:
		e.grant(ctx, a)
	case a.Grant.For(a) == GrantAlways:
		e.stand(ctx, a)
	}
	return o
}

// complete records the final state. An executed result is cached in the
// same step; if that fails the approval is frozen instead, because the tool
// ran but its replay is not guaranteed.
func (e *Engine) complete(ctx context.Context, a *Approval, state State, o Outcome, ev audit.Event, errText string) Outcome {
	if a.retrying {
		o.Resolution = ResolveRetry
	}
	ttl := time.Duration(0)
	if state == StateExecuted && !a.Verdicts.Mixed() {
		// (a per-call decision's result is not cached: a replay of it
		// would answer the declined calls as run)
		ttl = e.cfg.ResultTTL
	}
	cards, err := e.cfg.Store.Complete(ctx, a.ID, state, o, ttl)
	if err != nil && KindOf(err) == errkind.Conflict {
		// The sweeper froze this claim as stale (staleAfter) while the
		// tool was still running: the cards already say frozen. Record
		// in the audit trail what the run did after all.
		e.log.Error("the tool finished after its approval was frozen as stale; its result is audited but not stored", "approval_id", a.ID,
			"tool", a.Tool(), "status", o.Status, "err", err)
		a.State, a.Outcome = state, &o
		e.audit(a, ev, a.DecidedBy, a.DecidedVia, o.Status, joinErr(errText, "finished after the approval was frozen as stale"))
		return o
	}
	if err == nil {
		// Cards added after the claim (their send raced the decision)
		// are settled too.
		a.Cards = cards
	} else {
		e.log.Error("recording the result failed; freezing the approval", "approval_id", a.ID, "status", o.Status, "err", err)
		results, resolution := o.Results, o.Resolution
		o = e.outcome(StatusFrozen, frozenCauseText(e.cfg.Lang, causeNotRecorded))
		o.Results, o.DecidedBy, o.Resolution = results, a.DecidedBy, resolution
		if cards, ferr := e.cfg.Store.Complete(ctx, a.ID, StateFrozen, o, 0); ferr == nil {
			a.Cards = cards
		} else {
			// The record stays claimed: no decision can run it again, and
			// an operator sees it as claimed, not executed.
			e.log.Error("freezing the approval failed too; it stays claimed", "approval_id", a.ID, "err", ferr)
			e.deliver(a.ID, o)
		}
		state, ev, errText = StateFrozen, audit.EventExecuteUnknown, "result not recorded"
	}
	a.State, a.Outcome = state, &o
	e.audit(a, ev, a.DecidedBy, a.DecidedVia, o.Status, errText)
	e.log.Info("approval decided", "approval_id", a.ID, "tool", a.Tool(), "user_id", a.DecidedBy, "status", o.Status)
	e.settle(a, o)
	return o
}

// auditWritten waits until the audit trail has written every record so
// far, when the Auditor queues them (Flusher), for at most AuditTimeout.
// A record of a the trail refused (Refuser) will never be written: that is
// an error at once.
func (e *Engine) auditWritten(ctx context.Context, a *Approval) error {
	if a.auditRefused {
		return E("approval.execute", errkind.Unavailable, a.ID, errors.New("an audit record of the approval was refused (the audit queue is full)"))
	}
	f, ok := e.cfg.Audit.(Flusher)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.AuditTimeout)
	defer cancel()
	return f.Flush(ctx)
}

// joinErr joins two error texts of an audit record.
func joinErr(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// dispatch runs one call with a timeout, turning a panic into an error of
// unknown effect.
func (e *Engine) dispatch(ctx context.Context, a *Approval, c Call) (r Result, err error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.ExecTimeout)
	defer cancel()
	// Who the call runs for and where: a tool that needs a person while
	// it runs asks there (Elicit).
	ctx = WithOrigin(ctx, a.origin())
	// What the tool says back is in the engine's language (words.LangOf).
	ctx = words.WithLang(ctx, words.Of(e.cfg.Lang))
	defer func() {
		if p := recover(); p != nil {
			err = &runError{cause: causeCrashed, err: fmt.Errorf("tool %s panicked: %v\n%s", c.Tool, p, debug.Stack())}
		}
	}()
	r, err = e.cfg.Dispatcher.Dispatch(ctx, c)
	r.Tool, r.CallID = c.Tool, c.CallID
	if err != nil && !errors.Is(err, ErrNotRun) && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = &runError{cause: causeTimeout, err: err}
	}
	return r, err
}

// runError is a dispatch error the engine knows the cause of: its own
// ExecTimeout ended the run, or the tool panicked.
type runError struct {
	cause frozenCause
	err   error
}

func (e *runError) Error() string { return e.err.Error() }
func (e *runError) Unwrap() error { return e.err }

// frozenCause says why a call of unknown effect froze, in words safe to
// show: the cause, never err's text (logged instead).
func (e *Engine) frozenCause(err error) string {
	var re *runError
	switch {
	case errors.As(err, &re) && re.cause == causeTimeout:
		return frozenCauseText(e.cfg.Lang, causeTimeout, e.cfg.ExecTimeout)
	case errors.As(err, &re):
		return frozenCauseText(e.cfg.Lang, re.cause)
	case errors.Is(err, context.DeadlineExceeded):
		return frozenCauseText(e.cfg.Lang, causeToolTimeout)
	}
	return frozenCauseText(e.cfg.Lang, causeError)
}

func joinResults(rs []Result) string {
	if len(rs) == 1 {
		return rs[0].Content
	}
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "[%d] %s (%s): %s", i+1, r.Tool, r.Status, r.Content)
	}
	return b.String()
}

// expire tries to end an approval whose time is up. done reports that o is
// the final outcome; otherwise Wait goes on (after retry, when positive).
func (e *Engine) expire(ctx context.Context, id ID) (o Outcome, done bool, retry time.Duration) {
	o, _, done, retry = e.expireRecord(ctx, id)
	return o, done, retry
}

// expireRecord is expire, also returning the record the claim read (nil
// when the store failed or the approval is missing).
func (e *Engine) expireRecord(ctx context.Context, id ID) (o Outcome, a *Approval, done bool, retry time.Duration) {
	now := e.cfg.Clock.Now().UTC()
	res, err := e.cfg.Store.Claim(ctx, id, ClaimRequest{Intent: IntentExpire, Now: now, Source: SourceSystem,
		Outcome: func(st Status) Outcome { return e.outcome(st, "") }})
	if err != nil {
		e.log.Warn("expiring the approval failed; retrying", "approval_id", id, "err", err)
		return Outcome{}, nil, false, e.cfg.PollInterval
	}
	a = res.Approval
	switch res.Code {
	case ClaimMissing:
		return e.outcome(StatusMissing, ""), nil, true, 0
	case ClaimNotYet:
		return Outcome{}, a, false, a.ExpiresAt.Sub(now)
	case ClaimExpired:
		if res.Ended {
			e.audit(a, audit.EventExpire, "", SourceSystem, StatusExpired, "")
			e.log.Info("approval expired", "approval_id", id, "tool", a.Tool(), "status", StatusExpired)
			e.settle(a, *a.Outcome)
		}
		return *a.Outcome, a, true, 0
	}
	if a.State.Terminal() && a.Outcome != nil {
		return *a.Outcome, a, true, 0
	}
	// Claimed: a decision won the race and its tool is running; its
	// outcome will arrive (or the poll will find it). If the process
	// running it died, the sweeper freezes it (staleClaim).
	return Outcome{}, a, false, 0
}

// staleSlack is added to the longest a claimed approval's run may take
// before the sweeper takes its claim for abandoned.
const staleSlack = time.Minute

// staleAfter is how long after its claim an approval may stay claimed
// before the sweeper freezes it: every call's ExecTimeout, the claim's own
// bound, and a minute of slack for clocks and a slow store.
func (e *Engine) staleAfter(a *Approval) time.Duration {
	return time.Duration(max(len(a.Calls), 1))*e.cfg.ExecTimeout + claimTimeout + staleSlack
}

// freezeStale ends a claim nobody completed: the process that claimed the
// approval died while running its tool, or lost the claim's reply after
// every retry. Whether the tool ran is unknown, so the approval is frozen
// (never re-run by itself), audited as execute_unknown, and its cards
// settled; a Wait on it wakes with the frozen outcome. It reports whether
// the approval has ended (by this call or, racing it, by its executor).
func (e *Engine) freezeStale(ctx context.Context, a *Approval) bool {
	o := e.outcome(StatusFrozen, frozenCauseText(e.cfg.Lang, causeStale, a.DecidedBy, a.DecidedAt.UTC().Format(time.RFC3339), e.staleAfter(a)))
	o.DecidedBy = a.DecidedBy
	cards, err := e.cfg.Store.Complete(ctx, a.ID, StateFrozen, o, 0)
	if err != nil {
		if KindOf(err) == errkind.Conflict || KindOf(err) == errkind.NotFound {
			return true // its executor completed it after all
		}
		e.log.Warn("freezing a stale claim failed; retrying at the next sweep", "approval_id", a.ID, "err", err)
		return false
	}
	a.Cards, a.State, a.Outcome = cards, StateFrozen, &o
	e.audit(a, audit.EventExecuteUnknown, a.DecidedBy, a.DecidedVia, StatusFrozen, "claimed but never completed (the process running it stopped?)")
	e.log.Error("a claimed approval got no result in time; frozen", "approval_id", a.ID, "tool", a.Tool(), "user_id", a.DecidedBy,
		"claimed_at", a.DecidedAt, "status", StatusFrozen)
	e.settle(a, o)
	return true
}

// Sweep takes the escalation steps and the reminders that are due (see
// escalate, remind) and ends approvals that are past their expiry although no Wait ended
// them (the process that waited died, or a turn gave up): each goes through
// the same claim gate as a click, so it is expired exactly once (audited,
// every card settled) whichever replica sweeps, and an approval a decision
// won is left alone while its tool may still be running. A claim that got
// no result within staleAfter is frozen (freezeStale): its process died
// mid-run. An approval still claimed but not yet stale stays in the index
// for a later sweep. It returns how many index entries it settled and
// escalation steps it took.
func (e *Engine) Sweep(ctx context.Context) (int, error) {
	ids, err := e.cfg.Store.Due(ctx, e.cfg.Clock.Now().UTC(), 256)
	if err != nil {
		return 0, err
	}
	now := e.cfg.Clock.Now()
	var done []ID
	for _, id := range ids {
		_, a, ended, _ := e.expireRecord(ctx, id)
		if !ended && a != nil && a.State == StateClaimed && !now.Before(a.DecidedAt.Add(e.staleAfter(a))) {
			ended = e.freezeStale(ctx, a)
		}
		if ended {
			done = append(done, id)
		}
	}
	if err := e.cfg.Store.Undue(ctx, done...); err != nil {
		return 0, err
	}
	taken, err := e.escalate(ctx)
	if err != nil {
		return len(done) + taken, err
	}
	sent, err := e.remind(ctx)
	return len(done) + taken + sent, err
}

// RunSweeper calls Sweep every interval until ctx ends. Each round is
// taken by one replica only: the first to set the round's mark in the
// shared store (Seen) sweeps; the claim gate makes a second sweeper
// harmless anyway. A round whose mark cannot be set is skipped; the first
// of a run of them is logged, and so is the round that marks again.
func (e *Engine) RunSweeper(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = 30 * time.Second
	}
	failing := 0 // rounds skipped in a row because the mark could not be set
	for {
		t := e.cfg.Clock.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		round := e.cfg.Clock.Now().UnixNano() / int64(interval)
		first, err := e.cfg.Store.Seen(ctx, fmt.Sprintf("sweep:%d", round), interval)
		if err != nil {
			// The round is skipped (nothing is swept without its mark);
			// said once per outage, not every round.
			if failing == 0 {
				e.log.Warn("the sweeper cannot mark its round; skipping rounds until the store answers", "err", err)
			}
			failing++
			continue
		}
		if failing > 0 {
			e.log.Info("the sweeper marks its rounds again", "skipped_rounds", failing)
			failing = 0
		}
		if !first {
			continue
		}
		if n, err := e.Sweep(ctx); err != nil {
			e.log.Warn("sweeping expired approvals failed", "err", err)
		} else if n > 0 {
			e.log.Info("swept expired approvals", "count", n)
		}
	}
}

// Cancel withdraws a pending approval: by its requester or an operator
// (actor, and the source it came through, e.g. SourceAPI), or by the
// process (actor empty, source SourceSystem or empty). The record keeps the
// actor and source as decided_by and decided_via; reason (cleaned like a
// decision's comment, see Decide) goes into the outcome and, with the
// actor and source, into the audit record. It reports the outcome;
// already_decided if the approval was not pending.
func (e *Engine) Cancel(ctx context.Context, id ID, actor UserID, src Source, reason string) (Outcome, error) {
	if !id.Valid() {
		return e.outcome(StatusMissing, ""), nil
	}
	if src == "" {
		src = SourceSystem
	}
	reason = redact.Clean(reason, MaxNoteRunes)
	o := e.outcome(StatusCancelled, reason)
	o.DecidedBy, o.DecidedVia = actor, src
	a, ok, err := e.cfg.Store.Cancel(ctx, id, o, e.cfg.Clock.Now().UTC())
	if err != nil {
		if KindOf(err) == errkind.NotFound {
			return e.outcome(StatusMissing, ""), nil
		}
		return Outcome{}, err
	}
	if !ok {
		return e.outcome(StatusAlreadyDecided, ""), nil
	}
	e.auditNote(a, audit.EventCancel, actor, src, StatusCancelled, "", reason)
	e.settle(a, *a.Outcome)
	return *a.Outcome, nil
}

// ClaimResume claims the continuation of the turn that asked for approval
// id: the first caller, on any replica, gets true, every later one false,
// for ResultTTL. A turn that waits and wakes with the outcome claims it, and
// so does the resumption of the turn on the replica where the approval
// ended (unless a Wait there takes it): exactly one of them goes on (see docs/ARCHITECTURE.md, "A turn that resumes"). An error means
// the store could not be reached and nothing was claimed.
func (e *Engine) ClaimResume(ctx context.Context, id ID) (bool, error) {
	return e.cfg.Store.Seen(ctx, "resume:"+string(id), e.cfg.ResultTTL)
}

// UnclaimResume gives back the claim ClaimResume gave for id, by a
// caller that won it and cannot go on (the history could not be read, the
// loop is closing): the next ClaimResume of id gets true.
func (e *Engine) UnclaimResume(ctx context.Context, id ID) error {
	return e.cfg.Store.Forget(ctx, "resume:"+string(id))
}

// Get returns an approval.
func (e *Engine) Get(ctx context.Context, id ID) (*Approval, error) { return e.cfg.Store.Get(ctx, id) }

// Pending returns the session's pending approval, or nil.
func (e *Engine) Pending(ctx context.Context, s SessionKey) (*Approval, error) {
	return e.cfg.Store.Pending(ctx, s)
}

// Evaluate runs the policy for one call, consulting the store's grants.
// When a live grant lets the call run, the verdict carries it (who
// approved the same request, and when).
func (e *Engine) Evaluate(ctx context.Context, p *Policy, c CallInfo) (Verdict, error) {
	var g *Grant
	v, err := p.Evaluate(c, func() (bool, error) {
		var err error
		g, err = e.cfg.Store.GrantFor(ctx, c.Session, GrantKey(c))
		return g != nil, err
	})
	if err == nil && !v.NeedsApproval && g != nil {
		v.Grant = g
	}
	return v, err
}

// settle updates every card of a to its final state, bounded in time and
// detached from the caller's cancellation. Failures are logged: the
// decision stands whether or not a card could be updated.
// unauthorized audits d, which the store refused because its actor may
// not take it (errText says what it was, "" for a decision), and answers
// it: the refusal, then who may decide, said from where d was taken.
func (e *Engine) unauthorized(a *Approval, d Decision, errText string) Outcome {
	e.audit(a, audit.EventUnauthorized, d.Actor, d.Source, StatusUnauthorized, errText)
	o := e.outcome(StatusUnauthorized, "")
	o.Detail = a.ApproversIn(e.cfg.Lang, d.Channel, d.ChatID)
	o.Content += words.In(e.cfg.Lang, words.ApproversAside, o.Detail)
	return o
}

// quorumOutcome is the awaiting_quorum answer to an approve that counted
// towards a's quorum (k words.OutcomeAwaitingQuorum), or that had counted
// before (words.QuorumVotedBefore): the sentence, then the progress.
func (e *Engine) quorumOutcome(a *Approval, k words.Key) Outcome {
	progress := QuorumProgressIn(a, e.cfg.Lang)
	o := Outcome{Status: StatusAwaitingQuorum, Detail: progress, Approvals: len(a.Votes), Quorum: a.Approvers.Needed()}
	if k == words.OutcomeAwaitingQuorum {
		sep := ": "
		if words.Of(e.cfg.Lang) == words.ZH {
			sep = "："
		}
		o.Content = e.cfg.Text.Text(StatusAwaitingQuorum) + sep + progress
	} else {
		o.Content, o.IsError = words.In(e.cfg.Lang, k, progress), true
	}
	return o
}

// QuorumProgressIn says a's progress towards its quorum in lang: "1/2
// approved: alice". The user ids are said as they are.
func QuorumProgressIn(a *Approval, lang string) string {
	by := make([]string, len(a.Votes))
	for i, v := range a.Votes {
		by[i] = string(v.By)
	}
	return words.In(lang, words.QuorumProgress, len(a.Votes), a.Approvers.Needed(), strings.Join(by, words.In(lang, words.ApproversSep)))
}

// progress shows a's votes and escalation steps on its cards
// (Notifier.Progress); a failure is logged: the votes are recorded all the
// same.
func (e *Engine) progress(a *Approval) {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.SettleTimeout)
	defer cancel()
	if err := e.cfg.Notifier.Progress(ctx, a.Clone()); err != nil {
		e.log.Warn("showing the approval's progress on its cards failed", "approval_id", a.ID, "err", err)
	}
}

// settleCards brings every card of a to its final state o
// (Notifier.Settle, bounded by SettleTimeout; a failure is logged).
func (e *Engine) settleCards(a *Approval, o Outcome) {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.SettleTimeout)
	defer cancel()
	if err := e.cfg.Notifier.Settle(ctx, a.Clone(), o.Clone()); err != nil {
		e.log.Warn("settling the approval's cards failed", "approval_id", a.ID, "status", o.Status, "err", err)
	}
}

// settle brings every card of a to its final state o (settleCards) and
// then tells the Ended listener that a ended, and
// whether a Wait of this engine takes the outcome (waited).
func (e *Engine) settle(a *Approval, o Outcome) {
	e.settleCards(a, o)
	if e.cfg.Ended != nil {
		e.cfg.Ended.Ended(a.Clone(), o.Clone(), e.waited(a.ID))
	}
}

func (e *Engine) audit(a *Approval, ev audit.Event, actor UserID, src Source, st Status, errText string) {
	e.auditNote(a, ev, actor, src, st, errText, "")
}

// auditNote is audit with what the actor wrote (already cleaned).
func (e *Engine) auditNote(a *Approval, ev audit.Event, actor UserID, src Source, st Status, errText, note string) {
	e.auditCall(a, 0, ev, actor, src, st, errText, note)
}

// auditCall is auditNote for call n (1-based) of a alone, with that call's
// tool and payload hash; n 0 is the whole approval.
func (e *Engine) auditCall(a *Approval, call int, ev audit.Event, actor UserID, src Source, st Status, errText, note string) {
	if a == nil {
		return
	}
	tool, hash, proposed := a.Tool(), a.PayloadSHA256, a.ProposedSHA256
	if call > 0 && call <= len(a.Calls) {
		tool, hash, proposed = a.Calls[call-1].Tool, a.Calls[call-1].PayloadSHA256, ""
	} else {
		call = 0
	}
	e.appendAudit(a, audit.Record{
		Call:          call,
		Proposed:      proposed,
		Time:          e.cfg.Clock.Now().UTC(),
		Event:         ev,
		ApprovalID:    string(a.ID),
		Session:       string(a.Session),
		Tool:          tool,
		PayloadSHA256: hash,
		Actor:         string(actor),
		Source:        string(src),
		Outcome:       string(st),
		Error:         errText,
		Reason:        note,
	})
}

// appendAudit hands r, a record of a, to the audit trail; a record the
// trail refuses marks a, so that none of its calls runs (auditWritten).
func (e *Engine) appendAudit(a *Approval, r audit.Record) {
	r.TraceID = auditTraceID(a.Trace)
	f, ok := e.cfg.Audit.(Refuser)
	if !ok {
		e.cfg.Audit.Append(r)
		return
	}
	if err := f.TryAppend(r); err != nil {
		a.auditRefused = true
	}
}
