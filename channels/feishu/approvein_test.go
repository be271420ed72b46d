package feishu

import (
	"context"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
	"github.com/hitlbot/hitlbot/internal/hitltest"
)

// opsChat is the approvers' chat of the approve_in tests.
const opsChat = "oc_ops_approvers"

// approveInOptions make a rig whose HIGH calls (erase) ask in opsChat,
// where anyone may decide (mode chat), on store.
func approveInOptions(store approval.Store) rigOptions {
	return rigOptions{store: store, approvers: approval.ApproverChat, editPolicy: func(c *approval.PolicyConfig) {
		c.ApproveIn = map[string]approval.Place{"HIGH": {Channel: Name, ChatID: opsChat}}
	}}
}

// approveInRig is a rig of approveInOptions.
func approveInRig(t *testing.T, store approval.Store) *rig {
	t.Helper()
	return newRigWith(t, approveInOptions(store))
}

// bothStores runs fn on the memory store and on Redis.
func bothStores(t *testing.T, fn func(t *testing.T, store approval.Store)) {
	t.Run("memory", func(t *testing.T) { fn(t, memstore.New(memstore.Options{})) })
	t.Run("redis", func(t *testing.T) { fn(t, redisStore(t)) })
}

// askIn has user ask for "erase target" in their 1:1 chat and returns the
// approval once it has both its cards: the approvers' card first, then
// the requester's status card.
func (g *rig) askIn(t *testing.T, chat, user, target string) *approval.Approval {
	t.Helper()
	g.say(t, "p2p", chat, user, "erase "+target, nil)
	var a *approval.Approval
	eventually(t, "an approval is pending with its card and its status card", func() bool {
		p, err := g.engine.Pending(context.Background(), channels.SessionKey(g.scope, Name, chat, approval.UserID(user), ""))
		if err != nil {
			t.Fatal(err)
		}
		a = p
		return p != nil && len(p.Cards) == 2
	})
	return a
}

// created returns the interactive messages created in chat whose content
// says sub (the approval's id is on its buttons; a status card has none).
func (g *rig) created(chat, sub string) []feishutest.Call {
	var out []feishutest.Call
	for _, c := range g.calls("create") {
		if c.MsgType == "interactive" && c.ReceiveID == chat && strings.Contains(c.Content, sub) {
			out = append(out, c)
		}
	}
	return out
}

// settledAs reports whether card messageID was patched to a card that
// says sub.
func (g *rig) settledAs(messageID, sub string) bool {
	for _, c := range g.calls("patch") {
		if c.MessageID == messageID && strings.Contains(c.Content, sub) && !strings.Contains(c.Content, `"tag":"form"`) {
			return true
		}
	}
	return false
}

// TestApproveInFeishu: with approve_in, the card with its buttons goes to
// the approvers' chat and the requester's chat gets a status card without
// buttons that says where it waits. A click by someone other than the
// requester on the status card, in the requester's chat, is unauthorized
// under mode chat (nothing runs); a click in the approvers' chat by
// anyone there runs the tool once, and both cards end executed.
func TestApproveInFeishu(t *testing.T) { bothStores(t, testApproveInFeishu) }

