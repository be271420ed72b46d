package dingtalk

import (
	"testing"

	"github.com/open-dingtalk/dingtalk-stream-sdk-go/payload"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
)

// TestQuorumOnDingTalk: HIGH needs 2 of the DBAs dba1, dba2, dba3. The
// first DBA's click leaves the buttons for everyone, tells the clicker
// their approval is counted, and the card shows "1/2 approved: dba1"; the
// same DBA again counts for nothing; nothing runs. The second DBA's click
// runs the tool once and the card ends executed with both votes.
func TestQuorumOnDingTalk(t *testing.T) {
	pc := approval.DefaultPolicyConfig()
	pc.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverUsers, Users: []string{"dba1", "dba2", "dba3"}, Quorum: 2}}
	g := newRigPolicy(t, nil, memstore.New(memstore.Options{}), nil, &pc)
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid1", "alice", "erase orders", true))
	eventually(t, "the card", func() bool { return len(g.fake.Calls("/v1.0/card/instances/createAndDeliver")) == 1 })
	p := cardParams(t, g.fake.Calls("/v1.0/card/instances/createAndDeliver")[0])
	id, _ := p["approval_id"].(string)
	sha, _ := p["payload_sha256"].(string)
	if p["approvers"] != "only dba1, dba2, dba3; 2 of them must approve" || p["progress"] != nil {
		t.Fatalf("pending card approvers %q, progress %v", p["approvers"], p["progress"])
	}

	resp := ackResponse(t, g.fake.Push(payload.CardInstanceCallbackTopic, click(id, "dba1", "confirm", id, sha)))
	if resp["buttons"] == "false" || resp["final"] == "true" {
		t.Fatalf("the first DBA's click hid the buttons: %v", resp)
	}
	eventually(t, "the card redrawn with the progress", func() bool {
		for _, u := range g.fake.Calls("/v1.0/card/instances") {
			if up := cardParams(t, u); up["progress"] == "1/2 approved: dba1" && up["buttons"] == "true" && up["final"] == "false" {
				return true
			}
		}
		return false
	})
	ackResponse(t, g.fake.Push(payload.CardInstanceCallbackTopic, click(id, "dba1", "confirm", id, sha)))
	if n := g.erase.Runs.Load(); n != 0 {
		t.Fatalf("the tool ran %d times on one approval of two", n)
	}

	resp = ackResponse(t, g.fake.Push(payload.CardInstanceCallbackTopic, click(id, "dba3", "confirm", id, sha)))
	if resp["status"] != "executed" || resp["buttons"] != "false" {
		t.Fatalf("the second DBA's click: %v", resp)
	}
	eventually(t, "the card ended executed with both votes", func() bool {
		us := g.fake.Calls("/v1.0/card/instances")
		up := cardParams(t, us[len(us)-1])
		return up["status"] == "executed" && up["progress"] == "2/2 approved: dba1, dba3" && up["decided_by"] == "dba3"
	})
	if n := g.erase.Runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want once", n)
	}
}
