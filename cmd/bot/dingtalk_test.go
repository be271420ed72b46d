package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/open-dingtalk/dingtalk-stream-sdk-go/payload"

	"github.com/hitlbot/hitlbot/channels/dingtalk/dingtalktest"
	"github.com/hitlbot/hitlbot/cmd/bot/internal/metrics"
)

// TestServeDingTalk runs the whole server with the DingTalk channel on,
// against the local fake DingTalk: the demo DELETE arrives as a bot message,
// the approval card is created, the click runs the statement once and the
// card is updated to its final state.
func TestServeDingTalk(t *testing.T) {
	fake := dingtalktest.New(t)
	for k, v := range map[string]string{
		"HITLBOT_CHANNELS_DINGTALK_ENABLED":          "true",
		"HITLBOT_APPROVAL_LANG":                      "en", // the assertions read English; the zh default is config.TestLanguages
		"HITLBOT_CHANNELS_DINGTALK_CLIENT_ID":        "ding-app",
		"HITLBOT_CHANNELS_DINGTALK_CLIENT_SECRET":    "s3cret-not-logged",
		"HITLBOT_CHANNELS_DINGTALK_ROBOT_CODE":       "robot-1",
		"HITLBOT_CHANNELS_DINGTALK_API_BASE_URL":     fake.URL(),
		"HITLBOT_CHANNELS_DINGTALK_WEBHOOK_BASE_URL": fake.URL(),
		"HITLBOT_CHANNELS_DINGTALK_CARD_TEMPLATE_ID": "tpl.schema",
		"HITLBOT_APPROVAL_TIME_ZONE":                 "Asia/Shanghai",
	} {
		t.Setenv(k, v)
	}
	s := serve(t, "-data", filepath.Join(t.TempDir(), "data"))
	fake.WaitConn(30 * time.Second)

	msg := fake.BotMessage("msg-1", "cid1", "alice", deleteCancelled, true)
	msg["senderNick"] = "张三" // the name DingTalk gives with the message
	fake.Push(payload.BotMessageCallbackTopic, msg)
	waitFor(t, 20*time.Second, "the approval card", func() bool {
		return len(fake.Calls("/v1.0/card/instances/createAndDeliver")) == 1
	})
	card := fake.Calls("/v1.0/card/instances/createAndDeliver")[0]
	params := cardParamMap(t, card.Body)
	id, sha := params["approval_id"], params["payload_sha256"]
	if card.Body["outTrackId"] != id || params["status"] != "pending" || !strings.Contains(params["preview"], "affects 7 rows") {
		t.Fatalf("card %v", card.Body)
	}
	// The card names the requester as DingTalk did, and says the expiry in
	// approval.time_zone (Asia/Shanghai: CST).
	if params["requester"] != "张三" || !strings.HasPrefix(params["requested"], "Requested by 张三 · valid until ") ||
		!strings.HasSuffix(params["requested"], " CST") || !strings.HasSuffix(params["expires_at"], " CST") {
		t.Fatalf("requester %q, requested %q, expires_at %q", params["requester"], params["requested"], params["expires_at"])
	}

	content, _ := json.Marshal(map[string]any{"cardPrivateData": map[string]any{"actionIds": []string{"confirm"},
		"params": map[string]any{"action": "confirm", "approval_id": id, "payload_sha256": sha}}})
	fake.Push(payload.CardInstanceCallbackTopic, map[string]any{"outTrackId": id, "userId": "alice", "userIdType": 1,
		"spaceType": "IM_GROUP", "spaceId": "cid1", "type": "actionCallback", "content": string(content)})
	waitFor(t, 20*time.Second, "the card's final state", func() bool {
		for _, u := range fake.Calls("/v1.0/card/instances") {
			if u.Method == http.MethodPut && cardParamMap(t, u.Body)["status"] == "executed" {
				return true
			}
		}
		return false
	})
	waitFor(t, 20*time.Second, "the answer in the chat", func() bool { return fake.CountText("7 rows affected") >= 1 })
	if strings.Contains(s.stderr.String(), "s3cret-not-logged") {
		t.Fatal("the client secret reached the log")
	}
	if code, body := get(t, s.base+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz = %d %s with the stream connected", code, body)
	}
}

func cardParamMap(t *testing.T, body map[string]any) map[string]string {
	t.Helper()
	cd, _ := body["cardData"].(map[string]any)
	m, _ := cd["cardParamMap"].(map[string]any)
	out := map[string]string{}
	for k, v := range m {
		s, ok := v.(string)
		if !ok {
			t.Fatalf("cardParamMap[%s] is %T, not a string", k, v)
		}
		out[k] = s
	}
	return out
}

