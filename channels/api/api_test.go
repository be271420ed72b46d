package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/channels/api"
	"github.com/hitlbot/hitlbot/internal/clock"
)

var tokenRE = regexp.MustCompile(`^pa_[0-9a-f]{32}$`)

func TestQuestionAnswered(t *testing.T) {
	h := newHarness(t)
	st, r := h.chat(tokAlice, map[string]any{"message": "hello there"})
	if st != http.StatusOK || r.Text != "echo: hello there" || r.RequiresConfirmation || len(r.Actions) != 0 {
		t.Fatalf("status %d, response %+v", st, r)
	}
	if r.ConversationID == "" || !strings.HasPrefix(r.RequestID, "req_") || r.Domain != "chat" {
		t.Fatalf("ids: %+v", r)
	}
	// A low-risk tool runs at once and is reported as an action.
	st, r = h.chat(tokAlice, map[string]any{"message": "look orders", "conversationId": r.ConversationID})
	if st != http.StatusOK || r.Text != "summary: look orders done (run 1)" || len(r.Actions) != 1 || r.Domain != "look" {
		t.Fatalf("status %d, response %+v", st, r)
	}
	if a := r.Actions[0]; a.Tool != "look" || string(a.Input) != `{"target":"orders"}` || a.Result != "look orders done (run 1)" {
		t.Fatalf("action %+v", a)
	}
}

func TestConfirmRunsOnce(t *testing.T) {
	h := newHarness(t)
	r := h.ask(tokAlice, "c1", "erase orders")
	pa := r.PendingAction
	if !tokenRE.MatchString(pa.Token) || pa.ToolName != "erase" || !pa.IsDestructive || r.ConversationID != "c1" {
		t.Fatalf("pending action %+v", pa)
	}
	if len(pa.InputPreview) != 1 || pa.InputPreview["target"] != "orders" || pa.Description == "" || pa.Risk != "HIGH" {
		t.Fatalf("preview %v", pa.InputPreview)
	}
	exp, err := time.Parse(time.RFC3339, pa.ExpiresAt)
	if err != nil || !exp.Equal(h.clk.Now().Add(approval.DefaultTimeout)) {
		t.Fatalf("expiresAt %q (%v)", pa.ExpiresAt, err)
	}
	if h.erase.Runs.Load() != 0 {
		t.Fatal("ran before the confirmation")
	}

	st, c := h.chat(tokAlice, map[string]any{"confirmationToken": pa.Token, "confirmed": true})
	if st != http.StatusOK || c.Status != "executed" || c.Text != "summary: erase orders done (run 1)" || c.ConversationID != "c1" {
		t.Fatalf("status %d, response %+v", st, c)
	}
	if len(c.Actions) != 1 || c.Actions[0].Tool != "erase" || c.Actions[0].Result != "erase orders done (run 1)" || c.Actions[0].Status != "executed" {
		t.Fatalf("actions %+v", c.Actions)
	}
	if h.erase.Runs.Load() != 1 {
		t.Fatalf("runs = %d", h.erase.Runs.Load())
	}

	// The token is used: a second confirmation is not found and runs nothing.
	st, e := h.chatError(tokAlice, map[string]any{"confirmationToken": pa.Token, "confirmed": true})
	if st != http.StatusNotFound || e.Error != "not_found" {
		t.Fatalf("reuse: %d %+v", st, e)
	}
	if h.erase.Runs.Load() != 1 {
		t.Fatalf("runs = %d after reuse", h.erase.Runs.Load())
	}

	// The record and its audit trail say it was confirmed through the API.
	var got struct {
		Approval api.ApprovalInfo `json:"approval"`
		Audit    []struct {
			Event, Source, Actor string
		} `json:"audit"`
	}
	if st := h.do("GET", "/api/approvals/"+pa.ApprovalID, tokAlice, nil, &got); st != http.StatusOK {
		t.Fatalf("get: %d", st)
	}
	if got.Approval.State != approval.StateExecuted || got.Approval.DecidedVia != "api" || got.Approval.DecidedBy != "acme/alice" {
		t.Fatalf("record %+v", got.Approval)
	}
	var events []string
	for _, r := range got.Audit {
		events = append(events, r.Event+"/"+r.Source)
	}
	if strings.Join(events, ",") != "write_request/,confirm/api,execute/api" {
		t.Fatalf("audit %v", events)
	}
}

