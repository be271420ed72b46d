package approval

import (
	"context"
	"time"
)

// Store keeps approvals, their session pointers, de-duplication marks,
// grants and cached results, and carries outcomes between replicas.
//
// Two implementations exist: memstore (one process) and redisstore (many
// replicas sharing one Redis). Both pass the conformance suite in
// approval/storetest. Every state transition is atomic; expiry is judged by
// the caller's clock (ClaimRequest.Now), never by the store's.
type Store interface {
	// Put stores a new pending approval and makes it its session's pending
	// approval. An approval that was pending in the same session is
	// superseded in the same step: its state becomes superseded with the
	// given outcome, and it is returned so the caller can settle it.
	Put(ctx context.Context, a *Approval, supersededOutcome Outcome) (superseded *Approval, err error)

	// Get returns the approval with id, or an error of kind errkind.NotFound.
	Get(ctx context.Context, id ID) (*Approval, error)

	// Outcomes returns, for each of ids in its order, the outcome of the
	// approval when it has ended (a terminal state), else nil: pending,
	// claimed, or no such approval. It reads them all in a few round trips
	// whatever their number (redisstore: the state and outcome fields of
	// each record, pipelined), and decodes the ended ones alone. The
	// engine's backstop for a lost outcome message re-reads the approvals
	// it waits on with it (Engine.Wait, EngineConfig.PollInterval).
	Outcomes(ctx context.Context, ids []ID) ([]*Outcome, error)

	// AddCards records the cards that show the approval. A decision may
	// have ended the approval while its card was being sent: AddCards then
	// returns the record as it is after that step, with every card it has,
	// and the caller settles the new cards itself, because the decision
	// saw none of them. While the approval is claimed it returns nil (its
	// Complete returns every card, these included), and while it is
	// pending too, unless votes towards its quorum came in meanwhile: then
	// it returns the record, so the caller shows them on the new cards.
	AddCards(ctx context.Context, id ID, cards []CardRef) (*Approval, error)

	// Pending returns the session's pending approval, or nil if there is none.
	Pending(ctx context.Context, s SessionKey) (*Approval, error)

	// ChatPending returns the approvals pending in one chat (channel and
	// chat id), whatever their sessions (per-user sessions, other agents'
	// approvals routed to the chat), oldest first (CreatedAt, then id).
	// It answers the chat's /pending and finds the approval a typed code
	// names.
	ChatPending(ctx context.Context, channel, chatID string) ([]*Approval, error)

	// Latest returns the session's most recent approval whatever its state
	// (pending, claimed or ended), or nil when the session has none that
	// the store still keeps (records of ended approvals are kept for the
	// retention). The router answers a late typed 确认 with it.
	Latest(ctx context.Context, s SessionKey) (*Approval, error)

	// Claim makes the one atomic check-and-transition every decision passes.
	// In this order: missing; an expire intent (pending and due -> expired);
	// not pending (superseded, expired, or already_claimed); the actor not
	// allowed to take the verb from the decision's chat (Approval.AllowsIn,
	// the rule of mayapprove.go: unauthorized, nothing changes); a hash
	// mismatch (tampered, nothing changes); Now at or after ExpiresAt (->
	// expired); then reject -> rejected (any one allowed person's reject: a
	// veto, whatever the votes), or approve: where the rule needs a quorum
	// (ApproverRule.Needed above 1, Approval.CountVote), an actor already
	// among the votes changes nothing (voted_before), else the actor's vote
	// (Actor, Source, Now, Comment) is added, and while the votes are fewer
	// than the quorum the approval stays pending (voted); the approve that
	// reaches the quorum, like every approve where one decides, -> claimed.
	// Votes and the claim are one atomic step: two replicas cannot both
	// reach the quorum. Authorisation inside the claim keeps a decision at
	// two store round trips (claim, complete).
	Claim(ctx context.Context, id ID, req ClaimRequest) (ClaimResult, error)

	// Complete moves a claimed approval to a terminal state (executed,
	// failed or frozen), caching the outcome under the approval's
	// idempotency key in the same step when the state is executed, and
	// publishes the outcome. Idempotency keys are scoped to the session:
	// the cache is looked up only for approvals of the same session. It
	// returns the cards recorded at that moment (some may have been added
	// after the claim), so the caller settles every one of them.
	Complete(ctx context.Context, id ID, state State, o Outcome, cacheTTL time.Duration) ([]CardRef, error)

	// Resolve settles a frozen approval (its effect unknown) as a person
	// chose: the one atomic check-and-transition every resolution passes,
	// as Claim is for a decision. In this order: missing (also a record
	// older than the retention); not frozen (ClaimNotFrozen, nothing
	// changes); the actor not allowed by the record's ApproverRule to
	// approve (unauthorized, nothing changes); a hash mismatch (tampered,
	// nothing changes); then done -> executed or abandon -> failed with
	// req.Outcome (Ended, published), or retry -> claimed (its run is the
	// caller's, then Complete; the approval is put back in the expiry
	// index, so the sweeper freezes it again if that run never ends).
	// The actor, source, comment and Now are recorded as the decision.
	Resolve(ctx context.Context, id ID, req ResolveRequest) (ClaimResult, error)

	// Cancel ends a pending approval as cancelled and publishes the outcome.
	// The outcome's DecidedBy and DecidedVia are recorded as the approval's
	// DecidedBy and DecidedVia (an empty DecidedVia as SourceSystem). It
	// reports false if the approval was no longer pending.
	Cancel(ctx context.Context, id ID, o Outcome, now time.Time) (*Approval, bool, error)

	// Seen marks key as processed for ttl. It reports true the first time
	// (the caller should go on) and false for a duplicate.
	Seen(ctx context.Context, key string, ttl time.Duration) (first bool, err error)
	// Forget removes the mark Seen set on key (if any), so the next Seen of
	// key is the first again. The caller releases a mark this way when the
	// work it guarded did not happen (a decision the store refused), so a
	// retry of the same event is not taken for a duplicate.
	Forget(ctx context.Context, key string) error

	// GrantStore keeps the session grants (see Grant): record, look up,
	// list by session, revoke.
	GrantStore

	// Subscribe delivers every outcome published through this store, by any
	// replica, to fn until ctx ends. It returns once the subscription is
	// live, so that a Complete after Subscribe returns is never missed.
	Subscribe(ctx context.Context, fn func(ID, Outcome)) error

	// Due returns up to limit approvals whose ExpiresAt is at or before
	// now and that have not been removed with Undue, earliest first. Put
	// adds every approval to this index (in the same round trip); it may
	// name approvals that have ended since: the sweeper claims each one
	// (the claim is the authority) and then removes it.
	Due(ctx context.Context, now time.Time, limit int) ([]ID, error)
	// Undue removes approvals from the expiry index.
	Undue(ctx context.Context, ids ...ID) error

	// Escalations returns up to limit approvals whose next escalation
	// step (Approval.NextEscalation) is due at or before now, earliest
	// first. Put adds every approval that has steps to this index; it may
	// name approvals that have ended since: Escalate drops those.
	Escalations(ctx context.Context, now time.Time, limit int) ([]ID, error)
	// Escalate takes the next step of an approval's escalation when it is
	// due at now: the one atomic step every escalation passes, so that of
	// two replicas sweeping at once only one takes a step. In this order:
	// missing; not pending, no step left, or now at or after ExpiresAt
	// (EscalateNone: nothing changes, and the approval leaves the index);
	// the step not yet due (EscalateNotDue: it stays in the index at its
	// time); then the step is taken (EscalateTaken): Escalated counts it,
	// its people may decide from then on (Approval.AllowsIn, inside Claim
	// and Resolve), the approval is listed in the step's chat
	// (ChatPending), and the index holds it at its next step's time, if
	// any.
	Escalate(ctx context.Context, id ID, now time.Time) (EscalateResult, error)

	// Reminders returns up to limit approvals whose next reminder
	// (Approval.NextReminder) is due at or before now, earliest first.
	// Put adds every approval that has reminders to this index; it may
	// name approvals that have ended since: Remind drops those.
	Reminders(ctx context.Context, now time.Time, limit int) ([]ID, error)
	// Remind takes the reminder of an approval that is due at now
	// (Approval.DueReminder: the latest due, the earlier ones passed
	// over): the one atomic step every reminder passes, so that of two
	// replicas sweeping at once only one sends it. In this order:
	// missing; not pending (claimed or ended), no reminder left, or now
	// at or after ExpiresAt (RemindNone: nothing changes, and the
	// approval leaves the index); the next reminder not yet due
	// (RemindNotDue: it stays in the index at its time); then the
	// reminder is taken (RemindTaken): Reminded counts it and those
	// passed over, and the index holds the approval at its next
	// reminder's time, if any.
	Remind(ctx context.Context, id ID, now time.Time) (RemindResult, error)

	// Ping checks that the store answers.
	Ping(ctx context.Context) error
}

