package channels_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	. "github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/hitltest"
	"github.com/hitlbot/hitlbot/internal/waitfor"
)

var quiet = slog.New(slog.DiscardHandler)

// fakeChannel records everything the router asks of a channel.
type fakeChannel struct {
	name     string
	showErr  error
	readyErr error

	mu      sync.Mutex
	sent    []fakeSent
	shown   []fakeShown
	settled []fakeSettled
	started bool
	closed  bool
	next    int
}

type fakeSent struct {
	to  Target
	out Outgoing
}

type fakeShown struct {
	to  Target
	v   cards.View
	ref approval.CardRef
}

type fakeSettled struct {
	ref approval.CardRef
	v   cards.View
}

func newFake(name string) *fakeChannel { return &fakeChannel{name: name} }

func (f *fakeChannel) Name() string { return f.name }
func (f *fakeChannel) Start(context.Context, Handler) error {
	f.mu.Lock()
	f.started = true
	f.mu.Unlock()
	return nil
}
func (f *fakeChannel) Close(context.Context) error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	return nil
}
func (f *fakeChannel) Ready() error { return f.readyErr }

func (f *fakeChannel) Send(_ context.Context, to Target, out Outgoing) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, fakeSent{to, out})
	return nil
}

func (f *fakeChannel) ShowApproval(_ context.Context, to Target, v cards.View) (approval.CardRef, error) {
	if f.showErr != nil {
		return approval.CardRef{}, f.showErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	ref := approval.CardRef{Channel: f.name, ChatID: to.ChatID, MessageID: fmt.Sprintf("%s-card-%d", f.name, f.next)}
	f.shown = append(f.shown, fakeShown{to, v, ref})
	return ref, nil
}

func (f *fakeChannel) SettleApproval(_ context.Context, ref approval.CardRef, v cards.View) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.settled = append(f.settled, fakeSettled{ref, v})
	return nil
}

// reset forgets what was recorded.
func (f *fakeChannel) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent, f.shown, f.settled = nil, nil, nil
}

// texts returns what was sent, each as "kind: text".
func (f *fakeChannel) texts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, s := range f.sent {
		out = append(out, string(s.out.Kind)+": "+s.out.Text)
	}
	return out
}