func TestCancelWithConfirmedFalse(t *testing.T) {
	h := newHarness(t)
	pa := h.ask(tokAlice, "c1", "erase orders").PendingAction
	st, c := h.chat(tokAlice, map[string]any{"confirmationToken": pa.Token, "confirmed": false, "message": "not now"})
	if st != http.StatusOK || c.Status != "rejected" || !strings.HasPrefix(c.Text, "summary: Not run: declined by") {
		t.Fatalf("status %d, response %+v", st, c)
	}
	if len(c.Actions) != 1 || c.Actions[0].Status != "rejected" {
		t.Fatalf("actions %+v", c.Actions)
	}
	if h.erase.Runs.Load() != 0 {
		t.Fatal("a rejected action ran")
	}
	st, e := h.chatError(tokAlice, map[string]any{"confirmationToken": pa.Token, "confirmed": true})
	if st != http.StatusNotFound || e.Error != "not_found" {
		t.Fatalf("confirm after cancel: %d %+v", st, e)
	}
	rec, err := h.engine.Get(t.Context(), approval.ID(pa.ApprovalID))
	if err != nil || rec.Comment != "not now" || rec.DecidedVia != approval.SourceAPI {
		t.Fatalf("record %+v, %v", rec, err)
	}
}

func TestExpired(t *testing.T) {
	h := newHarness(t)
	pa := h.ask(tokAlice, "c1", "erase orders").PendingAction
	h.clk.Advance(approval.DefaultTimeout + time.Second)
	st, e := h.chatError(tokAlice, map[string]any{"confirmationToken": pa.Token, "confirmed": true})
	if st != http.StatusGone || e.Error != "expired" {
		t.Fatalf("status %d, %+v", st, e)
	}
	if h.erase.Runs.Load() != 0 {
		t.Fatal("an expired action ran")
	}
	// Still expired (not "not found") when asked again.
	if st, e := h.chatError(tokAlice, map[string]any{"confirmationToken": pa.Token, "confirmed": true}); st != http.StatusGone {
		t.Fatalf("again: %d %+v", st, e)
	}
}

func TestUnknownToken(t *testing.T) {
	h := newHarness(t)
	for _, tok := range []string{"pa_" + strings.Repeat("0", 32), "nonsense"} {
		st, e := h.chatError(tokAlice, map[string]any{"confirmationToken": tok, "confirmed": true})
		if st != http.StatusNotFound || e.Error != "not_found" || e.Message == "" {
			t.Fatalf("%s: %d %+v", tok, st, e)
		}
	}
}

func TestMismatch(t *testing.T) {
	h := newHarness(t)
	pa := h.ask(tokAlice, "c1", "erase orders").PendingAction
	if st, e := h.chatError(tokBob, map[string]any{"confirmationToken": pa.Token, "confirmed": true}); st != http.StatusForbidden || e.Error != "user_mismatch" {
		t.Fatalf("bob: %d %+v", st, e)
	}
	if st, e := h.chatError(tokCarol, map[string]any{"confirmationToken": pa.Token, "confirmed": true}); st != http.StatusForbidden || e.Error != "family_mismatch" {
		t.Fatalf("carol: %d %+v", st, e)
	}
	// Nor can they see or cancel it.
	if st := h.do("GET", "/api/approvals/"+pa.ApprovalID, tokBob, nil, nil); st != http.StatusNotFound {
		t.Fatalf("bob get: %d", st)
	}
	if st := h.do("POST", "/api/approvals/"+pa.ApprovalID+"/cancel", tokCarol, nil, nil); st != http.StatusNotFound {
		t.Fatalf("carol cancel: %d", st)
	}
	var list struct{ Approvals []api.ApprovalInfo }
	if h.do("GET", "/api/approvals", tokBob, nil, &list); len(list.Approvals) != 0 {
		t.Fatalf("bob sees %+v", list.Approvals)
	}
	if h.erase.Runs.Load() != 0 {
		t.Fatal("ran")
	}
	// The owner still can.
	if st, c := h.chat(tokAlice, map[string]any{"confirmationToken": pa.Token, "confirmed": true}); st != http.StatusOK || c.Status != "executed" {
		t.Fatalf("alice: %d %+v", st, c)
	}
}

