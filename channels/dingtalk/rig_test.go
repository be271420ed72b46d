package dingtalk

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/dingtalk/dingtalktest"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/hitltest"
	"github.com/hitlbot/hitlbot/internal/waitfor"
)

var quiet = slog.New(slog.DiscardHandler)

// rig is the DingTalk channel behind a real router, approval engine and
// agent loop, against a fake DingTalk.
type rig struct {
	fake   *dingtalktest.Fake
	ch     *Channel
	router *channels.Router
	engine *approval.Engine
	erase  *hitltest.Tool
	model  *hitltest.Model
	// clicks is the clock of the channel's click wait and of the fake's
	// 2 s callback deadline: it moves only when a test advances it, so a
	// click is answered "processing" when the test says, and the
	// deadline measures the time the channel waited, not the machine's
	// load.
	clicks *clock.Fake
}

func newRig(t *testing.T, mod func(*Config)) *rig {
	t.Helper()
	return newRigStore(t, mod, memstore.New(memstore.Options{}))
}

// newRigStore is newRig on store (shared by the router and the engine).
func newRigStore(t *testing.T, mod func(*Config), store approval.Store) *rig {
	t.Helper()
	return newRigModel(t, mod, store, nil)
}

// newRigModel is newRigStore whose agent answers with m (nil: the rig's
// scripted hitltest.Model).
func newRigModel(t *testing.T, mod func(*Config), store approval.Store, m agent.Model) *rig {
	t.Helper()
	return newRigWith(t, mod, store, m, nil, nil)
}

// newRigPolicy is newRigModel under the approval policy pc (nil: the
// default one).
func newRigPolicy(t *testing.T, mod func(*Config), store approval.Store, m agent.Model, pc *approval.PolicyConfig) *rig {
	t.Helper()
	return newRigWith(t, mod, store, m, pc, nil)
}

// newRigLoop is newRigModel whose agent loop's configuration loopCfg changes
// (when not nil) before the loop is built.
func newRigLoop(t *testing.T, mod func(*Config), store approval.Store, m agent.Model, loopCfg func(*agent.LoopConfig)) *rig {
	t.Helper()
	return newRigWith(t, mod, store, m, nil, loopCfg)
}

// newRigWith is newRigModel under the approval policy pc (nil: the
// default) with the loop's configuration changed by loopCfg (nil: none).
func newRigWith(t *testing.T, mod func(*Config), store approval.Store, m agent.Model, pc *approval.PolicyConfig, loopCfg func(*agent.LoopConfig)) *rig {
	t.Helper()
	return newRigClock(t, mod, store, m, pc, loopCfg, nil)
}

// newRigClock is newRigWith with the engine on clk (nil: the wall clock).
func newRigClock(t *testing.T, mod func(*Config), store approval.Store, m agent.Model, pc *approval.PolicyConfig, loopCfg func(*agent.LoopConfig), clk clock.Clock) *rig {
	t.Helper()
	return newRigReminding(t, mod, store, m, pc, loopCfg, clk, nil)
}

// newRigReminding is newRigClock with the engine's reminders
// (approval.EngineConfig.Reminders; nil: none).
func newRigReminding(t *testing.T, mod func(*Config), store approval.Store, m agent.Model, pc *approval.PolicyConfig, loopCfg func(*agent.LoopConfig), clk clock.Clock, reminders []float64) *rig {
	t.Helper()
	erase := hitltest.NewTool("erase", approval.EffectDestructive)
	erase.About = "erases a target"
	g := &rig{fake: dingtalktest.New(t), erase: erase, model: &hitltest.Model{}}
	g.clicks = clock.NewFake(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC))
	g.fake.SetCallbackClock(g.clicks.Now)
	cfg := Config{ClientID: "app-key", ClientSecret: "app-secret", CardTemplateID: "tpl.schema",
		APIBaseURL: g.fake.URL(), WebhookBaseURL: g.fake.URL(), Lang: "en", HTTPTimeout: 5 * time.Second, Clock: g.clicks}
	if mod != nil {
		mod(&cfg)
	}
	ch, err := New(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	var model agent.Model = g.model
	if m != nil {
		model = m
	}
	st := hitltest.New(t, hitltest.Config{Store: store, Model: model, Tools: []agent.Tool{g.erase}, Policy: pc, Loop: loopCfg, Clock: clk, Lang: "en",
		Engine: func(ec *approval.EngineConfig) { ec.Reminders = reminders }})
	st.Register(t, ch)
	st.Start(t)
	if cfg.Mode != ModeHTTP {
		g.fake.WaitConn(5 * time.Second)
	}
	g.ch, g.router, g.engine = ch, st.Router, st.Engine
	return g
}

// eventually polls cond until it holds (waitfor.True).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitfor.True(t, what, cond)
}

var msgSeq atomic.Int64

func nextID() string { return fmt.Sprintf("msg-%d", msgSeq.Add(1)) }