func testApproveInFeishu(t *testing.T, store approval.Store) {
	g := approveInRig(t, store)
	a := g.askIn(t, "oc_alice_p2p", "ou_alice", "orders")
	if a.ApproveIn == nil || *a.ApproveIn != (approval.Place{Channel: Name, ChatID: opsChat}) {
		t.Fatalf("ApproveIn = %+v", a.ApproveIn)
	}
	if a.Cards[0].ChatID != opsChat || a.Cards[1].ChatID != "oc_alice_p2p" {
		t.Fatalf("cards %+v: want the approvers' chat's first, then the requester's", a.Cards)
	}
	ops, mine := g.created(opsChat, string(a.ID)), g.created("oc_alice_p2p", "")
	if len(ops) != 1 || !strings.Contains(ops[0].Content, `"tag":"form"`) || !strings.Contains(ops[0].Content, "Code: ") {
		t.Fatalf("the approvers' chat got %d cards, want one with buttons and a code: %+v", len(ops), ops)
	}
	if len(mine) != 1 || strings.Contains(mine[0].Content, `"tag":"form"`) || strings.Contains(mine[0].Content, "Code: ") ||
		!strings.Contains(mine[0].Content, "Waiting for approval in the approvers' chat") ||
		!strings.Contains(mine[0].Content, "anyone in the approvers' chat") {
		t.Fatalf("the requester's chat got %d cards, want one status card without buttons: %+v", len(mine), mine)
	}

	// ou_bob clicks in the requester's chat (a button value copied onto
	// the status card): not the approvers' chat, not the requester.
	e := feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: "ou_bob", MessageID: a.Cards[1].MessageID, ChatID: "oc_alice_p2p",
		Value: buttonValue(a, "approve")}
	code, data, _ := g.push(t, e.JSON())
	if code != 200 || !strings.Contains(string(data), "You may not decide this") {
		t.Fatalf("click ack %d: %s", code, data)
	}
	if st := g.state(t, a.ID); st != approval.StatePending || g.erase.Runs.Load() != 0 {
		t.Fatalf("after a click in the requester's chat: state %s, runs %d", st, g.erase.Runs.Load())
	}

	e = feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: "ou_carol", MessageID: a.Cards[0].MessageID, ChatID: opsChat,
		Value: buttonValue(a, "approve")}
	if code, _, _ := g.push(t, e.JSON()); code != 200 {
		t.Fatalf("click ack %d", code)
	}
	eventually(t, "executed, both cards settled", func() bool {
		return g.state(t, a.ID) == approval.StateExecuted && g.settledAs(a.Cards[0].MessageID, "Executed") && g.settledAs(a.Cards[1].MessageID, "Executed")
	})
	if n := g.erase.Runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want once", n)
	}
	rec, err := g.engine.Get(context.Background(), a.ID)
	if err != nil || rec.DecidedBy != "ou_carol" {
		t.Fatalf("decided by %q, %v", rec.DecidedBy, err)
	}
}

// TestApproveInFeishuTypedCode: in the approvers' chat, "@bot 确认 <code>"
// decides the approval by the code its card shows, and a bare "@bot 确认"
// decides it too when it is the only one waiting there.
func TestApproveInFeishuTypedCode(t *testing.T) { bothStores(t, testApproveInFeishuTypedCode) }

func testApproveInFeishuTypedCode(t *testing.T, store approval.Store) {
	g := approveInRig(t, store)
	bot := map[string]string{"@_user_1": "ou_bot"}
	a := g.askIn(t, "oc_alice_p2p", "ou_alice", "orders")
	code := approval.Codes([]*approval.Approval{a})[a.ID]
	if !strings.Contains(g.created(opsChat, string(a.ID))[0].Content, "Code: "+code) {
		t.Fatalf("the approvers' card does not show code %s", code)
	}
	g.say(t, "group", opsChat, "ou_dave", "@_user_1 /pending", bot)
	eventually(t, "/pending in the approvers' chat lists it", func() bool {
		for _, c := range g.calls("reply") {
			if strings.Contains(c.Content, code) {
				return true
			}
		}
		return false
	})
	g.say(t, "group", opsChat, "ou_dave", "@_user_1 确认 "+code, bot)
	eventually(t, "executed by the typed code, both cards settled", func() bool {
		return g.state(t, a.ID) == approval.StateExecuted && g.settledAs(a.Cards[0].MessageID, "Executed") && g.settledAs(a.Cards[1].MessageID, "Executed")
	})

	b := g.askIn(t, "oc_alice_p2p", "ou_alice", "customers")
	g.say(t, "group", opsChat, "ou_dave", "@_user_1 确认", bot)
	eventually(t, "executed by a bare 确认 in the approvers' chat", func() bool { return g.state(t, b.ID) == approval.StateExecuted })
	if n := g.erase.Runs.Load(); n != 2 {
		t.Fatalf("the tool ran %d times, want twice", n)
	}
}

