package channels_test

import (
	"context"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	. "github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/words"
)

// When the store cannot set a message's de-duplication mark, the message
// is not processed (fail closed: processed twice it would run a turn
// twice) and its sender is told to send it again; a message with no id
// to mark goes on (nothing to de-duplicate), and so does a click (fail
// open: the engine's atomic claim decides it once however often it
// comes). docs/ARCHITECTURE.md, "When a part is down".
func TestDedupWhenTheStoreIsDown(t *testing.T) {
	store := memstore.New(memstore.Options{})
	g := newRig(t, store, func(c *RouterConfig) { c.Store = seenFails{store} })

	g.send(t, msg("alice", "still here"))
	if !g.ch.hasText("notice", words.Text(words.EN, words.RouterUnavailable)) {
		t.Fatalf("the sender was not told: %v", g.ch.texts())
	}
	noID := msg("alice", "no id")
	noID.MessageID = ""
	g.send(t, noID)
	eventually(t, "the message without an id is answered", func() bool { return g.ch.hasText("answer", "echo: no id") })
	if n := g.model.Seen("still here"); n != 0 {
		t.Fatalf("a message whose mark could not be set reached the model %d times", n)
	}

	// A click the router marks itself (a Decider that is no OnceDecider)
	// is decided all the same.
	reg := NewRegistry()
	pres, err := NewPresenter(PresenterConfig{Registry: reg, Store: seenFails{store}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	dec := &fakeDecider{approvals: map[approval.ID]*approval.Approval{}, pending: map[approval.SessionKey]*approval.Approval{},
		outcome: approval.Outcome{Status: approval.StatusExecuted}}
	r, err := NewRouter(RouterConfig{Registry: reg, Presenter: pres, Decider: dec, Submitter: &fakeSubmitter{}, Store: seenFails{store}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(newFake("fake")); err != nil {
		t.Fatal(err)
	}
	id := approval.NewID("fake:c1")
	o, err := r.HandleCardAction(context.Background(), CardAction{Channel: "fake", ChatID: "c1", MessageID: "card-1", EventID: "click-1",
		UserID: "bob", ApprovalID: id, Verb: approval.Approve, PayloadSHA256: "sha"})
	if err != nil || o.Status != approval.StatusExecuted || len(dec.decided()) != 1 {
		t.Fatalf("click with the store's marks down: %+v, %v; decided %d", o, err, len(dec.decided()))
	}
}