func TestRateLimited(t *testing.T) {
	h := newHarness(t)
	for i := range 10 {
		h.ask(tokAlice, fmt.Sprintf("c%d", i), fmt.Sprintf("erase t%d", i))
	}
	st, e := h.chatError(tokAlice, map[string]any{"message": "erase t10", "conversationId": "c10"})
	if st != http.StatusTooManyRequests || e.Error != "rate_limited" {
		t.Fatalf("11th: %d %+v", st, e)
	}
	// Another user is not affected.
	h.ask(tokBob, "c10", "erase t10")
	// A typed 确认 on a conversation with a pending action passes the cap.
	st, r := h.chat(tokAlice, map[string]any{"message": "确认", "conversationId": "c3"})
	if st != http.StatusOK || r.Text != "summary: erase t3 done (run 1)" {
		t.Fatalf("typed confirm at the cap: %d %+v", st, r)
	}
	// Nine pending now: one more is accepted.
	h.ask(tokAlice, "c10", "erase t10")
	var list struct{ Approvals []api.ApprovalInfo }
	if st := h.do("GET", "/api/approvals?state=pending", tokAlice, nil, &list); st != http.StatusOK || len(list.Approvals) != 10 {
		t.Fatalf("list: %d, %d approvals", st, len(list.Approvals))
	}
	for _, a := range list.Approvals {
		if a.State != approval.StatePending || a.PendingAction == nil || !tokenRE.MatchString(a.PendingAction.Token) {
			t.Fatalf("listed %+v", a)
		}
	}
}

func TestUnauthorized(t *testing.T) {
	h := newHarness(t)
	for _, tok := range []string{"", "wrong"} {
		st, e := h.chatError(tok, map[string]any{"message": "hi"})
		if st != http.StatusUnauthorized || e.Error != "unauthorized" {
			t.Fatalf("token %q: %d %+v", tok, st, e)
		}
		if st := h.do("GET", "/api/approvals", tok, nil, nil); st != http.StatusUnauthorized {
			t.Fatalf("list with %q: %d", tok, st)
		}
	}
}

func TestAnonymousLocal(t *testing.T) {
	h := newHarness(t, func(s *setup) { s.cfg.Tokens = nil; s.cfg.AllowAnonymousLocal = true })
	st, r := h.chat("", map[string]any{"message": "erase orders"})
	if st != http.StatusOK || r.PendingAction == nil {
		t.Fatalf("%d %+v", st, r)
	}
	rec, err := h.engine.Get(t.Context(), approval.ID(r.PendingAction.ApprovalID))
	if err != nil || rec.Requester != "local/local" || rec.ChatID != "local/local/"+r.ConversationID {
		t.Fatalf("record %+v, %v", rec, err)
	}
	// A wrong token is refused even so.
	if st, _ := h.chatError("wrong", map[string]any{"message": "hi"}); st != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", st)
	}
}

func TestInvalidRequest(t *testing.T) {
	h := newHarness(t)
	for name, body := range map[string]any{
		"malformed":         `{"message": "hi"`,
		"not an object":     `["hi"]`,
		"empty body":        ``,
		"empty message":     map[string]any{"message": "  "},
		"wrong type":        map[string]any{"message": 42},
		"bad conversation":  map[string]any{"message": "hi", "conversationId": "a/b"},
		"token, no verdict": map[string]any{"confirmationToken": "pa_" + strings.Repeat("0", 32)},
		"verdict, no token": map[string]any{"message": "hi", "confirmed": true},
	} {
		st, e := h.chatError(tokAlice, body)
		if st != http.StatusBadRequest || e.Error != "invalid_request" || e.Message == "" {
			t.Errorf("%s: %d %+v", name, st, e)
		}
	}
	if st := h.do("GET", "/api/approvals?state=bogus", tokAlice, nil, nil); st != http.StatusBadRequest {
		t.Errorf("bad state filter: %d", st)
	}
}

