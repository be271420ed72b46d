package channels_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/approval/storetest"
	"github.com/hitlbot/hitlbot/cards"
	. "github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/internal/hitltest"
)

// putPrivate stores a pending private approval of alice in the fake
// group chat c1 that only bob may approve, with its redacted card in the
// chat and its private card for bob.
func (g *rig) putPrivate(t *testing.T) *approval.Approval {
	t.Helper()
	a := storetest.NewApproval(t, "fake:c1")
	a.Channel, a.ChatID, a.Requester = "fake", "c1", "alice"
	a.Approvers = approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"bob"}}
	a.Privacy, a.Group = approval.PrivacyGroup, true
	a.CreatedAt = time.Now().UTC()
	a.ExpiresAt = a.CreatedAt.Add(approval.DefaultTimeout)
	a.Cards = []approval.CardRef{{Channel: "fake", ChatID: "c1", MessageID: "m_group"}, {Channel: "fake", ChatID: "p2p_bob", MessageID: "m_bob", Private: true}}
	if _, err := g.store.Put(context.Background(), a, approval.Outcome{Status: approval.StatusSuperseded}); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestPrivateViews: the router's views of a private approval
// (PendingView, which a page or a click without a card reference reads,
// and ApprovalView, which a click on a card reads) are redacted for a
// person who may not see it and on its chat's card, whole for its
// requester, its approver and on its private card.
func TestPrivateViews(t *testing.T) {
	g := newRig(t, nil)
	a := g.putPrivate(t)
	ctx := context.Background()
	for _, tc := range []struct {
		user     approval.UserID
		redacted bool
	}{{"carol", true}, {"", true}, {"alice", false}, {"bob", false}} {
		v, err := g.pres.PendingView(ctx, Target{Channel: "fake", ChatID: "c1", UserID: tc.user})
		if err != nil || v == nil {
			t.Fatalf("PendingView for %q: %v, %v", tc.user, v, err)
		}
		if v.Redacted != tc.redacted || (tc.redacted && (v.Summary != "" || len(v.Calls) != 0 || v.Preview != "" || v.Approve != nil)) {
			t.Errorf("PendingView for %q: redacted %v, summary %q, %d calls", tc.user, v.Redacted, v.Summary, len(v.Calls))
		}
	}
	for _, tc := range []struct {
		msg      string
		redacted bool
	}{{"m_group", true}, {"m_bob", false}} {
		v, err := g.pres.ApprovalView(ctx, "fake", a.ID, tc.msg)
		if err != nil || v == nil {
			t.Fatalf("ApprovalView of %s: %v, %v", tc.msg, v, err)
		}
		if v.Redacted != tc.redacted || (tc.redacted && v.Summary != "") || (!tc.redacted && !strings.Contains(v.Summary, "DELETE")) {
			t.Errorf("ApprovalView of %s: redacted %v, summary %q", tc.msg, v.Redacted, v.Summary)
		}
	}
}

// TestPrivateFailsClosed: a private approval on a channel that cannot
// show anything to some people only is not shown at all (the engine then
// cancels it), and its settle redacts the chat's card.
func TestPrivateFailsClosed(t *testing.T) {
	g := newRig(t, nil)
	a := g.putPrivate(t)
	ctx := context.Background()
	if refs, err := g.pres.Show(ctx, a); !errors.Is(err, ErrNoPrivacy) || refs != nil {
		t.Fatalf("Show = %v, %v; want ErrNoPrivacy", refs, err)
	}
	if n := len(g.ch.shownCards()); n != 0 {
		t.Fatalf("%d cards shown", n)
	}
	o := approval.Outcome{Status: approval.StatusExecuted, DecidedBy: "bob", Content: "DELETE 1"}
	_ = g.pres.Settle(ctx, a, o)
	got := g.ch.settledCards()
	if len(got) != 2 {
		t.Fatalf("%d cards settled", len(got))
	}
	for _, s := range got {
		if s.ref.Private == s.v.Redacted || (s.v.Redacted && (s.v.Result != "" || s.v.Summary != "")) || (!s.v.Redacted && s.v.Result != "DELETE 1") {
			t.Errorf("card %+v settled as redacted %v, result %q, summary %q", s.ref, s.v.Redacted, s.v.Result, s.v.Summary)
		}
	}
}

// privateFake is a fake channel that can show a card and say something
// to some people only (PrivateChannel), recording what it did.
type privateFake struct {
	*fakeChannel
	mu      sync.Mutex
	to      map[approval.UserID][]string // what each person was told, "kind: text"
	privCnt int
}

