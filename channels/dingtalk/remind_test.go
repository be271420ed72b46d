package dingtalk

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/open-dingtalk/dingtalk-stream-sdk-go/payload"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/internal/clock"
)

// TestRemindersOnDingTalk: alice asks in cid_req for a call bob and carol
// may approve; nobody decides. At 50 % of the window the group gets one
// text through the sessionWebhook that mentions both as DingTalk shows a
// mention (at.atUserIds and @<id> in the text: the fake's Mentions), with
// the approval's code; at 90 % a second; none after.
func TestRemindersOnDingTalk(t *testing.T) {
	clk := clock.NewFake(time.Now().UTC())
	pc := approval.DefaultPolicyConfig()
	pc.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverUsers, Users: []string{"bob", "carol"}}}
	g := newRigReminding(t, nil, memstore.New(memstore.Options{Clock: clk}), nil, &pc, nil, clk, []float64{0.5, 0.9})
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid_req", "alice", "erase orders", true))
	eventually(t, "a card in the requester's group", func() bool { return len(g.createdIn("cid_req")) == 1 })
	p := cardParams(t, g.createdIn("cid_req")[0])
	id, _ := p["approval_id"].(string)
	code, _ := p["code"].(string)
	a, err := g.engine.Get(context.Background(), approval.ID(id))
	if err != nil {
		t.Fatal(err)
	}
	window := a.ExpiresAt.Sub(a.CreatedAt)
	sweep := func() {
		t.Helper()
		if _, err := g.engine.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	reminded := func() []string {
		var out []string
		for _, s := range g.fake.Texts() {
			if strings.Contains(s, "Reminder") {
				out = append(out, s)
			}
		}
		return out
	}
	clk.Advance(window/2 - time.Second)
	sweep()
	if got := reminded(); len(got) != 0 {
		t.Fatalf("reminded before 50 %%: %q", got)
	}
	clk.Advance(time.Second)
	sweep()
	sweep()
	got := reminded()
	if len(got) != 1 || code == "" || !strings.Contains(got[0], code) {
		t.Fatalf("at 50 %%: reminders %q, want one with the code %q", got, code)
	}
	var mentions [][]string
	for _, m := range g.fake.Mentions() {
		if len(m) > 0 {
			mentions = append(mentions, m)
		}
	}
	if len(mentions) != 1 || !slices.Equal(mentions[0], []string{"bob", "carol"}) {
		t.Fatalf("mentions %v, want one message mentioning bob and carol", mentions)
	}
	clk.Advance(window * 4 / 10)
	sweep()
	clk.Advance(window / 20)
	sweep()
	if got := reminded(); len(got) != 2 {
		t.Fatalf("after 90 %%: %d reminders, want 2", len(got))
	}
}