// WantSubscriber is implemented by a store whose outcome messages cost
// something to decode (redisstore: every replica receives every outcome).
// SubscribeWanted is Subscribe, but an outcome is decoded and given to fn
// only when want reports true for its approval as the message arrives; the
// others are dropped unread. want must be quick and must not block. An
// outcome dropped so is never missed by a Wait that begins later: the
// record holds the outcome before it is published, and such a Wait reads
// the record after it has registered (see Engine.Wait).
type WantSubscriber interface {
	SubscribeWanted(ctx context.Context, want func(ID) bool, fn func(ID, Outcome)) error
}

// MarkClaimer is implemented by a store whose Claim honours
// ClaimRequest.Mark: the de-duplication mark of a decision (a click's event
// id) is set in the claim's own atomic step, and round trip (redisstore: in
// the claim script, the mark kept in the approval's hash slot). A store
// without it gets Seen, then the claim.
type MarkClaimer interface {
	// ForgetClaimMark removes the mark a claim of id set on key
	// (ClaimRequest.Mark), as Forget does for Seen: the caller releases
	// it when the decision failed, so that a retry is no duplicate.
	ForgetClaimMark(ctx context.Context, id ID, key string) error
}

// InboundStore is implemented by a store that can take the two store steps
// of an inbound message in one round trip (redisstore pipelines them):
// Seen of each de-duplication key, and Pending of the message's session.
// The router uses it, through CheckInbound, for every message; a store
// without it gets the same calls one by one.
type InboundStore interface {
	SeenAndPending(ctx context.Context, keys []string, ttl time.Duration, s SessionKey) InboundCheck
}

