package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
)

// TestDecisionQuorum: HIGH needs 2 of acme/alice and acme/bob. alice's
// approve answers 202 {status: awaiting_quorum, approvals: 1, quorum: 2}
// and runs nothing; her second approve is a 202 that says she approved
// already; bob's approve runs the call once (200 executed), and the
// record holds both votes.
func TestDecisionQuorum(t *testing.T) {
	h := newHarness(t, func(s *setup) {
		pc := approval.DefaultPolicyConfig()
		pc.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverUsers, Users: []string{"acme/alice", "acme/bob"}, Quorum: 2}}
		s.policy = &pc
	})
	pa := h.ask(tokAlice, "c1", "erase orders").PendingAction
	info, _ := h.auditOf(tokAlice, pa.ApprovalID)
	hash, _ := info["payloadSha256"].(string)
	body := map[string]any{"decision": "approve", "payloadSha256": hash}
	st, out := h.decision(tokAlice, pa.ApprovalID, body)
	if st != http.StatusAccepted || out["status"] != "awaiting_quorum" || out["approvals"] != float64(1) || out["quorum"] != float64(2) ||
		!strings.Contains(out["text"].(string), "1/2 approved: acme/alice") {
		t.Fatalf("alice's approve: %d %v", st, out)
	}
	if n := h.erase.Runs.Load(); n != 0 {
		t.Fatalf("the call ran %d times on one approval of two", n)
	}
	if st, out := h.decision(tokAlice, pa.ApprovalID, body); st != http.StatusAccepted || !strings.HasPrefix(out["text"].(string), "You have already approved this") {
		t.Fatalf("alice again: %d %v", st, out)
	}
	if st, out := h.decision(tokBob, pa.ApprovalID, body); st != http.StatusOK || out["status"] != "executed" {
		t.Fatalf("bob's approve: %d %v", st, out)
	}
	if n := h.erase.Runs.Load(); n != 1 {
		t.Fatalf("the call ran %d times, want once", n)
	}
}
