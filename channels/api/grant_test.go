package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
)

// mediumErase makes erase a MEDIUM call, which may grant its
// conversation the default window (300 s).
func mediumErase(s *setup) {
	pc := approval.DefaultPolicyConfig()
	pc.Tools = map[string]approval.ToolPolicy{"erase": {Risk: "MEDIUM"}}
	s.policy = &pc
}

// TestDecisionGrant: POST /api/approvals/{id}/decision with grant. GET
// shows a MEDIUM approval's grant window; an unknown grant is a 400 and
// decides nothing; "once" runs it and grants nothing (the same request
// asks again), with the choice on the record and in the confirm audit
// record; no grant allows the conversation (the same request then runs
// without asking); "session" on a HIGH approval is a 400.
func TestDecisionGrant(t *testing.T) {
	h := newHarness(t, mediumErase)
	pa := h.ask(tokAlice, "c1", "erase orders").PendingAction
	info, _ := h.auditOf(tokAlice, pa.ApprovalID)
	if info["grantWindowSeconds"] != float64(300) || info["risk"] != "MEDIUM" {
		t.Fatalf("GET of a MEDIUM approval: %v", info)
	}
	hash, _ := info["payloadSha256"].(string)
	if st, out := h.decision(tokAlice, pa.ApprovalID, map[string]any{"decision": "approve", "payloadSha256": hash, "grant": "forever"}); st != http.StatusBadRequest || out["error"] != "invalid_request" {
		t.Fatalf("grant forever: %d %v", st, out)
	}
	st, out := h.decision(tokAlice, pa.ApprovalID, map[string]any{"decision": "approve", "payloadSha256": hash, "grant": "once"})
	if st != http.StatusOK || out["status"] != "executed" {
		t.Fatalf("approve once: %d %v", st, out)
	}
	info, trail := h.auditOf(tokAlice, pa.ApprovalID)
	if info["grant"] != "once" {
		t.Fatalf("record after approve once: %v", info)
	}
	confirm := map[string]any(nil)
	for _, r := range trail {
		if r["event"] == "confirm" {
			confirm = r
		}
	}
	if confirm == nil || confirm["grant"] != "once" {
		t.Fatalf("confirm audit record %v", confirm)
	}
	// Once granted nothing: the same request asks again. Approved with
	// no grant (a plain approve), the conversation is allowed.
	pa = h.ask(tokAlice, "c1", "erase orders").PendingAction
	info, _ = h.auditOf(tokAlice, pa.ApprovalID)
	hash, _ = info["payloadSha256"].(string)
	if st, out := h.decision(tokAlice, pa.ApprovalID, map[string]any{"decision": "approve", "payloadSha256": hash}); st != http.StatusOK || out["status"] != "executed" {
		t.Fatalf("plain approve: %d %v", st, out)
	}
	if info, _ := h.auditOf(tokAlice, pa.ApprovalID); info["grant"] != "session" {
		t.Fatalf("record after a plain approve: %v", info)
	}
	if st, r := h.chat(tokAlice, map[string]any{"message": "erase orders", "conversationId": "c1"}); st != http.StatusOK || r.RequiresConfirmation {
		t.Fatalf("the same request after a session grant: %d %+v", st, r)
	}

	// HIGH grants nothing: "session" is refused, nothing is decided.
	hh := newHarness(t)
	pa = hh.ask(tokAlice, "c1", "erase orders").PendingAction
	info, _ = hh.auditOf(tokAlice, pa.ApprovalID)
	hash, _ = info["payloadSha256"].(string)
	if _, ok := info["grantWindowSeconds"]; ok {
		t.Fatalf("GET of a HIGH approval shows a grant window: %v", info)
	}
	if st, out := hh.decision(tokAlice, pa.ApprovalID, map[string]any{"decision": "approve", "payloadSha256": hash, "grant": "session"}); st != http.StatusBadRequest {
		t.Fatalf("grant session on HIGH: %d %v", st, out)
	}
	if info, _ := hh.auditOf(tokAlice, pa.ApprovalID); info["state"] != "pending" {
		t.Fatalf("a refused grant decided: %v", info)
	}
}

// TestCommandAnswersTheRequest: an approval command sent as a chat
// message is answered by the router in the response (not left waiting for
// a turn): /help lists the commands, /grants the conversation's grants.
func TestCommandAnswersTheRequest(t *testing.T) {
	h := newHarness(t, mediumErase)
	st, r := h.chat(tokAlice, map[string]any{"message": "/help", "conversationId": "c1"})
	if st != http.StatusOK || r.Incomplete || !strings.Contains(r.Text, "/pending") || !strings.Contains(r.Text, "/revoke") {
		t.Fatalf("/help: %d %+v", st, r)
	}
	st, r = h.chat(tokAlice, map[string]any{"message": "/grants", "conversationId": "c1"})
	if st != http.StatusOK || r.Incomplete || !strings.Contains(r.Text, "No live grants") {
		t.Fatalf("/grants: %d %+v", st, r)
	}
}
