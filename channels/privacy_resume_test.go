package channels_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	. "github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/internal/hitltest"
)

// Privacy of resumed turns: whether a turn says something privately, and
// to whom, is what the turn is (agent.Say.Private, from the history's
// marks), not what the approval that resumed it is.

// eraseThenPublish makes m answer "erase X then publish Y" with a call of
// erase on X and, after its result, one of publish on Y, in one turn
// (call ids named by the message, so that no two turns share one).
func eraseThenPublish(m *hitltest.Model) {
	m.Hook = func(_ context.Context, req agent.Request) (agent.Response, bool, error) {
		user := ""
		for _, msg := range slices.Backward(req.Messages) {
			if msg.Role == agent.RoleUser {
				user = msg.Content
				break
			}
		}
		rest, ok := strings.CutPrefix(user, "erase ")
		x, y, both := strings.Cut(rest, " then publish ")
		if !ok || !both {
			return agent.Response{}, false, nil
		}
		call := func(id, tool, target string) agent.Response {
			args, _ := json.Marshal(hitltest.Args{Target: target})
			return agent.Response{Message: agent.Message{Role: agent.RoleAssistant,
				ToolCalls: []agent.ToolCall{{ID: id, Name: tool, Args: args, Confidence: 1}}}}
		}
		switch last := req.Messages[len(req.Messages)-1]; {
		case last.Role == agent.RoleUser:
			return call("e-"+x, "erase", x), true, nil
		case last.Role == agent.RoleTool && last.ToolCallID == "e-"+x:
			return call("p-"+y, "publish", y), true, nil
		}
		return agent.Response{}, false, nil
	}
}

// decide has bob decide approval id on g, on a card of it: his private
// card when it has one, else the chat's.
func (g *rig) decide(t *testing.T, id approval.ID, event string, grant approval.GrantChoice) approval.Outcome {
	t.Helper()
	rec, err := g.engine.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rec.Cards, func(c approval.CardRef) bool { return c.Private && c.ChatID == "p2p_bob" })
	if i < 0 {
		i = slices.IndexFunc(rec.Cards, func(c approval.CardRef) bool { return c.ChatID == "c1" })
	}
	if i < 0 {
		t.Fatalf("no card of %s to click: %+v", id, rec.Cards)
	}
	c := rec.Cards[i]
	o, err := g.router.HandleCardAction(context.Background(), CardAction{Channel: "fake", ChatID: c.ChatID, MessageID: c.MessageID,
		EventID: event, UserID: "bob", ApprovalID: id, Verb: approval.Approve, PayloadSHA256: rec.PayloadSHA256, Grant: grant})
	if err != nil {
		t.Fatalf("bob's decision of %s: %v", id, err)
	}
	return o
}

// pendingOf waits for an approval of tool to be pending in the group on
// g, and returns it.
func (g *rig) pendingOf(t *testing.T, tool string) *approval.Approval {
	t.Helper()
	var a *approval.Approval
	eventually(t, "an approval of "+tool+" is pending", func() bool {
		p, err := g.engine.Pending(context.Background(), "fake:c1")
		if err != nil {
			t.Fatal(err)
		}
		a = p
		return p != nil && p.Tool() == tool && len(p.Cards) > 0
	})
	return a
}

// answeredPrivately waits for the answer holding want, in the group or to
// alice, and fails when the group read it or alice was not told it alone.
func answeredPrivately(t *testing.T, g *rig, pf *privateFake, others []*rig, want string) {
	t.Helper()
	eventually(t, "the answer "+want, func() bool { return g.ch.hasText("answer", want) || pf.told("alice", "answer", want) })
	for _, o := range append(others, g) {
		for _, s := range o.ch.texts() {
			if strings.Contains(s, want) {
				t.Fatalf("the group read %q; alice was told %v", s, pf.to["alice"])
			}
		}
	}
	if !pf.told("alice", "answer", want) || pf.told("bob", "answer", want) {
		t.Fatalf("not alice's alone: %v", pf.to)
	}
	eventually(t, "the group told", func() bool { return g.ch.hasText("notice", "The answer was sent to alice privately.") })
}

