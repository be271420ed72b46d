package channels_test

import (
	"context"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	. "github.com/hitlbot/hitlbot/channels"
)

// TestTurnListenerHearsTheWholeTurn: a channel that listens for turn
// events (the HTTP API) hears everything a turn says as a TurnEvent for
// the turn's message, in the order said (awaiting, the decided call's
// tool_result, the answer, turn_ended last), and nothing of the turn
// through Send: one vocabulary for a turn (issue 27), not a turn event
// for where it stands and an Outgoing for what it says.
func TestTurnListenerHearsTheWholeTurn(t *testing.T) {
	var l *listener
	g := newRigAs(t, memstore.New(memstore.Options{}), nil, nil, func(f *fakeChannel) Channel { l = &listener{fakeChannel: f}; return l })
	m := msg("alice", "erase orders")
	g.send(t, m)
	a := g.awaitPending(t)
	card := g.ch.shownCards()[0].ref
	if _, err := g.router.HandleCardAction(context.Background(), CardAction{Channel: "fake", ChatID: "c1", MessageID: card.MessageID,
		UserID: "alice", ApprovalID: a.ID, Verb: approval.Approve, PayloadSHA256: a.PayloadSHA256}); err != nil {
		t.Fatal(err)
	}
	end := l.endOf(t, m.MessageID)
	if end.Kind != agent.SayTurnEnded || end.Result == nil || end.Result.Text == "" {
		t.Fatalf("the turn ended with %+v", end)
	}
	var kinds []agent.SayKind
	var result, answer agent.Say
	for _, r := range l.heard() {
		if r.msgID != m.MessageID {
			continue
		}
		kinds = append(kinds, r.ev.Kind)
		switch r.ev.Kind {
		case agent.SayToolResult:
			result = r.ev.Say
		case agent.SayAnswer:
			answer = r.ev.Say
		}
	}
	want := []agent.SayKind{agent.SayAwaiting, agent.SayToolResult, agent.SayAnswer, agent.SayTurnEnded}
	if len(kinds) != len(want) {
		t.Fatalf("the listener heard %v; want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("the listener heard %v; want %v", kinds, want)
		}
	}
	if result.Tool != "erase" || result.Text == "" || len(result.Args) == 0 || answer.Text != end.Result.Text {
		t.Fatalf("tool_result %+v, answer %+v, turn_ended %+v", result, answer, end.Result)
	}
	if said := g.ch.texts(); len(said) != 0 {
		t.Fatalf("the turn was also said through Send: %v", said)
	}
}
