package web

import "github.com/hitlbot/hitlbot/approval"

// callsMalformed is the protocol error of a user.response whose calls are
// not a per-call decision (for client programs: English, like the other
// errors of malformed frames).
const callsMalformed = `user.response content.calls needs confirmed true and every call_id of the confirmation's card once, each "approve" or "reject"`

// responseCalls reads a user.response's per-call decision: nil without
// calls; not ok when calls comes with confirmed false or holds a value
// other than approve or reject. Whether it names every call once is the
// engine's check (approval.VerdictsFor), answered with the same error.
func responseCalls(rc responseContent) (map[string]approval.Verb, bool) {
	if rc.Calls == nil {
		return nil, true
	}
	if rc.Confirmed == nil || !*rc.Confirmed {
		return nil, false
	}
	out := make(map[string]approval.Verb, len(rc.Calls))
	for k, v := range rc.Calls {
		switch approval.Verb(v) {
		case approval.Approve, approval.Reject:
			out[k] = approval.Verb(v)
		default:
			return nil, false
		}
	}
	return out, true
}