// TestPrivateGrantTurnResumedByOpenApproval: alice's turn ran erase
// under a grant bob gave her by a private approval (so it is private),
// then asked for publish, which is not private; the history saved while
// it waits holds that round's call marked private; the replica it waited
// on is gone, and bob approves publish on the other. The resumed turn's
// answer goes to alice alone: the turn is private, whatever the approval
// that resumed it.
func TestPrivateGrantTurnResumedByOpenApproval(t *testing.T) {
	store, hist, locker := memstore.New(memstore.Options{}), agent.NewMemoryHistory(), agent.NewMemoryLocker()
	a, pa := privateRig(t, store, hist, locker, approval.EffectWrite)
	b, pb := privateRig(t, store, hist, locker, approval.EffectWrite)
	for _, g := range []*rig{a, b} {
		eraseThenPublish(g.model)
	}
	ap := a.pendingApproval(t, "orders")
	if o := a.decide(t, ap.ID, "click-grant", approval.GrantSession); o.Status != approval.StatusExecuted {
		t.Fatalf("outcome %+v", o)
	}
	eventually(t, "the first answer to alice alone", func() bool { return pa.told("alice", "answer", "summary: erase done (run 1)") })

	a.send(t, msg("alice", "erase orders then publish news"))
	pub := a.pendingOf(t, "publish")
	if pub.Private() {
		t.Fatalf("publish's approval is private: %+v", pub)
	}
	if !pa.told("alice", "notice", "Auto-approved") {
		t.Fatalf("the erase did not run under the grant: %v", pa.to)
	}
	// Saved before publish's card was shown, the turn still waiting: a
	// replica that dies now leaves no part of the private turn unmarked.
	conv, err := hist.Load(context.Background(), "fake:c1")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(conv.Messages, func(m agent.Message) bool {
		return slices.ContainsFunc(m.ToolCalls, func(c agent.ToolCall) bool { return c.ID == "p-news" })
	})
	if i < 0 || conv.Messages[i].Private == nil {
		t.Fatalf("the call of publish in the saved history: %+v", conv.Messages)
	}
	if err := a.loop.Close(context.Background()); err != nil { // the turn is suspended in the history
		t.Fatal(err)
	}
	if o := b.decide(t, pub.ID, "click-publish", ""); o.Status != approval.StatusExecuted {
		t.Fatalf("outcome %+v", o)
	}
	answeredPrivately(t, b, pb, []*rig{a}, "summary: publish done (run 1)")
}

// TestPrivateThenOpenApprovalResumed: alice's turn asked for a private
// approval (erase), which bob approved while it waited, and in its next
// round for one that is not (publish); its replica is gone, and bob
// approves publish on the other. The resumed turn's answer goes to alice
// alone.
func TestPrivateThenOpenApprovalResumed(t *testing.T) {
	a, b, _, pb := privateReplicas(t, approval.EffectWrite)
	for _, g := range []*rig{a, b} {
		eraseThenPublish(g.model)
	}
	a.send(t, msg("alice", "erase orders then publish news"))
	ap := a.pendingOf(t, "erase")
	if !ap.Private() {
		t.Fatalf("erase's approval is not private: %+v", ap)
	}
	if o := a.decide(t, ap.ID, "click-erase", ""); o.Status != approval.StatusExecuted {
		t.Fatalf("outcome %+v", o)
	}
	pub := a.pendingOf(t, "publish")
	if pub.Private() {
		t.Fatalf("publish's approval is private: %+v", pub)
	}
	if err := a.loop.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if o := b.decide(t, pub.ID, "click-publish", ""); o.Status != approval.StatusExecuted {
		t.Fatalf("outcome %+v", o)
	}
	answeredPrivately(t, b, pb, []*rig{a}, "summary: publish done (run 1)")
}