func (p *privateFake) ShowApprovalTo(_ context.Context, to Target, users []approval.UserID, v cards.View) ([]approval.CardRef, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var refs []approval.CardRef
	for _, u := range users {
		p.privCnt++
		p.to[u] = append(p.to[u], "card: "+v.Summary)
		refs = append(refs, approval.CardRef{Channel: p.name, ChatID: "p2p_" + string(u), MessageID: fmt.Sprintf("private-%d", p.privCnt)})
	}
	return refs, nil
}

func (p *privateFake) SendTo(_ context.Context, _ Target, users []approval.UserID, out Outgoing) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, u := range users {
		p.to[u] = append(p.to[u], string(out.Kind)+": "+out.Text)
	}
	return nil
}

// told reports whether user was told something of kind holding sub.
func (p *privateFake) told(user approval.UserID, kind, sub string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.to[user] {
		if strings.HasPrefix(s, kind+": ") && strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// privateRig is a rig on store, history and locker whose channel "fake"
// can show things to some people only, whose tool erase has effect, and
// whose HIGH and MEDIUM calls only bob may approve, private in groups;
// its tool publish (a write, MEDIUM) is asked for in the open
// (tools.publish.privacy none).
func privateRig(t *testing.T, store approval.Store, hist agent.History, locker agent.SessionLocker, effect approval.Effect) (*rig, *privateFake) {
	t.Helper()
	pc := approval.DefaultPolicyConfig()
	bob := approval.ApproverConfig{Mode: approval.ApproverUsers, Users: []string{"bob"}}
	pc.Approvers = map[string]approval.ApproverConfig{"HIGH": bob, "MEDIUM": bob}
	pc.Privacy = map[string]approval.Privacy{"HIGH": approval.PrivacyGroup, "MEDIUM": approval.PrivacyGroup}
	pc.Tools = map[string]approval.ToolPolicy{"publish": {Privacy: approval.PrivacyNone}}
	g := &rig{ch: newFake("fake"), erase: hitltest.NewTool("erase", effect), model: &hitltest.Model{Tools: []string{"erase", "publish"}}}
	pf := &privateFake{fakeChannel: g.ch, to: map[approval.UserID][]string{}}
	st := hitltest.New(t, hitltest.Config{Store: store, Model: g.model, Tools: []agent.Tool{g.erase, hitltest.NewTool("publish", approval.EffectWrite)}, Policy: &pc,
		Loop: func(c *agent.LoopConfig) { c.History, c.Locker = hist, locker }, Lang: "en"})
	st.Register(t, pf)
	g.fill(st)
	return g, pf
}

// privateReplicas are two privateRigs whose erase has effect (HIGH calls
// when destructive, MEDIUM ones that may grant when a write) that are
// replicas of one deployment: one store, one history, one session locker.
func privateReplicas(t *testing.T, effect approval.Effect) (a, b *rig, pa, pb *privateFake) {
	t.Helper()
	store := memstore.New(memstore.Options{})
	hist, locker := agent.NewMemoryHistory(), agent.NewMemoryLocker()
	a, pa = privateRig(t, store, hist, locker, effect)
	b, pb = privateRig(t, store, hist, locker, effect)
	return a, b, pa, pb
}

// TestPrivateTurnResumedElsewhere: the replica whose turn waited for a
// private approval is gone; bob approves on the other replica, which
// resumes the turn: its tool result and answer go to alice alone, and
// the group reads one line. While the approval waited, another message
// in the group was told it waits by its redacted line.
func TestPrivateTurnResumedElsewhere(t *testing.T) {
	a, b, pa, pb := privateReplicas(t, approval.EffectDestructive)
	ap := a.pendingApproval(t, "orders")
	if !ap.Private() || !pa.told("alice", "card", "orders") || !pa.told("bob", "card", "orders") || pa.told("carol", "card", "") {
		t.Fatalf("private %v; told %v", ap.Private(), pa.to)
	}
	shown := a.ch.shownCards()
	if len(shown) != 1 || !shown[0].v.Redacted || strings.Contains(shown[0].v.Summary, "orders") {
		t.Fatalf("the group's cards: %+v", shown)
	}

	a.send(t, msg("carol", "what is going on?"))
	eventually(t, "carol told an approval waits", func() bool { return a.ch.hasText("notice", "asked for a HIGH risk action") })
	for _, s := range a.ch.texts() {
		if strings.Contains(s, "orders") {
			t.Fatalf("the group read %q", s)
		}
	}

	if err := a.loop.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec, err := b.engine.Get(context.Background(), ap.ID)
	if err != nil {
		t.Fatal(err)
	}
	var bobCard approval.CardRef
	for _, c := range rec.Cards {
		if c.Private && c.ChatID == "p2p_bob" {
			bobCard = c
		}
	}
	o, err := b.router.HandleCardAction(context.Background(), CardAction{Channel: "fake", ChatID: bobCard.ChatID, MessageID: bobCard.MessageID,
		EventID: "click-private", UserID: "bob", ApprovalID: ap.ID, Verb: approval.Approve, PayloadSHA256: rec.PayloadSHA256})
	if err != nil || o.Status != approval.StatusExecuted {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	eventually(t, "the answer to alice alone", func() bool { return pb.told("alice", "answer", "summary: erase done (run 1)") })
	eventually(t, "the group told", func() bool { return b.ch.hasText("notice", "The answer was sent to alice privately.") })
	for _, s := range append(a.ch.texts(), b.ch.texts()...) {
		if strings.Contains(s, "erase done") {
			t.Fatalf("the group read %q", s)
		}
	}
	if pb.told("bob", "answer", "") || pb.told("carol", "answer", "") {
		t.Fatalf("others were told: %v", pb.to)
	}
}

// TestPrivateGrantKeepsPrivate: a MEDIUM call, private in groups, that
// bob approved for the session runs again without asking; what it says
// (the grant's notice, its result, the answer) goes to alice alone, as
// the approval's did.
func TestPrivateGrantKeepsPrivate(t *testing.T) {
	g, pf := privateRig(t, memstore.New(memstore.Options{}), agent.NewMemoryHistory(), agent.NewMemoryLocker(), approval.EffectWrite)
	ap := g.pendingApproval(t, "orders")
	if !ap.Private() || ap.GrantWindow == 0 {
		t.Fatalf("private %v, grant window %v", ap.Private(), ap.GrantWindow)
	}
	if o, err := g.router.HandleCardAction(context.Background(), CardAction{Channel: "fake", ChatID: "p2p_bob", MessageID: "private-2",
		EventID: "click-grant", UserID: "bob", ApprovalID: ap.ID, Verb: approval.Approve, PayloadSHA256: ap.PayloadSHA256, Grant: approval.GrantSession}); err != nil || o.Status != approval.StatusExecuted {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	eventually(t, "the first answer to alice alone", func() bool { return pf.told("alice", "answer", "summary: erase done (run 1)") })
	g.send(t, msg("alice", "erase orders"))
	eventually(t, "the granted call's answer to alice alone", func() bool { return pf.told("alice", "answer", "summary: erase done (run 2)") })
	if !pf.told("alice", "notice", "Auto-approved") {
		t.Fatalf("alice was not told of the grant: %v", pf.to)
	}
	eventually(t, "the group told twice", func() bool { return g.ch.countText("notice", "The answer was sent to alice privately.") == 2 })
	for _, s := range g.ch.texts() {
		if strings.Contains(s, "erase done") || strings.Contains(s, "Auto-approved") {
			t.Fatalf("the group read %q", s)
		}
	}
}

// TestPrivateGrantListed: a grant that a private approval gave is named
// in the group by one line (its grantee, who approved, time left), never
// its statement, whoever asks (the whole group reads the answer; the
// grantee too).
func TestPrivateGrantListed(t *testing.T) {
	g, _ := privateRig(t, memstore.New(memstore.Options{}), agent.NewMemoryHistory(), agent.NewMemoryLocker(), approval.EffectWrite)
	ctx := context.Background()
	ap := g.pendingApproval(t, "salaries")
	if o, err := g.router.HandleCardAction(ctx, CardAction{Channel: "fake", ChatID: "p2p_bob", MessageID: "private-2",
		EventID: "click-grant", UserID: "bob", ApprovalID: ap.ID, Verb: approval.Approve, PayloadSHA256: ap.PayloadSHA256, Grant: approval.GrantSession}); err != nil || o.Status != approval.StatusExecuted {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	eventually(t, "the grant recorded", func() bool {
		gs, err := g.store.Grants(ctx, "fake:c1")
		return err == nil && len(gs) == 1
	})
	for _, who := range []approval.UserID{"carol", "alice"} {
		g.ch.reset()
		g.send(t, msg(who, "/grants"))
		if !g.ch.hasText("answer", "1. a private grant of alice — approved by bob, ") {
			t.Fatalf("/grants by %s: %v", who, g.ch.texts())
		}
		for _, s := range g.ch.texts() {
			if strings.Contains(s, "salaries") || strings.Contains(s, "erase") {
				t.Fatalf("/grants by %s named the private grant: %q", who, s)
			}
		}
	}
}

// contextModel makes m answer a question ("what did …") from its request,
// as an LLM would: with the last tool result it finds there, and records
// everything the request held, by question.
type contextModel struct {
	mu   sync.Mutex
	seen map[string]string // question -> every text of its request
}

func (c *contextModel) hook(m *hitltest.Model) {
	m.Hook = func(_ context.Context, req agent.Request) (agent.Response, bool, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == agent.RoleSystem { // an update on an approval: say what it says
			for i := len(req.Messages) - 1; i >= 0; i-- {
				if req.Messages[i].Role == agent.RoleTool {
					return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "summary: " + req.Messages[i].Content}}, true, nil
				}
			}
		}
		if last.Role != agent.RoleUser || !strings.HasPrefix(last.Content, "what did") {
			return agent.Response{}, false, nil
		}
		var all []string
		answer := "last result: none I can see"
		for _, msg := range req.Messages {
			all = append(all, msg.Content)
			for _, tc := range msg.ToolCalls {
				all = append(all, string(tc.Args))
			}
			if msg.Role == agent.RoleTool {
				answer = "last result: " + msg.Content
			}
		}
		c.mu.Lock()
		c.seen[last.Content] = strings.Join(all, "\n")
		c.mu.Unlock()
		return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: answer}}, true, nil
	}
}

// request returns what the model's request for question held.
func (c *contextModel) request(question string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen[question]
}

// TestPrivateTurnStaysOutOfOthersHistory: with the default session scope
// (per chat: one history for the group), alice's private erase of
// "salaries" returns rows only she and bob may see. An onlooker who asks
// the model what the last query returned, while the turn waits (its
// replica gone) and after bob approved it on the other replica, gets an
// answer from a request that holds neither the call's arguments nor its
// result, only a line that a private action took place; alice's resumed
// turn still reads its own result and answers her privately; a later
// turn of alice's, whose answer the group reads, does not get it either.
func TestPrivateTurnStaysOutOfOthersHistory(t *testing.T) {
	a, b, pa, pb := privateReplicas(t, approval.EffectDestructive)
	cm := &contextModel{seen: map[string]string{}}
	for _, g := range []*rig{a, b} {
		cm.hook(g.model)
		g.erase.Result = func(_, target string, _ int64) string { return "rows of " + target + ": alice=9000, bob=8000" }
	}
	ap := a.pendingApproval(t, "salaries")
	if !ap.Private() || !pa.told("bob", "card", "salaries") {
		t.Fatalf("private %v; told %v", ap.Private(), pa.to)
	}
	if err := a.loop.Close(context.Background()); err != nil { // the turn is suspended in the history
		t.Fatal(err)
	}
	leaked := func(who, question string) {
		t.Helper()
		req := cm.request(question)
		if req == "" {
			t.Fatalf("%s's %q never reached the model", who, question)
		}
		// (alice's message "erase salaries" was typed in the group: the
		// call's arguments and its result are what is private)
		if strings.Contains(req, `"target"`) || strings.Contains(req, "rows of") || strings.Contains(req, "9000") {
			t.Fatalf("%s's %q: the model's request held the private turn:\n%s", who, question, req)
		}
		if !strings.Contains(req, "A private action requested by alice took place here") {
			t.Fatalf("%s's %q: the model was not told a private action took place:\n%s", who, question, req)
		}
		for _, s := range b.ch.texts() {
			if strings.Contains(s, "rows of") || strings.Contains(s, "9000") {
				t.Fatalf("the group read %q", s)
			}
		}
	}
	q1 := "what did the last query return? (while it waits)"
	b.send(t, msg("carol", q1))
	eventually(t, "carol answered while it waits", func() bool { return b.ch.hasText("answer", "last result: ") })
	leaked("carol", q1)

	rec, err := b.engine.Get(context.Background(), ap.ID)
	if err != nil {
		t.Fatal(err)
	}
	if o, err := b.router.HandleCardAction(context.Background(), CardAction{Channel: "fake", ChatID: "p2p_bob", MessageID: "private-2",
		EventID: "click-salaries", UserID: "bob", ApprovalID: ap.ID, Verb: approval.Approve, PayloadSHA256: rec.PayloadSHA256}); err != nil || o.Status != approval.StatusExecuted {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	// The resumed turn read its own result, and answered alice alone.
	eventually(t, "the answer to alice alone", func() bool { return pb.told("alice", "answer", "summary: rows of salaries: alice=9000") })
	eventually(t, "the group told", func() bool { return b.ch.hasText("notice", "The answer was sent to alice privately.") })

	b.ch.reset()
	q2 := "what did the last query return? (after it ran)"
	b.send(t, msg("carol", q2))
	eventually(t, "carol answered after it ran", func() bool { return b.ch.hasText("answer", "last result: ") })
	leaked("carol", q2)

	b.ch.reset()
	q3 := "what did the last query return? (alice, in the group)"
	b.send(t, msg("alice", q3))
	eventually(t, "alice answered in the group", func() bool { return b.ch.hasText("answer", "last result: ") })
	leaked("alice", q3)
}
