package dingtalk

import (
	"encoding/json"
	"testing"

	"github.com/open-dingtalk/dingtalk-stream-sdk-go/payload"
)

// resolveClick is a 回传请求 of a frozen card's resolve button, as DingTalk
// sends it: action "resolve" and the resolution among the params.
func resolveClick(outTrack, user, resolution, id, sha string) map[string]any {
	content, _ := json.Marshal(map[string]any{"cardPrivateData": map[string]any{"actionIds": []string{"resolve_" + resolution},
		"params": map[string]any{"action": "resolve", "resolution": resolution, "approval_id": id, "payload_sha256": sha}}})
	return map[string]any{"outTrackId": outTrack, "userId": user, "userIdType": 1, "corpId": "dingcorp", "spaceType": "IM_GROUP",
		"spaceId": "cid1", "type": "actionCallback", "extension": "{}", "content": string(content)}
}

// End to end on the fake DingTalk: a confirmed call freezes; the card is
// updated to frozen with resolve_buttons "true"; a click on 重试 (action
// resolve, resolution retry) runs the tool exactly once more, answers with
// the retried state (no buttons of either kind), the card is updated so,
// and the chat gets the model's follow-up. A second 重试 runs nothing.
func TestFrozenCardRetryOnDingTalk(t *testing.T) {
	g := newRig(t, nil)
	g.erase.Unknown.Store(1)
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid1", "alice", "erase orders", true))
	eventually(t, "the card", func() bool { return len(g.fake.Calls("/v1.0/card/instances/createAndDeliver")) == 1 })
	p := cardParams(t, g.fake.Calls("/v1.0/card/instances/createAndDeliver")[0])
	id, _ := p["approval_id"].(string)
	sha, _ := p["payload_sha256"].(string)
	if p["resolve_buttons"] != "false" {
		t.Fatalf("a pending card shows the resolve buttons: %v", p)
	}
	resp := ackResponse(t, g.fake.Push(payload.CardInstanceCallbackTopic, click(id, "alice", "confirm", id, sha)))
	if resp["status"] != "frozen" || resp["resolve_buttons"] != "true" || resp["buttons"] != "false" {
		t.Fatalf("frozen click response %v", resp)
	}
	eventually(t, "the card updated to frozen", func() bool {
		for _, u := range g.fake.Calls("/v1.0/card/instances") {
			if up := cardParams(t, u); up["status"] == "frozen" && up["resolve_buttons"] == "true" {
				return true
			}
		}
		return false
	})
	resp = ackResponse(t, g.fake.Push(payload.CardInstanceCallbackTopic, resolveClick(id, "alice", "retry", id, sha)))
	if resp["status"] != "executed" || resp["resolution"] != "retry" || resp["resolve_buttons"] != "false" || resp["buttons"] != "false" ||
		resp["status_text"] != "Retried: Executed" || resp["result"] != "erase done (run 2)" {
		t.Fatalf("retry click response %v", resp)
	}
	if n := g.erase.Runs.Load(); n != 2 {
		t.Fatalf("the tool ran %d times, want 2", n)
	}
	eventually(t, "the card updated to the retried state", func() bool {
		for _, u := range g.fake.Calls("/v1.0/card/instances") {
			if up := cardParams(t, u); up["resolution"] == "retry" && up["resolve_buttons"] == "false" && up["decided_by"] == "alice" {
				return true
			}
		}
		return false
	})
	eventually(t, "the model's follow-up in the chat", func() bool {
		return g.fake.CountText("Update on the earlier approval "+id) == 1
	})
	resp = ackResponse(t, g.fake.Push(payload.CardInstanceCallbackTopic, resolveClick(id, "alice", "done", id, sha)))
	if g.erase.Runs.Load() != 2 || resp["resolve_buttons"] == "true" {
		t.Fatalf("a second resolution: %v, runs %d", resp, g.erase.Runs.Load())
	}
}