func TestTypedConfirmAndCancel(t *testing.T) {
	h := newHarness(t)
	h.ask(tokAlice, "c1", "erase orders")
	// A message that is not a decision is queued; the answer says an
	// action is waiting.
	st, r := h.chat(tokAlice, map[string]any{"message": "what is waiting?", "conversationId": "c1"})
	if st != http.StatusOK || !r.RequiresConfirmation || r.PendingAction == nil || !strings.Contains(r.Text, "waiting") {
		t.Fatalf("%d %+v", st, r)
	}
	st, r = h.chat(tokAlice, map[string]any{"message": "确认", "conversationId": "c1"})
	if st != http.StatusOK || r.Text != "summary: erase orders done (run 1)" || len(r.Actions) != 1 || r.Actions[0].Tool != "erase" {
		t.Fatalf("确认: %d %+v", st, r)
	}
	if h.erase.Runs.Load() != 1 {
		t.Fatalf("runs = %d", h.erase.Runs.Load())
	}
	// The queued message gets its turn now; the token of the decided
	// action is used up.
	pa := h.ask(tokAlice, "c2", "erase users").PendingAction
	st, r = h.chat(tokAlice, map[string]any{"message": "取消", "conversationId": "c2"})
	if st != http.StatusOK || !strings.HasPrefix(r.Text, "summary: Not run: declined by") {
		t.Fatalf("取消: %d %+v", st, r)
	}
	if st, e := h.chatError(tokAlice, map[string]any{"confirmationToken": pa.Token, "confirmed": true}); st != http.StatusNotFound {
		t.Fatalf("token after 取消: %d %+v", st, e)
	}
	if h.erase.Runs.Load() != 1 {
		t.Fatalf("runs = %d", h.erase.Runs.Load())
	}
}

func TestCancelEndpoint(t *testing.T) {
	h := newHarness(t)
	pa := h.ask(tokAlice, "c1", "erase orders").PendingAction
	var got struct{ Approval api.ApprovalInfo }
	if st := h.do("POST", "/api/approvals/"+pa.ApprovalID+"/cancel", tokAlice, nil, &got); st != http.StatusOK || got.Approval.State != approval.StateCancelled {
		t.Fatalf("cancel: %d %+v", st, got)
	}
	var e api.ErrorResponse
	if st := h.do("POST", "/api/approvals/"+pa.ApprovalID+"/cancel", tokAlice, nil, &e); st != http.StatusConflict || e.Error != "already_decided" {
		t.Fatalf("second cancel: %d %+v", st, e)
	}
	if st, e := h.chatError(tokAlice, map[string]any{"confirmationToken": pa.Token, "confirmed": true}); st != http.StatusNotFound {
		t.Fatalf("token after cancel: %d %+v", st, e)
	}
	var list struct{ Approvals []api.ApprovalInfo }
	if h.do("GET", "/api/approvals", tokAlice, nil, &list); len(list.Approvals) != 0 {
		t.Fatalf("pending after cancel: %+v", list.Approvals)
	}
	if h.do("GET", "/api/approvals?state=cancelled", tokAlice, nil, &list); len(list.Approvals) != 1 {
		t.Fatalf("cancelled: %+v", list.Approvals)
	}
	if h.erase.Runs.Load() != 0 {
		t.Fatal("a cancelled action ran")
	}
}

func TestTurnTimeout(t *testing.T) {
	h := newHarness(t, func(s *setup) { s.cfg.TurnTimeout = 50 * time.Millisecond })
	st, r := h.chat(tokAlice, map[string]any{"message": "wait", "conversationId": "c1"})
	if st != http.StatusOK || !r.Incomplete || r.Text == "" {
		t.Fatalf("%d %+v", st, r)
	}
}

// TestOtherReplica confirms on a replica whose process does not run the
// turn: the token is found in the shared token store, the tool runs there
// once, and the outcome is the answer.
func TestOtherReplica(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	store := memstore.New(memstore.Options{Clock: clk})
	tokens := api.NewMemoryTokens(clk)
	shared := func(s *setup) { s.clk, s.store, s.cfg.TokenStore = clk, store, tokens }
	a, b := newHarness(t, shared), newHarness(t, shared)
	pa := a.ask(tokAlice, "c1", "erase orders").PendingAction
	st, c := b.chat(tokAlice, map[string]any{"confirmationToken": pa.Token, "confirmed": true})
	if st != http.StatusOK || c.Status != "executed" || c.Text != "erase orders done (run 1)" || len(c.Actions) != 1 {
		t.Fatalf("%d %+v", st, c)
	}
	if a.erase.Runs.Load() != 0 || b.erase.Runs.Load() != 1 {
		t.Fatalf("runs: a %d, b %d", a.erase.Runs.Load(), b.erase.Runs.Load())
	}
	// The first replica's turn learns the outcome; the next message there
	// is answered normally.
	if st, r := a.chat(tokAlice, map[string]any{"message": "hello", "conversationId": "c1"}); st != http.StatusOK || r.Text != "echo: hello" {
		t.Fatalf("%d %+v", st, r)
	}
}

