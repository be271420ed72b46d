package api_test

import (
	"net/http"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/internal/chattest"
)

// TestApproveInFromTheAPI: an API user's HIGH call is decided in a Feishu
// approvers' chat (approve_in). The pending action says so (waitsIn); its
// token cannot approve it (403, nothing runs), but withdraws it.
func TestApproveInFromTheAPI(t *testing.T) {
	pc := approval.DefaultPolicyConfig()
	pc.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverChat}}
	pc.ApproveIn = map[string]approval.Place{"HIGH": {Channel: "feishu", ChatID: "oc_ops"}}
	rec := &chattest.Recorder{}
	h := newHarness(t, func(s *setup) { s.policy, s.beside = &pc, []channels.Channel{rec} })
	pa := h.ask(tokAlice, "c1", "erase orders").PendingAction
	if pa.WaitsIn != "the approvers' chat" {
		t.Fatalf("pending action %+v: want waitsIn", pa)
	}
	if shown, _ := rec.Views(); len(shown) != 1 || shown[0].Approve == nil {
		t.Fatalf("the approvers' chat was shown %+v", shown)
	}
	st, e := h.chatError(tokAlice, map[string]any{"confirmationToken": pa.Token, "confirmed": true})
	if st < 400 || st >= 500 || h.erase.Runs.Load() != 0 {
		t.Fatalf("the requester's approve: %d %+v, %d runs", st, e, h.erase.Runs.Load())
	}
	st, c := h.chat(tokAlice, map[string]any{"confirmationToken": pa.Token, "confirmed": false})
	if st != http.StatusOK || c.Status != "rejected" || h.erase.Runs.Load() != 0 {
		t.Fatalf("the requester's withdrawal: %d %+v", st, c)
	}
}
