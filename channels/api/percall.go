package api

import "github.com/hitlbot/hitlbot/approval"

// ApprovalCall is one call of an approval as GET /api/approvals shows it:
// no arguments, only the call's own summary.
type ApprovalCall struct {
	// CallID names the call in a per-call decision: the model's call id,
	// or "#<n>" (1-based) for a call without one.
	CallID string `json:"callId"`
	// Tool is the tool the call runs.
	Tool string `json:"tool"`
	// Summary says in a line what the call does.
	Summary string `json:"summary,omitempty"`
	// Status is what became of the call, once the approval has ended
	// with per-call results (executed, failed, frozen, replayed, or
	// rejected by a per-call decision).
	Status approval.Status `json:"status,omitempty"`
	// Edited says what an approver changed in the call's arguments
	// before approving it ("limit: 1000 → 10"), when they did.
	Edited string `json:"edited,omitempty"`
}

// approvalCalls lists rec's calls for ApprovalInfo.
func approvalCalls(rec *approval.Approval) []ApprovalCall {
	out := make([]ApprovalCall, len(rec.Calls))
	for i, c := range rec.Calls {
		out[i] = ApprovalCall{CallID: approval.CallKey(rec.Calls, i), Tool: c.Tool, Summary: c.Summary, Edited: c.Edited}
		if rec.Outcome != nil && len(rec.Outcome.Results) == len(rec.Calls) {
			out[i].Status = rec.Outcome.Results[i].Status
		}
	}
	return out
}
