package api_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/storetest"
)

// TestPrivateApprovalOfAGroupIsNotServed: the HTTP API serves the
// approvals of its own conversations only (one user's each, never a
// group), so a private approval asked in a Feishu group is not found
// through it by anyone, its approver included: 404, and neither the
// list nor the answer says anything of the call.
func TestPrivateApprovalOfAGroupIsNotServed(t *testing.T) {
	h := newHarness(t)
	a := storetest.NewApproval(t, "feishu:oc_group")
	a.Channel, a.ChatID, a.Requester = "feishu", "oc_group", "ou_alice"
	a.Approvers = approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"bob", "acme/bob"}}
	a.Privacy, a.Group = approval.PrivacyGroup, true
	a.CreatedAt = h.clk.Now().UTC()
	a.ExpiresAt = a.CreatedAt.Add(approval.DefaultTimeout)
	if _, err := h.engine.Store().Put(context.Background(), a, approval.Outcome{Status: approval.StatusSuperseded}); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{tokAlice, tokBob, tokCarol} {
		req, err := http.NewRequest("GET", h.srv.URL+"/api/approvals/"+string(a.ID), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || strings.Contains(string(body), "DELETE") || strings.Contains(string(body), "orders") {
			t.Fatalf("GET by %s: %d %s", tok, resp.StatusCode, body)
		}
		if l := h.list(tok); len(l) != 0 {
			t.Fatalf("%s's list: %v", tok, l)
		}
	}
}
