package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels/api"
)

// An approval ended one way or another, then a typed 确认 / 取消 in its
// conversation: the request is answered at once with how the approval
// ended (the router's late-reply answer), never left to run out of
// TurnTimeout (incomplete).
var lateTypedCases = []struct {
	name, typed, want string
	status            approval.Status
	end               func(h *harness, pa *api.PendingAction)
}{
	{"approved by token, then 确认", "确认", "This approval has already been decided: Executed", approval.StatusAlreadyDecided, approveByToken},
	{"approved by token, then 取消", "取消", "This approval has already been decided: Executed", approval.StatusAlreadyDecided, approveByToken},
	{"approved by decision, then 确认", "确认", "This approval has already been decided: Executed", approval.StatusAlreadyDecided, approveByDecision},
	{"rejected by token, then 确认", "确认", "Declined; nothing was run", approval.StatusRejected, rejectByToken},
	{"withdrawn, then 取消", "取消", "The approval was withdrawn; nothing was run", approval.StatusCancelled, withdraw},
}

func approveByToken(h *harness, pa *api.PendingAction) {
	h.t.Helper()
	if st, r := h.chat(tokAlice, map[string]any{"confirmationToken": pa.Token, "confirmed": true}); st != http.StatusOK || r.Status != approval.StatusExecuted {
		h.t.Fatalf("approve by token: %d %+v", st, r)
	}
}

func rejectByToken(h *harness, pa *api.PendingAction) {
	h.t.Helper()
	if st, r := h.chat(tokAlice, map[string]any{"confirmationToken": pa.Token, "confirmed": false}); st != http.StatusOK || r.Status != approval.StatusRejected {
		h.t.Fatalf("reject by token: %d %+v", st, r)
	}
}

func approveByDecision(h *harness, pa *api.PendingAction) {
	h.t.Helper()
	if st, r := h.decision(tokAlice, pa.ApprovalID, map[string]any{"decision": "approve", "payloadSha256": h.hashOf(pa)}); st != http.StatusOK || r["status"] != "executed" {
		h.t.Fatalf("approve by decision: %d %v", st, r)
	}
}

func withdraw(h *harness, pa *api.PendingAction) {
	h.t.Helper()
	if st := h.do("POST", "/api/approvals/"+pa.ApprovalID+"/cancel", tokAlice, nil, nil); st != http.StatusOK {
		h.t.Fatalf("cancel: %d", st)
	}
}

// hashOf returns the payload hash GET /api/approvals/{id} shows.
func (h *harness) hashOf(pa *api.PendingAction) string {
	h.t.Helper()
	a, _ := h.auditOf(tokAlice, pa.ApprovalID)
	hash, _ := a["payloadSha256"].(string)
	if len(hash) != 64 {
		h.t.Fatalf("no payload hash in %v", a)
	}
	return hash
}

// TestLateTypedReplyIsAnswered: a typed 确认 / 取消 after the
// conversation's approval ended is answered at once with how it ended
// (issue 24 item 5: it hung until TurnTimeout); nothing runs again and the
// agent does not read it.
func TestLateTypedReplyIsAnswered(t *testing.T) {
	for _, tt := range lateTypedCases {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			pa := h.ask(tokAlice, "c1", "erase orders").PendingAction
			tt.end(h, pa)
			runs := h.erase.Runs.Load()
			st, r := h.chat(tokAlice, map[string]any{"message": tt.typed, "conversationId": "c1"})
			if st != http.StatusOK || r.Incomplete || r.Text != tt.want || r.Status != tt.status || r.RequiresConfirmation {
				t.Fatalf("a late %s: %d %+v; want %q, status %s", tt.typed, st, r, tt.want, tt.status)
			}
			if h.erase.Runs.Load() != runs {
				t.Fatalf("the late %s ran the tool again", tt.typed)
			}
		})
	}
}

// raceEnds end an approval while a typed reply races them; they may lose
// (the typed reply decided first), so their answers are not judged here.
var raceEnds = []struct {
	name string
	end  func(h *harness, pa *api.PendingAction, hash string) error
}{
	{"approve", func(h *harness, pa *api.PendingAction, hash string) error {
		_, err := h.try("POST", "/api/approvals/"+pa.ApprovalID+"/decision", map[string]any{"decision": "approve", "payloadSha256": hash}, nil)
		return err
	}},
	{"reject", func(h *harness, pa *api.PendingAction, hash string) error {
		_, err := h.try("POST", "/api/approvals/"+pa.ApprovalID+"/decision", map[string]any{"decision": "reject"}, nil)
		return err
	}},
	{"withdraw", func(h *harness, pa *api.PendingAction, hash string) error {
		_, err := h.try("POST", "/api/approvals/"+pa.ApprovalID+"/cancel", nil, nil)
		return err
	}},
}

// try is do for another goroutine than the test's: a transport or
// decoding failure is returned, not fatal.
func (h *harness) try(method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, h.srv.URL+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+tokAlice)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decoding %s: %w", raw, err)
		}
	}
	return resp.StatusCode, nil
}

// TestTypedReplyRacesDecision: a typed 确认 / 取消 and a decision (or a
// withdrawal) of the same approval at once, many times: every request is
// answered (none runs out of TurnTimeout), the tool runs at most once per
// approval, and the approval ends.
func TestTypedReplyRacesDecision(t *testing.T) {
	h := newHarness(t)
	for i := range 50 {
		conv := fmt.Sprintf("race-%d", i)
		pa := h.ask(tokAlice, conv, fmt.Sprintf("erase t%d", i)).PendingAction
		hash := h.hashOf(pa)
		typed := []string{"确认", "取消"}[i%2]
		end := raceEnds[(i/2)%len(raceEnds)]
		runs := h.erase.Runs.Load()
		var wg sync.WaitGroup
		var st int
		var r api.ChatResponse
		var chatErr, endErr error
		wg.Go(func() {
			st, chatErr = h.try("POST", "/agent/chat", map[string]any{"message": typed, "conversationId": conv}, &r)
		})
		wg.Go(func() { endErr = end.end(h, pa, hash) })
		wg.Wait()
		if chatErr != nil || endErr != nil {
			t.Fatalf("iteration %d (%s against %s): %v, %v", i, typed, end.name, chatErr, endErr)
		}
		if st != http.StatusOK || r.Incomplete || r.Text == "" {
			t.Fatalf("iteration %d: %s raced with %s: %d %+v", i, typed, end.name, st, r)
		}
		if n := h.erase.Runs.Load() - runs; n > 1 {
			t.Fatalf("iteration %d: the tool ran %d times", i, n)
		}
		rec, err := h.engine.Get(t.Context(), approval.ID(pa.ApprovalID))
		if err != nil || rec.State == approval.StatePending {
			t.Fatalf("iteration %d: the approval is %+v, %v", i, rec, err)
		}
	}
}
