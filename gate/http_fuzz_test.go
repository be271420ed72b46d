package gate_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzAgentRequest: whatever body an agent sends to POST /api/approvals,
// the answer is 2xx or 4xx, never 5xx, and never a panic.
func FuzzAgentRequest(f *testing.F) {
	for _, s := range []string{
		`{"tool_name":"Bash","input":{"command":"ls"}}`,
		`{"tool_name":"Read","input":{"file_path":"/a"},"tool_use_id":"t"}`,
		`{"tool_name":"","input":{}}`,
		`{"tool_name":"Bash","input":[1,2]}`,
		`{"tool_name":"Bash","input":{"a":1,"a":2}}`,
		`{"tool_name":"Bash","input":{},"callback_url":"http://[::1]:x"}`,
		`{"tool_name":"a/b","input":{}}`,
		`{"tool_name":"Bash"}`,
		`{"tool_name":"Bash","input":null}`,
		`{"tool_name":"Bash","input":{"command":"ls build"},"tool_use_id":"toolu_01"}`,
		`{"tool_name":"Bash","input":{"command":"rm -rf /"},"tool_use_id":"toolu_01"}`,
		`{"tool_name":"Read","input":{"file_path":"/a"},"idempotency_key":"toolu_01"}`,
		`null`, `[]`, `"x"`, `{`, ``,
	} {
		f.Add(s)
	}
	r := newRig(f)
	h := r.gate.HTTP(people)
	go func() { // cards of accepted requests; nobody decides them
		for range r.shown {
		}
	}()
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest("POST", "/api/approvals", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+ciToken)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= http.StatusInternalServerError || w.Code < http.StatusOK {
			t.Fatalf("%q: %d %s", body, w.Code, w.Body.String())
		}
	})
}
