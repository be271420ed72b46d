package agent

import (
	"fmt"
	"strings"

	"github.com/hitlbot/hitlbot/approval"
)

// callOutcome is what became of one call of an ended approval.
type callOutcome struct {
	status  approval.Status
	reply   string // what the model is told
	isError bool
	ran     bool // the tool ran and succeeded (executed or replayed)
}

// callOutcomes says what became of each call of an ended approval. When
// the calls were dispatched (executed, failed, frozen, replayed), each call
// gets its own result: a batch can hold a call that ran beside one that
// failed. An approval that ended without running (rejected, expired,
// superseded, cancelled) applies to every call; the replies read the same
// in the turn that asked and in a later update. A reply says the status in
// its own words, then only what the engine's outcome says beyond its
// status sentence (Outcome.Detail, or for a rejection the decider and
// Outcome.Comment; a per-call result's content is never a status
// sentence).
func callOutcomes(o approval.Outcome, calls []approval.Call) []callOutcome {
	if o.Resolution == approval.ResolveDone || o.Resolution == approval.ResolveAbandon {
		// A frozen approval a person resolved: nothing ran now.
		out := make([]callOutcome, len(calls))
		for i := range out {
			out[i] = resolvedReply(o)
		}
		return out
	}
	byID := map[string]approval.Result{}
	for _, r := range o.Results {
		if r.CallID != "" {
			byID[r.CallID] = r
		}
	}
	dispatched := false
	switch o.Status {
	case approval.StatusExecuted, approval.StatusReplayed, approval.StatusFailed, approval.StatusFrozen:
		dispatched = true
	}
	frozenSeen := false
	out := make([]callOutcome, len(calls))
	for i, c := range calls {
		r, ok := byID[c.CallID]
		if !ok && len(o.Results) == len(calls) && (o.Results[i].CallID == "" || o.Results[i].CallID == c.CallID) {
			r, ok = o.Results[i], true
		}
		if dispatched && ok {
			st := r.Status
			if st == "" {
				st = o.Status
			}
			switch st {
			case approval.StatusExecuted, approval.StatusReplayed:
				out[i] = callOutcome{status: st, reply: r.Content, isError: r.IsError, ran: !r.IsError}
			case approval.StatusFailed:
				out[i] = callOutcome{status: st, reply: "Failed: " + r.Content, isError: true}
			case approval.StatusFrozen:
				if frozenSeen {
					// The engine stops a batch at its first call of unknown effect.
					out[i] = callOutcome{status: st, isError: true,
						reply: "Not run: an earlier call of this batch has an unknown effect, so this one was stopped; do not retry it automatically."}
				} else {
					frozenSeen = true
					out[i] = callOutcome{status: st, isError: true, reply: frozenReply(r.Content)}
				}
			case approval.StatusRejected:
				// A per-call decision declined this call and ran others.
				out[i] = callOutcome{status: st, reply: declinedReply(o), isError: true}
			default:
				out[i] = callOutcome{status: st, reply: "Not run: " + r.Content, isError: true}
			}
			if r.Edited != "" {
				out[i].reply = editedReply(o, r) + out[i].reply
			}
			continue
		}
		co := callOutcome{status: o.Status, isError: o.IsError}
		switch o.Status {
		case approval.StatusExecuted, approval.StatusReplayed:
			co.reply, co.ran = o.Content, !o.IsError
		case approval.StatusRejected:
			co.reply = declinedReply(o)
		case approval.StatusExpired:
			co.reply = "Not run: the approval expired before anyone decided."
		case approval.StatusFrozen:
			co.reply = frozenReply(o.Detail)
		case approval.StatusFailed:
			co.reply = "Failed: " + o.Detail
		case approval.StatusSuperseded:
			co.reply = "Not run: a newer request in this conversation replaced it."
		case approval.StatusCancelled:
			co.reply = "Not run: the approval was withdrawn."
		default:
			co.reply = "Not run: " + o.Content
		}
		out[i] = co
	}
	return out
}

// declinedReply tells the model who declined a call and why, when they
// said (Outcome.Comment, cleaned by the engine), and not to propose it
// again: "Not run: declined by bob: wrong table. Do not propose …". It
// reads the same in a late update: the call stays declined.
func declinedReply(o approval.Outcome) string {
	who := string(o.DecidedBy)
	if who == "" {
		who = "an approver"
	}
	reply := "Not run: declined by " + who
	if o.Comment != "" {
		reply += ": " + strings.TrimRight(o.Comment, ".。")
	}
	return reply + ". Do not propose this same call again; ask the user what they want instead."
}

// frozenReply tells the model that a call's effect is unknown, once, and
// why (the engine's cause, in words safe to show), when known.
func frozenReply(cause string) string {
	reply := "The result is unknown and the action is frozen (it may or may not have taken effect); do not retry it."
	if cause != "" {
		reply += " Cause: " + cause
	}
	return reply
}

// describeEnded words an update on an approval that ended after its turn:
// the tool replies of that turn were placeholders.
func describeEnded(id approval.ID, a *approval.Approval, o approval.Outcome) string {
	var calls []approval.Call
	if a != nil {
		calls = a.Calls
	} else {
		for _, r := range o.Results {
			calls = append(calls, approval.Call{Tool: r.Tool, CallID: r.CallID})
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Update on the earlier approval %s (the tool replies above that said it was waiting are out of date): %s.", id, o.Status)
	if len(calls) == 0 {
		if o.Content != "" {
			b.WriteString(" " + o.Content)
		}
		return b.String()
	}
	for i, co := range callOutcomes(o, calls) {
		fmt.Fprintf(&b, "\n- %s", calls[i].Tool)
		if calls[i].CallID != "" {
			fmt.Fprintf(&b, " (call %s)", calls[i].CallID)
		}
		fmt.Fprintf(&b, ", %s: %s", co.status, co.reply)
	}
	return b.String()
}

// editedReply tells the model that an approver changed a call's arguments
// before approving it, and what changed (approval.Result.Edited: "limit:
// 1000 → 10"), before the call's own reply: the model's call as it wrote
// it is not what ran.
func editedReply(o approval.Outcome, r approval.Result) string {
	who := string(o.DecidedBy)
	if who == "" {
		who = "the approver"
	}
	return "Note: " + who + " changed the arguments before approving (" + r.Edited + "); the call ran with the changed arguments. Result: "
}
