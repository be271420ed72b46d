package channels_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	. "github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/internal/clock"
)

// lastNotice returns the last notice sent, and whether it was an error.
func (f *fakeChannel) lastNotice() (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.sent) - 1; i >= 0; i-- {
		if f.sent[i].out.Kind == OutNotice {
			return f.sent[i].out.Text, f.sent[i].out.IsError
		}
	}
	return "", false
}

// expire lets a's expiry pass on the engine's clock and sweeps it, then
// waits for the turn that waited on it to end. The engine's own expiry
// timer (the Wait of the turn that asked, on the same clock) may end it
// first, and then the sweep finds nothing: either way a is expired, once.
func (g *rig) expire(t *testing.T, clk *clock.Fake, a *approval.Approval) {
	t.Helper()
	clk.Advance(a.ExpiresAt.Sub(clk.Now()) + time.Second)
	if n, err := g.engine.Sweep(context.Background()); err != nil || n > 1 {
		t.Fatalf("Sweep = %d, %v", n, err)
	}
	eventually(t, "the approval is expired", func() bool { return g.state(t, a.ID) == approval.StateExpired })
	eventually(t, "the waiting turn ends", func() bool { return g.answered("summary: ") })
}

// TestLateReplyAfterExpiry: a typed 确认 (or 取消) that comes after the
// approval expired is answered "expired", as a late click is; it does not
// reach the agent. On both stores (the session pointer outlives the end).
func TestLateReplyAfterExpiry(t *testing.T) {
	forEachDedupStore(t, func(t *testing.T, store approval.Store) {
		clk := clock.NewFake(time.Now())
		g := newRigClock(t, store, clk)
		a := g.pendingApproval(t, "orders")
		g.expire(t, clk, a)
		for _, text := range []string{"确认", "取消"} {
			g.ch.reset()
			g.send(t, msg("alice", text))
			if got, isErr := g.ch.lastNotice(); got != "The approval expired; nothing was run" || !isErr {
				t.Fatalf("a late %s was answered %q (error %v); texts %v", text, got, isErr, g.ch.texts())
			}
		}
		g.barrier(t, "alice")
		if g.model.Seen("确认") != 0 || g.model.Seen("取消") != 0 || g.erase.Runs.Load() != 0 {
			t.Fatalf("the late replies reached the agent (%d, %d) or ran the tool (%d)", g.model.Seen("确认"), g.model.Seen("取消"), g.erase.Runs.Load())
		}
		// Long after the end it is a message like any other.
		ended, err := g.engine.Get(context.Background(), a.ID)
		if err != nil {
			t.Fatal(err)
		}
		later := msg("alice", "确认")
		later.CreatedAt = ended.DecidedAt.Add(DefaultLateReplyWindow + time.Second)
		g.send(t, later)
		eventually(t, "the agent reads the 确认", func() bool { return g.model.Seen("确认") == 1 })
	})
}

// TestLateReplyWords: a late reply is told how the session's last
// approval ended: withdrawn (with why: a hook that gave up says the agent
// was told no), declined, or already decided (with what came of it); in
// Chinese too.
func TestLateReplyWords(t *testing.T) {
	for _, tt := range []struct {
		name, lang string
		end        func(g *rig, a *approval.Approval)
		want       string
	}{
		{"cancelled", "en", func(g *rig, a *approval.Approval) {
			if _, err := g.engine.Cancel(context.Background(), a.ID, "alice", approval.SourceAPI, "not needed"); err != nil {
				t.Fatal(err)
			}
		}, "The approval was withdrawn; nothing was run: not needed"},
		{"rejected", "en", func(g *rig, a *approval.Approval) { g.send(t, msg("alice", "取消")); g.drain() }, "Declined; nothing was run"},
		{"executed", "en", func(g *rig, a *approval.Approval) { g.send(t, msg("alice", "确认")); g.drain() }, "This approval has already been decided: Executed"},
		{"executed, zh", "zh", func(g *rig, a *approval.Approval) { g.send(t, msg("alice", "确认")); g.drain() }, "此审批已被处理：已执行"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := newRig(t, nil, func(c *RouterConfig) { c.Lang = tt.lang })
			a := g.pendingApproval(t, "orders")
			tt.end(g, a)
			eventually(t, "the waiting turn ends", func() bool { return g.answered("summary: ") })
			g.ch.reset()
			g.send(t, msg("alice", "ok"))
			if got, isErr := g.ch.lastNotice(); got != tt.want || !isErr {
				t.Fatalf("a late ok was answered %q (error %v), want %q", got, isErr, tt.want)
			}
			g.barrier(t, "alice")
			if g.model.Seen("ok") != 0 {
				t.Fatal("the late ok reached the agent")
			}
		})
	}
}

