package approval

import (
	"context"
	"fmt"

	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

// perCall turns a per-call decision (Decision.Calls) into the decision the
// claim takes: a plain reject when it rejects every call, a plain approve
// when it approves every call, else an approve with the Verdicts the claim
// records. It reads the record to learn the calls; what the claim then
// binds is the payload hash the decider saw, which covers those very calls
// (a record's calls never change), so the verdicts name the calls the
// decider saw. early is set when the approval does not exist; an error of
// kind Invalid says the calls were not named as VerdictsFor wants.
func (e *Engine) perCall(ctx context.Context, id ID, d Decision) (_ Decision, v Verdicts, early *Outcome, err error) {
	const op = "approval.Decide"
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	a, err := e.cfg.Store.Get(cctx, id)
	if err != nil {
		if KindOf(err) == errkind.NotFound {
			o := e.outcome(StatusMissing, "")
			return d, "", &o, nil
		}
		return d, "", nil, err
	}
	v, err = VerdictsFor(a.Calls, d.Calls)
	if err != nil {
		return d, "", nil, E(op, errkind.Invalid, id, err)
	}
	d.Calls = nil
	switch {
	case v.Mixed() && a.Approvers.Needed() > 1:
		return d, "", nil, E(op, errkind.Invalid, id, ErrQuorumNoEdit)
	case v.Mixed():
		d.Verb = Approve
	case v.Approved(0):
		d.Verb, v = Approve, ""
	default:
		d.Verb, v = Reject, ""
	}
	return d, v, nil, nil
}

// declinedResult is the result of call c of a, which a per-call decision
// declined: not run, and its content says who declined it and why, as a
// rejection's Detail does.
func declinedResult(a *Approval, c Call) Result {
	detail := string(a.DecidedBy)
	if a.Comment != "" {
		detail += ` ("` + a.Comment + `")`
	}
	return Result{Tool: c.Tool, CallID: c.CallID, Status: StatusRejected, IsError: true, Content: detail}
}

// auditVerdicts records a per-call decision call by call, after the
// approval's own confirm record: confirm for each call that will run,
// reject (with the decider's comment) for each declined one.
func (e *Engine) auditVerdicts(a *Approval) {
	if !a.Verdicts.Mixed() {
		return
	}
	for i := range a.Calls {
		if a.Verdicts.Approved(i) {
			e.auditCall(a, i+1, audit.EventConfirm, a.DecidedBy, a.DecidedVia, "", "", "")
		} else {
			e.auditCall(a, i+1, audit.EventReject, a.DecidedBy, a.DecidedVia, StatusRejected, "", a.Comment)
		}
	}
}

// auditResults records what became of each call of a per-call decision
// once its approval has ended: execute, execute_failed or execute_unknown
// with the call's own status for the calls that were approved (a declined
// call's reject record was written with the decision).
func (e *Engine) auditResults(a *Approval, o Outcome) {
	if !a.Verdicts.Mixed() || len(o.Results) != len(a.Calls) {
		return
	}
	for i, r := range o.Results {
		if !a.Verdicts.Approved(i) {
			continue
		}
		ev := audit.EventExecute
		switch r.Status {
		case StatusFailed:
			ev = audit.EventExecuteFailed
		case StatusFrozen:
			ev = audit.EventExecuteUnknown
		case StatusReplayed:
			ev = audit.EventReplay
		}
		errText := ""
		if r.IsError {
			errText = fmt.Sprintf("call %d: %s", i+1, r.Status)
		}
		e.auditCall(a, i+1, ev, a.DecidedBy, a.DecidedVia, r.Status, errText, "")
	}
}
