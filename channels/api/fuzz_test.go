package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzChatRequest posts arbitrary bodies to POST /agent/chat through the
// real stack: the server never fails with a 5xx, always answers JSON, and
// an error answer always names a known code.
func FuzzChatRequest(f *testing.F) {
	for _, seed := range []string{
		`{"message":"hello"}`, `{"message":"erase orders","conversationId":"c1"}`,
		`{"confirmationToken":"pa_00000000000000000000000000000000","confirmed":true}`,
		`{"message":"确认","conversationId":"c1"}`, `{"message":""}`, `[]`, `{`, ``, `{"message":1}`,
		`{"message":"x","conversationId":"../../etc"}`, `{"confirmationToken":"nope","confirmed":"yes"}`,
		`{"message":"hi"} {"message":"again"}`,
	} {
		f.Add(seed)
	}
	h := newHarness(f, func(s *setup) { s.cfg.TurnTimeout = 200 * time.Millisecond })
	known := map[string]bool{"invalid_request": true, "unauthorized": true, "user_mismatch": true, "tenant_mismatch": true,
		"forbidden": true, "not_found": true, "already_decided": true, "expired": true, "rate_limited": true}
	f.Fuzz(func(t *testing.T, body string) {
		req, err := http.NewRequest("POST", h.srv.URL+"/agent/chat", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tokAlice)
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
			if !known[code] {
				t.Fatalf("%q: status %d with unknown error %q", body, resp.StatusCode, code)
			}
		}
	})
}
