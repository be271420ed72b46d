package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels/api"
	"github.com/hitlbot/hitlbot/internal/waitfor"
)

// freezeViaAPI asks alice's conversation conv to erase orders and
// approves it through the API while the tool's effect comes back unknown:
// the approval is frozen after one run. It returns the approval.
func freezeViaAPI(t *testing.T, h *harness, conv string) api.ApprovalInfo {
	t.Helper()
	h.erase.Unknown.Store(1)
	pa := h.ask(tokAlice, conv, "erase orders").PendingAction
	info := getInfo(t, h, pa.ApprovalID)
	var d api.DecisionResponse
	if st := h.do("POST", "/api/approvals/"+pa.ApprovalID+"/decision", tokAlice,
		map[string]any{"decision": "approve", "payloadSha256": info.PayloadSHA256}, &d); st != http.StatusOK || d.Status != approval.StatusFrozen {
		t.Fatalf("approve: %d %+v", st, d)
	}
	if info = getInfo(t, h, pa.ApprovalID); info.State != approval.StateFrozen || info.Status != approval.StatusFrozen {
		t.Fatalf("after approving: %+v", info)
	}
	return info
}

// getInfo is the approval GET /api/approvals/{id} shows alice.
func getInfo(t *testing.T, h *harness, id string) api.ApprovalInfo {
	t.Helper()
	var got struct{ Approval api.ApprovalInfo }
	if st := h.do("GET", "/api/approvals/"+id, tokAlice, nil, &got); st != http.StatusOK {
		t.Fatalf("get %s: %d", id, st)
	}
	return got.Approval
}

// TestResolveThroughTheAPI: POST /api/approvals/{id}/decision with
// decision "resolve": bad input is a 400 that says what is wrong, a wrong
// hash 409 tampered, a user the rule does not allow 403, a pending
// approval 409; of concurrent retries exactly one wins (the tool runs
// exactly once more), the others are 409; GET shows the resolution, and
// the conversation's resumed turn (the model told the resolution) is kept
// for the requester.
func TestResolveThroughTheAPI(t *testing.T) {
	h := newHarness(t)
	info := freezeViaAPI(t, h, "c1")
	path := "/api/approvals/" + string(info.ID) + "/decision"
	for _, tc := range []struct {
		name  string
		token string
		body  any
		st    int
		code  string
	}{
		{"no resolution", tokAlice, map[string]any{"decision": "resolve", "payloadSha256": info.PayloadSHA256}, 400, api.CodeInvalidRequest},
		{"unknown resolution", tokAlice, map[string]any{"decision": "resolve", "resolution": "maybe", "payloadSha256": info.PayloadSHA256}, 400, api.CodeInvalidRequest},
		{"a number", tokAlice, `{"decision":"resolve","resolution":1}`, 400, api.CodeInvalidRequest},
		{"no hash", tokAlice, map[string]any{"decision": "resolve", "resolution": "done"}, 400, api.CodeInvalidRequest},
		{"resolution with approve", tokAlice, map[string]any{"decision": "approve", "resolution": "done", "payloadSha256": info.PayloadSHA256}, 400, api.CodeInvalidRequest},
		{"wrong hash", tokAlice, map[string]any{"decision": "resolve", "resolution": "retry", "payloadSha256": strings.Repeat("0", 64)}, 409, api.CodeTampered},
		{"bob may not", tokBob, map[string]any{"decision": "resolve", "resolution": "retry", "payloadSha256": info.PayloadSHA256}, 403, api.CodeUserMismatch},
		{"carol of another tenant", tokCarol, map[string]any{"decision": "resolve", "resolution": "done", "payloadSha256": info.PayloadSHA256}, 403, api.CodeFamilyMismatch},
		{"approve a frozen one", tokAlice, map[string]any{"decision": "approve", "payloadSha256": info.PayloadSHA256}, 409, api.CodeConflict},
	} {
		var e api.ErrorResponse
		if st := h.do("POST", path, tc.token, tc.body, &e); st != tc.st || e.Error != tc.code || e.Message == "" {
			t.Errorf("%s: %d %+v, want %d %s", tc.name, st, e, tc.st, tc.code)
		}
	}
	if n := h.erase.Runs.Load(); n != 1 {
		t.Fatalf("a refused resolution ran the tool: %d runs", n)
	}

	const n = 8
	var wg sync.WaitGroup
	statuses := make([]int, n)
	bodies := make([]api.DecisionResponse, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = h.do("POST", path, tokAlice, map[string]any{"decision": "resolve", "resolution": "retry",
				"payloadSha256": info.PayloadSHA256, "comment": "the database is back"}, &bodies[i])
		}()
	}
	wg.Wait()
	won := 0
	for i, st := range statuses {
		switch st {
		case http.StatusOK:
			won++
			if b := bodies[i]; b.Status != approval.StatusExecuted || b.Approval.Resolution != approval.ResolveRetry || b.Approval.State != approval.StateExecuted {
				t.Errorf("the winning retry answered %+v", b)
			}
		case http.StatusConflict:
		default:
			t.Errorf("retry %d: status %d", i, st)
		}
	}
	if won != 1 {
		t.Fatalf("%d retries won, want 1: %v", won, statuses)
	}
	if got := h.erase.Runs.Load(); got != 2 {
		t.Fatalf("the tool ran %d times, want 2", got)
	}
	waitfor.True(t, "the resumed turn's answer is kept for the requester", func() bool {
		got := getInfo(t, h, string(info.ID))
		return got.Resolution == approval.ResolveRetry && got.Resumed != nil &&
			strings.Contains(got.Resumed.Text, "Update on the earlier approval "+string(info.ID)) && strings.Contains(got.Resumed.Text, "the retry ended executed")
	})

	// A pending approval is not frozen: 409, nothing runs.
	pa := h.ask(tokAlice, "c2", "erase customers").PendingAction
	get := getInfo(t, h, pa.ApprovalID)
	var e api.ErrorResponse
	if st := h.do("POST", "/api/approvals/"+pa.ApprovalID+"/decision", tokAlice,
		map[string]any{"decision": "resolve", "resolution": "done", "payloadSha256": get.PayloadSHA256}, &e); st != 409 || e.Error != api.CodeConflict ||
		!strings.Contains(e.Message, "not frozen") {
		t.Fatalf("resolving a pending approval: %d %+v", st, e)
	}
}

