package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

// TestDecisionEdit: POST /api/approvals/{id}/decision {decision: "edit",
// arguments, payloadSha256} approves the changed arguments in one step:
// the tool runs once with them, the approval now carries the edited
// call's hash (the proposed one kept as proposedSha256), the call says
// what changed, the model is told, and the audit trail's confirm record
// names both hashes. Arguments the tool's schema refuses, or of the wrong
// shape, are 400 and decide nothing. On both stores.
func TestDecisionEdit(t *testing.T) {
	stores(t, func(t *testing.T, h *harness) {
		pa := h.ask(tokAlice, "ed", "erase orders").PendingAction
		id := pa.ApprovalID
		info, _ := h.auditOf(tokAlice, id)
		hash, _ := info["payloadSha256"].(string)
		for _, body := range []map[string]any{
			{"decision": "edit", "payloadSha256": hash},
			{"decision": "edit", "payloadSha256": hash, "arguments": "orders_archive"},
			{"decision": "edit", "payloadSha256": hash, "arguments": map[string]any{"target": 42}},
			{"decision": "edit", "payloadSha256": hash, "arguments": map[string]any{"target": "x", "extra": true}},
			{"decision": "approve", "payloadSha256": hash, "arguments": map[string]any{"target": "x"}},
		} {
			if st, r := h.decision(tokAlice, id, body); st != http.StatusBadRequest || r["error"] != "invalid_request" {
				t.Fatalf("%v: %d %v", body, st, r)
			}
		}
		if h.erase.Runs.Load() != 0 {
			t.Fatal("a refused edit ran the tool")
		}
		st, r := h.decision(tokAlice, id, map[string]any{"decision": "edit", "payloadSha256": hash, "comment": "the archive, not the live table",
			"arguments": map[string]any{"target": "orders_archive"}})
		if st != http.StatusOK || r["status"] != "executed" {
			t.Fatalf("edit: %d %v", st, r)
		}
		acts, _ := r["actions"].([]any)
		if len(acts) != 1 {
			t.Fatalf("actions %v", r["actions"])
		}
		act := acts[0].(map[string]any)
		if in, _ := act["input"].(map[string]any); in["target"] != "orders_archive" || !strings.Contains(act["result"].(string), "erase orders_archive done") {
			t.Fatalf("action %v", act)
		}
		if h.erase.Runs.Load() != 1 {
			t.Fatalf("runs %d", h.erase.Runs.Load())
		}
		info, trail := h.auditOf(tokAlice, id)
		calls, _ := info["calls"].([]any)
		if info["proposedSha256"] != hash || info["payloadSha256"] == hash || len(calls) != 1 ||
			calls[0].(map[string]any)["edited"] != `target: "orders" → "orders_archive"` {
			t.Fatalf("GET after the edit: %v", info)
		}
		confirmed := false
		for _, rec := range trail {
			if rec["event"] == "confirm" {
				confirmed = rec["proposed_sha256"] == hash && rec["payload_sha256"] == info["payloadSha256"]
			}
		}
		if !confirmed {
			t.Fatalf("no confirm record with both hashes: %v", trail)
		}
		if again, r := h.decision(tokAlice, id, map[string]any{"decision": "edit", "payloadSha256": hash,
			"arguments": map[string]any{"target": "orders"}}); again != http.StatusConflict {
			t.Fatalf("a second edit: %d %v", again, r)
		}
		if h.erase.Runs.Load() != 1 {
			t.Fatalf("runs %d", h.erase.Runs.Load())
		}
	})
}

// FuzzDecisionEdit posts arbitrary edit bodies (HASH stands for the
// approval's payload hash) on a pending approval of one call: never a 5xx
// (fuzzPost's checks), and the tool runs only on a 200 answer to an edit
// or approval naming the shown hash, at most once.
func FuzzDecisionEdit(f *testing.F) {
	for _, seed := range []string{
		`{"decision":"edit","payloadSha256":"HASH","arguments":{"target":"orders_archive"}}`,
		`{"decision":"edit","payloadSha256":"HASH","arguments":{"target":1}}`,
		`{"decision":"edit","payloadSha256":"HASH","arguments":{"target":"x","more":[1,2]}}`,
		`{"decision":"edit","payloadSha256":"HASH","arguments":[]}`, `{"decision":"edit","payloadSha256":"HASH","arguments":null}`,
		`{"decision":"edit","payloadSha256":"HASH","arguments":"x"}`, `{"decision":"edit","arguments":{"target":"x"}}`,
		`{"decision":"edit","payloadSha256":"HASH","arguments":{"target":"x"},"calls":{"#1":"approve"}}`,
		`{"decision":"edit","payloadSha256":"HASH","arguments":{"#1":{"target":"y"}}}`,
		`{"decision":"edit","payloadSha256":"HASH","arguments":{"target":"\ud800"}}`,
	} {
		f.Add(seed)
	}
	h := newHarness(f, func(s *setup) { s.cfg.TurnTimeout = 200 * time.Millisecond })
	n := 0
	f.Fuzz(func(t *testing.T, body string) {
		n++
		st, r := fuzzPost(t, h.srv.URL+"/agent/chat", tokAlice, fmt.Sprintf(`{"message":"erase x","conversationId":"fe%d"}`, n), false)
		pa, _ := r["pendingAction"].(map[string]any)
		if st != http.StatusOK || pa == nil {
			t.Fatalf("asking: %d %v", st, r)
		}
		id := approval.ID(pa["approvalId"].(string))
		defer h.engine.Cancel(t.Context(), id, "", approval.SourceSystem, "")
		rec, err := h.engine.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		body = strings.ReplaceAll(body, "HASH", rec.PayloadSHA256)
		before := h.erase.Runs.Load()
		st, _ = fuzzPost(t, h.srv.URL+"/api/approvals/"+string(id)+"/decision", tokAlice, body, false)
		ran := h.erase.Runs.Load() - before
		if ran == 0 {
			return
		}
		var req struct{ Decision, PayloadSHA256 string }
		if err := json.Unmarshal([]byte(body), &req); ran > 1 || st != http.StatusOK || err != nil ||
			(req.Decision != "edit" && req.Decision != "approve") || req.PayloadSHA256 != rec.PayloadSHA256 {
			t.Fatalf("%q: ran %d (status %d)", body, ran, st)
		}
	})
}
