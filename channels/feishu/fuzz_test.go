package feishu

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

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
		resp, err := ch.in.onCardAction(context.Background(), ev)
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

// FuzzWebhook posts arbitrary bodies and X-Lark-* headers to the webhook,
// and arbitrary events encrypted and signed as Feishu would: the answer is
// never a 5xx (the recorder behind it never fails, so nothing is the
// bot's fault), an unsigned or mis-signed body is never accepted, and an
// event reaches the handler only with a 200.
func FuzzWebhook(f *testing.F) {
	now := time.Now()
	f.Add([]byte(`{"encrypt":"AAAA"}`), "", "", "", false)
	f.Add([]byte(`{"encrypt":"`+strings.Repeat("A", 44)+`"}`), strconv.FormatInt(now.Unix(), 10), "n", "00", false)
	f.Add([]byte(""), "1", "2", "3", false)
	f.Add([]byte("{\"encrypt\":\"\xff\"}"), "", "", "", false)
	f.Add(feishutest.MessageEvent{EventID: "ev_f", MessageID: "om_f", ChatID: "oc", ChatType: "p2p", Sender: "ou_a", Text: "hi", CreatedAt: now}.JSON(), "", "", "", true)
	f.Add(feishutest.CardActionEvent{EventID: "ev_c", Operator: "ou_a", MessageID: "om", ChatID: "oc", Value: "approve"}.JSON(), "", "", "", true)
	// Form submits: a reason of every shape beside a well-formed button.
	button := map[string]any{"kind": "approval", "approval_id": "ap_0123abcd_00112233445566778899aabbccddeeff", "decision": "reject", "payload_sha256": strings.Repeat("a", 64)}
	for i, reason := range []any{"wrong table", "\x00\x1b[2J\u202e" + strings.Repeat("长", 2000), 42, []any{"x"}, map[string]any{"a": nil}, nil} {
		f.Add(feishutest.CardActionEvent{EventID: "ev_form_" + strconv.Itoa(i), Operator: "ou_a", MessageID: "om", ChatID: "oc", Value: button,
			FormValue: map[string]any{"reason": reason}, Name: "reject"}.JSON(), "", "", "", true)
	}
	f.Add([]byte(`{"schema":"2.0","header":{"event_type":"card.action.trigger"},"event":{"operator":{"open_id":"ou_a"},"action":{"value":{},"form_value":"reason"}}}`), "", "", "", true)
	f.Add([]byte(`{"schema":"2.0","header":{"event_type":"im.message.receive_v1"},"event":{"message":[]}}`), "", "", "", true)
	f.Add([]byte(`{"challenge":"c","token":"vtoken","type":"url_verification"}`), "", "", "", true)
	f.Add([]byte("{\"schema\":\"2.0\",\"header\":{\"event_type\":\"im.message.receive_v1\"},\"event\":{\"message\":{\"content\":\"\xff\"}}}"), "", "", "", true)
	fake := feishutest.New()
	f.Cleanup(fake.Close)
	cfg := testConfig(fake)
	cfg.BotOpenID = "ou_bot"
	cfg.Mode, cfg.EncryptKey, cfg.VerificationToken = ModeWebhook, webhookKey, "vtoken"
	ch, err := New(cfg, quiet)
	if err != nil {
		f.Fatal(err)
	}
	h := &recorder{}
	if err := ch.Start(context.Background(), h); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = ch.Close(context.Background()) })
	f.Fuzz(func(t *testing.T, body []byte, ts, nonce, sig string, encryptAndSign bool) {
		q := feishutest.Request{Body: body, Timestamp: ts, Nonce: nonce, Signature: sig}
		if encryptAndSign {
			q = feishutest.Sign(body, webhookKey, webhookKey, time.Now())
		}
		before := len(h.messages()) + len(h.actions())
		rec := serveOnce(ch, q)
		if rec.Code >= 500 {
			t.Fatalf("answered %d %s", rec.Code, rec.Body)
		}
		if !encryptAndSign && rec.Code == http.StatusOK && !isChallenge(t, body) {
			t.Fatalf("an unsigned or mis-signed body was accepted: %s", rec.Body)
		}
		if after := len(h.messages()) + len(h.actions()); after != before && rec.Code != http.StatusOK {
			t.Fatalf("answered %d but the event reached the handler", rec.Code)
		}
	})
}

// isChallenge reports whether body decrypts to a url_verification (which
// is answered unsigned).
func isChallenge(t *testing.T, body []byte) bool {
	t.Helper()
	data, ref := openEnvelope(body)
	if ref != nil {
		return false
	}
	plain, err := larkevent.EventDecrypt(base64.StdEncoding.EncodeToString(data), webhookKey)
	if err != nil {
		return false
	}
	return strings.Contains(string(plain), "url_verification")
}
