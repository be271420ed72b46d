package approval

import (
	"context"
	"fmt"
	"time"

	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/words"
)

// Resolution is how a person settles a frozen approval, whose effect is
// unknown (the tool timed out, crashed, or the replica running it died).
type Resolution string

// Resolutions.
const (
	// ResolveDone: it did happen. The approval is recorded as executed by
	// hand, with the resolver's comment as its result; nothing runs.
	ResolveDone Resolution = "done"
	// ResolveRetry: run it again, once, by this explicit choice, with the
	// same payload hash. A retry that freezes again is frozen again and can
	// be resolved again.
	ResolveRetry Resolution = "retry"
	// ResolveAbandon: it did not happen, or leave it. The approval is
	// failed; nothing runs.
	ResolveAbandon Resolution = "abandon"
)

// Resolutions lists every resolution, in the order cards show them.
var Resolutions = []Resolution{ResolveDone, ResolveRetry, ResolveAbandon}

// Valid reports whether r is one of the three resolutions.
func (r Resolution) Valid() bool {
	switch r {
	case ResolveDone, ResolveRetry, ResolveAbandon:
		return true
	}
	return false
}

// ParseResolution reads a resolution's wire name (done, retry, abandon:
// exactly, as the API, the card values and the web socket carry it).
func ParseResolution(s string) (Resolution, error) {
	if r := Resolution(s); r.Valid() {
		return r, nil
	}
	return "", fmt.Errorf("unknown resolution %q (want done, retry or abandon)", s)
}

// ClaimNotFrozen is the verdict of a resolution of an approval that is not
// frozen (pending, running, or already resolved by someone else): nothing
// changed.
const ClaimNotFrozen ClaimCode = "not_frozen"

// ResolveRequest is the input of Store.Resolve.
type ResolveRequest struct {
	// Resolution is done, retry or abandon.
	Resolution Resolution
	// PayloadSHA256 must equal the stored hash.
	PayloadSHA256 string
	// Actor, Source and Comment are recorded on the approval as its
	// decision (DecidedBy, DecidedVia, Comment), replacing the ones of the
	// decision that froze it.
	Actor   UserID
	Source  Source
	Comment string
	// Channel and ChatID are where the resolution was taken, for the
	// approver rule "chat" (see ClaimRequest).
	Channel string
	ChatID  string
	// Now is the caller's clock: the new DecidedAt, and the age against
	// which a store without TTLs (memstore) judges the retention.
	Now time.Time
	// Outcome is the outcome a done or abandon resolution ends the
	// approval with (the store sets its Status, executed or failed, and
	// its Resolution); ignored for retry.
	Outcome Outcome
}

// ResolvedState is the state a resolution moves a frozen approval to:
// executed (done), failed (abandon) or claimed (retry).
func (r Resolution) ResolvedState() State {
	switch r {
	case ResolveDone:
		return StateExecuted
	case ResolveAbandon:
		return StateFailed
	}
	return StateClaimed
}

// ResolvedStatus is the outcome status of a done or abandon resolution
// (executed, failed); a retry's is its run's.
func (r Resolution) ResolvedStatus() Status {
	if r == ResolveDone {
		return StatusExecuted
	}
	return StatusFailed
}

