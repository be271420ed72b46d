package dingtalk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/open-dingtalk/dingtalk-stream-sdk-go/payload"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/dingtalk/dingtalktest"
	"github.com/hitlbot/hitlbot/internal/fakellm"
)

// Tests of DingTalk's platform rules (docs/platform-rules-dingtalk.md),
// against the strict fake: each failed before hitlbot kept its rule.

// firstCard waits for the first card created and returns its approval
// id and hash.
func (g *rig) firstCard(t *testing.T) (id, sha string) {
	t.Helper()
	eventually(t, "the card", func() bool { return len(g.fake.Calls("/v1.0/card/instances/createAndDeliver")) == 1 })
	p := cardParams(t, g.fake.Calls("/v1.0/card/instances/createAndDeliver")[0])
	id, _ = p["approval_id"].(string)
	sha, _ = p["payload_sha256"].(string)
	return id, sha
}

// TestSlowToolClickAnsweredFirst: a click whose tool runs longer than the
// 2 s DingTalk gives a card callback is answered "processing" in time
// (the fake records a late answer, and a card update made while the
// callback was handled, as a broken rule), and the card is updated to
// its outcome after the answer. The channel's click wait and the fake's
// deadline share the rig's clock: the answer comes when click_wait (1 s)
// has passed on it, whatever the machine's load; the tool, held until
// after the answer, cannot run inside the callback.
func TestSlowToolClickAnsweredFirst(t *testing.T) {
	g := newRig(t, nil)
	g.erase.Gate = make(chan struct{})
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid1", "alice", "erase orders", true))
	id, sha := g.firstCard(t)
	acked := make(chan map[string]any, 1)
	go func() {
		acked <- g.fake.Push(payload.CardInstanceCallbackTopic, click(id, "alice", "confirm", id, sha))
	}()
	eventually(t, "the click waiting on the channel's clock", func() bool { return g.clicks.Timers() > 0 })
	g.clicks.Advance(DefaultClickWait)
	resp := ackResponse(t, <-acked)
	if resp["status"] != "processing" || resp["buttons"] != "false" {
		t.Fatalf("click response %v", resp)
	}
	close(g.erase.Gate) // the tool ends after the answer
	eventually(t, "the card's outcome", func() bool {
		for _, u := range g.fake.Calls("/v1.0/card/instances") {
			if cardParams(t, u)["status"] == "executed" {
				return true
			}
		}
		return false
	})
	if v := g.fake.Violations(); len(v) != 0 {
		t.Fatalf("DingTalk's rules broken: %q", v)
	}
}

// TestLongPreviewCardFits: a call whose preview is 4.7 KB still gets its
// card (each cardParamMap value at most 1 KB, cut with a marker), and its
// click decides it.
func TestLongPreviewCardFits(t *testing.T) {
	g := newRig(t, nil)
	long := strings.Repeat("DELETE FROM orders WHERE id IN (1,2,3); ", 120)
	g.erase.Show = func(string, json.RawMessage) string { return long }
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid1", "alice", "erase orders", true))
	eventually(t, "a card asked for", func() bool { return len(g.fake.Calls("/v1.0/card/instances/createAndDeliver")) > 0 })
	c := g.fake.Calls("/v1.0/card/instances/createAndDeliver")[0]
	if c.Refused {
		t.Fatalf("the card was refused: %q", g.fake.Refusals())
	}
	p := cardParams(t, c)
	preview, _ := p["preview"].(string)
	if !strings.HasPrefix(long, strings.SplitN(preview, "…", 2)[0]) || !strings.Contains(preview, "1 KB") {
		t.Fatalf("preview %q", preview)
	}
	id, _ := p["approval_id"].(string)
	sha, _ := p["payload_sha256"].(string)
	if resp := ackResponse(t, g.fake.Push(payload.CardInstanceCallbackTopic, click(id, "alice", "confirm", id, sha))); resp["status"] != "executed" {
		t.Fatalf("click response %v", resp)
	}
	if g.erase.Runs.Load() != 1 {
		t.Fatalf("%d runs", g.erase.Runs.Load())
	}
}