// TestPrivateFrozenResolution: alice's private erase froze (its effect
// unknown) and her turn went on; bob resolves it as done later. The
// conversation it continues is the private turn's: its answer goes to
// alice alone.
func TestPrivateFrozenResolution(t *testing.T) {
	g, pf := privateRig(t, memstore.New(memstore.Options{}), agent.NewMemoryHistory(), agent.NewMemoryLocker(), approval.EffectDestructive)
	g.erase.Unknown.Store(1)
	ap := g.pendingApproval(t, "orders")
	if o := g.decide(t, ap.ID, "click-frozen", ""); o.Status != approval.StatusFrozen {
		t.Fatalf("outcome %+v", o)
	}
	eventually(t, "the frozen turn's answer to alice", func() bool { return pf.told("alice", "answer", "summary: ") })
	eventually(t, "the group told", func() bool { return g.ch.hasText("notice", "The answer was sent to alice privately.") })
	g.ch.reset()
	rec, err := g.engine.Get(context.Background(), ap.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.engine.Decide(context.Background(), ap.ID, approval.Decision{Verb: approval.Resolve, Resolution: approval.ResolveDone,
		Actor: "bob", Source: approval.SourceAPI, PayloadSHA256: rec.PayloadSHA256, Comment: "checked"}); err != nil {
		t.Fatal(err)
	}
	answeredPrivately(t, g, pf, nil, "Update on the earlier approval "+string(ap.ID))
}

// publishAndErase makes m answer "publish X and erase Y" with one round
// of two calls: publish on X, then erase on Y.
func publishAndErase(m *hitltest.Model) {
	m.Hook = func(_ context.Context, req agent.Request) (agent.Response, bool, error) {
		last := req.Messages[len(req.Messages)-1]
		rest, ok := strings.CutPrefix(last.Content, "publish ")
		x, y, both := strings.Cut(rest, " and erase ")
		if last.Role != agent.RoleUser || !ok || !both {
			return agent.Response{}, false, nil
		}
		call := func(id, tool, target string) agent.ToolCall {
			args, _ := json.Marshal(hitltest.Args{Target: target})
			return agent.ToolCall{ID: id, Name: tool, Args: args, Confidence: 1}
		}
		return agent.Response{Message: agent.Message{Role: agent.RoleAssistant,
			ToolCalls: []agent.ToolCall{call("p-"+x, "publish", x), call("e-"+y, "erase", y)}}}, true, nil
	}
}

// privateRounds are the ways the second call of a round can make the
// round private: it runs under a grant a private approval gave, or it
// asks for a private approval.
var privateRounds = []struct {
	name    string
	granted bool   // erase orders runs under bob's session grant
	answer  string // the round's answer
}{
	{"second call under a private grant", true, "summary: erase done (run 2)"},
	{"second call asks a private approval", false, "summary: erase done (run 1)"},
}

// TestPrivateRoundSaidPrivately: one round of alice's turn calls publish,
// which runs at once in the open (under a grant of an approval that was
// not private), then erase, which is private (its grant's approval was,
// or its own approval is). The history marks the whole round private, so
// nothing of it is said in the group: publish's result goes to alice
// alone, as the round's answer does.
func TestPrivateRoundSaidPrivately(t *testing.T) {
	for _, tc := range privateRounds {
		t.Run(tc.name, func(t *testing.T) {
			g, pf := privateRig(t, memstore.New(memstore.Options{}), agent.NewMemoryHistory(), agent.NewMemoryLocker(), approval.EffectWrite)
			publishAndErase(g.model)
			if tc.granted {
				ap := g.pendingApproval(t, "orders")
				if o := g.decide(t, ap.ID, "click-erase", approval.GrantSession); o.Status != approval.StatusExecuted {
					t.Fatalf("outcome %+v", o)
				}
				eventually(t, "erase's answer to alice", func() bool { return pf.told("alice", "answer", "summary: erase done (run 1)") })
			}
			g.send(t, msg("alice", "publish news"))
			pub := g.pendingOf(t, "publish")
			if pub.Private() {
				t.Fatalf("publish's approval is private: %+v", pub)
			}
			if o := g.decide(t, pub.ID, "click-publish", approval.GrantSession); o.Status != approval.StatusExecuted {
				t.Fatalf("outcome %+v", o)
			}
			eventually(t, "publish's answer in the group", func() bool { return g.ch.hasText("answer", "summary: publish done (run 1)") })

			g.send(t, msg("alice", "publish news and erase orders"))
			if !tc.granted {
				ap := g.pendingOf(t, "erase")
				if !ap.Private() {
					t.Fatalf("erase's approval is not private: %+v", ap)
				}
				if o := g.decide(t, ap.ID, "click-erase-2", ""); o.Status != approval.StatusExecuted {
					t.Fatalf("outcome %+v", o)
				}
			}
			answeredPrivately(t, g, pf, nil, tc.answer)
			if !pf.told("alice", "tool_result", "publish done (run 2)") {
				t.Fatalf("alice was not told publish's result: %v", pf.to["alice"])
			}
			for _, s := range g.ch.texts() {
				if strings.Contains(s, "publish done (run 2)") {
					t.Fatalf("the group read %q of a private round", s)
				}
			}
		})
	}
}
