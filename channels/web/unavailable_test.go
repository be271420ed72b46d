package web_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/channels/web"
	"github.com/hitlbot/hitlbot/words"
)

// claimDownStore is a store whose claims fail, as with Redis gone, while
// down is set.
type claimDownStore struct {
	approval.Store
	down atomic.Bool
}

func (s *claimDownStore) Claim(ctx context.Context, id approval.ID, r approval.ClaimRequest) (approval.ClaimResult, error) {
	if s.down.Load() {
		return approval.ClaimResult{}, approval.E("test", errkind.Unavailable, id, approval.ErrUnavailable)
	}
	return s.Store.Claim(ctx, id, r)
}

// TestDecisionWhileTheStoreIsDown: a confirmation answered while the
// store cannot claim is an UNAVAILABLE error with the unavailable
// sentence, in the page's language; nothing runs and the step is open
// again, so the same answer once the store is back runs the tool once.
func TestDecisionWhileTheStoreIsDown(t *testing.T) {
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			store := &claimDownStore{Store: memstore.New(memstore.Options{})}
			s := newServerOn(t, store, approval.EffectDestructive, nil, nil, nil, withLang(lang))
			c := s.connect(t, "", "s1")
			c.message("s1", "erase orders")
			step := c.expect("agent.user_confirm", nil).str("step_id")
			answer := func() {
				c.send(map[string]any{"type": "user.response", "session_id": "s1", "step_id": step,
					"content": map[string]any{"confirmed": true, "message": "ok"}})
			}
			store.down.Store(true)
			answer()
			e := c.expect("error", withCode(web.CodeUnavailable))
			if want := words.In(lang, words.ErrUnavailable); e.str("message") != want {
				t.Fatalf("message %q, want %q", e.str("message"), want)
			}
			if n := s.erase.Runs.Load(); n != 0 {
				t.Fatalf("the tool ran %d times with the store down", n)
			}
			store.down.Store(false)
			answer()
			if done := c.expect("agent.confirm_resolved", withStep(step)); done.str("status") != string(approval.StatusExecuted) {
				t.Fatalf("resolved %v", done)
			}
			if n := s.erase.Runs.Load(); n != 1 {
				t.Fatalf("the tool ran %d times, want 1", n)
			}
		})
	}
}

// TestRefusedEditSaidInWords: arguments the tool refuses are answered in
// the page's language, with the tool's cause, never the engine's Go error
// text ("approval.Decide: …", "edit refused").
func TestRefusedEditSaidInWords(t *testing.T) {
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			s := newServer(t, withLang(lang))
			c := s.connect(t, "", "s1")
			c.message("s1", "erase orders")
			step := c.expect("agent.user_confirm", nil).str("step_id")
			for _, edits := range []map[string]any{
				{"#1": map[string]any{"target": 5}},   // the tool refuses it
				{"#2": map[string]any{"target": "x"}}, // no such call
			} {
				c.send(map[string]any{"type": "user.response", "session_id": "s1", "step_id": step,
					"content": map[string]any{"confirmed": true, "message": "", "edits": edits}})
				msg := c.expect("error", withCode(web.CodeInvalidMessage)).str("message")
				prefix, _, _ := strings.Cut(words.In(lang, words.APIEditInvalid, "%"), "%")
				if !strings.HasPrefix(msg, prefix) {
					t.Fatalf("%v: message %q, want it to start %q", edits, msg, prefix)
				}
				for _, raw := range []string{"approval.Decide", "edit refused", "invalid:"} {
					if strings.Contains(msg, raw) {
						t.Fatalf("%v: message %q holds the Go error text %q", edits, msg, raw)
					}
				}
			}
			if n := s.erase.Runs.Load(); n != 0 {
				t.Fatalf("a refused edit ran %d times", n)
			}
		})
	}
}
