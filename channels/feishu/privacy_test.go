package feishu

import (
	"context"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/agent/model"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
	"github.com/hitlbot/hitlbot/internal/fakellm"
)

// privateGroup is the group chat of the privacy tests.
const privateGroup = "oc_group_private"

// privacyOptions: HIGH calls are approved by ou_bob alone and are
// private in groups (approvers mode chat, when chat is set).
func privacyOptions(store approval.Store, chat bool) rigOptions {
	return rigOptions{store: store, editPolicy: func(c *approval.PolicyConfig) {
		rule := approval.ApproverConfig{Mode: approval.ApproverUsers, Users: []string{"ou_bob"}}
		if chat {
			rule = approval.ApproverConfig{Mode: approval.ApproverChat}
		}
		c.Approvers = map[string]approval.ApproverConfig{"HIGH": rule}
		c.Privacy = map[string]approval.Privacy{"HIGH": approval.PrivacyGroup}
	}}
}

// askPrivately has user ask for "erase target" in chat (of chatType) and
// returns the approval once it has n cards.
func (g *rig) askPrivately(t *testing.T, chatType, chat, user, target string, n int) *approval.Approval {
	t.Helper()
	g.say(t, chatType, chat, user, "@_user_1 erase "+target, map[string]string{"@_user_1": g.fake.BotOpenID})
	var a *approval.Approval
	eventually(t, "an approval is pending with its cards", func() bool {
		p, err := g.engine.Pending(context.Background(), channels.SessionKey(g.scope, Name, chat, approval.UserID(user), ""))
		if err != nil {
			t.Fatal(err)
		}
		a = p
		return p != nil && len(p.Cards) == n
	})
	return a
}

// sentTo returns the successful creates for person openID (in their 1:1
// chat with the bot) whose content says sub.
func (g *rig) sentTo(openID, sub string) []feishutest.Call {
	var out []feishutest.Call
	for _, c := range g.calls("create") {
		if c.ReceiveIDType == "open_id" && c.ReceiveID == openID && strings.Contains(c.Content, sub) {
			out = append(out, c)
		}
	}
	return out
}

