package feishu

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/hitltest"
)

// oncallChat is the chat the escalation tests' step asks.
const oncallChat = "oc_oncall"

// escalationOptions make a rig whose HIGH calls (erase) ou_bob may
// approve, and which, when nobody decided within a minute, are also
// shown in oncallChat, where ou_dave may decide too; on store, with the
// engine on clk.
func escalationOptions(store approval.Store, clk clock.Clock) rigOptions {
	return rigOptions{store: store, clock: clk, editPolicy: func(c *approval.PolicyConfig) {
		c.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverUsers, Users: []string{"ou_bob"}}}
		c.Escalation = map[string][]approval.EscalationConfig{"HIGH": {{After: time.Minute, To: approval.Place{Channel: Name, ChatID: oncallChat},
			Approvers: approval.ApproverConfig{Mode: approval.ApproverUsers, Users: []string{"ou_dave"}}}}}
	}}
}

// texts returns the text messages created in chat (notices).
func (g *rig) texts(chat string) []string {
	var out []string
	for _, c := range g.calls("create") {
		var m struct {
			Text string `json:"text"`
		}
		if c.MsgType == "text" && c.ReceiveID == chat && json.Unmarshal([]byte(c.Content), &m) == nil {
			out = append(out, m.Text)
		}
	}
	return out
}

// askEscalating has ou_alice ask for "erase orders" in the group oc_team
// and returns the approval once its card is out.
func (g *rig) askEscalating(t *testing.T) *approval.Approval {
	t.Helper()
	g.say(t, "group", "oc_team", "ou_alice", "erase orders", map[string]string{"@_user_1": "ou_bot"})
	var a *approval.Approval
	eventually(t, "an approval is pending with its card", func() bool {
		p, err := g.engine.Pending(context.Background(), channels.SessionKey(g.scope, Name, "oc_team", "ou_alice", ""))
		if err != nil {
			t.Fatal(err)
		}
		a = p
		return p != nil && len(p.Cards) == 1
	})
	return a
}

// TestEscalationFeishu: nobody decides within a minute. Before that, a
// sweep takes no step and ou_dave may not decide; at the minute, the
// approval's card (with its buttons and code) is also sent to the on-call
// chat, the team chat is told who else was asked, and its card is
// redrawn with that line; ou_dave approves from the on-call card, the
// tool runs once, and both cards end executed.
func TestEscalationFeishu(t *testing.T) { bothStores(t, testEscalationFeishu) }

