package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/hitlbot/hitlbot/approval"
)

// fourEyes is the policy of item 4: HIGH needs someone other than the
// requester, and approvers.HIGH names who.
func fourEyes(mode approval.ApproverMode, users ...string) func(*setup) {
	return func(s *setup) {
		pc := approval.DefaultPolicyConfig()
		pc.HighNeedsOther = true
		pc.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: mode, Users: users}}
		s.policy = &pc
	}
}

// raw sends a request with a raw body and returns the status, the headers
// and the decoded JSON object.
func (h *harness) raw(method, path, token, body string) (int, http.Header, map[string]any) {
	h.t.Helper()
	var out map[string]any
	req, err := http.NewRequest(method, h.srv.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &out)
	return resp.StatusCode, resp.Header, out
}

// list returns the approvals GET /api/approvals shows the user.
func (h *harness) list(token string) []map[string]any {
	h.t.Helper()
	var got struct{ Approvals []map[string]any }
	if st := h.do("GET", "/api/approvals", token, nil, &got); st != http.StatusOK {
		h.t.Fatalf("list: %d", st)
	}
	return got.Approvals
}

// decision posts to /api/approvals/{id}/decision.
func (h *harness) decision(token, id string, body map[string]any) (int, map[string]any) {
	h.t.Helper()
	var out map[string]any
	st := h.do("POST", "/api/approvals/"+id+"/decision", token, body, &out)
	return st, out
}

// auditOf returns the audit trail GET /api/approvals/{id} shows.
func (h *harness) auditOf(token, id string) (map[string]any, []map[string]any) {
	h.t.Helper()
	var got struct {
		Approval map[string]any
		Audit    []map[string]any
	}
	if st := h.do("GET", "/api/approvals/"+id, token, nil, &got); st != http.StatusOK {
		h.t.Fatalf("get %s: %d", id, st)
	}
	return got.Approval, got.Audit
}

func TestFourEyesChatRule(t *testing.T) {
	h := newHarness(t, fourEyes(approval.ApproverChat))
	pa := h.ask(tokAlice, "c1", "erase orders").PendingAction
	id := pa.ApprovalID

	// The requester alone cannot approve: 403 forbidden, whichever way.
	if st, e := h.chatError(tokAlice, map[string]any{"confirmationToken": pa.Token, "confirmed": true}); st != http.StatusForbidden || e.Error != "forbidden" {
		t.Fatalf("alice by token: %d %+v", st, e)
	}
	alice, _ := h.auditOf(tokAlice, id)
	hash, _ := alice["payloadSha256"].(string)
	if len(hash) != 64 {
		t.Fatalf("GET does not show the payload hash: %v", alice)
	}
	if st, r := h.decision(tokAlice, id, map[string]any{"decision": "approve", "payloadSha256": hash}); st != http.StatusForbidden || r["error"] != "forbidden" {
		t.Fatalf("alice by decision: %d %v", st, r)
	}

	// bob (same tenant) sees it in his list and in GET, with the hash.
	list := h.list(tokBob)
	if len(list) != 1 || list[0]["id"] != id || list[0]["payloadSha256"] != hash {
		t.Fatalf("bob's list: %v", list)
	}
	bobView, _ := h.auditOf(tokBob, id)
	if bobView["payloadSha256"] != hash {
		t.Fatalf("bob's view: %v", bobView)
	}

	// carol (another tenant) neither sees nor decides it.
	if l := h.list(tokCarol); len(l) != 0 {
		t.Fatalf("carol sees %v", l)
	}
	if st := h.do("GET", "/api/approvals/"+id, tokCarol, nil, nil); st != http.StatusNotFound {
		t.Fatalf("carol get: %d", st)
	}
	if st, r := h.decision(tokCarol, id, map[string]any{"decision": "approve", "payloadSha256": hash}); st != http.StatusForbidden || r["error"] != "family_mismatch" {
		t.Fatalf("carol decision: %d %v", st, r)
	}
	if st, e := h.chatError(tokCarol, map[string]any{"confirmationToken": pa.Token, "confirmed": true}); st != http.StatusForbidden || e.Error != "family_mismatch" {
		t.Fatalf("carol by token: %d %+v", st, e)
	}

	// bob must say which payload he saw: missing 400, another 409.
	if st, r := h.decision(tokBob, id, map[string]any{"decision": "approve"}); st != http.StatusBadRequest || r["error"] != "invalid_request" {
		t.Fatalf("no hash: %d %v", st, r)
	}
	if st, r := h.decision(tokBob, id, map[string]any{"decision": "approve", "payloadSha256": strings.Repeat("0", 64)}); st != http.StatusConflict || r["error"] != "tampered" {
		t.Fatalf("wrong hash: %d %v", st, r)
	}
	if h.erase.Runs.Load() != 0 {
		t.Fatal("ran before an allowed approval")
	}

	st, r := h.decision(tokBob, id, map[string]any{"decision": "approve", "payloadSha256": hash, "comment": "looks right"})
	if st != http.StatusOK || r["status"] != "executed" {
		t.Fatalf("bob approves: %d %v", st, r)
	}
	if h.erase.Runs.Load() != 1 {
		t.Fatalf("runs = %d", h.erase.Runs.Load())
	}
	if st, r := h.decision(tokBob, id, map[string]any{"decision": "approve", "payloadSha256": hash}); st != http.StatusConflict || r["error"] != "already_decided" {
		t.Fatalf("second approval: %d %v", st, r)
	}
	if h.erase.Runs.Load() != 1 {
		t.Fatalf("runs = %d after a second approval", h.erase.Runs.Load())
	}

	rec, trail := h.auditOf(tokAlice, id)
	if rec["state"] != "executed" || rec["decidedBy"] != "acme/bob" || rec["decidedVia"] != "api" {
		t.Fatalf("record %v", rec)
	}
	var events []string
	for _, a := range trail {
		events = append(events, fmt.Sprintf("%v/%v/%v", a["event"], a["actor"], a["source"]))
	}
	if !strings.Contains(strings.Join(events, ","), "confirm/acme/bob/api,execute/acme/bob/api") {
		t.Fatalf("audit %v", events)
	}
}

