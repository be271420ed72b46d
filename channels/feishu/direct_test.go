package feishu

import (
	"context"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
)

// TestApproveInDirectFeishu: approve_in direct sends the card of a HIGH
// call, with its buttons and without a code, 1:1 to each person the rule
// lists (ou_dba1, ou_dba2; not the requester, who is listed too); the
// requester's group gets the status card. ou_dba2 approves from his 1:1
// card: the call runs once and every card ends executed (the 1:1 cards
// as cards, the group's as its status).
func TestApproveInDirectFeishu(t *testing.T) { bothStores(t, testApproveInDirectFeishu) }

func testApproveInDirectFeishu(t *testing.T, store approval.Store) {
	g := newRigWith(t, rigOptions{store: store, editPolicy: func(c *approval.PolicyConfig) {
		c.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverUsers, Users: []string{"ou_dba1", "ou_dba2", "ou_alice"}}}
		c.ApproveIn = map[string]approval.Place{"HIGH": {Channel: Name, Direct: true}}
	}})
	a := g.askPrivately(t, "group", "oc_team", "ou_alice", "orders", 3)
	for _, who := range []string{"ou_dba1", "ou_dba2"} {
		got := g.sentTo(who, `"decision":"approve"`)
		if len(got) != 1 || !strings.Contains(got[0].Content, "orders") || strings.Contains(got[0].Content, "Code: ") {
			t.Fatalf("%s got %d cards with buttons (want one, with the call and no code): %+v", who, len(got), got)
		}
	}
	if got := g.sentTo("ou_alice", ""); len(got) != 0 {
		t.Fatalf("the requester got a 1:1 card: %+v", got)
	}
	team := g.created("oc_team", "")
	if len(team) != 1 || strings.Contains(team[0].Content, `"decision"`) || !strings.Contains(team[0].Content, "Waiting for approval in the approvers' 1:1 chats") {
		t.Fatalf("the group got %+v, want the status card", team)
	}
	var dba2 approval.CardRef
	for _, c := range a.Cards {
		if c.ChatID == feishutest.P2PChat("ou_dba2") {
			dba2 = c
		}
	}
	if dba2.MessageID == "" {
		t.Fatalf("no card of ou_dba2 among %+v", a.Cards)
	}
	e := feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: "ou_dba2", MessageID: dba2.MessageID, ChatID: dba2.ChatID, Value: buttonValue(a, "approve")}
	if code, data, _ := g.push(t, e.JSON()); code != 200 {
		t.Fatalf("click ack %d: %s", code, data)
	}
	eventually(t, "executed", func() bool { return g.state(t, a.ID) == approval.StateExecuted })
	rec, err := g.engine.Get(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rec.Cards {
		eventually(t, "card "+c.MessageID+" settled", func() bool { return g.settledAs(c.MessageID, "Executed") })
	}
	if n := g.erase.Runs.Load(); n != 1 || rec.DecidedBy != "ou_dba2" {
		t.Fatalf("the call ran %d times; decided by %q", n, rec.DecidedBy)
	}
}