// TestServeDingTalkKeepsRefusing runs the whole server against a fake
// DingTalk that keeps throttling every OpenAPI call
// (Forbidden.AccessDenied.QpsLimitForAppkeyAndApi, doc
// how-to-process-api-throttling-on-the-dingtalk-server): each is tried
// again (max_retries), counted, and /readyz says DingTalk keeps
// refusing, with its code, while the replica stays ready; once the fake
// stops refusing, the next calls succeed and the warning is gone.
func TestServeDingTalkKeepsRefusing(t *testing.T) {
	fake := dingtalktest.New(t)
	for k, v := range map[string]string{
		"HITLBOT_CHANNELS_DINGTALK_ENABLED":          "true",
		"HITLBOT_CHANNELS_DINGTALK_CLIENT_ID":        "ding-app",
		"HITLBOT_CHANNELS_DINGTALK_CLIENT_SECRET":    "s3cret-not-logged",
		"HITLBOT_CHANNELS_DINGTALK_API_BASE_URL":     fake.URL(),
		"HITLBOT_CHANNELS_DINGTALK_WEBHOOK_BASE_URL": fake.URL(),
		"HITLBOT_CHANNELS_DINGTALK_CARD_TEMPLATE_ID": "tpl.schema",
		"HITLBOT_CHANNELS_DINGTALK_MAX_RETRIES":      "1",
		"HITLBOT_CHANNELS_DINGTALK_MAX_RETRY_WAIT":   "1ms",
	} {
		t.Setenv(k, v)
	}
	s := serve(t, "-data", filepath.Join(t.TempDir(), "data"))
	fake.WaitConn(30 * time.Second)
	fake.Throttle(dingtalktest.QpsLimitForAppkeyAndApi, -1)

	// Messages without a sessionWebhook: every answer goes through the
	// OpenAPI (cards, robot send), and every call is refused.
	push := func(id string) {
		msg := fake.BotMessage(id, "cid1", "alice", deleteCancelled, true)
		delete(msg, "sessionWebhook")
		delete(msg, "sessionWebhookExpiredTime")
		fake.Push(payload.BotMessageCallbackTopic, msg)
	}
	var ready struct {
		Status   string                     `json:"status"`
		Warnings []string                   `json:"warnings"`
		Refusing map[string]metrics.Refusal `json:"refusing"`
	}
	readyz := func() int {
		code, body := get(t, s.base+"/readyz")
		ready.Warnings, ready.Refusing = nil, nil
		if err := json.Unmarshal([]byte(body), &ready); err != nil {
			t.Fatalf("/readyz %d %q: %v", code, body, err)
		}
		return code
	}
	for i := range 3 {
		push(fmt.Sprintf("msg-%d", i))
	}
	waitFor(t, 30*time.Second, "/readyz to say DingTalk keeps refusing", func() bool {
		readyz()
		return ready.Refusing["dingtalk"].Calls >= metrics.PlatformRefusing
	})
	if code := readyz(); code != http.StatusOK || ready.Status != "ok" {
		t.Fatalf("/readyz %d %q: a platform refusing must not make the replica unready", code, ready.Status)
	}
	if r := ready.Refusing["dingtalk"]; r.Code != dingtalktest.QpsLimitForAppkeyAndApi {
		t.Fatalf("refusing %+v, want DingTalk's throttle code", r)
	}
	if len(ready.Warnings) != 1 || !strings.HasPrefix(ready.Warnings[0], "dingtalk keeps refusing: ") ||
		!strings.Contains(ready.Warnings[0], dingtalktest.QpsLimitForAppkeyAndApi) {
		t.Fatalf("warnings %q", ready.Warnings)
	}
	_, m := get(t, s.base+"/metrics")
	for _, series := range []string{`hitlbot_platform_throttled_total{api=`, `hitlbot_platform_retries_total{api=`} {
		if !strings.Contains(m, series) {
			t.Errorf("/metrics has no %s…", series)
		}
	}
	for _, c := range fake.Calls("/v1.0/card/instances/createAndDeliver") {
		if !c.Refused {
			t.Fatalf("a card was created while every call was refused: %v", c.Body)
		}
	}

	// DingTalk stops refusing: the next message's calls succeed.
	fake.Throttle("", 0)
	push("msg-after")
	delivered := func() bool {
		for _, path := range []string{"/v1.0/card/instances/createAndDeliver", "/v1.0/robot/groupMessages/send"} {
			for _, c := range fake.Calls(path) {
				if !c.Refused {
					return true
				}
			}
		}
		return false
	}
	waitFor(t, 30*time.Second, "a call carried out, and /readyz without the warning", func() bool {
		return delivered() && readyz() == http.StatusOK && len(ready.Refusing) == 0 && len(ready.Warnings) == 0
	})
	if strings.Contains(s.stderr.String(), "s3cret-not-logged") {
		t.Fatal("the client secret reached the log")
	}
}
