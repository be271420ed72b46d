package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/open-dingtalk/dingtalk-stream-sdk-go/payload"

	"github.com/hitlbot/hitlbot/channels/dingtalk/dingtalktest"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
	"github.com/hitlbot/hitlbot/tools/mcptool/mcptest"
)

// TestMCPToolOnTheChatPlatforms: an MCP server's destructive tool, called
// with the rules model's /call from a Feishu chat and from a DingTalk chat
// of one served bot: each asks on the platform's card, runs once on the
// click, and the card ends executed; a declined call runs nothing.
func TestMCPToolOnTheChatPlatforms(t *testing.T) {
	srv := mcptest.New()
	hs := httptest.NewServer(srv.Handler("", false))
	t.Cleanup(hs.Close)
	fs := feishutest.New()
	t.Cleanup(fs.Close)
	dt := dingtalktest.New(t)
	for k, v := range map[string]string{
		"HITLBOT_CHANNELS_FEISHU_ENABLED":            "true",
		"HITLBOT_CHANNELS_FEISHU_APP_ID":             "cli_mcp",
		"HITLBOT_CHANNELS_FEISHU_APP_SECRET":         "feishu-secret-mcp",
		"HITLBOT_CHANNELS_FEISHU_BASE_URL":           fs.URL,
		"HITLBOT_CHANNELS_DINGTALK_ENABLED":          "true",
		"HITLBOT_CHANNELS_DINGTALK_CLIENT_ID":        "ding-app",
		"HITLBOT_CHANNELS_DINGTALK_CLIENT_SECRET":    "dingtalk-secret-mcp",
		"HITLBOT_CHANNELS_DINGTALK_ROBOT_CODE":       "robot-1",
		"HITLBOT_CHANNELS_DINGTALK_API_BASE_URL":     dt.URL(),
		"HITLBOT_CHANNELS_DINGTALK_WEBHOOK_BASE_URL": dt.URL(),
		"HITLBOT_CHANNELS_DINGTALK_CARD_TEMPLATE_ID": "tpl.schema",
	} {
		t.Setenv(k, v)
	}
	serve(t, "-config", writeConfig(t, mcpConfig(mcpServerYAML("t", hs.URL, "        trusted: true\n"))), "-data", t.TempDir())
	waitFor(t, 30*time.Second, "Feishu's long connection", fs.Connected)
	dt.WaitConn(30 * time.Second)

	// Feishu: asked on the card, run once on 确认, the card patched.
	if _, err := fs.Push(feishutest.MessageEvent{EventID: "ev-m1", MessageID: "om_m1", ChatID: "oc_m", ChatType: "p2p",
		Sender: "ou_alice", Text: `/call t__destructive {"x":"from feishu"}`}.JSON(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	var card feishutest.Call
	waitFor(t, 20*time.Second, "the Feishu card", func() bool {
		for _, c := range fs.Calls() {
			if c.MsgType == "interactive" && (c.Op == "create" || c.Op == "reply") {
				card = c
				return true
			}
		}
		return false
	})
	if !strings.Contains(card.Content, "t__destructive") || !strings.Contains(card.Content, "from feishu") || srv.Calls("destructive") != 0 {
		t.Fatalf("the card (%d calls so far): %s", srv.Calls("destructive"), card.Content)
	}
	if resp, err := fs.Push(feishutest.CardActionEvent{EventID: "ev-m2", Operator: "ou_alice", MessageID: "om_card",
		ChatID: "oc_m", Value: buttonValue(t, card.Content, "approve")}.JSON(), 5*time.Second); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("click: %+v, %v", resp, err)
	}
	waitFor(t, 20*time.Second, "the Feishu card patched", func() bool {
		for _, c := range fs.Calls() {
			if c.Op == "patch" && strings.Contains(c.Content, "destructive ran") {
				return true
			}
		}
		return false
	})
	if n := srv.Calls("destructive"); n != 1 {
		t.Fatalf("after the Feishu click the tool ran %d times, want 1", n)
	}

	// DingTalk: declined first (nothing runs), then asked again and approved.
	decide := func(text, msg, action string) {
		t.Helper()
		before := len(dt.Calls("/v1.0/card/instances/createAndDeliver"))
		dt.Push(payload.BotMessageCallbackTopic, dt.BotMessage(msg, "cid-m", "bob", text, true))
		waitFor(t, 20*time.Second, "the DingTalk card", func() bool {
			return len(dt.Calls("/v1.0/card/instances/createAndDeliver")) == before+1
		})
		params := cardParamMap(t, dt.Calls("/v1.0/card/instances/createAndDeliver")[before].Body)
		if !strings.Contains(params["preview"]+params["summary"]+params["tool"], "t__destructive") {
			t.Fatalf("the DingTalk card's params: %v", params)
		}
		content, _ := json.Marshal(map[string]any{"cardPrivateData": map[string]any{"actionIds": []string{action},
			"params": map[string]any{"action": action, "approval_id": params["approval_id"], "payload_sha256": params["payload_sha256"]}}})
		dt.Push(payload.CardInstanceCallbackTopic, map[string]any{"outTrackId": params["approval_id"], "userId": "bob", "userIdType": 1,
			"spaceType": "IM_GROUP", "spaceId": "cid-m", "type": "actionCallback", "content": string(content)})
		want := map[string]string{"confirm": "executed", "cancel": "rejected"}[action]
		waitFor(t, 20*time.Second, "the DingTalk card's final state", func() bool {
			for _, u := range dt.Calls("/v1.0/card/instances") {
				if u.Method == http.MethodPut {
					p := cardParamMap(t, u.Body)
					if p["approval_id"] == params["approval_id"] && p["status"] == want {
						return true
					}
				}
			}
			return false
		})
	}
	decide(`/call t__destructive {"x":"from dingtalk, declined"}`, "msg-m1", "cancel")
	if n := srv.Calls("destructive"); n != 1 {
		t.Fatalf("after the DingTalk 取消 the tool ran %d times in all, want 1", n)
	}
	decide(`/call t__destructive {"x":"from dingtalk"}`, "msg-m2", "confirm")
	if n := srv.Calls("destructive"); n != 2 {
		t.Fatalf("after the DingTalk 确认 the tool ran %d times in all, want 2", n)
	}
}
