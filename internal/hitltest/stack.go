package hitltest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/internal/clock"
)

// Quiet is a logger that drops everything.
var Quiet = slog.New(slog.DiscardHandler)

// Config is what a Stack is built of; the zero value of a field is its
// default.
type Config struct {
	Store approval.Store   // default: a new memstore
	Model agent.Model      // default: a new *Model
	Tools []agent.Tool     // the registry's tools
	Audit approval.Auditor // default: NopAudit
	Clock clock.Clock      // the engine's clock (default: the wall clock)
	// Policy, when set, is the approval policy (default:
	// approval.DefaultPolicyConfig()).
	Policy *approval.PolicyConfig
	// Loop, when set, changes the loop's configuration before it is built.
	Loop func(*agent.LoopConfig)
	// Lang is the engine's language ("zh", "en"; default English), as
	// cmd/bot sets it and the channels' from approval.lang.
	Lang string
	// Assemble builds the engine and the loop from the configurations New
	// made (the engine's Notifier and the loop's Engine and Speaker left
	// empty), with the router in front of them: a call of
	// channels.Assemble, the function `bot serve` builds its stack with,
	// that keeps the router it returns. Required: a rig wired otherwise
	// than production is a defect. (hitltest cannot import channels
	// itself: the channels package's own tests use hitltest.)
	Assemble func(approval.EngineConfig, agent.LoopConfig) (*approval.Engine, *agent.Loop, error)
}

// Stack is a started approval engine and an agent loop on one store. They
// stop when the test ends: the loop is closed, then the context the engine
// runs in is cancelled.
type Stack struct {
	Store  approval.Store
	Tools  *agent.Registry
	Engine *approval.Engine
	Loop   *agent.Loop
	Model  agent.Model
	// Ctx is the context the engine runs in; it ends with the test.
	Ctx context.Context
}

// New builds and starts a Stack (the engine polls hourly and the loop's
// slow notice is an hour away, so neither speaks unless a test asks).
func New(t testing.TB, c Config) *Stack {
	t.Helper()
	s := &Stack{Store: c.Store, Model: c.Model, Tools: agent.NewRegistry()}
	if s.Store == nil {
		s.Store = memstore.New(memstore.Options{})
	}
	if s.Model == nil {
		s.Model = &Model{}
	}
	var aud approval.Auditor = NopAudit{}
	if c.Audit != nil {
		aud = c.Audit
	}
	if err := s.Tools.Register(c.Tools...); err != nil {
		t.Fatal(err)
	}
	pc := approval.DefaultPolicyConfig()
	if c.Policy != nil {
		pc = *c.Policy
	}
	pol, err := approval.NewPolicy(pc)
	if err != nil {
		t.Fatal(err)
	}
	// As cmd/bot wires it: edits are checked with the registry and policy.
	ec := approval.EngineConfig{Store: s.Store, Dispatcher: s.Tools, Audit: aud,
		Logger: Quiet, PollInterval: time.Hour, Clock: c.Clock, Lang: c.Lang, Text: approval.DefaultOutcomeText(c.Lang),
		Editor: agent.EditChecker{Tools: s.Tools, Policy: func() *approval.Policy { return pol }}}
	lc := agent.LoopConfig{Model: s.Model, Tools: s.Tools, Policy: func() *approval.Policy { return pol },
		History: agent.NewMemoryHistory(), Logger: Quiet, SlowNotice: time.Hour}
	if c.Loop != nil {
		c.Loop(&lc)
	}
	if c.Assemble == nil {
		t.Fatal("hitltest.New: Config.Assemble is required (a call of channels.Assemble)")
	}
	eng, loop, err := c.Assemble(ec, lc)
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last first: the loop closes, then the engine's context ends.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	t.Cleanup(func() { loop.Close(context.Background()) })
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s.Engine, s.Loop, s.Ctx = eng, loop, ctx
	return s
}