func testEscalationFeishu(t *testing.T, store approval.Store) {
	clk := clock.NewFake(time.Now().UTC())
	g := newRigWith(t, escalationOptions(store, clk))
	a := g.askEscalating(t)
	if len(a.Escalation) != 1 || a.Escalated != 0 {
		t.Fatalf("escalation %+v, %d taken", a.Escalation, a.Escalated)
	}
	clk.Advance(59 * time.Second)
	if n, err := g.engine.Sweep(context.Background()); err != nil || n != 0 {
		t.Fatalf("sweep before the step: %d, %v", n, err)
	}
	if got := g.created(oncallChat, ""); len(got) != 0 {
		t.Fatalf("the on-call chat got %d cards before the step", len(got))
	}
	click := func(user, messageID, chat string) string {
		e := feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: user, MessageID: messageID, ChatID: chat, Value: buttonValue(a, "approve")}
		code, data, _ := g.push(t, e.JSON())
		if code != 200 {
			t.Fatalf("click ack %d", code)
		}
		return string(data)
	}
	if ack := click("ou_dave", a.Cards[0].MessageID, "oc_team"); !strings.Contains(ack, "You may not decide this") {
		t.Fatalf("ou_dave before the step: %s", ack)
	}

	clk.Advance(time.Second)
	if n, err := g.engine.Sweep(context.Background()); err != nil || n != 1 {
		t.Fatalf("sweep at the step: %d, %v", n, err)
	}
	oncall := g.created(oncallChat, string(a.ID))
	if len(oncall) != 1 || !strings.Contains(oncall[0].Content, `"tag":"form"`) || !strings.Contains(oncall[0].Content, "Code: ") ||
		!strings.Contains(oncall[0].Content, "Nobody decided within 1 min: also asked in oc_oncall; ou_dave may decide too") {
		t.Fatalf("the on-call chat got %d cards, want one with buttons, a code and the escalation line: %+v", len(oncall), oncall)
	}
	told := g.texts("oc_team")
	if len(told) == 0 || !strings.Contains(told[len(told)-1], "Nobody decided within 1 min: also asked in oc_oncall; ou_dave may decide too") {
		t.Fatalf("the team chat was told %q", told)
	}
	redrawn := false
	for _, c := range g.calls("patch") {
		if c.MessageID == a.Cards[0].MessageID && strings.Contains(c.Content, "ou_dave may decide too") && strings.Contains(c.Content, `"tag":"form"`) {
			redrawn = true
		}
	}
	if !redrawn {
		t.Fatal("the team chat's card was not redrawn with the escalation line and its buttons")
	}
	rec, err := g.engine.Get(context.Background(), a.ID)
	if err != nil || len(rec.Cards) != 2 || rec.Cards[1].ChatID != oncallChat {
		t.Fatalf("cards %+v, %v", rec.Cards, err)
	}

	click("ou_dave", rec.Cards[1].MessageID, oncallChat)
	eventually(t, "executed, both cards settled", func() bool {
		return g.state(t, a.ID) == approval.StateExecuted && g.settledAs(rec.Cards[0].MessageID, "Executed") && g.settledAs(rec.Cards[1].MessageID, "Executed")
	})
	if n := g.erase.Runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
}

// TestEscalationFeishuTwoReplicas: two replicas on one Redis sweep at the
// same moment; the step is taken once: one card in the on-call chat, one
// notice in the team chat.
func TestEscalationFeishuTwoReplicas(t *testing.T) {
	fake := feishutest.New()
	defer fake.Close()
	clk := clock.NewFake(time.Now().UTC())
	opts := escalationOptions(redisStore(t), clk)
	opts.fake, opts.webhook, opts.tool = fake, true, hitltest.NewTool("erase", approval.EffectDestructive)
	ra, rb := newRigWith(t, opts), newRigWith(t, opts)
	a := ra.askEscalating(t)
	clk.Advance(time.Minute)
	var wg sync.WaitGroup
	for _, g := range []*rig{ra, rb} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := g.engine.Sweep(context.Background()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := ra.created(oncallChat, string(a.ID)); len(got) != 1 {
		t.Fatalf("the on-call chat got %d cards, want one", len(got))
	}
	n := 0
	for _, s := range ra.texts("oc_team") {
		if strings.Contains(s, "also asked in oc_oncall") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the team chat was told %d times, want once", n)
	}
}

// TestEscalationFeishuUnreachable: the on-call chat refuses the card: the
// team chat is told so, the approval still waits there, and ou_dave may
// decide it all the same (here by rejecting it: a veto).
func TestEscalationFeishuUnreachable(t *testing.T) {
	clk := clock.NewFake(time.Now().UTC())
	g := newRigWith(t, escalationOptions(redisStore(t), clk))
	g.fake.RefuseChat(oncallChat)
	a := g.askEscalating(t)
	clk.Advance(time.Minute)
	if n, err := g.engine.Sweep(context.Background()); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	told := g.texts("oc_team")
	if len(told) == 0 || !strings.Contains(told[len(told)-1], "could not be shown in oc_oncall. It still waits here") {
		t.Fatalf("the team chat was told %q", told)
	}
	e := feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: "ou_dave", MessageID: a.Cards[0].MessageID, ChatID: "oc_team",
		Value: buttonValue(a, "reject")}
	if code, _, _ := g.push(t, e.JSON()); code != 200 {
		t.Fatalf("click ack %d", code)
	}
	eventually(t, "rejected", func() bool { return g.state(t, a.ID) == approval.StateRejected })
	if n := g.erase.Runs.Load(); n != 0 {
		t.Fatalf("the tool ran %d times", n)
	}
}