// TestExternalMemberDecidesByReplying: a member from outside the
// organisation (only an encrypted senderId) gets no card, whose clicks
// DingTalk would not match to them, but a markdown approval saying so;
// their typed 确认 decides it as the requester.
func TestExternalMemberDecidesByReplying(t *testing.T) {
	g := newRig(t, nil)
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.ExternalMessage(nextID(), "cid_ext", "ext1", "erase orders", true))
	eventually(t, "the markdown approval", func() bool { return g.fake.CountText("outside the organisation") == 1 })
	if n := len(g.fake.Calls("/v1.0/card/instances/createAndDeliver")); n != 0 {
		t.Fatalf("%d cards created for an external member's approval", n)
	}
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.ExternalMessage(nextID(), "cid_ext", "ext1", "确认", true))
	eventually(t, "the summary", func() bool { return g.fake.CountText("summary: erase done (run 1)") == 1 })
	a, err := g.engine.Store().Latest(context.Background(), channels.SessionKey(channels.ScopePerChat, Name, "cid_ext", "$:LWCP_v1:$ext1", ""))
	if err != nil || a == nil || a.DecidedBy != "$:LWCP_v1:$ext1" {
		t.Fatalf("approval %+v, %v", a, err)
	}
}

// TestAICardNotDeliveredNotStreamed: an AI card DingTalk did not deliver
// (deliverResults: the robot is not in the group) is not streamed into;
// the answer comes whole.
func TestAICardNotDeliveredNotStreamed(t *testing.T) {
	g, llm := streamingRig(t)
	g.fake.LeaveGroup("cid_gone")
	answer := "nothing is open in the orders table"
	llm.Enqueue(fakellm.Reply{Text: answer, Chunks: fakellm.Split(answer, 4)})
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid_gone", "alice", "what is open?", true))
	eventually(t, "the answer, whole", func() bool { return g.fake.CountText(answer) == 1 })
	cs := g.fake.AICards()
	if len(cs) == 0 {
		t.Fatal("no AI card was asked for")
	}
	for _, c := range cs {
		if c.Delivered || len(c.Contents) != 0 {
			t.Fatalf("streamed into a card nobody received: %+v", c)
		}
	}
}

// directSends are the robot's 1:1 sends and what batchSend's answer must
// make of them.
var directSends = []struct {
	name    string
	users   func(f *dingtalktest.Fake) []approval.UserID
	failed  bool     // SendTo's error wraps errNotDelivered
	reached []string // users the text reached
}{
	{"an unknown staff id is an error", func(f *dingtalktest.Fake) []approval.UserID {
		f.UnknownStaff("ghost")
		return []approval.UserID{"ghost", "bob"}
	}, true, []string{"bob"}},
	{"a throttled id is sent again", func(f *dingtalktest.Fake) []approval.UserID {
		f.FlowControl("carol", 1)
		return []approval.UserID{"carol"}
	}, false, []string{"carol"}},
	{"more than 20 ids go in batches", func(*dingtalktest.Fake) []approval.UserID {
		var us []approval.UserID
		for i := range 25 {
			us = append(us, approval.UserID(fmt.Sprint("u", i)))
		}
		return us
	}, false, []string{"u0", "u19", "u20", "u24"}},
}

// TestDirectSendReadsTheAnswer: batchSend answers HTTP 200 with the ids it
// sent nothing to; hitlbot reads them.
func TestDirectSendReadsTheAnswer(t *testing.T) {
	for _, c := range directSends {
		t.Run(c.name, func(t *testing.T) {
			g := newRig(t, nil)
			err := g.ch.SendTo(context.Background(), channels.Target{Channel: Name, ChatID: "cid1"}, c.users(g.fake), channels.Outgoing{Text: "hello there"})
			if errors.Is(err, errNotDelivered) != c.failed {
				t.Fatalf("err %v, want failed %v", err, c.failed)
			}
			for _, u := range c.reached {
				if n := len(g.fake.DirectTexts(u)); n != 1 {
					t.Fatalf("%s got %d texts", u, n)
				}
			}
		})
	}
}
