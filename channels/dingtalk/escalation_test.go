package dingtalk

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/open-dingtalk/dingtalk-stream-sdk-go/payload"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/clock"
)

// escalationRig is a rig on store whose HIGH calls (erase) bob may
// approve, and which, when nobody decided within a minute, are also
// shown in the group cid_oncall, where anyone may decide (mode chat);
// the engine runs on clk.
func escalationRig(t *testing.T, store approval.Store, clk clock.Clock) *rig {
	t.Helper()
	pc := approval.DefaultPolicyConfig()
	pc.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverUsers, Users: []string{"bob"}}}
	pc.Escalation = map[string][]approval.EscalationConfig{"HIGH": {{After: time.Minute, To: approval.Place{Channel: Name, ChatID: "cid_oncall"},
		Approvers: approval.ApproverConfig{Mode: approval.ApproverChat}}}}
	return newRigClock(t, nil, store, nil, &pc, nil, clk)
}

// groupSaid reports how many group messages of the robot (a notice is
// sampleText or sampleMarkdown) sent to cid say sub.
func (g *rig) groupSaid(cid, sub string) int {
	n := 0
	for _, c := range g.fake.Calls("/v1.0/robot/groupMessages/send") {
		if c.Body["openConversationId"] == cid && strings.Contains(fmt.Sprint(c.Body["msgParam"]), sub) {
			n++
		}
	}
	for _, c := range g.fake.Calls("/robot/sendBySession") {
		if strings.Contains(fmt.Sprint(c.Body), sub) {
			n++
		}
	}
	return n
}

// TestEscalationOnDingTalk: nobody decides within a minute; the sweep
// creates a second card of the approval (its own outTrackId, buttons, the
// escalation line) in the on-call group and tells the requester's group;
// before the step, a click in the on-call group was unauthorized; after
// it, anyone there approves, the tool runs once, both cards end executed.
func TestEscalationOnDingTalk(t *testing.T) { bothStores(t, testEscalationOnDingTalk) }

func testEscalationOnDingTalk(t *testing.T, store approval.Store) {
	clk := clock.NewFake(time.Now().UTC())
	g := escalationRig(t, store, clk)
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid_req", "alice", "erase orders", true))
	eventually(t, "a card in the requester's group", func() bool { return len(g.createdIn("cid_req")) == 1 })
	own := cardParams(t, g.createdIn("cid_req")[0])
	id, _ := own["approval_id"].(string)
	sha, _ := own["payload_sha256"].(string)
	if resp := ackResponse(t, g.fake.Push(payload.CardInstanceCallbackTopic, clickIn("cid_oncall", id, "erin", "confirm", id, sha))); resp["status"] == "executed" {
		t.Fatalf("a click in the on-call group before the step: %v", resp)
	}

	clk.Advance(time.Minute)
	if n, err := g.engine.Sweep(context.Background()); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	oncall := g.createdIn("cid_oncall")
	if len(oncall) != 1 || oncall[0].Body["outTrackId"] != id+"-e1" {
		t.Fatalf("the on-call group got %d cards: %+v", len(oncall), oncall)
	}
	p := cardParams(t, oncall[0])
	if p["buttons"] != "true" || p["code"] == nil || p["escalated"] != "Nobody decided within 1 min: also asked in cid_oncall; anyone in cid_oncall may decide too" {
		t.Fatalf("the on-call card: %v", p)
	}
	if g.groupSaid("cid_req", "also asked in cid_oncall") != 1 {
		t.Fatalf("the requester's group was not told once: %v", g.fake.Calls("/v1.0/robot/groupMessages/send"))
	}

	resp := ackResponse(t, g.fake.Push(payload.CardInstanceCallbackTopic, clickIn("cid_oncall", id+"-e1", "erin", "confirm", id, sha)))
	if resp["status"] != "executed" {
		t.Fatalf("the click in the on-call group: %v", resp)
	}
	eventually(t, "both cards ended executed", func() bool { return g.endedAs(t, id, "executed") && g.endedAs(t, id+"-e1", "executed") })
	if n := g.erase.Runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want once", n)
	}
	a, err := g.engine.Get(context.Background(), approval.ID(id))
	if err != nil || a.DecidedBy != "erin" {
		t.Fatalf("decided by %q (%v)", a.DecidedBy, err)
	}
}

// TestEscalationOnDingTalkTypedCode: "确认 <code>" typed in the on-call
// group after the step decides the approval by the code it has there.
func TestEscalationOnDingTalkTypedCode(t *testing.T) {
	bothStores(t, testEscalationOnDingTalkTypedCode)
}

func testEscalationOnDingTalkTypedCode(t *testing.T, store approval.Store) {
	clk := clock.NewFake(time.Now().UTC())
	g := escalationRig(t, store, clk)
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid_req", "alice", "erase orders", true))
	eventually(t, "a card in the requester's group", func() bool { return len(g.createdIn("cid_req")) == 1 })
	id, _ := cardParams(t, g.createdIn("cid_req")[0])["approval_id"].(string)
	clk.Advance(time.Minute)
	if _, err := g.engine.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a card in the on-call group", func() bool { return len(g.createdIn("cid_oncall")) == 1 })
	code, _ := cardParams(t, g.createdIn("cid_oncall")[0])["code"].(string)
	if code == "" {
		t.Fatal("the on-call card has no code")
	}
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid_oncall", "frank", "确认 "+code, true))
	eventually(t, "executed by the typed code", func() bool { return g.endedAs(t, id, "executed") && g.endedAs(t, id+"-e1", "executed") })
	a, err := g.engine.Get(context.Background(), approval.ID(id))
	if err != nil || a.DecidedBy != "frank" || a.DecidedVia != approval.SourceReply || g.erase.Runs.Load() != 1 {
		t.Fatalf("decided by %q via %q (%v), %d runs", a.DecidedBy, a.DecidedVia, err, g.erase.Runs.Load())
	}
}