func TestFourEyesByToken(t *testing.T) {
	h := newHarness(t, fourEyes(approval.ApproverChat))
	h.ask(tokAlice, "c1", "erase orders")
	list := h.list(tokBob)
	if len(list) != 1 {
		t.Fatalf("bob's list: %v", list)
	}
	tok := list[0]["pendingAction"].(map[string]any)["token"]
	st, c := h.chat(tokBob, map[string]any{"confirmationToken": tok, "confirmed": true})
	if st != http.StatusOK || c.Status != "executed" {
		t.Fatalf("bob by token: %d %+v", st, c)
	}
	if h.erase.Runs.Load() != 1 {
		t.Fatalf("runs = %d", h.erase.Runs.Load())
	}
}

func TestFourEyesUsersRule(t *testing.T) {
	h := newHarness(t, fourEyes(approval.ApproverUsers, "globex/carol"))
	pa := h.ask(tokAlice, "c1", "erase orders").PendingAction
	// bob is in alice's tenant but not listed: refused as another user.
	if l := h.list(tokBob); len(l) != 0 {
		t.Fatalf("bob sees %v", l)
	}
	if st, e := h.chatError(tokBob, map[string]any{"confirmationToken": pa.Token, "confirmed": true}); st != http.StatusForbidden || e.Error != "user_mismatch" {
		t.Fatalf("bob: %d %+v", st, e)
	}
	// carol is listed: the rule lets her decide, across tenants.
	list := h.list(tokCarol)
	if len(list) != 1 || list[0]["id"] != pa.ApprovalID {
		t.Fatalf("carol's list: %v", list)
	}
	st, r := h.decision(tokCarol, pa.ApprovalID, map[string]any{"decision": "reject", "comment": "not today"})
	if st != http.StatusOK || r["status"] != "rejected" {
		t.Fatalf("carol rejects: %d %v", st, r)
	}
	rec, _ := h.auditOf(tokAlice, pa.ApprovalID)
	if rec["decidedBy"] != "globex/carol" || rec["state"] != "rejected" {
		t.Fatalf("record %v", rec)
	}
	if h.erase.Runs.Load() != 0 {
		t.Fatal("a rejected action ran")
	}
}

// TestCancelRecordsTheUser: a cancel through the API is the user's, with
// the reason in the audit trail.
func TestCancelRecordsTheUser(t *testing.T) {
	h := newHarness(t)
	pa := h.ask(tokAlice, "c1", "erase orders").PendingAction
	var got struct{ Approval map[string]any }
	body := map[string]any{"reason": "wrong\x07 table password=hunter2"}
	if st := h.do("POST", "/api/approvals/"+pa.ApprovalID+"/cancel", tokAlice, body, &got); st != http.StatusOK {
		t.Fatalf("cancel: %d", st)
	}
	if a := got.Approval; a["state"] != "cancelled" || a["decidedBy"] != "acme/alice" || a["decidedVia"] != "api" {
		t.Fatalf("cancelled record %v", a)
	}
	_, trail := h.auditOf(tokAlice, pa.ApprovalID)
	var cancel map[string]any
	for _, r := range trail {
		if r["event"] == "cancel" {
			cancel = r
		}
	}
	if cancel == nil || cancel["actor"] != "acme/alice" || cancel["source"] != "api" {
		t.Fatalf("cancel record %v", cancel)
	}
	reason, _ := cancel["reason"].(string)
	if !strings.Contains(reason, "wrong") || strings.Contains(reason, "hunter2") || strings.ContainsRune(reason, '\x07') {
		t.Fatalf("cancel reason %q", reason)
	}
	// Someone else (even one who may decide) cannot withdraw it.
	h2 := newHarness(t, fourEyes(approval.ApproverChat))
	pa2 := h2.ask(tokAlice, "c1", "erase orders").PendingAction
	if st := h2.do("POST", "/api/approvals/"+pa2.ApprovalID+"/cancel", tokBob, nil, nil); st != http.StatusForbidden {
		t.Fatalf("bob cancels alice's: %d", st)
	}
}

