package feishu

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher/callback"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
)

// postPlain posts payload unencrypted and unsigned, as a forger without
// the encrypt key would.
func postPlain(t *testing.T, url string, payload []byte) int {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(string(payload)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Webhook mode end to end, behind the real router, engine and agent: a
// forged signature (401) and an unencrypted body (400) are refused
// (messages and clicks alike) and decide nothing; a duplicated event is answered once;
// a card click over HTTP is answered with the toast and the final card in
// the response body, and Feishu retrying that callback runs nothing twice.
func TestWebhookEndToEnd(t *testing.T) {
	g := newRigWith(t, rigOptions{webhook: true})
	url := g.srv.URL

	forged := feishutest.MessageEvent{EventID: nextID("ev"), MessageID: nextID("om_forged"), ChatID: "oc_wh_1", ChatType: "p2p", Sender: "ou_alice", Text: "forged"}
	if resp, body, err := feishutest.PostWebhook(url, webhookKey, forged.JSON(), true); err != nil || resp.StatusCode != 401 {
		t.Fatalf("forged signature: %v %s %v", resp.Status, body, err)
	}
	if code := postPlain(t, url, forged.JSON()); code != 400 {
		t.Fatalf("unencrypted body answered %d", code)
	}

	dup := feishutest.MessageEvent{EventID: nextID("ev"), MessageID: nextID("om_dup"), ChatID: "oc_wh_1", ChatType: "p2p", Sender: "ou_alice", Text: "hi once"}
	for range 3 {
		if code, body, _ := g.push(t, dup.JSON()); code != 200 {
			t.Fatalf("signed event answered %d: %s", code, body)
		}
	}
	dup.EventID = nextID("ev") // a re-delivery of the same message as a new event
	g.push(t, dup.JSON())
	marker := g.say(t, "p2p", "oc_wh_1", "ou_alice", "marker", nil)
	eventually(t, "the marker is answered", func() bool { return g.replied(marker.MessageID, "echo: marker") == 1 })
	if n := g.replied(dup.MessageID, "echo: hi once"); n != 1 {
		t.Fatalf("%d replies to the duplicated message", n)
	}
	if n := g.model.Seen("forged"); n != 0 || g.replied(forged.MessageID, "") != 0 {
		t.Fatalf("a forged message reached the agent (%d) or was answered", n)
	}

	ap, _ := g.pending(t, "oc_wh_2", "ou_alice", "orders")
	click := feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: "ou_alice", MessageID: ap.Cards[0].MessageID, ChatID: ap.ChatID,
		Value: buttonValue(ap, "approve")}
	if resp, body, err := feishutest.PostWebhook(url, webhookKey, click.JSON(), true); err != nil || resp.StatusCode != 401 {
		t.Fatalf("forged click: %v %s %v", resp.Status, body, err)
	}
	if code := postPlain(t, url, click.JSON()); code != 400 {
		t.Fatalf("unencrypted click answered %d", code)
	}
	if st := g.state(t, ap.ID); st != approval.StatePending || g.erase.Runs.Load() != 0 {
		t.Fatalf("after forged clicks: state %s, runs %d", st, g.erase.Runs.Load())
	}

	answer := func() *callback.CardActionTriggerResponse {
		t.Helper()
		resp, body, err := feishutest.PostWebhook(url, webhookKey, click.JSON(), false)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("click: %v %s %v", resp.Status, body, err)
		}
		var out callback.CardActionTriggerResponse
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatalf("callback body %q: %v", body, err)
		}
		return &out
	}
	resp := answer()
	if resp.Toast == nil || resp.Toast.Type != "success" || resp.Card == nil || resp.Card.Type != "raw" {
		t.Fatalf("click answer %+v", resp)
	}
	if c := mustJSON(t, resp.Card.Data); !strings.Contains(c, `"template":"green"`) || !strings.Contains(c, "erase done (run 1)") || strings.Contains(c, "behaviors") {
		t.Errorf("answered card %s", c)
	}
	eventually(t, "the card is patched to executed", func() bool { return g.patchedTo(ap.Cards[0].MessageID, `"template":"green"`) >= 1 })

	// Feishu retries the callback (same event id): the answer repeats the
	// outcome, nothing runs again, and no card goes back to pending.
	resp = answer()
	if resp.Toast == nil || resp.Toast.Type == "error" {
		t.Fatalf("retried callback answered %+v", resp)
	}
	if resp.Card != nil && strings.Contains(mustJSON(t, resp.Card.Data), "behaviors") {
		t.Errorf("retried callback answered a card with buttons")
	}
	if n := g.erase.Runs.Load(); n != 1 {
		t.Fatalf("tool ran %d times", n)
	}
}
