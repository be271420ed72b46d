package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/api"
	"github.com/hitlbot/hitlbot/internal/clock"
)

// The answer of a resumed turn (the router's turn_ended event with
// Resumed set) is kept for the requester: GET /api/approvals/{id} shows it,
// the conversation's next POST /agent/chat carries it once, and nobody else
// who may decide the approval reads it, nor does another conversation.
func TestResumedAnswerIsTheRequesters(t *testing.T) {
	h := newHarness(t, fourEyes(approval.ApproverChat))
	pa := h.ask(tokAlice, "c1", "erase orders").PendingAction
	id := approval.ID(pa.ApprovalID)
	w := api.Watch(h.api, "acme/alice/c1")
	defer w.Stop()
	h.api.TurnEvent(context.Background(), channels.Target{Channel: "api", ChatID: "acme/alice/c1"}, channels.TurnEvent{
		Say: agent.Say{Kind: agent.SayTurnEnded, Result: &agent.TurnResult{Resumed: id, Text: "7 orders erased: #1, #2, #3",
			Actions: []agent.Action{{Tool: "erase", Result: "erase done", Status: approval.StatusExecuted}}}}})
	w.NextEnd(t) // the turn's end is published once its answer is kept

	alice, _ := h.auditOf(tokAlice, string(id))
	r, _ := alice["resumed"].(map[string]any)
	if r == nil || r["text"] != "7 orders erased: #1, #2, #3" || r["approvalId"] != string(id) {
		t.Fatalf("alice's view: %v", alice)
	}
	if acts, _ := r["actions"].([]any); len(acts) != 1 || acts[0].(map[string]any)["status"] != "executed" {
		t.Fatalf("resumed actions: %v", r["actions"])
	}
	if bob, _ := h.auditOf(tokBob, string(id)); bob["resumed"] != nil {
		t.Fatalf("bob, who may decide, reads alice's conversation: %v", bob["resumed"])
	}
	for _, e := range h.list(tokBob) {
		if e["resumed"] != nil {
			t.Fatalf("bob's list shows alice's resumed answer: %v", e)
		}
	}

	if st, res := h.chat(tokAlice, map[string]any{"message": "hello", "conversationId": "c2"}); st != http.StatusOK || len(res.Resumed) != 0 {
		t.Fatalf("another conversation got it: %d %+v", st, res.Resumed)
	}
	st, res := h.chat(tokAlice, map[string]any{"message": "hello", "conversationId": "c1"})
	if st != http.StatusOK || len(res.Resumed) != 1 || res.Resumed[0].ApprovalID != id || res.Resumed[0].Text != "7 orders erased: #1, #2, #3" {
		t.Fatalf("the conversation's next answer: %d %+v", st, res.Resumed)
	}
	if _, res := h.chat(tokAlice, map[string]any{"message": "hello again", "conversationId": "c1"}); len(res.Resumed) != 0 {
		t.Fatalf("given twice: %+v", res.Resumed)
	}
	if again, _ := h.auditOf(tokAlice, string(id)); again["resumed"] == nil {
		t.Fatalf("GET lost it once it was given: %v", again)
	}
}

// cardless is a store that never records an approval's card references,
// as when the replica that showed the card stopped after the client got
// its token but before the engine recorded the card.
type cardless struct{ approval.Store }

func (s cardless) AddCards(ctx context.Context, id approval.ID, _ []approval.CardRef) (*approval.Approval, error) {
	return s.Store.AddCards(ctx, id, nil)
}

// TestResumedAnswerKeptWithoutACardReference: the approval's record holds
// no reference to its API card (its token): the resumed answer is still
// kept with the approval's token entry, found by the approval's id among
// the requester's, and GET shows it.
func TestResumedAnswerKeptWithoutACardReference(t *testing.T) {
	h := newHarness(t, func(s *setup) {
		s.clk = clock.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
		s.store = cardless{memstore.New(memstore.Options{Clock: s.clk})}
	})
	pa := h.ask(tokAlice, "c1", "erase orders").PendingAction
	id := approval.ID(pa.ApprovalID)
	if rec, err := h.engine.Get(context.Background(), id); err != nil || len(rec.Cards) != 0 {
		t.Fatalf("the record's cards: %+v, %v", rec, err)
	}
	w := api.Watch(h.api, "acme/alice/c1")
	defer w.Stop()
	h.api.TurnEvent(context.Background(), channels.Target{Channel: "api", ChatID: "acme/alice/c1"}, channels.TurnEvent{
		Say: agent.Say{Kind: agent.SayTurnEnded, Result: &agent.TurnResult{Resumed: id, Text: "7 orders erased"}}})
	w.NextEnd(t)
	alice, _ := h.auditOf(tokAlice, string(id))
	if r, _ := alice["resumed"].(map[string]any); r == nil || r["text"] != "7 orders erased" {
		t.Fatalf("alice's view: %v", alice)
	}
}