// TestEscalationOfAPrivateApproval: a private approval (privacy group)
// asked in a group, which only ou_bob may approve, escalates after a
// minute to the on-call chat, where ou_dave may decide too. The on-call
// chat gets the redacted card only (nothing of the call); ou_dave gets the
// whole card with its buttons in his 1:1 chat, approves from it, the call
// runs once, and every card ends executed (the redacted ones redacted).
func TestEscalationOfAPrivateApproval(t *testing.T) { bothStores(t, testEscalationOfAPrivateApproval) }

func testEscalationOfAPrivateApproval(t *testing.T, store approval.Store) {
	clk := clock.NewFake(time.Now().UTC())
	opts := escalationOptions(store, clk)
	escalate := opts.editPolicy
	opts.editPolicy = func(c *approval.PolicyConfig) {
		escalate(c)
		c.Privacy = map[string]approval.Privacy{"HIGH": approval.PrivacyGroup}
	}
	g := newRigWith(t, opts)
	a := g.askPrivately(t, "group", privateGroup, "ou_alice", "orders", 3)
	if !a.Private() || a.MaySee("ou_dave") {
		t.Fatalf("private %v; ou_dave may see it before the step: %v", a.Private(), a.MaySee("ou_dave"))
	}
	clk.Advance(time.Minute)
	if n, err := g.engine.Sweep(context.Background()); err != nil || n != 1 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	oncall := g.created(oncallChat, "")
	if len(oncall) != 1 || !strings.Contains(oncall[0].Content, "asked for a HIGH risk action") {
		t.Fatalf("the on-call chat got %+v, want the redacted card", oncall)
	}
	for _, secret := range []string{"orders", "erase", `"decision"`} {
		if strings.Contains(oncall[0].Content, secret) {
			t.Fatalf("the on-call chat's card says %q:\n%s", secret, oncall[0].Content)
		}
	}
	whole := g.sentTo("ou_dave", `"decision":"approve"`)
	if len(whole) != 1 || !strings.Contains(whole[0].Content, "orders") {
		t.Fatalf("ou_dave got %d whole cards: %+v", len(whole), whole)
	}
	rec, err := g.engine.Get(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	var dave approval.CardRef
	for _, c := range rec.Cards {
		if c.Private && c.ChatID == feishutest.P2PChat("ou_dave") {
			dave = c
		}
	}
	if dave.MessageID == "" || !rec.MaySee("ou_dave") {
		t.Fatalf("no private card of ou_dave among %+v (may see: %v)", rec.Cards, rec.MaySee("ou_dave"))
	}
	e := feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: "ou_dave", MessageID: dave.MessageID, ChatID: dave.ChatID, Value: buttonValue(a, "approve")}
	if code, data, _ := g.push(t, e.JSON()); code != 200 {
		t.Fatalf("click ack %d: %s", code, data)
	}
	eventually(t, "executed", func() bool { return g.state(t, a.ID) == approval.StateExecuted })
	if n := g.erase.Runs.Load(); n != 1 {
		t.Fatalf("the call ran %d times", n)
	}
	rec, err = g.engine.Get(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rec.Cards {
		want := "erase done (run 1)"
		if !c.Private {
			want = `asked for a HIGH risk action · Executed (ou\\_dave)`
		}
		eventually(t, "card "+c.MessageID+" settled", func() bool { return g.settledAs(c.MessageID, want) })
		if !c.Private && g.settledAs(c.MessageID, "orders") {
			t.Fatal("a redacted card was settled with the call's words")
		}
	}
}