// TestReplyWithoutApprovalGoesToAgent: a 确认 in a session that never
// had an approval, or one written before the session's last approval was
// created (an old message), is a message for the agent.
func TestReplyWithoutApprovalGoesToAgent(t *testing.T) {
	g := newRig(t, nil)
	g.send(t, msg("alice", "确认"))
	eventually(t, "the agent reads the 确认", func() bool { return g.model.Seen("确认") == 1 })

	a := g.pendingApproval(t, "orders")
	g.send(t, msg("alice", "取消"))
	g.drain()
	eventually(t, "the waiting turn ends", func() bool { return g.answered("summary: ") })
	old := msg("alice", "确认")
	old.CreatedAt = a.CreatedAt.Add(-time.Minute)
	g.send(t, old)
	eventually(t, "the agent reads the old 确认", func() bool { return g.model.Seen("确认") == 2 })
}

// cancelFirst cancels the approval just before the claim of a decision:
// the typed reply loses a race with a cancel.
type cancelFirst struct{ approval.Store }

func (c cancelFirst) Claim(ctx context.Context, id approval.ID, req approval.ClaimRequest) (approval.ClaimResult, error) {
	if req.Intent != approval.IntentExpire {
		if _, _, err := c.Store.Cancel(ctx, id, approval.Outcome{Status: approval.StatusCancelled}, req.Now); err != nil {
			return approval.ClaimResult{}, err
		}
	}
	return c.Store.Claim(ctx, id, req)
}

// TestTypedReplyLosesRaceWithCancel: a typed 确认 that found the approval
// pending, but whose claim came after a cancel, is told "withdrawn", not
// "already decided"; nothing runs.
func TestTypedReplyLosesRaceWithCancel(t *testing.T) {
	forEachDedupStore(t, func(t *testing.T, store approval.Store) {
		g := newRig(t, cancelFirst{store})
		a := g.pendingApproval(t, "orders")
		g.send(t, msg("alice", "确认"))
		g.drain()
		if st := g.state(t, a.ID); st != approval.StateCancelled || g.erase.Runs.Load() != 0 {
			t.Fatalf("state %s, runs %d", st, g.erase.Runs.Load())
		}
		if got, _ := g.ch.lastNotice(); !strings.HasPrefix(got, "The approval was withdrawn; nothing was run") {
			t.Fatalf("the losing 确认 was told %q; texts %v", got, g.ch.texts())
		}
	})
}

// listener is the rig's fake channel as a channel that listens for turn
// events, as the HTTP API does.
type listener struct {
	*fakeChannel
	mu     sync.Mutex
	events []turnRec
}

type turnRec struct {
	msgID string // Target.ReplyTo
	ev    TurnEvent
}

func (l *listener) TurnEvent(_ context.Context, to Target, ev TurnEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, turnRec{to.ReplyTo, ev})
}

// endOf waits for the first event that ends message id's request (a
// turn_ended, queued or refused) and returns it.
func (l *listener) endOf(t testing.TB, id string) TurnEvent {
	t.Helper()
	var got TurnEvent
	eventually(t, "the end of message "+id, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, r := range l.events {
			if r.msgID == id && (r.ev.Kind == agent.SayTurnEnded || r.ev.Kind == SayQueued || r.ev.Kind == SayRefused) {
				got = r.ev
				return true
			}
		}
		return false
	})
	return got
}