// TestApproveInFeishuUnreachable: when the approvers' chat cannot be
// reached (the bot is not in it), the request fails: the requester is
// told so, no status card is sent, nothing runs and nothing is left
// pending.
func TestApproveInFeishuUnreachable(t *testing.T) { bothStores(t, testApproveInFeishuUnreachable) }

func testApproveInFeishuUnreachable(t *testing.T, store approval.Store) {
	g := approveInRig(t, store)
	g.fake.RefuseChat(opsChat)
	e := g.say(t, "p2p", "oc_alice_p2p", "ou_alice", "erase orders", nil)
	eventually(t, "the requester is told the approvers' chat could not be reached", func() bool {
		return g.replied(e.MessageID, "approvers' chat could not be reached") > 0
	})
	sess := channels.SessionKey(g.scope, Name, "oc_alice_p2p", "ou_alice", "")
	a, err := g.engine.Store().Latest(context.Background(), sess)
	if err != nil || a == nil {
		t.Fatalf("latest approval %v, %v", a, err)
	}
	if a.State != approval.StateCancelled || len(a.Cards) != 0 {
		t.Fatalf("the approval is %s with cards %+v, want cancelled with none", a.State, a.Cards)
	}
	for _, c := range g.calls("create") {
		if c.MsgType == "interactive" {
			t.Fatalf("a card was sent: %+v", c)
		}
	}
	refused := 0
	for _, c := range g.fake.Calls() {
		if c.Op == "create" && c.ReceiveID == opsChat && c.Answered == 400 {
			refused++
		}
	}
	if refused == 0 || g.erase.Runs.Load() != 0 {
		t.Fatalf("%d refused sends to the approvers' chat, %d runs", refused, g.erase.Runs.Load())
	}
}

// TestApproveInFeishuTwoReplicas: two replicas on one Redis (webhook
// mode). Replica A gets the request and sends both cards; the click in
// the approvers' chat lands on replica B, which never saw them: it runs
// the tool once and settles both cards from the record.
func TestApproveInFeishuTwoReplicas(t *testing.T) {
	fake := feishutest.New()
	defer fake.Close()
	opts := approveInOptions(redisStore(t))
	opts.fake, opts.webhook, opts.tool = fake, true, hitltest.NewTool("erase", approval.EffectDestructive)
	ra, rb := newRigWith(t, opts), newRigWith(t, opts)
	a := ra.askIn(t, "oc_alice_p2p", "ou_alice", "orders")
	e := feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: "ou_carol", MessageID: a.Cards[0].MessageID, ChatID: opsChat,
		Value: buttonValue(a, "approve")}
	resp, body, err := feishutest.PostWebhook(rb.srv.URL, webhookKey, e.JSON(), false)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("click on replica B: %v %v %s", resp, err, body)
	}
	eventually(t, "executed, both cards settled", func() bool {
		return rb.state(t, a.ID) == approval.StateExecuted && rb.settledAs(a.Cards[0].MessageID, "Executed") && rb.settledAs(a.Cards[1].MessageID, "Executed")
	})
	if n := opts.tool.Runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want once", n)
	}
}

// TestApproveInFeishuStatusUnsent: the status card cannot be sent to the
// requester's chat (the bot is not in it any more): the approval waits in
// the approvers' chat all the same, with its one card, and is decided
// there.
func TestApproveInFeishuStatusUnsent(t *testing.T) {
	g := approveInRig(t, memstore.New(memstore.Options{}))
	g.fake.RefuseChat("oc_alice_p2p")
	g.say(t, "p2p", "oc_alice_p2p", "ou_alice", "erase orders", nil)
	var a *approval.Approval
	eventually(t, "an approval is pending with its card in the approvers' chat", func() bool {
		p, err := g.engine.Pending(context.Background(), channels.SessionKey(g.scope, Name, "oc_alice_p2p", "ou_alice", ""))
		if err != nil {
			t.Fatal(err)
		}
		a = p
		return p != nil && len(p.Cards) == 1
	})
	if a.Cards[0].ChatID != opsChat {
		t.Fatalf("cards %+v", a.Cards)
	}
	e := feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: "ou_carol", MessageID: a.Cards[0].MessageID, ChatID: opsChat,
		Value: buttonValue(a, "approve")}
	if code, _, _ := g.push(t, e.JSON()); code != 200 {
		t.Fatalf("click ack %d", code)
	}
	eventually(t, "executed", func() bool {
		return g.state(t, a.ID) == approval.StateExecuted && g.settledAs(a.Cards[0].MessageID, "Executed")
	})
}

