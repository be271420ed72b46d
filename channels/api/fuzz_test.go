package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hitlbot/hitlbot/approval"
)

// knownCodes are the error codes the API answers with.
var knownCodes = map[string]bool{"invalid_request": true, "unauthorized": true, "user_mismatch": true, "family_mismatch": true,
	"forbidden": true, "not_allowed": true, "not_found": true, "method_not_allowed": true, "already_decided": true, "tampered": true, "expired": true,
	"rate_limited": true}

// fuzzPost sends body and checks what every answer must be: never a 5xx,
// always JSON, an error always with a known code, and a body that is not
// exactly one JSON object of valid UTF-8 always 400 (an empty one is
// allowed where the body is optional). It returns the status and the
// decoded answer.
func fuzzPost(t *testing.T, url, token, body string, optional bool) (int, map[string]any) {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 500 {
		t.Fatalf("%q: status %d: %s", body, resp.StatusCode, raw)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%q: the answer is not JSON: %q", body, raw)
	}
	if resp.StatusCode != http.StatusOK {
		code, _ := out["error"].(string)
		if !knownCodes[code] {
			t.Fatalf("%q: status %d with unknown error %q", body, resp.StatusCode, code)
		}
	}
	empty := strings.Trim(body, " \t\r\n") == ""
	malformed := !utf8.ValidString(body) || !json.Valid([]byte(body)) || !strings.HasPrefix(strings.TrimLeft(body, " \t\r\n"), "{")
	if empty && optional {
		malformed = false
	}
	if malformed && resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("%q: a malformed body got %d %s", body, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

// FuzzChatRequest posts arbitrary bodies to POST /agent/chat through the
// real stack, single and batch confirmations included: the server never
// fails with a 5xx, always answers JSON, an error answer always names a
// known code, and a malformed body (not one JSON object, invalid UTF-8) is
// 400.
func FuzzChatRequest(f *testing.F) {
	for _, seed := range []string{
		`{"message":"hello"}`, `{"message":"erase orders","conversationId":"c1"}`,
		`{"confirmationToken":"pa_00000000000000000000000000000000","confirmed":true}`,
		`{"message":"确认","conversationId":"c1"}`, `{"message":""}`, `[]`, `{`, ``, `{"message":1}`,
		`{"message":"x","conversationId":"../../etc"}`, `{"confirmationToken":"nope","confirmed":"yes"}`,
		`{"message":"hi"} {"message":"again"}`, `{"message":"hi"}]`, "{\"message\":\"hi\"}\u00a0",
		`{"confirmationTokens":["pa_00000000000000000000000000000000","pa_00000000000000000000000000000000"],"confirmed":true}`,
		`{"confirmationTokens":[],"confirmed":false}`, `{"confirmationTokens":"pa_","confirmed":true}`,
		`{"confirmationTokens":[1,null,{}],"confirmed":true}`, `{"confirmationTokens":["x"],"confirmationToken":"y","confirmed":true}`,
		"{\"message\":\"bad \xff byte\"}", `{"message":"lone \udc00"}`, `{"message":"pair \ud83d\ude00"}`, `null`, `"message"`,
	} {
		f.Add(seed)
	}
	h := newHarness(f, func(s *setup) { s.cfg.TurnTimeout = 200 * time.Millisecond })
	f.Fuzz(func(t *testing.T, body string) {
		fuzzPost(t, h.srv.URL+"/agent/chat", tokAlice, body, false)
	})
}

// FuzzDecisionRequest posts arbitrary bodies to the decision and cancel
// routes of a pending approval, as its requester, a colleague who may
// decide it and a user of another tenant. On top of fuzzPost's checks: an
// approval runs only on a decision that names its payload hash.
func FuzzDecisionRequest(f *testing.F) {
	for _, seed := range []string{
		`{"decision":"approve","payloadSha256":"HASH"}`, `{"decision":"approve"}`, `{"decision":"reject"}`,
		`{"decision":"reject","comment":"no\u0007 password=x"}`, `{"decision":"approve","payloadSha256":"00"}`,
		`{"decision":"maybe"}`, `{"decision":1}`, `{"reason":"changed my mind"}`, `{}`, ``, `{`, `[]`, `null`,
		`{"decision":"approve","payloadSha256":"HASH"} {}`, "{\"decision\":\"reject\",\"comment\":\"\xff\"}",
		`{"decision":"reject","comment":"\ud800"}`,
	} {
		for who := range byte(3) {
			f.Add(seed, who, false)
			f.Add(seed, who, true)
		}
	}
	h := newHarness(f, fourEyes(approval.ApproverChat), func(s *setup) { s.cfg.TurnTimeout = 200 * time.Millisecond })
	n := 0
	f.Fuzz(func(t *testing.T, body string, who byte, cancel bool) {
		n++
		st, r := fuzzPost(t, h.srv.URL+"/agent/chat", tokAlice, fmt.Sprintf(`{"message":"erase x","conversationId":"fz%d"}`, n), false)
		pa, _ := r["pendingAction"].(map[string]any)
		if st != http.StatusOK || pa == nil {
			t.Fatalf("asking: %d %v", st, r)
		}
		id := approval.ID(pa["approvalId"].(string))
		defer h.engine.Cancel(t.Context(), id, "", approval.SourceSystem, "") // keep one pending at a time
		rec, err := h.engine.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		body = strings.ReplaceAll(body, "HASH", rec.PayloadSHA256)
		token := []string{tokAlice, tokBob, tokCarol}[who%3]
		route := "/decision"
		if cancel {
			route = "/cancel"
		}
		before := h.erase.Runs.Load()
		st, _ = fuzzPost(t, h.srv.URL+"/api/approvals/"+string(id)+route, token, body, cancel) // a cancel's body is optional
		ran := h.erase.Runs.Load() != before
		if !ran {
			return
		}
		var req struct{ Decision, PayloadSHA256 string }
		if err := json.Unmarshal([]byte(body), &req); cancel || st != http.StatusOK || err != nil ||
			req.Decision != "approve" || req.PayloadSHA256 != rec.PayloadSHA256 || token != tokBob {
			t.Fatalf("%q as %s on %s: ran (status %d) without bob's approval of the shown hash", body, token, route, st)
		}
	})
}
