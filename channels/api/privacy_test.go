package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/storetest"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/api"
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

// refusedRoutes are every route of the API, as a person the allow-list
// refuses would call them about an approval ({id}, its token {token} and
// hash {hash}).
var refusedRoutes = []struct{ method, path, body string }{
	{"POST", "/agent/chat", `{"message":"erase nothing","conversationId":"c_bob"}`},
	{"POST", "/agent/chat", `{"confirmationToken":"{token}","confirmed":true}`},
	{"POST", "/agent/chat", `{"confirmationTokens":["{token}"],"confirmed":true}`},
	{"GET", "/api/approvals", ""},
	{"GET", "/api/approvals?state=all", ""},
	{"GET", "/api/approvals/{id}", ""},
	{"HEAD", "/api/approvals/{id}", ""},
	{"POST", "/api/approvals/{id}/decision", `{"decision":"approve","payloadSha256":"{hash}"}`},
	{"POST", "/api/approvals/{id}/decision", `{"decision":"reject","payloadSha256":"{hash}"}`},
	{"POST", "/api/approvals/{id}/cancel", `{}`},
}

// TestAllowListHoldsOnEveryRoute: channels.api.allow.users lets alice in,
// not bob (of her tenant, whom the approver rule, chat, would let see and
// decide her approval): every route answers bob 403 not_allowed, and
// nothing of the approval is shown, decided or withdrawn.
func TestAllowListHoldsOnEveryRoute(t *testing.T) {
	h := newHarness(t, fourEyes(approval.ApproverChat), func(s *setup) {
		s.router = func(c *channels.RouterConfig) {
			c.Allow = map[string]channels.Allow{api.Name: {Users: []string{"acme/alice"}}}
		}
	})
	pa := h.ask(tokAlice, "c1", "erase orders").PendingAction
	var info struct{ Approval api.ApprovalInfo }
	if st := h.do("GET", "/api/approvals/"+pa.ApprovalID, tokAlice, nil, &info); st != http.StatusOK {
		t.Fatalf("alice's GET: %d", st)
	}
	r := strings.NewReplacer("{id}", pa.ApprovalID, "{token}", pa.Token, "{hash}", info.Approval.PayloadSHA256)
	for _, rt := range refusedRoutes {
		st, _, out := h.raw(rt.method, r.Replace(rt.path), tokBob, r.Replace(rt.body))
		if st != http.StatusForbidden || (rt.method != "HEAD" && out["error"] != api.CodeNotAllowed) {
			t.Errorf("bob's %s %s: %d %v", rt.method, rt.path, st, out)
		}
		if s := fmt.Sprint(out); strings.Contains(s, "orders") {
			t.Errorf("bob's %s %s showed the approval: %s", rt.method, rt.path, s)
		}
	}
	rec, err := h.engine.Get(context.Background(), approval.ID(pa.ApprovalID))
	if err != nil || rec.State != approval.StatePending || h.erase.Runs.Load() != 0 {
		t.Fatalf("after bob's requests: %v, %v, %d runs", rec, err, h.erase.Runs.Load())
	}
}
