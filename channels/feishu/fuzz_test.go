package feishu

import (
	"context"
	"encoding/json"
	"testing"

	larkevent "github.com/larksuite/oapi-sdk-go/v3/event"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher/callback"

	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
)

// FuzzCardActionValue feeds arbitrary action values to the click handler:
// it never panics, always answers with a toast, and only a well-formed
// approval button reaches the router.
func FuzzCardActionValue(f *testing.F) {
	f.Add(`{"kind":"approval","approval_id":"ap_0123abcd_00112233445566778899aabbccddeeff","decision":"approve","payload_sha256":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}`)
	f.Add(`{"kind":"approval","approval_id":"ap_x","decision":"approve"}`)
	f.Add(`{"decision":["approve"],"payload_sha256":{}}`)
	f.Add(`null`)
	fake := feishutest.New()
	f.Cleanup(fake.Close)
	cfg := testConfig(fake)
	cfg.BotOpenID = "ou_bot"
	cfg.Mode, cfg.EncryptKey = ModeWebhook, "k" // no connection needed
	ch, err := New(cfg, quiet)
	if err != nil {
		f.Fatal(err)
	}
	h := &recorder{}
	if err := ch.Start(context.Background(), h); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, value string) {
		var v map[string]interface{}
		if json.Unmarshal([]byte(value), &v) != nil {
			return
		}
		before := len(h.actions())
		ev := &callback.CardActionTriggerEvent{
			EventV2Base: &larkevent.EventV2Base{Header: &larkevent.EventHeader{EventID: "ev"}},
			Event: &callback.CardActionTriggerRequest{Operator: &callback.Operator{OpenID: "ou_a"},
				Action: &callback.CallBackAction{Value: v}, Context: &callback.Context{OpenMessageID: "om", OpenChatID: "oc"}},
		}
		resp, err := ch.onCardAction(context.Background(), ev)
		if err != nil || resp == nil || resp.Toast == nil {
			t.Fatalf("answer %+v, %v", resp, err)
		}
		if got := h.actions(); len(got) > before {
			a := got[len(got)-1]
			if !a.ApprovalID.Valid() || len(a.PayloadSHA256) != 64 || (a.Verb != "approve" && a.Verb != "reject") {
				t.Fatalf("a malformed value reached the router: %+v", a)
			}
		}
	})
}