// CheckInbound is InboundStore.SeenAndPending on any store: in one round
// trip where s implements InboundStore, else Seen of each key and Pending of
// sess one by one.
func CheckInbound(ctx context.Context, s Store, keys []string, ttl time.Duration, sess SessionKey) InboundCheck {
	if is, ok := s.(InboundStore); ok {
		return is.SeenAndPending(ctx, keys, ttl, sess)
	}
	c := InboundCheck{First: make([]bool, len(keys))}
	for i, k := range keys {
		first, err := s.Seen(ctx, k, ttl)
		if err != nil {
			c.SeenErr = err
			for j := range c.First {
				c.First[j] = true
			}
			break
		}
		c.First[i] = first
	}
	c.Pending, c.PendingErr = s.Pending(ctx, sess)
	return c
}

// InboundCheck is the answer of InboundStore.SeenAndPending.
type InboundCheck struct {
	// First reports, per key, that it was not marked before (Seen's
	// answer); all true when SeenErr is set (unknown: the router then
	// processes no message, and lets a click go on: its claim is atomic).
	First []bool
	// SeenErr is set when the marks could not be set.
	SeenErr error
	// Pending is the session's pending approval, or nil (PendingErr says
	// whether that is known).
	Pending    *Approval
	PendingErr error
}

// Intent is what a claim is for.
type Intent string

// Claim intents.
const (
	IntentApprove Intent = "approve" // pending -> claimed
	IntentReject  Intent = "reject"  // pending -> rejected
	IntentExpire  Intent = "expire"  // pending -> expired, only once ExpiresAt has passed
)

