package dingtalk

import (
	"context"
	"testing"

	"github.com/open-dingtalk/dingtalk-stream-sdk-go/payload"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels/dingtalk/dingtalktest"
)

// createdFor returns the cards created in the robot's 1:1 chat with
// user.
func (g *rig) createdFor(user string) []dingtalktest.Call {
	var out []dingtalktest.Call
	for _, c := range g.fake.Calls("/v1.0/card/instances/createAndDeliver") {
		if c.Body["openSpaceId"] == "dtv1.card//IM_ROBOT."+user {
			out = append(out, c)
		}
	}
	return out
}

// TestApproveInDirectOnDingTalk: approve_in direct delivers the card of a
// HIGH call, with its buttons, to each listed person in their 1:1 chat
// with the robot (its own outTrackId each: "<id>-<staff id>"), and a
// status card to the requester's group. dba2 approves from his card: the
// call runs once, and every card ends executed.
func TestApproveInDirectOnDingTalk(t *testing.T) { bothStores(t, testApproveInDirectOnDingTalk) }

func testApproveInDirectOnDingTalk(t *testing.T, store approval.Store) {
	pc := approval.DefaultPolicyConfig()
	pc.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverUsers, Users: []string{"dba1", "dba2"}}}
	pc.ApproveIn = map[string]approval.Place{"HIGH": {Channel: Name, Direct: true}}
	g := newRigPolicy(t, nil, store, nil, &pc)
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid_req", "alice", "erase orders", true))
	eventually(t, "a card for each approver and the status card", func() bool {
		return len(g.createdFor("dba1")) == 1 && len(g.createdFor("dba2")) == 1 && len(g.createdIn("cid_req")) == 1
	})
	p := cardParams(t, g.createdFor("dba2")[0])
	id, _ := p["approval_id"].(string)
	sha, _ := p["payload_sha256"].(string)
	if p["buttons"] != "true" || p["code"] != nil || g.createdFor("dba2")[0].Body["outTrackId"] != id+"-dba2" || g.createdFor("dba1")[0].Body["outTrackId"] != id+"-dba1" {
		t.Fatalf("dba2's card: %v (outTrackId %v)", p, g.createdFor("dba2")[0].Body["outTrackId"])
	}
	if st := cardParams(t, g.createdIn("cid_req")[0]); st["buttons"] != "false" || st["status_text"] != "Waiting for approval in the approvers' 1:1 chats" {
		t.Fatalf("the status card: %v", st)
	}
	resp := ackResponse(t, g.fake.Push(payload.CardInstanceCallbackTopic, click(id+"-dba2", "dba2", "confirm", id, sha)))
	if resp["status"] != "executed" {
		t.Fatalf("dba2's click: %v", resp)
	}
	eventually(t, "every card ended executed", func() bool {
		return g.endedAs(t, id+"-dba1", "executed") && g.endedAs(t, id+"-dba2", "executed") && g.endedAs(t, id+"-status", "executed")
	})
	a, err := g.engine.Get(context.Background(), approval.ID(id))
	if err != nil || a.DecidedBy != "dba2" || g.erase.Runs.Load() != 1 {
		t.Fatalf("decided by %q (%v), %d runs", a.DecidedBy, err, g.erase.Runs.Load())
	}
}