// downTokens is a token store whose backend is down.
type downTokens struct{ api.TokenStore }

func (downTokens) List(context.Context, string, string) ([]api.TokenEntry, error) {
	return nil, approval.E("test", errkind.Unavailable, "", approval.ErrUnavailable)
}

func TestStoreDown(t *testing.T) {
	h := newHarness(t, func(s *setup) { s.cfg.TokenStore = downTokens{api.NewMemoryTokens(nil)} })
	st, e := h.chatError(tokAlice, map[string]any{"message": "hi"})
	if st != http.StatusServiceUnavailable || e.Error != "unavailable" {
		t.Fatalf("%d %+v", st, e)
	}
	if st := h.do("GET", "/api/approvals", tokAlice, nil, nil); st != http.StatusServiceUnavailable {
		t.Fatalf("list: %d", st)
	}
}

// slowTokens is a token store whose List takes a while, as a store across
// the network does: it widens the window between counting a user's
// pending actions and the new one being stored.
type slowTokens struct{ api.TokenStore }

func (s slowTokens) List(ctx context.Context, tenant, user string) ([]api.TokenEntry, error) {
	time.Sleep(5 * time.Millisecond)
	return s.TokenStore.List(ctx, tenant, user)
}

// TestRateLimitedConcurrent sends many messages of one user at once, each
// in its own conversation and each asking for an approval: the cap's count
// and reservation are one step, so exactly the cap's number get a pending
// action and the rest get 429.
func TestRateLimitedConcurrent(t *testing.T) {
	const max, n = 3, 24
	h := newHarness(t, func(s *setup) {
		s.clk = clock.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
		s.cfg.MaxPendingPerUser = max
		s.cfg.TokenStore = slowTokens{api.NewMemoryTokens(s.clk)}
	})
	var (
		wg              sync.WaitGroup
		pending, capped atomic.Int64
	)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			body := fmt.Sprintf(`{"message":"erase t%d","conversationId":"c%d"}`, i, i)
			req, _ := http.NewRequest("POST", h.srv.URL+"/agent/chat", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+tokAlice)
			resp, err := h.srv.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch st := resp.StatusCode; st {
			case http.StatusOK:
				var r api.ChatResponse
				if err := json.Unmarshal(raw, &r); err != nil || !r.RequiresConfirmation {
					t.Errorf("request %d: 200 without a pending action: %s", i, raw)
				}
				pending.Add(1)
			case http.StatusTooManyRequests:
				capped.Add(1)
			default:
				t.Errorf("request %d: %d %s", i, st, raw)
			}
		}()
	}
	close(start)
	wg.Wait()
	if pending.Load() != max || capped.Load() != n-max {
		t.Fatalf("%d pending actions and %d refused, want %d and %d", pending.Load(), capped.Load(), max, n-max)
	}
	var list struct{ Approvals []api.ApprovalInfo }
	if st := h.do("GET", "/api/approvals?state=pending", tokAlice, nil, &list); st != http.StatusOK || len(list.Approvals) != max {
		t.Fatalf("list: %d, %d approvals, want %d", st, len(list.Approvals), max)
	}
	// The reservations ended with their requests: a decision frees a place.
	if st, c := h.chat(tokAlice, map[string]any{"confirmationToken": list.Approvals[0].PendingAction.Token, "confirmed": false}); st != http.StatusOK {
		t.Fatalf("cancel: %d %+v", st, c)
	}
	h.ask(tokAlice, "again", "erase again")
	if st, e := h.chatError(tokAlice, map[string]any{"message": "erase more", "conversationId": "more"}); st != http.StatusTooManyRequests {
		t.Fatalf("over the cap again: %d %+v", st, e)
	}
}
