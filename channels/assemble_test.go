package channels_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	. "github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/internal/hitltest"
)

// assembleRefusals are Parts that set a reference Assemble makes itself.
var assembleRefusals = []struct {
	name string
	edit func(*Parts)
	want string
}{
	{"engine notifier", func(p *Parts) { p.Engine.Notifier = approval.NopNotifier{} }, "Parts.Engine.Notifier and Ended and Parts.Loop.Resumptions must be empty"},
	{"engine ended", func(p *Parts) { p.Engine.Ended = agent.NewResumptions() }, "Parts.Engine.Notifier and Ended and Parts.Loop.Resumptions must be empty"},
	{"loop resumptions", func(p *Parts) { p.Loop.Resumptions = agent.NewResumptions() }, "Parts.Engine.Notifier and Ended and Parts.Loop.Resumptions must be empty"},
	{"loop speaker", func(p *Parts) { p.Loop.Speaker = &Presenter{} }, "Parts.Loop.Engine and Speaker must be empty"},
	{"router registry", func(p *Parts) { p.Router.Registry = NewRegistry() }, "Parts.Router.Registry, Presenter, Decider and Submitter must be empty"},
	{"router presenter", func(p *Parts) { p.Router.Presenter = &Presenter{} }, "Parts.Router.Registry, Presenter, Decider and Submitter must be empty"},
	{"nil wrapper", func(p *Parts) { p.Notifier = func(approval.Notifier) approval.Notifier { return nil } }, "Parts.Notifier returned no notifier"},
}

// assembleParts are the smallest Parts Assemble builds a stack of.
func assembleParts() Parts {
	store := memstore.New(memstore.Options{})
	tools := agent.NewRegistry()
	pol, _ := approval.NewPolicy(approval.DefaultPolicyConfig())
	return Parts{
		Engine: approval.EngineConfig{Store: store, Dispatcher: tools, Audit: hitltest.NopAudit{}, Logger: quiet},
		Loop: agent.LoopConfig{Model: &hitltest.Model{}, Tools: tools, Policy: func() *approval.Policy { return pol },
			History: agent.NewMemoryHistory(), Logger: quiet},
		Router: RouterConfig{Store: store, Logger: quiet},
	}
}

// TestAssembleRefuses: a Parts that sets a reference between the engine,
// the loop and the router (or a wrapper that returns nothing) is refused
// with a sentence naming the field.
func TestAssembleRefuses(t *testing.T) {
	for _, tc := range assembleRefusals {
		t.Run(tc.name, func(t *testing.T) {
			p := assembleParts()
			tc.edit(&p)
			if _, err := Assemble(p); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Assemble = %v, want %q", err, tc.want)
			}
		})
	}
}

// wrapCount is a notifier wrapper that counts what goes through it.
type wrapCount struct {
	approval.Notifier
	progress atomic.Int64
}

func (w *wrapCount) Progress(ctx context.Context, a *approval.Approval) error {
	w.progress.Add(1)
	return w.Notifier.Progress(ctx, a)
}

// TestAssembleWrapsThePresenter: the engine notifies the wrapper
// Parts.Notifier made of the presenter, and through it the presenter: a
// redraw reaches it (here it fails for an approval of no registered
// channel, which only the presenter would say). The loop speaks through
// the same presenter, and the router is given it and the same registry.
func TestAssembleWrapsThePresenter(t *testing.T) {
	p := assembleParts()
	w := &wrapCount{}
	p.Notifier = func(n approval.Notifier) approval.Notifier {
		if _, ok := n.(*Presenter); !ok {
			t.Fatalf("the wrapper got %T, want the presenter", n)
		}
		w.Notifier = n
		return w
	}
	as, err := Assemble(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { as.Loop.Close(context.Background()) })
	if as.Registry == nil || as.Presenter == nil || as.Engine == nil || as.Loop == nil || as.Router == nil ||
		!wired(as.Router, as.Registry, as.Presenter) || w.Notifier != as.Presenter {
		t.Fatalf("assembled %+v", as)
	}
	err = w.Progress(context.Background(), &approval.Approval{ID: "a1", Cards: []approval.CardRef{{Channel: "nowhere", MessageID: "m1"}}})
	if w.progress.Load() != 1 || err == nil || !strings.Contains(err.Error(), "nowhere") {
		t.Fatalf("progress through the wrapper: %d calls, %v (want the presenter's error about channel nowhere)", w.progress.Load(), err)
	}
}

// wired reports whether r was given reg and pres, and pres shows through
// reg.
func wired(r *Router, reg *Registry, pres *Presenter) bool {
	rr, rp := r.Wiring()
	return rr == reg && rp == pres && pres.Shows() == reg
}
