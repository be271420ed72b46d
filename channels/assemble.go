package channels

import (
	"context"
	"errors"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
)

// Parts are what Assemble builds the registry, the presenter, the approval
// engine, the agent loop and the router of: each one's configuration,
// without the references between them, which Assemble makes (the engine's
// Notifier and Ended, the loop's Engine, Speaker and Resumptions, the
// router's Registry, Presenter, Decider and Submitter). A Parts that sets
// one of those is refused: the parts are joined in one place.
type Parts struct {
	// Engine is the engine's configuration (store, dispatcher, audit
	// trail, language, timeouts…), Notifier and Ended left empty.
	Engine approval.EngineConfig
	// Loop is the loop's configuration (model, tools, policy, history,
	// session locker…), Engine, Speaker and Resumptions left empty.
	Loop agent.LoopConfig
	// Router is the router's configuration (store, replies, scope,
	// language, metrics…), Registry, Presenter, Decider and Submitter
	// left empty. The presenter is configured from it too: the same
	// store, scope, language, zone, outcome words and logger.
	Router RouterConfig
	// Notifier, when set, wraps the presenter before the engine gets it
	// as its Notifier (cmd/bot: the metrics notifier). Whatever it returns
	// is an approval.Notifier, so it forwards every capability the
	// engine uses; nil is refused.
	Notifier func(approval.Notifier) approval.Notifier
}

// Assembly is what Assemble built: the registry (no channel registered),
// the presenter, the engine (not started), the loop and the router (not
// started).
type Assembly struct {
	Registry  *Registry
	Presenter *Presenter
	Engine    *approval.Engine
	Loop      *agent.Loop
	Router    *Router
}

// Assemble builds the parts of p in one order, each given what it needs
// when it is made, so nothing is bound late:
//
//  1. the registry of channels (NewRegistry)
//  2. the presenter, with the registry and the store (NewPresenter)
//  3. the engine, with the presenter (wrapped by p.Notifier) as its
//     Notifier and an agent.Resumptions as its Ended listener
//  4. the loop, with the engine, the presenter as its Speaker and the
//     same Resumptions: an approval that ends on this engine resumes its
//     turn through it; settling cards resumes none
//  5. the router, with the registry, the presenter, the engine as its
//     Decider and the loop as its Submitter
//
// `bot serve`, `bot chat` and the tests of every channel build their
// stack with it, so what is tested is wired as what ships. The caller
// registers the channels on the registry, starts the engine (Start and
// its sweeper) and then the router.
func Assemble(p Parts) (*Assembly, error) {
	switch {
	case p.Engine.Notifier != nil || p.Engine.Ended != nil || p.Loop.Resumptions != nil:
		return nil, errors.New("channels.Assemble: Parts.Engine.Notifier and Ended and Parts.Loop.Resumptions must be empty: the engine's notifier is the presenter (wrap it with Parts.Notifier), and Assemble joins the engine's Ended to the loop")
	case p.Loop.Engine != nil || p.Loop.Speaker != nil:
		return nil, errors.New("channels.Assemble: Parts.Loop.Engine and Speaker must be empty: they are the engine and the presenter")
	case p.Router.Registry != nil || p.Router.Presenter != nil || p.Router.Decider != nil || p.Router.Submitter != nil:
		return nil, errors.New("channels.Assemble: Parts.Router.Registry, Presenter, Decider and Submitter must be empty: Assemble makes them")
	}
	reg := NewRegistry()
	rc := p.Router
	pres, err := NewPresenter(PresenterConfig{Registry: reg, Store: rc.Store, Scope: rc.Scope, Lang: rc.Lang, Zone: rc.Zone,
		Text: rc.Text, Logger: rc.Logger})
	if err != nil {
		return nil, err
	}
	var n approval.Notifier = pres
	if p.Notifier != nil {
		if n = p.Notifier(pres); n == nil {
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
	lc.Engine, lc.Speaker, lc.Resumptions = eng, pres, resumptions
	loop, err := agent.NewLoop(lc)
	if err != nil {
		return nil, err
	}
	rc.Registry, rc.Presenter, rc.Decider, rc.Submitter = reg, pres, eng, loop
	r, err := NewRouter(rc)
	if err != nil {
		loop.Close(context.Background()) // no turn has started: it ends at once
		return nil, err
	}
	return &Assembly{Registry: reg, Presenter: pres, Engine: eng, Loop: loop, Router: r}, nil
}
