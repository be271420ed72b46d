package hitltest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/channels"
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
	// Engine, when set, changes the engine's configuration before it is
	// built (as cmd/bot wraps the dispatcher and editor with gate's for
	// other agents' calls: hitltest cannot import gate, whose tests use it).
	Engine func(*approval.EngineConfig)
	// Loop, when set, changes the loop's configuration before it is built.
	Loop func(*agent.LoopConfig)
	// Lang is the language of the engine and of the router and presenter
	// ("zh", "en"; default English), as cmd/bot sets both from
	// approval.lang.
	Lang string
	// Router, when set, changes the router's configuration (the store,
	// Lang and a quiet logger) before the stack is assembled; the
	// presenter is configured from it too (channels.Parts.Router).
	Router func(*channels.RouterConfig)
}

// Stack is the stack `bot serve` runs, as channels.Assemble built it, on
// one store: its engine started, its router not yet (Start). It stops
// when the test ends: the router is closed (when started), then the loop,
// then the context the engine runs in is cancelled.
type Stack struct {
	Store     approval.Store
	Tools     *agent.Registry
	Registry  *channels.Registry
	Presenter *channels.Presenter
	Engine    *approval.Engine
	Loop      *agent.Loop
	Router    *channels.Router
	Model     agent.Model
	// Ctx is the context the engine runs in; it ends with the test.
	Ctx context.Context
}

// New assembles a Stack and starts its engine (it polls hourly and the
// loop's slow notice is an hour away, so neither speaks unless a test
// asks). No channel is registered and the router is not started: the
// test registers its channels (Register), which may need the presenter
// (their Config.Views), then starts the router (Start).
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
	if c.Engine != nil {
		c.Engine(&ec)
	}
	if c.Loop != nil {
		c.Loop(&lc)
	}
	rc := channels.RouterConfig{Store: s.Store, Lang: c.Lang, Logger: Quiet}
	if c.Router != nil {
		c.Router(&rc)
	}
	as, err := channels.Assemble(channels.Parts{Engine: ec, Loop: lc, Router: rc})
	if err != nil {
		t.Fatal(err)
	}
	eng, loop := as.Engine, as.Loop
	// Cleanups run last first: the loop closes, then the engine's context ends.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	t.Cleanup(func() { loop.Close(context.Background()) })
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s.Registry, s.Presenter, s.Engine, s.Loop, s.Router, s.Ctx = as.Registry, as.Presenter, eng, loop, as.Router, ctx
	return s
}

// Register registers chs on the stack's registry of channels.
func (s *Stack) Register(t testing.TB, chs ...channels.Channel) {
	t.Helper()
	for _, ch := range chs {
		if err := s.Registry.Register(ch); err != nil {
			t.Fatal(err)
		}
	}
}

// Start starts the router (and so its channels) in the engine's context;
// when the test ends it is closed first, within ten seconds, and an error
// closing it fails the test.
func (s *Stack) Start(t testing.TB) {
	t.Helper()
	if err := s.Router.Start(s.Ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Engine.EndElicitations() // as bot serve does before the channels close
		if err := s.Router.Close(ctx); err != nil {
			t.Errorf("closing the router: %v", err)
		}
	})
}

// Views returns the views of a presenter on an empty store, for a chat
// that never finds an approval waiting (web and cli refuse a Config
// without them).
func Views(t testing.TB) channels.Views {
	t.Helper()
	p, err := channels.NewPresenter(channels.PresenterConfig{Registry: channels.NewRegistry(), Store: memstore.New(memstore.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
