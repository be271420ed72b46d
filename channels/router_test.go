package channels_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	. "github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

// barrier sends a marker message and waits for the agent's answer to it:
// the session's messages are handled in order, so everything sent before
// has been handled too.
func (g *rig) barrier(t *testing.T, user approval.UserID) {
	t.Helper()
	m := msg(user, "barrier "+time.Now().Format(time.RFC3339Nano))
	g.send(t, m)
	eventually(t, "the agent answers "+m.Text, func() bool { return g.answered("echo: " + m.Text) })
}

// forEachDedupStore runs fn on a store that takes a message's
// de-duplication marks and pending lookup in one round trip (Redis: an
// approval.InboundStore), and on one that takes them one by one (memory).
func forEachDedupStore(t *testing.T, fn func(*testing.T, approval.Store)) {
	t.Run("inbound", func(t *testing.T) {
		c, prefix := testredis.Start(t)
		s, err := redisstore.New(c, redisstore.Options{Prefix: prefix, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		fn(t, s)
	})
	t.Run("plain", func(t *testing.T) { fn(t, memstore.New(memstore.Options{})) })
}

func TestDuplicateMessageIDProcessedOnce(t *testing.T) {
	forEachDedupStore(t, func(t *testing.T, store approval.Store) {
		g := newRig(t, store)
		m := msg("alice", "hello")
		g.send(t, m)
		g.send(t, m)
		m2 := m
		m2.Text = "hello again" // a re-delivery with the same id, whatever it says
		g.send(t, m2)
		g.barrier(t, "alice")
		if n := g.model.Seen("hello"); n != 1 || g.model.Seen("hello again") != 0 {
			t.Fatalf("model saw hello %d times, texts %v", n, g.ch.texts())
		}
	})
}

func TestDuplicateEventIDProcessedOnce(t *testing.T) {
	forEachDedupStore(t, func(t *testing.T, store approval.Store) {
		g := newRig(t, store)
		m1, m2 := msg("alice", "first"), msg("alice", "second")
		m1.EventID, m2.EventID = "ev-1", "ev-1"
		g.send(t, m1)
		g.send(t, m2)
		// A message without any id always passes.
		m3 := msg("alice", "no ids")
		m3.MessageID = ""
		g.send(t, m3)
		g.send(t, m3)
		g.barrier(t, "alice")
		if g.model.Seen("first") != 1 || g.model.Seen("second") != 0 || g.model.Seen("no ids") != 2 {
			t.Fatalf("model saw first %d, second %d, no ids %d", g.model.Seen("first"), g.model.Seen("second"), g.model.Seen("no ids"))
		}
	})
}

type countingMetrics struct {
	inbound, dedup, refused chan string
	decisions               chan approval.Status
}

func (c *countingMetrics) Inbound(ch string)      { c.inbound <- ch }
func (c *countingMetrics) Deduplicated(ch string) { c.dedup <- ch }
func (c *countingMetrics) Refused(ch string)      { c.refused <- ch }
func (c *countingMetrics) Decision(_ string, st approval.Status) {
	c.decisions <- st
}

func TestMetrics(t *testing.T) {
	m := &countingMetrics{inbound: make(chan string, 10), dedup: make(chan string, 10), decisions: make(chan approval.Status, 10)}
	g := newRig(t, nil, func(c *RouterConfig) { c.Metrics = m })
	x := msg("alice", "hi")
	g.send(t, x)
	g.send(t, x)
	if len(m.inbound) != 2 || len(m.dedup) != 1 {
		t.Fatalf("inbound %d, dedup %d", len(m.inbound), len(m.dedup))
	}
}

type seenFails struct{ approval.Store }

func (seenFails) Seen(context.Context, string, time.Duration) (bool, error) {
	return false, approval.E("test.Seen", errkind.Unavailable, "", approval.ErrUnavailable)
}

func TestOldMessageDropped(t *testing.T) {
	start := time.Now()
	g := newRig(t, nil, func(c *RouterConfig) { c.Clock = clock.NewFake(start) })
	old := msg("alice", "from yesterday")
	old.CreatedAt = start.Add(-3 * time.Minute)
	g.send(t, old)
	recent := msg("alice", "within grace")
	recent.CreatedAt = start.Add(-time.Minute)
	g.send(t, recent)
	g.barrier(t, "alice")
	if g.model.Seen("from yesterday") != 0 || g.model.Seen("within grace") != 1 {
		t.Fatalf("texts %v", g.ch.texts())
	}
}

func TestTypedConfirmByRequesterDecides(t *testing.T) {
	g := newRig(t, nil)
	a := g.pendingApproval(t, "orders")
	g.send(t, msg("alice", " 确认！"))
	g.drain()
	if st := g.state(t, a.ID); st != approval.StateExecuted {
		t.Fatalf("state %s", st)
	}
	eventually(t, "the summary", func() bool { return g.ch.hasText("answer", "summary: erase done (run 1)") })
	if g.erase.Runs.Load() != 1 {
		t.Fatalf("runs %d", g.erase.Runs.Load())
	}
	if g.model.Seen(" 确认！") != 0 || g.model.Seen("确认") != 0 {
		t.Fatal("the typed decision reached the model")
	}
	if !g.ch.hasText("notice", "Executed") || !g.ch.hasText("tool_result", "erase done (run 1)") {
		t.Fatalf("texts %v", g.ch.texts())
	}
	// The card was settled to executed.
	eventually(t, "the card is settled", func() bool { return len(g.ch.settledCards()) == 1 })
	if s := g.ch.settledCards()[0]; s.v.Status != approval.StatusExecuted || s.ref != g.ch.shownCards()[0].ref {
		t.Fatalf("settled %+v", s)
	}
	// A second 确认 has nothing pending: it is told that the approval was
	// decided (it does not go to the agent, which might take it for a new
	// request), and nothing runs again.
	g.send(t, msg("alice", "确认"))
	g.barrier(t, "alice")
	if g.erase.Runs.Load() != 1 || g.model.Seen("确认") != 0 || !g.ch.hasText("notice", "This approval has already been decided: Executed") {
		t.Fatalf("runs %d, model saw 确认 %d times; texts %v", g.erase.Runs.Load(), g.model.Seen("确认"), g.ch.texts())
	}
}

func TestTypedConfirmByOtherIsUnauthorized(t *testing.T) {
	for _, tc := range []struct{ lang, want string }{
		{"en", "You may not decide this approval (who may approve: only the person who asked)"},
		{"zh", "你无权处理此审批（可确认人：仅申请人本人）"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			g := newRig(t, nil, func(c *RouterConfig) { c.Lang = tc.lang })
			a := g.pendingApproval(t, "orders")
			g.send(t, msg("bob", "确认"))
			g.drain()
			if st := g.state(t, a.ID); st != approval.StatePending {
				t.Fatalf("state %s", st)
			}
			if !g.ch.hasText("notice", tc.want) {
				t.Fatalf("texts %v", g.ch.texts())
			}
			if g.erase.Runs.Load() != 0 || g.model.Seen("确认") != 0 {
				t.Fatal("an unauthorized confirm ran the tool or reached the model")
			}
		})
	}
}

func TestNonDecisionWhilePendingGoesToAgent(t *testing.T) {
	g := newRig(t, nil)
	a := g.pendingApproval(t, "orders")
	g.send(t, msg("alice", "yes please"))
	if !g.ch.hasText("notice", "An approval is waiting (erase: erase {\"target\":\"orders\"}). Reply 确认") {
		t.Fatalf("texts %v", g.ch.texts())
	}
	if st := g.state(t, a.ID); st != approval.StatePending {
		t.Fatalf("state %s", st)
	}
	// The session's worker waits on the approval; the message is queued
	// behind it and reaches the model once the approval is decided.
	g.send(t, msg("alice", "取消"))
	g.drain()
	if st := g.state(t, a.ID); st != approval.StateRejected {
		t.Fatalf("state %s", st)
	}
	eventually(t, "the queued message reaches the model", func() bool { return g.model.Seen("yes please") == 1 })
	if g.erase.Runs.Load() != 0 || !g.ch.hasText("notice", "Declined; nothing was run") {
		t.Fatalf("runs %d, texts %v", g.erase.Runs.Load(), g.ch.texts())
	}
}

func TestCardActionApproveSettlesEveryCard(t *testing.T) {
	g := newRig(t, nil)
	a := g.pendingApproval(t, "orders")
	card := g.ch.shownCards()[0]
	o, err := g.router.HandleCardAction(context.Background(), CardAction{Channel: "fake", ChatID: "c1", MessageID: card.ref.MessageID,
		EventID: "click-1", UserID: "alice", ApprovalID: card.v.Approve.ApprovalID, Verb: card.v.Approve.Decision, PayloadSHA256: card.v.Approve.PayloadSHA256})
	if err != nil || o.Status != approval.StatusExecuted {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	if st := g.state(t, a.ID); st != approval.StateExecuted || g.erase.Runs.Load() != 1 {
		t.Fatalf("state %s, runs %d", st, g.erase.Runs.Load())
	}
	if s := g.ch.settledCards(); len(s) != 1 || s[0].ref != card.ref || s[0].v.Status != approval.StatusExecuted || !s[0].v.Final {
		t.Fatalf("settled %+v", s)
	}
	// The same click event again: the final outcome, no second run.
	o2, err := g.router.HandleCardAction(context.Background(), CardAction{Channel: "fake", EventID: "click-1", UserID: "alice",
		ApprovalID: a.ID, Verb: approval.Approve, PayloadSHA256: a.PayloadSHA256})
	if err != nil || o2.Status != approval.StatusExecuted || g.erase.Runs.Load() != 1 {
		t.Fatalf("duplicate event: %+v, %v, runs %d", o2, err, g.erase.Runs.Load())
	}
	// Another click (new event id) on the ended approval: already decided.
	o3, err := g.router.HandleCardAction(context.Background(), CardAction{Channel: "fake", EventID: "click-2", UserID: "alice",
		ApprovalID: a.ID, Verb: approval.Approve, PayloadSHA256: a.PayloadSHA256})
	if err != nil || o3.Status != approval.StatusAlreadyDecided || g.erase.Runs.Load() != 1 {
		t.Fatalf("second click: %+v, %v, runs %d", o3, err, g.erase.Runs.Load())
	}
}

func TestDuplicateCardEventWhilePending(t *testing.T) {
	g := newRig(t, nil)
	a := g.pendingApproval(t, "orders")
	// The event was seen (say, by another replica still deciding it).
	if _, err := g.store.Seen(context.Background(), "evt:fake:click-9", time.Hour); err != nil {
		t.Fatal(err)
	}
	o, err := g.router.HandleCardAction(context.Background(), CardAction{Channel: "fake", EventID: "click-9", UserID: "alice",
		ApprovalID: a.ID, Verb: approval.Approve, PayloadSHA256: a.PayloadSHA256})
	if err != nil || o.Status != approval.StatusAlreadyDecided {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	if st := g.state(t, a.ID); st != approval.StatePending || g.erase.Runs.Load() != 0 {
		t.Fatalf("state %s, runs %d", st, g.erase.Runs.Load())
	}
}

func TestMalformedCardActionDecidesNothing(t *testing.T) {
	g := newRig(t, nil)
	a := g.pendingApproval(t, "orders")
	for _, c := range []struct {
		act  CardAction
		want approval.Status
	}{
		{CardAction{ApprovalID: "ap_nope", Verb: approval.Approve, PayloadSHA256: a.PayloadSHA256}, approval.StatusMissing},
		{CardAction{ApprovalID: a.ID, Verb: "maybe", PayloadSHA256: a.PayloadSHA256}, approval.StatusTampered},
		{CardAction{ApprovalID: a.ID, Verb: approval.Approve}, approval.StatusTampered},
		{CardAction{ApprovalID: a.ID, Verb: approval.Approve, PayloadSHA256: strings.Repeat("0", 64)}, approval.StatusTampered},
		{CardAction{ApprovalID: a.ID, Verb: approval.Approve, PayloadSHA256: a.PayloadSHA256, UserID: "mallory"}, approval.StatusUnauthorized},
	} {
		c.act.Channel = "fake"
		if c.act.UserID == "" {
			c.act.UserID = "alice"
		}
		o, err := g.router.HandleCardAction(context.Background(), c.act)
		if err != nil || o.Status != c.want {
			t.Errorf("%+v: outcome %+v, %v; want %s", c.act, o, err, c.want)
		}
	}
	if st := g.state(t, a.ID); st != approval.StatePending || g.erase.Runs.Load() != 0 {
		t.Fatalf("state %s, runs %d", st, g.erase.Runs.Load())
	}
}

// TestOtherReplicaDecides: replica A shows the card and waits; the click
// reaches replica B, whose engine decides and settles the card through B's
// own channel of the same name; A's waiting turn learns the outcome.
func TestOtherReplicaDecides(t *testing.T) {
	store := memstore.New(memstore.Options{})
	a, b := newReplicas(t, store)
	ap := a.pendingApproval(t, "orders")
	card := a.ch.shownCards()[0]
	o, err := b.router.HandleCardAction(context.Background(), CardAction{Channel: "fake", ChatID: "c1", MessageID: card.ref.MessageID,
		EventID: "click-b", UserID: "alice", ApprovalID: ap.ID, Verb: approval.Approve, PayloadSHA256: card.v.Approve.PayloadSHA256})
	if err != nil || o.Status != approval.StatusExecuted {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	if s := b.ch.settledCards(); len(s) != 1 || s[0].ref != card.ref || s[0].v.Status != approval.StatusExecuted {
		t.Fatalf("B settled %+v", s)
	}
	if len(a.ch.settledCards()) != 0 {
		t.Fatal("A settled the card too")
	}
	// The tool ran once, on B's registry; A's turn ends with the result.
	if a.erase.Runs.Load() != 0 || b.erase.Runs.Load() != 1 {
		t.Fatalf("runs A %d, B %d", a.erase.Runs.Load(), b.erase.Runs.Load())
	}
	eventually(t, "A's turn finishes", func() bool { return a.ch.hasText("answer", "summary: erase done (run 1)") })
	// The same click event delivered to A as well: de-duplicated, no second run.
	o2, err := a.router.HandleCardAction(context.Background(), CardAction{Channel: "fake", EventID: "click-b", UserID: "alice",
		ApprovalID: ap.ID, Verb: approval.Approve, PayloadSHA256: ap.PayloadSHA256})
	if err != nil || o2.Status != approval.StatusExecuted || a.erase.Runs.Load()+b.erase.Runs.Load() != 1 {
		t.Fatalf("duplicate on A: %+v, %v", o2, err)
	}
}

func TestShowOnUnregisteredChannelCancels(t *testing.T) {
	g := newRig(t, nil)
	_, err := g.engine.Request(context.Background(), approval.Request{Session: "nowhere:c9", Channel: "nowhere", ChatID: "c9", Requester: "alice",
		Calls: []approval.Call{{Tool: "erase", Args: []byte(`{"target":"x"}`)}}, Verdict: approval.Verdict{NeedsApproval: true, Risk: approval.RiskHigh}})
	if err == nil {
		t.Fatal("Request succeeded with no channel to show the card")
	}
	id := approval.KindOf(err)
	if id != errkind.Unavailable {
		t.Fatalf("kind %v (%v)", id, err)
	}
	if p, _ := g.engine.Pending(context.Background(), "nowhere:c9"); p != nil {
		t.Fatalf("left pending: %+v", p)
	}
}

func TestShowErrorCancels(t *testing.T) {
	g := newRig(t, nil)
	g.ch.showErr = errors.New("platform down")
	g.send(t, msg("alice", "erase orders"))
	eventually(t, "the failure is said", func() bool { return g.ch.hasText("notice", "temporarily unavailable") })
	if p, _ := g.engine.Pending(context.Background(), "fake:c1"); p != nil || g.erase.Runs.Load() != 0 {
		t.Fatalf("pending %+v, runs %d", p, g.erase.Runs.Load())
	}
}

// TestSettleEveryCard: an approval shown twice (two channels) is settled on both.
func TestSettleEveryCard(t *testing.T) {
	g := newRig(t, nil)
	other := newFake("other")
	if err := g.reg.Register(other); err != nil {
		t.Fatal(err)
	}
	a := &approval.Approval{ID: approval.NewID("fake:c1"), Channel: "fake", ChatID: "c1", Requester: "alice",
		Calls: []approval.Call{{Tool: "erase", Args: []byte(`{}`)}},
		Cards: []approval.CardRef{{Channel: "fake", ChatID: "c1", MessageID: "m-1"}, {Channel: "other", ChatID: "o1", MessageID: "m-2"}, {Channel: "gone", MessageID: "m-3"}}}
	err := g.pres.Settle(context.Background(), a, approval.Outcome{Status: approval.StatusRejected, DecidedBy: "alice"})
	if err == nil || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("err = %v, want one about the unregistered channel", err)
	}
	f, o := g.ch.settledCards(), other.settledCards()
	if len(f) != 1 || len(o) != 1 || f[0].ref.MessageID != "m-1" || o[0].ref.MessageID != "m-2" || o[0].v.Status != approval.StatusRejected || o[0].v.DecidedBy != "alice" {
		t.Fatalf("settled %+v / %+v", f, o)
	}
}

func TestRegisterAndReady(t *testing.T) {
	store, reg := memstore.New(memstore.Options{}), NewRegistry()
	pres, err := NewPresenter(PresenterConfig{Registry: reg, Store: store, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	parts := RouterConfig{Registry: reg, Presenter: pres, Decider: &fakeDecider{}, Submitter: &fakeSubmitter{}, Store: store, Logger: quiet}
	r, err := NewRouter(parts)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.HandleMessage(context.Background(), msg("alice", "hi")); err == nil || !strings.Contains(err.Error(), `no channel "fake"`) {
		t.Fatalf("HandleMessage on an unregistered channel: %v", err)
	}
	a, b := newFake("b"), newFake("a")
	if err := reg.Register(a); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(b); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(newFake("a")); err == nil {
		t.Fatal("a duplicate name was accepted")
	}
	if chs := reg.Channels(); len(chs) != 2 || chs[0].Name() != "a" || chs[1].Name() != "b" {
		t.Fatalf("channels %v", chs)
	}
	if err := reg.Ready(); err != nil {
		t.Fatal(err)
	}
	b.readyErr = errors.New("not connected")
	if err := reg.Ready(); err == nil || !strings.Contains(err.Error(), "channel a: not connected") {
		t.Fatalf("Ready = %v", err)
	}
	if err := r.Start(context.Background()); err != nil || !a.started || !b.started {
		t.Fatalf("Start: %v", err)
	}
	if err := r.Close(context.Background()); err != nil || !a.closed || !b.closed {
		t.Fatalf("Close: %v", err)
	}
	bad := parts
	bad.Scope = "per_galaxy"
	if _, err := NewRouter(bad); err == nil || !strings.Contains(err.Error(), "per_galaxy") {
		t.Fatalf("an unknown scope: %v", err)
	}
	bad = parts
	bad.Lang = "fr"
	if _, err := NewRouter(bad); err == nil || !strings.Contains(err.Error(), "fr") {
		t.Fatalf("an unknown language: %v", err)
	}
}

func TestPerThreadShowsInThread(t *testing.T) {
	g := newRig(t, nil, func(c *RouterConfig) { c.Scope = ScopePerThread })
	m := msg("alice", "erase logs")
	m.ThreadID = "t-7"
	g.send(t, m)
	eventually(t, "the card is shown", func() bool { return len(g.ch.shownCards()) == 1 })
	if s := g.ch.shownCards()[0]; s.to.ThreadID != "t-7" || s.to.UserID != "alice" {
		t.Fatalf("shown to %+v", s.to)
	}
	v, err := g.pres.PendingView(context.Background(), Target{Channel: "fake", ChatID: "c1", ThreadID: "t-7"})
	if err != nil || v == nil || v.Tool != "erase" {
		t.Fatalf("PendingView = %+v, %v", v, err)
	}
	// A typed 确认 in another thread is not a decision for this one.
	other := msg("alice", "确认")
	other.ThreadID = "t-8"
	g.send(t, other)
	g.drain()
	if g.erase.Runs.Load() != 0 {
		t.Fatal("a reply in another thread decided")
	}
}

// TestChatRuleNeedsTheApprovalsChat: under the approver rule "anyone in
// the chat", a click on a card forwarded to another chat, or one whose
// platform named no chat, decides nothing; a click in the approval's chat
// (by someone other than the requester) decides.
func TestChatRuleNeedsTheApprovalsChat(t *testing.T) {
	g := newRig(t, nil)
	ctx := context.Background()
	a, err := g.engine.Request(ctx, approval.Request{Session: "fake:c1", Channel: "fake", ChatID: "c1", Requester: "alice",
		Calls:   []approval.Call{{Tool: "erase", Args: []byte(`{"target":"orders"}`)}},
		Verdict: approval.Verdict{NeedsApproval: true, Risk: approval.RiskHigh, Approvers: approval.ApproverRule{Mode: approval.ApproverChat}}})
	if err != nil {
		t.Fatal(err)
	}
	click := func(chat, event string) approval.Outcome {
		t.Helper()
		o, err := g.router.HandleCardAction(ctx, CardAction{Channel: "fake", ChatID: chat, MessageID: "fwd-" + event, EventID: event,
			UserID: "mallory", ApprovalID: a.ID, Verb: approval.Approve, PayloadSHA256: a.PayloadSHA256})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	for _, chat := range []string{"c2", ""} {
		if o := click(chat, "fwd-"+chat); o.Status != approval.StatusUnauthorized {
			t.Fatalf("click from chat %q: %s", chat, o.Status)
		}
	}
	if st := g.state(t, a.ID); st != approval.StatePending || g.erase.Runs.Load() != 0 {
		t.Fatalf("state %s, runs %d", st, g.erase.Runs.Load())
	}
	if o := click("c1", "in-chat"); o.Status != approval.StatusExecuted || g.erase.Runs.Load() != 1 {
		t.Fatalf("click in the chat: %s, runs %d", o.Status, g.erase.Runs.Load())
	}
}

// ApprovalView gives a pending approval's card only for a message that
// shows it, and nothing for an unknown id or an approval that has ended.
func TestApprovalView(t *testing.T) {
	g := newRig(t, nil)
	ctx := context.Background()
	a := g.pendingApproval(t, "orders")
	card := g.ch.shownCards()[0]
	v, err := g.pres.ApprovalView(ctx, "fake", a.ID, card.ref.MessageID)
	if err != nil || v == nil || v.ApprovalID != a.ID || v.Approve.PayloadSHA256 != a.PayloadSHA256 {
		t.Fatalf("view %+v, %v", v, err)
	}
	for _, tt := range []struct {
		channel string
		id      approval.ID
		msg     string
	}{
		{"fake", a.ID, "another-message"},
		{"other", a.ID, card.ref.MessageID},
		{"fake", a.ID, ""},
		{"fake", approval.NewID("fake:c9"), card.ref.MessageID},
		{"fake", "not-an-id", card.ref.MessageID},
	} {
		if v, err := g.pres.ApprovalView(ctx, tt.channel, tt.id, tt.msg); v != nil || err != nil {
			t.Errorf("ApprovalView(%s, %s, %s) = %+v, %v; want nothing", tt.channel, tt.id, tt.msg, v, err)
		}
	}
	g.send(t, msg("alice", "取消"))
	g.drain()
	if v, err := g.pres.ApprovalView(ctx, "fake", a.ID, card.ref.MessageID); v != nil || err != nil {
		t.Fatalf("view of an ended approval: %+v, %v", v, err)
	}
}

// TestTypedDecisionSaysWhyItFailed: the notice of a typed decision whose
// call failed says the failure's sentence once and what failed (where no
// card is shown, it is all a person reads).
func TestTypedDecisionSaysWhyItFailed(t *testing.T) {
	g := newRig(t, nil)
	g.erase.Fails = "disk full on /var"
	a := g.pendingApproval(t, "orders")
	g.send(t, msg("alice", "确认"))
	g.drain()
	if st := g.state(t, a.ID); st != approval.StateFailed {
		t.Fatalf("state %s, want failed", st)
	}
	sentence := approval.DefaultOutcomeText("en")[approval.StatusFailed]
	for _, s := range g.ch.texts() {
		if !strings.HasPrefix(s, "notice:") || !strings.Contains(s, sentence) {
			continue
		}
		if n := strings.Count(s, sentence); n != 1 || !strings.Contains(s, "disk full on /var") {
			t.Fatalf("notice %q: says the sentence %d times, want once, with what failed", s, n)
		}
		return
	}
	t.Fatalf("no failure notice; texts %v", g.ch.texts())
}
