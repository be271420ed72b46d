package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

// stores runs fn on a harness over the memory store and over Redis.
func stores(t *testing.T, fn func(t *testing.T, h *harness)) {
	t.Run("memory", func(t *testing.T) { fn(t, newHarness(t)) })
	t.Run("redis", func(t *testing.T) {
		c, prefix := testredis.Start(t)
		fn(t, newHarness(t, func(s *setup) {
			s.clk = clock.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
			st, err := redisstore.New(c.(*redis.Client), redisstore.Options{Prefix: prefix, Clock: s.clk, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			s.store = st
		}))
	})
}

// TestDecisionPerCall: POST /api/approvals/{id}/decision with calls runs
// the approved calls of a batch once and not the rejected one; the actions
// and GET say which is which, and the audit trail has a record per call.
func TestDecisionPerCall(t *testing.T) {
	stores(t, func(t *testing.T, h *harness) {
		pa := h.ask(tokAlice, "pc", "erase-both a b").PendingAction
		id := pa.ApprovalID
		info, _ := h.auditOf(tokAlice, id)
		hash, _ := info["payloadSha256"].(string)
		calls, _ := info["calls"].([]any)
		if len(calls) != 2 {
			t.Fatalf("GET shows calls %v", info["calls"])
		}
		var ids []string
		for _, c := range calls {
			m := c.(map[string]any)
			if m["tool"] != "erase" || m["callId"] == "" {
				t.Fatalf("call %v", m)
			}
			ids = append(ids, m["callId"].(string))
		}
		// Refused bodies: 400, nothing decided.
		for _, body := range []map[string]any{
			{"decision": "reject", "payloadSha256": hash, "calls": map[string]any{ids[0]: "approve", ids[1]: "reject"}},
			{"decision": "approve", "payloadSha256": hash, "calls": map[string]any{ids[0]: "approve"}},
			{"decision": "approve", "payloadSha256": hash, "calls": map[string]any{ids[0]: "approve", ids[1]: "maybe"}},
			{"decision": "approve", "payloadSha256": hash, "calls": map[string]any{ids[0]: "approve", "nope": "reject"}},
			{"decision": "approve", "payloadSha256": hash, "calls": map[string]any{}},
		} {
			if st, r := h.decision(tokAlice, id, body); st != http.StatusBadRequest || r["error"] != "invalid_request" {
				t.Fatalf("%v: %d %v", body, st, r)
			}
		}
		if h.erase.Runs.Load() != 0 {
			t.Fatal("a refused body ran something")
		}
		st, r := h.decision(tokAlice, id, map[string]any{"decision": "approve", "payloadSha256": hash, "comment": "not b",
			"calls": map[string]any{ids[0]: "approve", "#2": "reject"}})
		if st != http.StatusOK || r["status"] != "executed" {
			t.Fatalf("decision: %d %v", st, r)
		}
		acts, _ := r["actions"].([]any)
		if len(acts) != 2 || acts[0].(map[string]any)["status"] != "executed" || acts[1].(map[string]any)["status"] != "rejected" {
			t.Fatalf("actions %v", r["actions"])
		}
		if h.erase.Runs.Load() != 1 {
			t.Fatalf("erase ran %d times, want 1", h.erase.Runs.Load())
		}
		// The same decision again: conflict, nothing more runs.
		if st, r := h.decision(tokAlice, id, map[string]any{"decision": "approve", "payloadSha256": hash,
			"calls": map[string]any{ids[0]: "approve", ids[1]: "approve"}}); st != http.StatusConflict {
			t.Fatalf("again: %d %v", st, r)
		}
		info, trail := h.auditOf(tokAlice, id)
		calls, _ = info["calls"].([]any)
		if calls[0].(map[string]any)["status"] != "executed" || calls[1].(map[string]any)["status"] != "rejected" {
			t.Fatalf("GET after: %v", info["calls"])
		}
		perCall := 0
		for _, rec := range trail {
			if n, _ := rec["call"].(float64); n > 0 {
				perCall++
			}
		}
		if perCall != 3 { // confirm + execute of call 1, reject of call 2
			t.Fatalf("per-call audit records: %d in %v", perCall, trail)
		}
		if h.erase.Runs.Load() != 1 {
			t.Fatalf("erase ran %d times", h.erase.Runs.Load())
		}
	})
}

// FuzzDecisionCalls posts arbitrary per-call decision bodies (C1, C2 and
// HASH stand for the batch's call ids and payload hash) on a pending batch
// of two calls: never a 5xx (fuzzPost's checks), a call runs only on a 200
// that approved the shown hash, and never more calls than the body
// approved.
func FuzzDecisionCalls(f *testing.F) {
	for _, seed := range []string{
		`{"decision":"approve","payloadSha256":"HASH","calls":{"C1":"approve","C2":"reject"}}`,
		`{"decision":"approve","payloadSha256":"HASH","calls":{"#1":"reject","#2":"approve"}}`,
		`{"decision":"approve","payloadSha256":"HASH","calls":{"C1":"approve","#1":"reject"}}`,
		`{"decision":"approve","payloadSha256":"HASH","calls":{"C1":"reject","C2":"reject"},"comment":"no"}`,
		`{"decision":"approve","payloadSha256":"HASH","calls":{"C1":"approve","C2":"approve","C3":"approve"}}`,
		`{"decision":"approve","payloadSha256":"HASH","calls":{"C1":true,"C2":null}}`,
		`{"decision":"approve","payloadSha256":"HASH","calls":["C1"]}`, `{"decision":"approve","payloadSha256":"HASH","calls":null}`,
		`{"decision":"reject","calls":{"C1":"approve","C2":"reject"}}`, `{"decision":"approve","calls":{"C1":"approve","C2":"reject"}}`,
		`{"decision":"approve","payloadSha256":"HASH","calls":{"":"approve","#0":"reject"}}`,
		`{"decision":"approve","payloadSha256":"HASH","calls":{"#01":"approve","#2":"approve"}}`,
	} {
		f.Add(seed)
	}
	h := newHarness(f, func(s *setup) { s.cfg.TurnTimeout = 200 * time.Millisecond })
	n := 0
	f.Fuzz(func(t *testing.T, body string) {
		n++
		st, r := fuzzPost(t, h.srv.URL+"/agent/chat", tokAlice, fmt.Sprintf(`{"message":"erase-both x y","conversationId":"fc%d"}`, n), false)
		pa, _ := r["pendingAction"].(map[string]any)
		if st != http.StatusOK || pa == nil {
			t.Fatalf("asking: %d %v", st, r)
		}
		id := approval.ID(pa["approvalId"].(string))
		defer h.engine.Cancel(t.Context(), id, "", approval.SourceSystem, "")
		rec, err := h.engine.Get(t.Context(), id)
		if err != nil || len(rec.Calls) != 2 {
			t.Fatalf("%+v %v", rec, err)
		}
		body = strings.NewReplacer("HASH", rec.PayloadSHA256, "C1", approval.CallKey(rec.Calls, 0), "C2", approval.CallKey(rec.Calls, 1)).Replace(body)
		before := h.erase.Runs.Load()
		st, _ = fuzzPost(t, h.srv.URL+"/api/approvals/"+string(id)+"/decision", tokAlice, body, false)
		ran := h.erase.Runs.Load() - before
		if ran == 0 {
			return
		}
		var req struct {
			Decision, PayloadSHA256 string
			Calls                   map[string]string
		}
		if err := json.Unmarshal([]byte(body), &req); st != http.StatusOK || err != nil || req.Decision != "approve" || req.PayloadSHA256 != rec.PayloadSHA256 {
			t.Fatalf("%q: ran %d (status %d) without an approval of the shown hash", body, ran, st)
		}
		approved := int64(2)
		if req.Calls != nil {
			approved = 0
			for _, v := range req.Calls {
				if v == "approve" {
					approved++
				}
			}
		}
		if ran > approved {
			t.Fatalf("%q: %d calls ran, %d approved", body, ran, approved)
		}
	})
}