// inGroup returns what the bot said or showed in chat (creates there, and
// replies to messages of that chat, msgs) whose content says sub.
func (g *rig) inGroup(chat string, msgs []string, sub string) []feishutest.Call {
	var out []feishutest.Call
	for _, c := range g.fake.Calls() {
		if c.Answered != 200 || !strings.Contains(c.Content, sub) {
			continue
		}
		switch {
		case c.Op == "create" && c.ReceiveIDType == "chat_id" && c.ReceiveID == chat:
			out = append(out, c)
		case c.Op == "reply" && contains(msgs, c.MessageID):
			out = append(out, c)
		}
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestPrivacyInGroupFeishu, through the fake Feishu and the real SDK, on
// both stores: ou_alice asks for a HIGH call in a group, which only ou_bob
// may approve and whose privacy is group. The group gets the redacted
// card (who asked, the risk, who may approve; nothing of the call); ou_bob
// and ou_alice get the whole card, with its buttons, in their 1:1 chats;
// ou_carol, in the group, gets nothing else: /pending lists the approval
// by its redacted line. ou_bob approves from his 1:1 card: the call runs
// once, every card ends executed (the group's redacted, the 1:1 cards
// with the result), and the model's answer goes to ou_alice in her 1:1
// chat while the group reads one line saying so.
func TestPrivacyInGroupFeishu(t *testing.T) { bothStores(t, testPrivacyInGroupFeishu) }

func testPrivacyInGroupFeishu(t *testing.T, store approval.Store) {
	g := newRigWith(t, privacyOptions(store, false))
	a := g.askPrivately(t, "group", privateGroup, "ou_alice", "orders", 3)
	if !a.Private() || !a.Group {
		t.Fatalf("the approval is not private: privacy %q, group %v", a.Privacy, a.Group)
	}
	groupCards := g.created(privateGroup, "")
	if len(groupCards) != 1 {
		t.Fatalf("%d cards in the group, want the redacted one: %+v", len(groupCards), groupCards)
	}
	gc := groupCards[0].Content
	if !strings.Contains(gc, "asked for a HIGH risk action") || !strings.Contains(gc, `only ou\\_bob`) {
		t.Fatalf("the group's card is not the redacted line:\n%s", gc)
	}
	for _, secret := range []string{"orders", "erase", a.PayloadSHA256[:12], `"decision"`} {
		if strings.Contains(gc, secret) {
			t.Fatalf("the group's card says %q:\n%s", secret, gc)
		}
	}
	for _, who := range []string{"ou_alice", "ou_bob"} {
		if got := g.sentTo(who, `"decision":"approve"`); len(got) != 1 || !strings.Contains(got[0].Content, "orders") || got[0].MsgType != "interactive" {
			t.Fatalf("%s got %d whole cards in their 1:1 chat: %+v", who, len(got), got)
		}
	}
	if got := g.sentTo("ou_carol", ""); len(got) != 0 {
		t.Fatalf("the onlooker got %+v", got)
	}

	// The onlooker's /pending: the redacted line and its code.
	p := g.say(t, "group", privateGroup, "ou_carol", "@_user_1 /pending", map[string]string{"@_user_1": g.fake.BotOpenID})
	eventually(t, "/pending answered", func() bool { return g.replied(p.MessageID, "asked for a HIGH risk action") == 1 })
	if g.replied(p.MessageID, "orders") != 0 {
		t.Fatal("/pending in the group names the call")
	}

	// ou_bob approves from his 1:1 card.
	var bobRef approval.CardRef
	for _, c := range a.Cards {
		if c.Private && c.ChatID == feishutest.P2PChat("ou_bob") {
			bobRef = c
		}
	}
	if bobRef.MessageID == "" {
		t.Fatalf("no private card of ou_bob among %+v", a.Cards)
	}
	e := feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: "ou_bob", MessageID: bobRef.MessageID, ChatID: bobRef.ChatID, Value: buttonValue(a, "approve")}
	if code, data, _ := g.push(t, e.JSON()); code != 200 {
		t.Fatalf("click ack %d: %s", code, data)
	}
	eventually(t, "executed", func() bool { return g.state(t, a.ID) == approval.StateExecuted })
	if n := g.erase.Runs.Load(); n != 1 {
		t.Fatalf("the call ran %d times", n)
	}
	rec, err := g.engine.Get(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rec.Cards {
		want := "erase done (run 1)"
		if !c.Private {
			want = `asked for a HIGH risk action · Executed (ou\\_bob)`
		}
		eventually(t, "card "+c.MessageID+" settled", func() bool { return g.settledAs(c.MessageID, want) })
		if !c.Private && g.settledAs(c.MessageID, "orders") {
			t.Fatal("the group's card was settled with the call's words")
		}
	}

	// The answer: to ou_alice privately; the group reads one line.
	eventually(t, "the answer sent to ou_alice privately", func() bool { return len(g.sentTo("ou_alice", "summary: erase done (run 1)")) == 1 })
	eventually(t, "the group told", func() bool {
		return len(g.inGroup(privateGroup, g.groupMessages(), "The answer was sent to ou_alice privately.")) == 1
	})
	for _, secret := range []string{"orders", "erase done", "summary:"} {
		if leaks := g.inGroup(privateGroup, g.groupMessages(), secret); len(leaks) != 0 {
			t.Fatalf("the group read %q: %+v", secret, leaks)
		}
	}
	if got := g.sentTo("ou_carol", ""); len(got) != 0 {
		t.Fatalf("the onlooker got %+v", got)
	}
}

// groupMessages are the ids of the messages said in privateGroup (what
// the bot's replies there answer).
func (g *rig) groupMessages() []string {
	var ids []string
	for _, e := range g.said {
		if e.ChatID == privateGroup {
			ids = append(ids, e.MessageID)
		}
	}
	return ids
}

// TestPrivacyShowsAllWhereNobodyLooksOn, through the fake Feishu: privacy
// group changes nothing in a 1:1 chat (the whole card there, nothing sent
// by open_id), nor in a group whose approver rule is "chat" (everyone
// there may approve: the whole card in the group).
func TestPrivacyShowsAllWhereNobodyLooksOn(t *testing.T) {
	for _, tc := range []struct {
		name, chatType, chat string
		ruleChat             bool
	}{
		{"a 1:1 chat", "p2p", "oc_p2p_alice_chat", false},
		{"mode chat in a group", "group", "oc_group_all", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRigWith(t, privacyOptions(nil, tc.ruleChat))
			a := g.askPrivately(t, tc.chatType, tc.chat, "ou_alice", "orders", 1)
			if a.Private() || a.Cards[0].Private {
				t.Fatalf("private: %v, cards %+v", a.Private(), a.Cards)
			}
			if got := g.created(tc.chat, "orders"); len(got) != 1 || !strings.Contains(got[0].Content, `"decision":"approve"`) {
				t.Fatalf("the chat did not get the whole card: %+v", got)
			}
			for _, c := range g.calls("create") {
				if c.ReceiveIDType == "open_id" {
					t.Fatalf("something was sent by open_id: %+v", c)
				}
			}
		})
	}
}

// TestPrivacyNoStreamInGroup: the model streams, but the answer of a
// turn that ran a private approval's call never streams into the group:
// after ou_bob approves from his 1:1 card, no card entity is opened for
// it, and the whole answer goes to ou_alice in her 1:1 chat.
func TestPrivacyNoStreamInGroup(t *testing.T) {
	llm := fakellm.New(t)
	m, err := model.NewOpenAI(model.OpenAIConfig{BaseURL: llm.URL, Model: "m", APIKey: llm.APIKey(), Stream: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := privacyOptions(nil, false)
	o.model = m
	g := newRigWith(t, o)
	llm.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "erase", Arguments: `{"target":"orders"}`}}},
		fakellm.Reply{Text: "The orders table is erased.", Chunks: fakellm.Split("The orders table is erased.", 4)})
	g.say(t, "group", privateGroup, "ou_alice", "@_user_1 erase the orders", map[string]string{"@_user_1": g.fake.BotOpenID})
	var a *approval.Approval
	eventually(t, "the private approval's cards are out", func() bool {
		p, err := g.engine.Pending(context.Background(), channels.SessionKey(g.scope, Name, privateGroup, "ou_alice", ""))
		if err != nil {
			t.Fatal(err)
		}
		a = p
		return p != nil && len(p.Cards) == 3
	})
	var bob approval.CardRef
	for _, c := range a.Cards {
		if c.Private && c.ChatID == feishutest.P2PChat("ou_bob") {
			bob = c
		}
	}
	e := feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: "ou_bob", MessageID: bob.MessageID, ChatID: bob.ChatID, Value: buttonValue(a, "approve")}
	if code, data, _ := g.push(t, e.JSON()); code != 200 {
		t.Fatalf("click ack %d: %s", code, data)
	}
	eventually(t, "the answer sent to ou_alice privately", func() bool { return len(g.sentTo("ou_alice", "The orders table is erased.")) == 1 })
	if es := g.fake.CardEntities(); len(es) != 0 {
		t.Fatalf("the answer streamed into %d card entities: %+v", len(es), es)
	}
	if leaks := g.inGroup(privateGroup, g.groupMessages(), "is erased"); len(leaks) != 0 {
		t.Fatalf("the group read the answer: %+v", leaks)
	}
}
