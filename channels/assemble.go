package channels

import (
	"context"
	"errors"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
)

// Parts are what Assemble builds the approval engine, the agent loop and
// the router of: each one's configuration, without the references
// between them, which Assemble makes (the engine's Notifier, the loop's
// Engine and Speaker, the router's Decider, Submitter and Relay). A Parts
// that sets one of those is refused: the circle is closed in one place.
type Parts struct {
	// Engine is the engine's configuration (store, dispatcher, audit
	// trail, language, timeouts…), Notifier left empty.
	Engine approval.EngineConfig
	// Loop is the loop's configuration (model, tools, policy, history,
	// session locker…), Engine and Speaker left empty.
	Loop agent.LoopConfig
	// Router is the router's configuration (store, replies, scope,
	// language, metrics…), Decider, Submitter and Relay left empty.
	Router RouterConfig
	// Notifier, when set, wraps the relay before the engine gets it as
	// its Notifier (cmd/bot: the metrics notifier). Whatever it returns
	// is an approval.Notifier, so it forwards every capability the
	// engine uses; nil is refused.
	Notifier func(approval.Notifier) approval.Notifier
}

// Assembly is what Assemble built: the engine (not started), the loop and
// the router (no channel registered, not started).
type Assembly struct {
	Engine *approval.Engine
	Loop   *agent.Loop
	Router *Router
}

// Assemble builds the engine, the loop and the router of p in the one
// order their references allow (see Relay): a relay, the engine with the
// relay (wrapped by p.Notifier) as its Notifier, the loop with the engine
// and the relay as its Speaker, the router with the engine, the loop and
// the relay. `bot serve`, `bot chat` and the tests of every channel build
// their stack with it, so what is tested is wired as what ships.
//
// The caller registers the channels, starts the engine (Start and its
// sweeper) and then the router.
func Assemble(p Parts) (*Assembly, error) {
	switch {
	case p.Engine.Notifier != nil || p.Engine.Ended != nil || p.Loop.Resumptions != nil:
		return nil, errors.New("channels.Assemble: Parts.Engine.Notifier and Ended and Parts.Loop.Resumptions must be empty: the engine's notifier is the relay (wrap it with Parts.Notifier), and Assemble joins the engine's Ended to the loop")
	case p.Loop.Engine != nil || p.Loop.Speaker != nil:
		return nil, errors.New("channels.Assemble: Parts.Loop.Engine and Speaker must be empty: they are the engine and the relay")
	case p.Router.Decider != nil || p.Router.Submitter != nil || p.Router.Relay != nil:
		return nil, errors.New("channels.Assemble: Parts.Router.Decider, Submitter and Relay must be empty: they are the engine, the loop and the relay")
	}
	relay := NewRelay()
	var n approval.Notifier = relay
	if p.Notifier != nil {
		if n = p.Notifier(relay); n == nil {
			return nil, errors.New("channels.Assemble: Parts.Notifier returned no notifier")
		}
	}
	resumptions := agent.NewResumptions()
	ec := p.Engine
	ec.Notifier, ec.Ended = n, resumptions
	eng, err := approval.NewEngine(ec)
	if err != nil {
		return nil, err
	}
	lc := p.Loop
	lc.Engine, lc.Speaker, lc.Resumptions = eng, relay, resumptions
	loop, err := agent.NewLoop(lc)
	if err != nil {
		return nil, err
	}
	rc := p.Router
	rc.Decider, rc.Submitter, rc.Relay = eng, loop, relay
	r, err := NewRouter(rc)
	if err != nil {
		loop.Close(context.Background()) // no turn has started: it ends at once
		return nil, err
	}
	return &Assembly{Engine: eng, Loop: loop, Router: r}, nil
}
