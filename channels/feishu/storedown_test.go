package feishu

import (
	"context"
	"testing"
	"time"

	larkevent "github.com/larksuite/oapi-sdk-go/v3/event"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher/callback"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
	"github.com/hitlbot/hitlbot/words"
)

// storeDownHandler decides nothing: every click fails as with the store
// down (the engine's claim cannot be made).
type storeDownHandler struct{ recorder }

func (h *storeDownHandler) HandleCardAction(ctx context.Context, a channels.CardAction) (approval.Outcome, error) {
	_, _ = h.recorder.HandleCardAction(ctx, a)
	return approval.Outcome{}, approval.E("approval.Decide", errkind.Unavailable, a.ApprovalID, approval.ErrUnavailable)
}

// TestClickWhileTheStoreIsDown: a click the router cannot decide (the
// store down) is answered with the "could not be recorded" toast in the
// configured language, and no card: the card keeps its buttons, so the
// click can be tried again.
func TestClickWhileTheStoreIsDown(t *testing.T) {
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			fake := feishutest.New()
			t.Cleanup(fake.Close)
			cfg := testConfig(fake)
			cfg.Mode, cfg.EncryptKey = ModeWebhook, "k"              // no connection needed
			cfg.Lang, cfg.CallbackWait = lang, 2800*time.Millisecond // the most: the failure comes back at once
			ch, err := New(cfg, quiet)
			if err != nil {
				t.Fatal(err)
			}
			h := &storeDownHandler{}
			if err := ch.Start(context.Background(), h); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ch.Close(context.Background()) })
			ev := &callback.CardActionTriggerEvent{
				EventV2Base: &larkevent.EventV2Base{Header: &larkevent.EventHeader{EventID: "ev1"}},
				Event: &callback.CardActionTriggerRequest{Operator: &callback.Operator{OpenID: "ou_a"},
					Action: &callback.CallBackAction{Value: map[string]any{"kind": "approval",
						"approval_id": "ap_0123abcd_00112233445566778899aabbccddeeff", "decision": "approve",
						"payload_sha256": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}},
					Context: &callback.Context{OpenMessageID: "om_1", OpenChatID: "oc_1"}},
			}
			resp, err := ch.in.onCardAction(context.Background(), ev)
			if err != nil || resp == nil || resp.Toast == nil {
				t.Fatalf("answer %+v, %v", resp, err)
			}
			if len(h.actions()) != 1 {
				t.Fatalf("%d clicks reached the router, want 1", len(h.actions()))
			}
			if want := words.In(lang, words.FeishuFailed); resp.Toast.Type != "error" || resp.Toast.Content != want {
				t.Fatalf("toast %+v, want an error toast %q", resp.Toast, want)
			}
			if resp.Card != nil {
				t.Fatalf("the card was replaced (%+v): its buttons must stay", resp.Card)
			}
		})
	}
}