// ClaimRequest is the input of Store.Claim.
type ClaimRequest struct {
	// Intent selects the transition.
	Intent Intent
	// PayloadSHA256 must equal the stored hash (ignored for IntentExpire).
	PayloadSHA256 string
	// Actor, Source and Comment are recorded on the approval.
	Actor   UserID
	Source  Source
	Comment string
	// Verdicts, for an approve, records which calls run (a per-call
	// decision that rejected some; see Verdicts): stored on the approval
	// in the same atomic step as the claim. The caller has checked it
	// against the calls (Valid); empty for every other claim.
	Verdicts Verdicts
	// Edited, for an approve, is the approval as an edit makes it (its
	// calls with the edited arguments, their hash, risk, reason,
	// summary and preview): once PayloadSHA256 has been found equal to
	// the stored (proposed) hash, the claim stores these in the same
	// atomic step and keeps the proposed hash as ProposedSHA256. Nil
	// for every other claim.
	Edited *Approval
	// Channel and ChatID are where the decision was taken (see
	// Decision.ChatID); the approver rule "chat" compares them with the
	// approval's own Channel and ChatID inside the claim.
	Channel string
	ChatID  string
	// Grant is the approver's grant choice (approve only), recorded on
	// the approval as it is given (Approval.Grant).
	Grant GrantChoice
	// Now is the caller's clock: an approve or reject at or after ExpiresAt
	// expires the approval instead; an expire before ExpiresAt does nothing.
	Now time.Time
	// Mark, when set, is a de-duplication key (as Seen takes it) that the
	// claim marks first for MarkTTL, in the same atomic step: a key marked
	// before makes the claim ClaimDuplicate, and nothing else changes. The
	// mark is removed with MarkClaimer.ForgetClaimMark. Only a store that
	// implements MarkClaimer is given one (Engine.DecideOnce calls Seen
	// before the claim for the others).
	Mark    string
	MarkTTL time.Duration
	// Outcome builds the outcome that is stored and published when the
	// claim ends the approval: it is called with StatusRejected,
	// StatusExpired or StatusSuperseded (a store may call it for all three
	// up front). Nil gives an outcome with the status alone.
	Outcome func(Status) Outcome
}

// EscalateCode is the verdict of Store.Escalate.
type EscalateCode string

// Escalate codes.
const (
	EscalateTaken   EscalateCode = "taken"   // this call took the step
	EscalateNotDue  EscalateCode = "not_due" // the next step is later; nothing changed
	EscalateNone    EscalateCode = "none"    // no step to take: ended, claimed, expired or every step taken
	EscalateMissing EscalateCode = "missing" // no such approval
)

// EscalateResult is the output of Store.Escalate.
type EscalateResult struct {
	// Code is the verdict.
	Code EscalateCode
	// Approval is the record after the call (nil when missing).
	Approval *Approval
	// Step is the index in Approval.Escalation of the step this call took
	// (EscalateTaken only).
	Step int
}

// ClaimCode is the verdict of a claim.
type ClaimCode string

// Claim codes.
const (
	ClaimOK             ClaimCode = "claimed"         // approve: now claimed; reject/expire: now ended
	ClaimUnauthorized   ClaimCode = "unauthorized"    // the actor may not take this decision; nothing changed
	ClaimTampered       ClaimCode = "tampered"        // hash mismatch; nothing changed
	ClaimAlreadyClaimed ClaimCode = "already_claimed" // not pending any more
	ClaimSuperseded     ClaimCode = "superseded"      // a newer approval replaced it
	ClaimExpired        ClaimCode = "expired"         // too late
	ClaimNotYet         ClaimCode = "not_yet"         // expire intent before ExpiresAt; nothing changed
	ClaimMissing        ClaimCode = "missing"         // no such approval
	// ClaimVoted: an approve counted towards the rule's quorum (recorded
	// in Approval.Votes), which is not reached yet; still pending.
	ClaimVoted ClaimCode = "voted"
	// ClaimVotedBefore: the actor's approval was counted already; nothing
	// changed.
	ClaimVotedBefore ClaimCode = "voted_before"
	// ClaimDuplicate: ClaimRequest.Mark was marked before (the decision
	// is a duplicate of one taken or being taken); nothing changed, and
	// Approval is nil.
	ClaimDuplicate ClaimCode = "duplicate"
)

// ClaimResult is the output of Store.Claim.
type ClaimResult struct {
	// Code is the verdict.
	Code ClaimCode
	// Approval is the record after the claim (nil when missing).
	Approval *Approval
	// Ended reports that this claim moved the approval to a terminal state
	// (reject, expire, or a late approve that expired it): the caller
	// audits that and settles the cards. The outcome was published.
	Ended bool
	// Cached is the outcome cached under the approval's idempotency key by
	// an earlier execution with the same payload, if any (approve only).
	Cached *Outcome
	// Unreplicated reports that the store was asked to have each claim
	// acknowledged by its replicas before a tool may run on it (Redis
	// WAIT), and fewer acknowledged this one in time: a failover now could
	// lose it. The caller runs nothing on such a claim (see
	// Engine.Decide); the transition itself has happened on the primary.
	Unreplicated bool
}

// OutcomeFor returns the outcome req stores for status st.
func (req ClaimRequest) OutcomeFor(st Status) Outcome {
	if req.Outcome == nil {
		return Outcome{Status: st}
	}
	o := req.Outcome(st)
	o.Status = st
	return o
}