// resolve settles the frozen approval id as d.Resolution says, through
// Store.Resolve: the approval's approver rule (for approving, four eyes
// included), the payload hash the resolver saw, state frozen, exactly one
// winner. Done and abandon end it at once (audited resolve_done,
// resolve_abandon; cards settled, the outcome handed on to the turn that
// asked, see Notifier.Settle); retry is audited as retry and runs the
// calls once more, exactly as an approval runs them (confirm record
// flushed first, ExecTimeout, Complete), the run's outcome carrying
// ResolveRetry. An approval that is not frozen is already_decided (its
// status, or "running", or "pending", as the note).
func (e *Engine) resolve(ctx context.Context, id ID, d Decision) (Outcome, error) {
	const op = "approval.Resolve"
	if !d.Resolution.Valid() {
		return Outcome{}, E(op, errkind.Invalid, id, fmt.Errorf("unknown resolution %q", d.Resolution))
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	res, err := e.cfg.Store.Resolve(cctx, id, ResolveRequest{
		Resolution:    d.Resolution,
		PayloadSHA256: d.PayloadSHA256,
		Actor:         d.Actor,
		Source:        d.Source,
		Comment:       d.Comment,
		Channel:       d.Channel,
		ChatID:        d.ChatID,
		Now:           e.cfg.Clock.Now().UTC(),
		Outcome:       e.resolvedOutcome(d),
	})
	if err != nil {
		e.log.Error("resolution failed; nothing was run", "approval_id", id, "user_id", d.Actor, "err", err)
		return Outcome{}, err
	}
	a := res.Approval
	switch res.Code {
	case ClaimMissing:
		return e.outcome(StatusMissing, ""), nil
	case ClaimUnauthorized:
		return e.unauthorized(a, d, "resolution "+string(d.Resolution)), nil
	case ClaimTampered:
		e.audit(a, audit.EventTampered, d.Actor, d.Source, StatusTampered, "payload hash mismatch (resolution)")
		return e.outcome(StatusTampered, ""), nil
	case ClaimNotFrozen:
		note := string(a.State)
		if a.Outcome != nil {
			note = string(a.Outcome.Status)
		} else if a.State == StateClaimed {
			note = "running"
		}
		return e.noted(StatusAlreadyDecided, note), nil
	case ClaimOK:
	default:
		return Outcome{}, E(op, errkind.Internal, id, fmt.Errorf("unknown claim code %q", res.Code))
	}
	switch d.Resolution {
	case ResolveDone, ResolveAbandon:
		ev := audit.EventResolveDone
		if d.Resolution == ResolveAbandon {
			ev = audit.EventResolveAbandon
		}
		e.auditNote(a, ev, d.Actor, d.Source, a.Outcome.Status, "", d.Comment)
		e.log.Info("frozen approval resolved", "approval_id", id, "tool", a.Tool(), "user_id", d.Actor, "status", a.Outcome.Status,
			"resolution", string(d.Resolution))
		e.settle(a, *a.Outcome)
		return *a.Outcome, nil
	}
	e.auditNote(a, audit.EventRetry, d.Actor, d.Source, "", "", d.Comment)
	e.log.Info("frozen approval retried", "approval_id", id, "tool", a.Tool(), "user_id", d.Actor)
	a.retrying = true
	if res.Unreplicated {
		return e.notRun(ctx, a, words.NotRunUnreplicated, "claim not replicated; not run"), nil
	}
	return e.execute(ctx, a, nil), nil
}

// resolvedOutcome is the outcome a done or abandon resolution d ends an
// approval with (empty for retry, whose outcome is its run's). Done: the
// calls count as executed by hand ("Recorded as done by hand by bob" and
// the comment, the result the resolver noted); abandon: failed, its detail
// saying who abandoned it (and the comment). It carries no per-call
// results: nothing ran.
func (e *Engine) resolvedOutcome(d Decision) Outcome {
	var o Outcome
	switch d.Resolution {
	case ResolveDone:
		o = Outcome{Status: StatusExecuted, Content: words.In(e.cfg.Lang, words.OutcomeResolvedDone, d.Actor)}
		if d.Comment != "" {
			o.Content += ": " + d.Comment
		}
	case ResolveAbandon:
		detail := words.In(e.cfg.Lang, words.OutcomeResolvedAbandon, d.Actor)
		if d.Comment != "" {
			detail += ": " + d.Comment
		}
		o = e.outcome(StatusFailed, detail)
	default:
		return Outcome{}
	}
	o.DecidedBy, o.Comment, o.Resolution = d.Actor, d.Comment, d.Resolution
	return o
}

// ClaimResolutionResume claims the continuation of a turn with the outcome
// of a resolution of approval a (a person resolved its frozen outcome):
// like ClaimResume, exactly one caller on any replica gets true, but once
// per resolution (keyed by the resolution's DecidedAt), because the
// frozen outcome itself was already handed on once.
func (e *Engine) ClaimResolutionResume(ctx context.Context, a *Approval) (bool, error) {
	return e.cfg.Store.Seen(ctx, fmt.Sprintf("resume:%s:%d", a.ID, a.DecidedAt.UnixNano()), e.cfg.ResultTTL)
}