// TestRejectReasonAudited: the comment of a rejection is in the audit
// trail, cleaned and bounded.
func TestRejectReasonAudited(t *testing.T) {
	h := newHarness(t)
	pa := h.ask(tokAlice, "c1", "erase orders").PendingAction
	msg := "not now\x1b[31m, token=abc123secret " + strings.Repeat("é", 2000)
	if st, c := h.chat(tokAlice, map[string]any{"confirmationToken": pa.Token, "confirmed": false, "message": msg}); st != http.StatusOK || c.Status != "rejected" {
		t.Fatalf("reject: %d %+v", st, c)
	}
	_, trail := h.auditOf(tokAlice, pa.ApprovalID)
	var reason string
	for _, r := range trail {
		if r["event"] == "reject" {
			reason, _ = r["reason"].(string)
		}
	}
	if !strings.HasPrefix(reason, "not now") || strings.Contains(reason, "abc123secret") || utf8.RuneCountInString(reason) > 501 {
		t.Fatalf("reject reason %q (%d runes)", reason, utf8.RuneCountInString(reason))
	}
	for _, r := range reason {
		if unicode.IsControl(r) {
			t.Fatalf("reject reason holds control character %U: %q", r, reason)
		}
	}
}

// TestWrongMethod mounts the API beside a catch-all handler, as cmd/bot
// mounts it beside the web chat: a wrong method is 405 with Allow.
func TestWrongMethod(t *testing.T) {
	h := newHarness(t)
	mux := http.NewServeMux()
	h.api.Mount(mux)
	mux.Handle("/", http.NotFoundHandler()) // the web chat
	srv := httptest.NewServer(mux)
	defer srv.Close()
	id := approval.NewID("s")
	for _, c := range []struct{ method, path, allow string }{
		{"GET", "/agent/chat", "POST"},
		{"PUT", "/agent/chat", "POST"},
		{"POST", "/api/approvals", "GET, HEAD"},
		{"DELETE", "/api/approvals/" + string(id), "GET, HEAD"},
		{"GET", "/api/approvals/" + string(id) + "/decision", "POST"},
		{"GET", "/api/approvals/" + string(id) + "/cancel", "POST"},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		allow := strings.Split(resp.Header.Get("Allow"), ", ")
		sort.Strings(allow)
		if resp.StatusCode != http.StatusMethodNotAllowed || strings.Join(allow, ", ") != c.allow {
			t.Errorf("%s %s: %d, Allow %q, body %s", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), b)
		}
	}
}

// TestInvalidUTF8 refuses bodies that JSON decoding would silently turn
// into U+FFFD.
func TestInvalidUTF8(t *testing.T) {
	h := newHarness(t)
	for name, body := range map[string]string{
		"raw byte":        "{\"message\":\"erase \xff orders\"}",
		"truncated rune":  "{\"message\":\"erase \xe4\xbd orders\"}",
		"lone surrogate":  `{"message":"erase \ud800 orders"}`,
		"lone low":        `{"message":"erase \udc00 orders"}`,
		"bad key":         "{\"mess\xffage\":\"hi\"}",
		"bad token value": "{\"confirmationToken\":\"pa_\xff\",\"confirmed\":true}",
	} {
		st, _, r := h.raw("POST", "/agent/chat", tokAlice, body)
		if st != http.StatusBadRequest || r["error"] != "invalid_request" {
			t.Errorf("%s: %d %v", name, st, r)
		}
	}
	pa := h.ask(tokAlice, "c1", "erase orders").PendingAction
	st, _, r := h.raw("POST", "/api/approvals/"+pa.ApprovalID+"/decision", tokAlice, "{\"decision\":\"reject\",\"comment\":\"no\xff\"}")
	if st != http.StatusBadRequest || r["error"] != "invalid_request" {
		t.Errorf("decision: %d %v", st, r)
	}
	st, _, r = h.raw("POST", "/api/approvals/"+pa.ApprovalID+"/cancel", tokAlice, "{\"reason\":\"no\xff\"}")
	if st != http.StatusBadRequest || r["error"] != "invalid_request" {
		t.Errorf("cancel: %d %v", st, r)
	}
	// A valid surrogate pair and the replacement character itself are fine.
	if st, r := h.chat(tokAlice, map[string]any{"message": "hi \U0001F600 \uFFFD", "conversationId": "c2"}); st != http.StatusOK || r.Text != "echo: hi \U0001F600 \uFFFD" {
		t.Errorf("valid text: %d %+v", st, r)
	}
	if st, _, r := h.raw("POST", "/agent/chat", tokAlice, `{"message":"hi \ud83d\ude00","conversationId":"c3"}`); st != http.StatusOK || r["text"] != "echo: hi \U0001F600" {
		t.Errorf("escaped pair: %d %v", st, r)
	}
	if h.erase.Runs.Load() != 0 {
		t.Fatal("ran")
	}
}