func (f *fakeChannel) hasText(kind, sub string) bool {
	for _, s := range f.texts() {
		if strings.HasPrefix(s, kind+": ") && strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func (f *fakeChannel) countText(kind, sub string) int {
	n := 0
	for _, s := range f.texts() {
		if strings.HasPrefix(s, kind+": ") && strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

func (f *fakeChannel) settledCards() []fakeSettled {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeSettled(nil), f.settled...)
}

func (f *fakeChannel) shownCards() []fakeShown {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeShown(nil), f.shown...)
}

// eventually polls cond until it holds (waitfor.True).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitfor.True(t, what, cond)
}

// rig is one replica: a router with a fake channel, a real engine and a
// real agent loop on a (possibly shared) store.
type rig struct {
	store  approval.Store
	engine *approval.Engine
	loop   *agent.Loop
	reg    *Registry
	pres   *Presenter
	router *Router
	ch     *fakeChannel
	as     Channel // the channel registered: ch, or what wraps it
	erase  *hitltest.Tool
	model  *hitltest.Model
}

func newRig(t testing.TB, store approval.Store, mod ...func(*RouterConfig)) *rig {
	t.Helper()
	return newRigClock(t, store, nil, mod...)
}

// newRigClock is newRig with engClock as the engine's clock (nil: the wall
// clock), so a test can let approvals expire.
func newRigClock(t testing.TB, store approval.Store, engClock clock.Clock, mod ...func(*RouterConfig)) *rig {
	t.Helper()
	return newRigWith(t, store, engClock, nil, mod...)
}

// newReplicas returns two rigs that are replicas of one deployment: one
// approval store, one history, one session locker, as Redis gives them.
func newReplicas(t testing.TB, store approval.Store, mod ...func(*agent.LoopConfig)) (a, b *rig) {
	t.Helper()
	hist, locker := agent.NewMemoryHistory(), agent.NewMemoryLocker()
	shared := func(c *agent.LoopConfig) {
		c.History, c.Locker = hist, locker
		for _, m := range mod {
			m(c)
		}
	}
	return newRigWith(t, store, nil, shared), newRigWith(t, store, nil, shared)
}

// newRigWith is newRigClock with loopMod (when set) changing the loop's
// configuration.
func newRigWith(t testing.TB, store approval.Store, engClock clock.Clock, loopMod func(*agent.LoopConfig), mod ...func(*RouterConfig)) *rig {
	t.Helper()
	return newRigAs(t, store, engClock, loopMod, nil, mod...)
}

// newRigAs is newRigWith registering as(g.ch) in place of the fake
// channel itself (nil: the fake channel).
func newRigAs(t testing.TB, store approval.Store, engClock clock.Clock, loopMod func(*agent.LoopConfig), as func(*fakeChannel) Channel, mod ...func(*RouterConfig)) *rig {
	t.Helper()
	g := &rig{ch: newFake("fake"), erase: hitltest.NewTool("erase", approval.EffectDestructive), model: &hitltest.Model{}}
	st := hitltest.New(t, hitltest.Config{Store: store, Model: g.model, Tools: []agent.Tool{g.erase}, Clock: engClock, Loop: loopMod, Lang: "en",
		Router: func(c *RouterConfig) {
			for _, m := range mod {
				m(c)
			}
		}})
	var ch Channel = g.ch
	if as != nil {
		ch = as(g.ch)
	}
	st.Register(t, ch)
	g.as = ch
	g.fill(st)
	return g
}

// answered reports whether an answer containing sub was said: in the
// chat, or as an answer event to a channel that listens for turn events
// (which hears nothing of a turn through Send).
func (g *rig) answered(sub string) bool {
	if l, ok := g.as.(*listener); ok {
		return l.heardText(agent.SayAnswer, sub)
	}
	return g.ch.hasText("answer", sub)
}

// fill takes the parts of the rig from st.
func (g *rig) fill(st *hitltest.Stack) {
	g.store, g.engine, g.loop, g.reg, g.pres, g.router = st.Store, st.Engine, st.Loop, st.Registry, st.Presenter, st.Router
}

var msgSeq atomic.Int64

// msg builds a message in chat "c1" of channel "fake".
func msg(user approval.UserID, text string) Message {
	return Message{Channel: "fake", ChatID: "c1", ChatType: "group", UserID: user, Text: text,
		MessageID: fmt.Sprintf("m%d", msgSeq.Add(1)), CreatedAt: time.Now()}
}

func (g *rig) send(t testing.TB, m Message) {
	t.Helper()
	if err := g.router.HandleMessage(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

// pendingApproval asks the agent to erase target as alice and returns the
// approval it waits on.
func (g *rig) pendingApproval(t testing.TB, target string) *approval.Approval {
	t.Helper()
	g.send(t, msg("alice", "erase "+target))
	return g.awaitPending(t)
}

// awaitPending waits for the approval pending in chat c1, its card shown,
// and returns it.
func (g *rig) awaitPending(t testing.TB) *approval.Approval {
	t.Helper()
	var a *approval.Approval
	eventually(t, "an approval is pending", func() bool {
		p, err := g.engine.Pending(context.Background(), "fake:c1")
		if err != nil {
			t.Fatal(err)
		}
		a = p
		return p != nil && len(g.ch.shownCards()) > 0
	})
	return a
}

// state reads an approval's state from the store.
func (g *rig) state(t testing.TB, id approval.ID) approval.State {
	t.Helper()
	a, err := g.engine.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return a.State
}

// drain waits for the typed decisions in flight.
func (g *rig) drain() { g.router.Drain() }
