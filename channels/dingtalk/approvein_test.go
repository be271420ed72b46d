package dingtalk

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/open-dingtalk/dingtalk-stream-sdk-go/payload"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/dingtalk/dingtalktest"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

// approveInRig is a rig on store whose HIGH calls (erase) ask in the
// group cid_ops, where anyone may decide (mode chat).
func approveInRig(t *testing.T, store approval.Store) *rig {
	t.Helper()
	pc := approval.DefaultPolicyConfig()
	pc.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverChat}}
	pc.ApproveIn = map[string]approval.Place{"HIGH": {Channel: Name, ChatID: "cid_ops"}}
	return newRigPolicy(t, nil, store, nil, &pc)
}

// bothStores runs fn on the memory store and on Redis.
func bothStores(t *testing.T, fn func(t *testing.T, store approval.Store)) {
	t.Run("memory", func(t *testing.T) { fn(t, memstore.New(memstore.Options{})) })
	t.Run("redis", func(t *testing.T) {
		rdb, prefix := testredis.Start(t)
		s, err := redisstore.New(rdb, redisstore.Options{Prefix: prefix, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		fn(t, s)
	})
}

// clickIn is click taken in the conversation space.
func clickIn(space, outTrack, user, action, id, sha string) map[string]any {
	c := click(outTrack, user, action, id, sha)
	c["spaceId"] = space
	return c
}

// createdIn returns the cards created in the group cid.
func (g *rig) createdIn(cid string) []dingtalktest.Call {
	var out []dingtalktest.Call
	for _, c := range g.fake.Calls("/v1.0/card/instances/createAndDeliver") {
		if c.Body["openSpaceId"] == "dtv1.card//IM_GROUP."+cid {
			out = append(out, c)
		}
	}
	return out
}

// endedAs reports whether the card outTrack was updated to status st.
func (g *rig) endedAs(t *testing.T, outTrack, st string) bool {
	for _, u := range g.fake.Calls("/v1.0/card/instances") {
		if u.Body["outTrackId"] == outTrack {
			if p := cardParams(t, u); p["status"] == st && p["buttons"] == "false" && p["final"] == "true" {
				return true
			}
		}
	}
	return false
}

// TestApproveInOnDingTalk: with approve_in, the card with its buttons is
// created in the approvers' group and a status card (its own outTrackId,
// no buttons, where it waits) in the requester's group. A click taken in
// the requester's group by another person is unauthorized under mode
// chat; one in the approvers' group runs the tool once, and both cards
// end executed.
func TestApproveInOnDingTalk(t *testing.T) { bothStores(t, testApproveInOnDingTalk) }

func testApproveInOnDingTalk(t *testing.T, store approval.Store) {
	g := approveInRig(t, store)
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid_req", "alice", "erase orders", true))
	eventually(t, "a card in each group", func() bool { return len(g.createdIn("cid_ops")) == 1 && len(g.createdIn("cid_req")) == 1 })
	ops, mine := cardParams(t, g.createdIn("cid_ops")[0]), cardParams(t, g.createdIn("cid_req")[0])
	id, _ := ops["approval_id"].(string)
	sha, _ := ops["payload_sha256"].(string)
	if ops["buttons"] != "true" || ops["code"] == nil || g.createdIn("cid_ops")[0].Body["outTrackId"] != id {
		t.Fatalf("the approvers' card: %v", ops)
	}
	if mine["buttons"] != "false" || mine["status_text"] != "Waiting for approval in the approvers' chat" || mine["code"] != nil ||
		mine["approvers"] != "anyone in the approvers' chat" || g.createdIn("cid_req")[0].Body["outTrackId"] != id+"-status" {
		t.Fatalf("the requester's status card: %v (outTrackId %v)", mine, g.createdIn("cid_req")[0].Body["outTrackId"])
	}

	resp := ackResponse(t, g.fake.Push(payload.CardInstanceCallbackTopic, clickIn("cid_req", id, "bob", "confirm", id, sha)))
	if resp["status"] == "executed" || g.erase.Runs.Load() != 0 {
		t.Fatalf("a click in the requester's group ran the tool: %v", resp)
	}
	if a, err := g.engine.Get(context.Background(), approval.ID(id)); err != nil || a.State != approval.StatePending {
		t.Fatalf("after a click in the requester's group: %v, %v", a, err)
	}

	resp = ackResponse(t, g.fake.Push(payload.CardInstanceCallbackTopic, clickIn("cid_ops", id, "carol", "confirm", id, sha)))
	if resp["status"] != "executed" {
		t.Fatalf("the click in the approvers' group: %v", resp)
	}
	eventually(t, "both cards ended executed", func() bool { return g.endedAs(t, id, "executed") && g.endedAs(t, id+"-status", "executed") })
	if n := g.erase.Runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want once", n)
	}
}

// TestApproveInOnDingTalkTypedCode: "确认 <code>" typed in the approvers'
// group decides the approval by its code; the status card ends executed.
func TestApproveInOnDingTalkTypedCode(t *testing.T) { bothStores(t, testApproveInOnDingTalkTypedCode) }

func testApproveInOnDingTalkTypedCode(t *testing.T, store approval.Store) {
	g := approveInRig(t, store)
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid_req", "alice", "erase orders", true))
	eventually(t, "a card in each group", func() bool { return len(g.createdIn("cid_ops")) == 1 && len(g.createdIn("cid_req")) == 1 })
	ops := cardParams(t, g.createdIn("cid_ops")[0])
	id, _ := ops["approval_id"].(string)
	code, _ := ops["code"].(string)
	if code == "" {
		t.Fatalf("the approvers' card has no code: %v", ops)
	}
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid_ops", "dave", "确认 "+code, true))
	eventually(t, "executed by the typed code, both cards ended", func() bool {
		return g.endedAs(t, id, "executed") && g.endedAs(t, id+"-status", "executed")
	})
	a, err := g.engine.Get(context.Background(), approval.ID(id))
	if err != nil || a.DecidedBy != "dave" || a.DecidedVia != approval.SourceReply || g.erase.Runs.Load() != 1 {
		t.Fatalf("decided by %q via %q (%v), %d runs", a.DecidedBy, a.DecidedVia, err, g.erase.Runs.Load())
	}
}

// TestApproveInOnDingTalkUnreachable: the robot is not in the approvers'
// group: the request fails, the requester is told so, no card is created
// anywhere, nothing runs and nothing is left pending.
func TestApproveInOnDingTalkUnreachable(t *testing.T) {
	bothStores(t, testApproveInOnDingTalkUnreachable)
}

func testApproveInOnDingTalkUnreachable(t *testing.T, store approval.Store) {
	g := approveInRig(t, store)
	g.fake.RefuseSpace("dtv1.card//IM_GROUP.cid_ops")
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid_req", "alice", "erase orders", true))
	eventually(t, "the requester is told", func() bool { return g.fake.CountText("approvers' chat could not be reached") > 0 })
	if n := len(g.createdIn("cid_req")); n != 0 {
		t.Fatalf("%d cards in the requester's group", n)
	}
	a, err := g.engine.Store().Latest(context.Background(), channels.SessionKey(channels.ScopePerChat, Name, "cid_req", "alice", ""))
	if err != nil || a == nil || a.State != approval.StateCancelled || len(a.Cards) != 0 || g.erase.Runs.Load() != 0 {
		b, _ := json.Marshal(a)
		t.Fatalf("latest approval %s, %v; %d runs", b, err, g.erase.Runs.Load())
	}
	for _, s := range g.fake.Texts() {
		if strings.Contains(s, "Waiting for approval") {
			t.Fatalf("a status was said: %q", s)
		}
	}
}

// TestApproveInOnDingTalkMarkdown: without a card template the approval
// is a markdown message in the approvers' group (answered by typing) and
// its status one in the requester's group; once 确认 <code> typed in the
// approvers' group has run the tool, the requester's group is told how it
// ended (nobody typed there).
func TestApproveInOnDingTalkMarkdown(t *testing.T) {
	pc := approval.DefaultPolicyConfig()
	pc.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverChat}}
	pc.ApproveIn = map[string]approval.Place{"HIGH": {Channel: Name, ChatID: "cid_ops"}}
	g := newRigPolicy(t, func(c *Config) { c.CardTemplateID = "" }, memstore.New(memstore.Options{}), nil, &pc)
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid_req", "alice", "erase orders", true))
	var a *approval.Approval
	eventually(t, "an approval with its two messages", func() bool {
		p, err := g.engine.Pending(context.Background(), channels.SessionKey(channels.ScopePerChat, Name, "cid_req", "alice", ""))
		if err != nil {
			t.Fatal(err)
		}
		a = p
		return p != nil && len(p.Cards) == 2
	})
	if a.Cards[0].ChatID != "cid_ops" || a.Cards[1].ChatID != "cid_req" || !strings.HasSuffix(a.Cards[1].MessageID, "-status") {
		t.Fatalf("cards %+v", a.Cards)
	}
	if g.fake.CountText("Waiting for approval in the approvers' chat") != 1 {
		t.Fatalf("the status was said %d times: %q", g.fake.CountText("Waiting for approval in the approvers' chat"), g.fake.Texts())
	}
	code := approval.Codes([]*approval.Approval{a})[a.ID]
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid_ops", "dave", "确认 "+code, true))
	eventually(t, "executed, and the requester's group told", func() bool {
		rec, err := g.engine.Get(context.Background(), a.ID)
		return err == nil && rec.State == approval.StateExecuted && g.markdownSaid("Executed") == 1
	})
	if n := g.erase.Runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want once", n)
	}
}

// markdownSaid counts the markdown messages (the robot's own cards: no
// typed answer is markdown) that say sub.
func (g *rig) markdownSaid(sub string) int {
	n := 0
	for _, c := range g.fake.Calls("/robot/sendBySession") {
		if m, ok := c.Body["markdown"].(map[string]any); ok && strings.Contains(fmt.Sprint(m["text"]), sub) {
			n++
		}
	}
	for _, p := range []string{"/v1.0/robot/groupMessages/send", "/v1.0/robot/oToMessages/batchSend"} {
		for _, c := range g.fake.Calls(p) {
			if c.Body["msgKey"] == "sampleMarkdown" && strings.Contains(fmt.Sprint(c.Body["msgParam"]), sub) {
				n++
			}
		}
	}
	return n
}
