package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hitlbot/hitlbot/approval"
)

// seedClient is a client of POST /agent/chat written from the seed
// document alone (shared/seeds/004: "Confirmation Guardrail Layer"): it
// speaks raw JSON maps and knows none of the package's types.
type seedClient struct {
	t     *testing.T
	base  string
	token string
}

func (c seedClient) post(body map[string]any) (int, map[string]any) {
	c.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		c.t.Fatal(err)
	}
	req, err := http.NewRequest("POST", c.base+"/agent/chat", bytes.NewReader(b))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		c.t.Fatalf("%v: the answer is not a JSON object: %s", body, raw)
	}
	return resp.StatusCode, out
}

// seedPending checks a response that awaits confirmation against the
// seed's schema and returns its pendingAction.
func seedPending(t *testing.T, r map[string]any) map[string]any {
	t.Helper()
	if r["requiresConfirmation"] != true {
		t.Fatalf("requiresConfirmation is not true: %v", r)
	}
	for _, k := range []string{"text", "domain", "conversationId", "requestId"} {
		if _, ok := r[k].(string); !ok {
			t.Fatalf("%s is not a string: %v", k, r)
		}
	}
	if _, ok := r["actions"].([]any); !ok {
		t.Fatalf("actions is not an array: %v", r)
	}
	pa, ok := r["pendingAction"].(map[string]any)
	if !ok {
		t.Fatalf("pendingAction is not an object: %v", r)
	}
	if tok, _ := pa["token"].(string); !regexp.MustCompile(`^pa_[0-9a-f]{32}$`).MatchString(tok) {
		t.Fatalf("token %v is not pa_ + 32 hex", pa["token"])
	}
	for _, k := range []string{"description", "toolName", "expiresAt"} {
		if s, _ := pa[k].(string); s == "" {
			t.Fatalf("pendingAction.%s is not a non-empty string: %v", k, pa)
		}
	}
	if _, err := time.Parse(time.RFC3339, pa["expiresAt"].(string)); err != nil {
		t.Fatalf("expiresAt: %v", err)
	}
	if _, ok := pa["isDestructive"].(bool); !ok {
		t.Fatalf("isDestructive is not a boolean: %v", pa)
	}
	if _, ok := pa["inputPreview"].(map[string]any); !ok {
		t.Fatalf("inputPreview is not an object: %#v", pa["inputPreview"])
	}
	return pa
}

func wantError(t *testing.T, what string, st int, r map[string]any, status int, code string) {
	t.Helper()
	if st != status || r["error"] != code {
		t.Fatalf("%s: %d %v, want %d %s", what, st, r, status, code)
	}
}