// routerAnswers are messages the router answers itself, sent to a channel
// that listens for turn events: each ends with a turn_ended carrying the
// answer (issue 24 item 5: a late or losing typed reply was said only as
// a notice, and the HTTP API's request waited for a turn that never
// came).
var routerAnswers = []struct {
	name  string
	store func(approval.Store) approval.Store
	allow map[string]Allow
	// before readies the session; it returns the approval, if any.
	before func(t *testing.T, g *rig) *approval.Approval
	typed  string
	want   TurnEvent // a turn_ended; its Result.Text a prefix; Decided "x": the approval of before
}{
	{name: "late, after a decline", before: endedBy("取消"), typed: "确认",
		want: answered("Declined; nothing was run", approval.StatusRejected, "")},
	{name: "late, after execution", before: endedBy("确认"), typed: "取消",
		want: answered("This approval has already been decided: Executed", approval.StatusAlreadyDecided, "")},
	{name: "lost a race with a cancel", store: func(s approval.Store) approval.Store { return cancelFirst{s} },
		before: pending, typed: "确认",
		want: answered("The approval was withdrawn; nothing was run", approval.StatusCancelled, "")},
	{name: "decided", before: pending, typed: "确认",
		want: answered("Executed", approval.StatusExecuted, "x")},
	{name: "pending lookup failed", store: func(s approval.Store) approval.Store { return pendingFails{s} }, typed: "确认",
		want: answered("Approvals are temporarily unavailable; nothing was run.", "", "")},
	{name: "refused by the allow-list", allow: map[string]Allow{"fake": {Users: []string{"bob"}}}, typed: "确认",
		want: answered("Sorry, you are not allowed", "", "")},
}

// answered is the router's turn_ended answering a message with text.
func answered(text string, st approval.Status, decided approval.ID) TurnEvent {
	return TurnEvent{Say: agent.Say{Kind: agent.SayTurnEnded, Result: &agent.TurnResult{Text: text}}, Status: st, Decided: decided}
}

func pending(t *testing.T, g *rig) *approval.Approval { return g.pendingApproval(t, "orders") }

// endedBy readies a session whose approval the typed text ended.
func endedBy(text string) func(t *testing.T, g *rig) *approval.Approval {
	return func(t *testing.T, g *rig) *approval.Approval {
		a := g.pendingApproval(t, "orders")
		g.send(t, msg("alice", text))
		g.drain()
		eventually(t, "the waiting turn ends", func() bool { return g.answered("summary: ") })
		return a
	}
}

// TestRouterAnswersEndTheTurn: every message the router answers itself
// ends, for a channel that listens for turn events, with one turn_ended
// for its message id, carrying the answer, its status and (for a typed
// decision that ended the approval) the approval; the chat reads no
// notice of it (the request's answer is the event).
func TestRouterAnswersEndTheTurn(t *testing.T) {
	for _, tt := range routerAnswers {
		t.Run(tt.name, func(t *testing.T) {
			var store approval.Store = memstore.New(memstore.Options{})
			if tt.store != nil {
				store = tt.store(store)
			}
			var l *listener
			g := newRigAs(t, store, nil, nil, func(f *fakeChannel) Channel { l = &listener{fakeChannel: f}; return l },
				func(c *RouterConfig) { c.Allow = tt.allow })
			var a *approval.Approval
			if tt.before != nil {
				a = tt.before(t, g)
			}
			g.ch.reset()
			m := msg("alice", tt.typed)
			g.send(t, m)
			got := l.endOf(t, m.MessageID)
			want := tt.want
			if want.Decided == "x" {
				want.Decided = a.ID
			}
			if got.Kind != agent.SayTurnEnded || got.Result == nil || !strings.HasPrefix(got.Result.Text, want.Result.Text) || got.Status != want.Status || got.Decided != want.Decided {
				t.Fatalf("the %s ended with %+v (%+v); want a turn_ended %+v", tt.typed, got, got.Result, want.Result)
			}
			if g.ch.hasText("notice", want.Result.Text) {
				t.Fatalf("the answer was also said as a notice: %v", g.ch.texts())
			}
			g.drain()
			if tt.allow == nil {
				g.barrier(t, "alice")
			}
			if g.model.Seen(tt.typed) != 0 {
				t.Fatalf("the %s reached the agent", tt.typed)
			}
		})
	}
}

// heard returns the turn events heard so far, in order.
func (l *listener) heard() []turnRec {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]turnRec(nil), l.events...)
}

// heardText reports whether an event of kind whose text contains sub was
// heard.
func (l *listener) heardText(kind agent.SayKind, sub string) bool {
	for _, r := range l.heard() {
		if r.ev.Kind == kind && strings.Contains(r.ev.Text, sub) {
			return true
		}
	}
	return false
}
