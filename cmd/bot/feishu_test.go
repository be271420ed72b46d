package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
)

// TestServeFeishu runs the whole server with the Feishu channel on, over
// the long connection to the local fake Feishu: the demo DELETE arrives as
// a p2p message, the approval card is created, the click runs the statement
// once and the card is patched to its final state.
func TestServeFeishu(t *testing.T) {
	fake := feishutest.New()
	t.Cleanup(fake.Close)
	for k, v := range map[string]string{
		"HITLBOT_CHANNELS_FEISHU_ENABLED":    "true",
		"HITLBOT_APPROVAL_LANG":              "en", // the assertions read English; the zh default is config.TestLanguages
		"HITLBOT_CHANNELS_FEISHU_APP_ID":     "cli_servetest",
		"HITLBOT_CHANNELS_FEISHU_APP_SECRET": "s3cret-not-logged",
		"HITLBOT_CHANNELS_FEISHU_BASE_URL":   fake.URL,
	} {
		t.Setenv(k, v)
	}
	s := serve(t, "-data", filepath.Join(t.TempDir(), "data"))
	waitFor(t, 30*time.Second, "the long connection", fake.Connected)

	if _, err := fake.Push(feishutest.MessageEvent{EventID: "ev-1", MessageID: "om_1", ChatID: "oc_1", ChatType: "p2p",
		Sender: "ou_alice", Text: deleteCancelled}.JSON(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	var card feishutest.Call
	waitFor(t, 20*time.Second, "the approval card", func() bool {
		for _, c := range fake.Calls() {
			if c.MsgType == "interactive" && (c.Op == "create" || c.Op == "reply") {
				card = c
				return true
			}
		}
		return false
	})
	if !strings.Contains(card.Content, "affects 7 rows") {
		t.Fatalf("card content %s", card.Content)
	}
	// The requester is mentioned, so the Feishu client shows their name.
	if !strings.Contains(card.Content, `Requested by \u003cat id=ou_alice\u003e\u003c/at\u003e · valid until`) {
		t.Fatalf("the card does not mention the requester: %s", card.Content)
	}
	value := buttonValue(t, card.Content, "approve")
	resp, err := fake.Push(feishutest.CardActionEvent{EventID: "ev-2", Operator: "ou_alice", MessageID: "om_card",
		ChatID: "oc_1", Value: value}.JSON(), 5*time.Second)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("click ack %+v, %v", resp, err)
	}
	waitFor(t, 20*time.Second, "the card patched to executed", func() bool {
		for _, c := range fake.Calls() {
			if c.Op == "patch" && strings.Contains(c.Content, "7 rows affected") {
				return true
			}
		}
		return false
	})
	if strings.Contains(s.stderr.String(), "s3cret-not-logged") {
		t.Fatal("the app secret reached the log")
	}
	if code, body := get(t, s.base+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz = %d %s", code, body)
	}
}

// buttonValue finds the callback value of the button whose decision is
// verb in a card JSON 2.0 (as the message content string).
func buttonValue(t *testing.T, content, verb string) map[string]any {
	t.Helper()
	return cardValue(t, content, map[string]any{"decision": verb})
}