// TestApproveInFeishuQuorum: 2 people of the approvers' chat must
// approve. The first approval redraws both cards with the progress: the
// approvers' card keeps its buttons, the status card still has none; the
// second runs the tool once and both end executed.
func TestApproveInFeishuQuorum(t *testing.T) {
	opts := approveInOptions(memstore.New(memstore.Options{}))
	opts.approvers = ""
	edit := opts.editPolicy
	opts.editPolicy = func(c *approval.PolicyConfig) {
		edit(c)
		c.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverChat, Quorum: 2}}
	}
	g := newRigWith(t, opts)
	a := g.askIn(t, "oc_alice_p2p", "ou_alice", "orders")
	for _, who := range []string{"ou_bob", "ou_carol"} {
		e := feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: who, MessageID: a.Cards[0].MessageID, ChatID: opsChat,
			Value: buttonValue(a, "approve")}
		if code, _, _ := g.push(t, e.JSON()); code != 200 {
			t.Fatalf("click ack %d", code)
		}
		if who != "ou_bob" {
			break
		}
		eventually(t, "both cards redrawn with the progress", func() bool {
			ops, status := false, false
			for _, c := range g.calls("patch") {
				if !strings.Contains(c.Content, `1/2 approved: \u003cat id=ou_bob\u003e\u003c/at\u003e`) {
					continue
				}
				ops = ops || c.MessageID == a.Cards[0].MessageID && strings.Contains(c.Content, `"tag":"form"`)
				status = status || c.MessageID == a.Cards[1].MessageID && !strings.Contains(c.Content, `"tag":"form"`) &&
					strings.Contains(c.Content, "Waiting for approval in the approvers' chat")
			}
			return ops && status
		})
		for _, c := range g.calls("patch") {
			if c.MessageID == a.Cards[1].MessageID && strings.Contains(c.Content, `"tag":"form"`) {
				t.Fatalf("the status card was given buttons: %s", c.Content)
			}
		}
		if g.erase.Runs.Load() != 0 {
			t.Fatal("the tool ran on one approval of two")
		}
	}
	eventually(t, "executed, both cards settled", func() bool {
		return g.state(t, a.ID) == approval.StateExecuted && g.settledAs(a.Cards[0].MessageID, "Executed") && g.settledAs(a.Cards[1].MessageID, "Executed")
	})
	if n := g.erase.Runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want once", n)
	}
}

// TestApproveInFeishuRequester: the requester's typed 确认 in their own
// chat does not approve their request when it waits in the approvers'
// chat (mode chat): they are told who may; their 取消 there withdraws it,
// and both cards end rejected.
func TestApproveInFeishuRequester(t *testing.T) {
	g := approveInRig(t, memstore.New(memstore.Options{}))
	a := g.askIn(t, "oc_alice_p2p", "ou_alice", "orders")
	yes := g.say(t, "p2p", "oc_alice_p2p", "ou_alice", "确认", nil)
	eventually(t, "the requester is told who may approve", func() bool {
		return g.replied(yes.MessageID, "anyone in the approvers' chat") == 1
	})
	if st := g.state(t, a.ID); st != approval.StatePending || g.erase.Runs.Load() != 0 {
		t.Fatalf("after the requester's 确认: state %s, runs %d", st, g.erase.Runs.Load())
	}
	g.say(t, "p2p", "oc_alice_p2p", "ou_alice", "取消", nil)
	eventually(t, "rejected, both cards settled", func() bool {
		return g.state(t, a.ID) == approval.StateRejected && g.settledAs(a.Cards[0].MessageID, "Declined") && g.settledAs(a.Cards[1].MessageID, "Declined")
	})
}