// TestResolveDoneAndAbandonAudited: 已完成 and 放弃 through the API end the
// frozen approval without running anything, audited with the resolver's
// note (cleaned).
func TestResolveDoneAndAbandonAudited(t *testing.T) {
	for _, tc := range []struct {
		r     string
		st    approval.Status
		event string
	}{{"done", approval.StatusExecuted, "resolve_done"}, {"abandon", approval.StatusFailed, "resolve_abandon"}} {
		t.Run(tc.r, func(t *testing.T) {
			h := newHarness(t)
			info := freezeViaAPI(t, h, "c1")
			var d api.DecisionResponse
			if st := h.do("POST", "/api/approvals/"+string(info.ID)+"/decision", tokAlice, map[string]any{"decision": "resolve", "resolution": tc.r,
				"payloadSha256": info.PayloadSHA256, "comment": "checked\x1b[31m token=abc123secret"}, &d); st != http.StatusOK || d.Status != tc.st {
				t.Fatalf("resolve %s: %d %+v", tc.r, st, d)
			}
			if n := h.erase.Runs.Load(); n != 1 {
				t.Fatalf("the tool ran %d times", n)
			}
			_, trail := h.auditOf(tokAlice, string(info.ID))
			found := false
			for _, r := range trail {
				if r["event"] == tc.event {
					found = true
					reason, _ := r["reason"].(string)
					if r["actor"] != "acme/alice" || r["source"] != "api" || !strings.HasPrefix(reason, "checked") || strings.Contains(reason, "abc123secret") || strings.Contains(reason, "\x1b") {
						t.Fatalf("audit record %v", r)
					}
				}
			}
			if !found {
				t.Fatalf("no %s record in %v", tc.event, trail)
			}
		})
	}
}

// FuzzResolveRequest posts arbitrary bodies to the decision route of a
// frozen approval (one per input), as its requester, a colleague and a
// user of another tenant: never a 5xx (fuzzPost), and the tool runs again
// only on the requester's "retry" that names the approval's hash.
func FuzzResolveRequest(f *testing.F) {
	for _, seed := range []string{
		`{"decision":"resolve","resolution":"retry","payloadSha256":"HASH"}`, `{"decision":"resolve","resolution":"done","payloadSha256":"HASH","comment":"ok"}`,
		`{"decision":"resolve","resolution":"abandon","payloadSha256":"HASH"}`, `{"decision":"resolve","resolution":"retry"}`,
		`{"decision":"resolve","resolution":"RETRY","payloadSha256":"HASH"}`, `{"decision":"resolve","resolution":["retry"],"payloadSha256":"HASH"}`,
		`{"decision":"resolve","payloadSha256":"HASH"}`, `{"decision":"approve","resolution":"retry","payloadSha256":"HASH"}`,
		`{"decision":"resolve","resolution":"retry","payloadSha256":"00"}`, `{"decision":"resolve","resolution":null}`, `{}`, ``, `[]`,
		"{\"decision\":\"resolve\",\"resolution\":\"done\",\"payloadSha256\":\"HASH\",\"comment\":\"\xff\"}",
	} {
		for who := range byte(3) {
			f.Add(seed, who)
		}
	}
	h := newHarness(f, func(s *setup) { s.cfg.TurnTimeout = 200 * time.Millisecond })
	n := 0
	f.Fuzz(func(t *testing.T, body string, who byte) {
		n++
		h.erase.Unknown.Store(1)
		st, r := fuzzPost(t, h.srv.URL+"/agent/chat", tokAlice, fmt.Sprintf(`{"message":"erase x","conversationId":"fr%d"}`, n), false)
		pa, _ := r["pendingAction"].(map[string]any)
		if st != http.StatusOK || pa == nil {
			t.Fatalf("asking: %d %v", st, r)
		}
		id := approval.ID(pa["approvalId"].(string))
		rec, err := h.engine.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if o, err := h.engine.Decide(t.Context(), id, approval.Decision{Verb: approval.Approve, Actor: rec.Requester, Source: approval.SourceAPI,
			PayloadSHA256: rec.PayloadSHA256}); err != nil || o.Status != approval.StatusFrozen {
			t.Fatalf("freezing: %+v %v", o, err)
		}
		body = strings.ReplaceAll(body, "HASH", rec.PayloadSHA256)
		token := []string{tokAlice, tokBob, tokCarol}[who%3]
		before := h.erase.Runs.Load()
		st, _ = fuzzPost(t, h.srv.URL+"/api/approvals/"+string(id)+"/decision", token, body, false)
		if h.erase.Runs.Load() == before {
			return
		}
		var req struct{ Decision, Resolution, PayloadSHA256 string }
		if err := json.Unmarshal([]byte(body), &req); st != http.StatusOK || err != nil || req.Decision != "resolve" || req.Resolution != "retry" ||
			req.PayloadSHA256 != rec.PayloadSHA256 || token != tokAlice {
			t.Fatalf("%q as %s: ran again (status %d) without the requester's retry of the shown hash", body, token, st)
		}
	})
}