// TestSeedClient runs the seed's confirmation flow, its validation errors
// and its first enhancement (batch confirmation) with a client that knows
// only the seed.
func TestSeedClient(t *testing.T) {
	h := newHarness(t)
	alice := seedClient{t, h.srv.URL, tokAlice}
	bob := seedClient{t, h.srv.URL, tokBob}
	carol := seedClient{t, h.srv.URL, tokCarol}

	// 1. A risky request awaits confirmation; inputPreview is the
	// sanitised input as an object.
	st, r := alice.post(map[string]any{"message": "erase orders", "conversationId": "conv-abc", "domainHint": "tasks"})
	if st != http.StatusOK {
		t.Fatalf("%d %v", st, r)
	}
	pa := seedPending(t, r)
	if pa["toolName"] != "erase" || pa["isDestructive"] != true || r["conversationId"] != "conv-abc" {
		t.Fatalf("pendingAction %v", pa)
	}
	if p := pa["inputPreview"].(map[string]any); len(p) != 1 || p["target"] != "orders" {
		t.Fatalf("inputPreview %v", p)
	}

	// Secrets are redacted and long strings cut in the preview.
	long := strings.Repeat("x", 5000)
	_, r = alice.post(map[string]any{"message": "connect db1 hunter2-secret " + long, "conversationId": "conv-db"})
	connect := seedPending(t, r)
	p := connect["inputPreview"].(map[string]any)
	if p["host"] != "db1" || p["password"] == "hunter2-secret" || p["password"] == nil {
		t.Fatalf("inputPreview %v", p)
	}
	if note, _ := p["note"].(string); !strings.HasPrefix(note, "xxx") || utf8.RuneCountInString(note) > 300 {
		t.Fatalf("the long note is not cut: %d runes", utf8.RuneCountInString(note))
	}
	if raw, _ := json.Marshal(r); strings.Contains(string(raw), "hunter2-secret") {
		t.Fatalf("the secret is in the response: %s", raw)
	}

	// Validation errors of the seed's table.
	st, r = bob.post(map[string]any{"message": "yes", "confirmationToken": pa["token"], "confirmed": true})
	wantError(t, "another user", st, r, http.StatusForbidden, "user_mismatch")
	st, r = carol.post(map[string]any{"message": "yes", "confirmationToken": pa["token"], "confirmed": true})
	wantError(t, "another family", st, r, http.StatusForbidden, "family_mismatch")
	st, r = alice.post(map[string]any{"message": "yes", "confirmationToken": "pa_a1b2c3d4e5f6789012345678901234ab", "confirmed": true})
	wantError(t, "unknown token", st, r, http.StatusNotFound, "not_found")
	if h.erase.Runs.Load() != 0 {
		t.Fatal("ran before the confirmation")
	}

	// 2. The user confirms; 3. the action is executed.
	st, r = alice.post(map[string]any{"message": "yes", "confirmationToken": pa["token"], "confirmed": true})
	if st != http.StatusOK || r["requiresConfirmation"] == true {
		t.Fatalf("confirm: %d %v", st, r)
	}
	acts, _ := r["actions"].([]any)
	if len(acts) != 1 {
		t.Fatalf("actions %v", r["actions"])
	}
	act := acts[0].(map[string]any)
	if act["tool"] != "erase" || act["input"].(map[string]any)["target"] != "orders" || act["result"] == nil {
		t.Fatalf("action %v", act)
	}
	if h.erase.Runs.Load() != 1 {
		t.Fatalf("runs = %d", h.erase.Runs.Load())
	}
	// A consumed token is not found.
	st, r = alice.post(map[string]any{"message": "yes", "confirmationToken": pa["token"], "confirmed": true})
	wantError(t, "consumed token", st, r, http.StatusNotFound, "not_found")

	// Batch confirmation: several pending actions in one request, each
	// with its own result, in the order given.
	_, r = alice.post(map[string]any{"message": "erase users"})
	t1 := seedPending(t, r)["token"]
	_, r = alice.post(map[string]any{"message": "erase logs"})
	t2 := seedPending(t, r)["token"]
	unknown := "pa_" + strings.Repeat("0", 32)
	st, r = alice.post(map[string]any{"message": "yes", "confirmationTokens": []any{t1, unknown, t2, connect["token"]}, "confirmed": true})
	if st != http.StatusOK {
		t.Fatalf("batch: %d %v", st, r)
	}
	results, _ := r["results"].([]any)
	if len(results) != 4 {
		t.Fatalf("batch results %v", r["results"])
	}
	for i, want := range []string{"executed", "not_found", "executed", "executed"} {
		res := results[i].(map[string]any)
		tok := []any{t1, unknown, t2, connect["token"]}[i]
		if res["token"] != tok {
			t.Fatalf("result %d is for %v, want %v", i, res["token"], tok)
		}
		got, _ := res["status"].(string)
		if e, ok := res["error"].(string); ok {
			got = e
			if m, _ := res["message"].(string); m == "" {
				t.Fatalf("result %d: an error without a message: %v", i, res)
			}
		}
		if got != want {
			t.Fatalf("result %d: %v, want %s", i, res, want)
		}
	}
	if h.erase.Runs.Load() != 3 {
		t.Fatalf("runs = %d after the batch, want 3", h.erase.Runs.Load())
	}
	if acts, _ := r["actions"].([]any); len(acts) != 3 {
		t.Fatalf("batch actions %v", r["actions"])
	}
	// Each token was consumed once: the same batch again finds none.
	st, r = alice.post(map[string]any{"confirmationTokens": []any{t1, t2}, "confirmed": true})
	if st != http.StatusOK {
		t.Fatalf("batch again: %d %v", st, r)
	}
	for _, res := range r["results"].([]any) {
		if res.(map[string]any)["error"] != "not_found" {
			t.Fatalf("batch again: %v", res)
		}
	}
	if h.erase.Runs.Load() != 3 {
		t.Fatalf("runs = %d after the repeated batch", h.erase.Runs.Load())
	}

	// A batch that is not a list of tokens, or an empty one, is refused.
	for _, body := range []map[string]any{
		{"confirmationTokens": []any{}, "confirmed": true},
		{"confirmationTokens": "pa_x", "confirmed": true},
		{"confirmationTokens": []any{t1}},
		{"confirmationTokens": []any{t1}, "confirmationToken": t1, "confirmed": true},
	} {
		st, r = alice.post(body)
		wantError(t, "bad batch", st, r, http.StatusBadRequest, "invalid_request")
	}

	// Expired: TTL exceeded.
	_, r = alice.post(map[string]any{"message": "erase cache"})
	late := seedPending(t, r)["token"]
	h.clk.Advance(approval.DefaultTimeout + time.Second)
	st, r = alice.post(map[string]any{"message": "yes", "confirmationToken": late, "confirmed": true})
	wantError(t, "expired", st, r, http.StatusGone, "expired")
}
