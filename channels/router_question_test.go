package channels_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/words"
)

// TestTypedConfirmDoesNotAnswerAQuestion: a typed 确认 while another
// agent's question waits in the chat decides nothing (it has no answer):
// the sender is told where to answer, and the question stays open; a
// typed 取消 declines it.
func TestTypedConfirmDoesNotAnswerAQuestion(t *testing.T) {
	g := newRig(t, nil)
	args := json.RawMessage(`{"questions":[{"question":"Which size?","options":[{"label":"Small"},{"label":"Large"}]}]}`)
	a, err := g.engine.Request(context.Background(), approval.Request{ID: approval.NewID("fake:c1"), Session: "fake:c1", Channel: "fake", ChatID: "c1",
		Requester: "alice", Calls: []approval.Call{{Tool: "ci/AskUserQuestion", Args: args}},
		Verdict: approval.Verdict{NeedsApproval: true, Risk: approval.RiskMedium, Timeout: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	g.send(t, msg("alice", "确认"))
	g.barrier(t, "alice")
	if st := g.state(t, a.ID); st != approval.StatePending || !g.ch.hasText("notice", words.In("en", words.QuestionElsewhere)) {
		t.Fatalf("state %s; texts %v", st, g.ch.texts())
	}
	code, err := g.engine.ChatCode(context.Background(), a)
	if err != nil || code == "" {
		t.Fatalf("code %q, %v", code, err)
	}
	g.send(t, msg("alice", "确认 "+code))
	g.barrier(t, "alice")
	if st := g.state(t, a.ID); st != approval.StatePending {
		t.Fatalf("state after 确认 %s: %s; texts %v", code, st, g.ch.texts())
	}
	g.send(t, msg("alice", "取消"))
	g.drain()
	if st := g.state(t, a.ID); st != approval.StateRejected {
		t.Fatalf("state after 取消: %s", st)
	}
}
