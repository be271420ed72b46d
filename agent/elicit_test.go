package agent_test

import (
	"encoding/json"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
)

// TestElicitationIsNoTurnsToResume: an MCP server's question (asked
// while a tool ran, approval.Engine.Elicit) ends like any approval, and
// the engine tells the loop; no turn waits on it in the history, so the
// loop resumes nothing for it (else the chat would be told a turn was
// lost). An approval of a turn, told after it, is resumed: the first and
// only resumption is that one.
func TestElicitationIsNoTurnsToResume(t *testing.T) {
	r := agent.NewResumptions()
	h := newHarness(t, callThenSummarise(), func(c *agent.LoopConfig) { c.Resumptions = r })
	const session = "test:el"
	args, err := approval.ElicitArgs("Deploy?", map[string]any{"properties": map[string]any{"env": map[string]any{"type": "string"}}})
	if err != nil {
		t.Fatal(err)
	}
	q := &approval.Approval{ID: approval.NewID(session), Session: session, Channel: "test", ChatID: session, Requester: "alice",
		Calls: []approval.Call{{Tool: approval.ElicitTool("t"), Args: args}}}
	turn := &approval.Approval{ID: approval.NewID(session), Session: session, Channel: "test", ChatID: session, Requester: "alice",
		Calls: []approval.Call{{Tool: "erase", Args: json.RawMessage(`{"target":"x"}`)}}}
	if !q.IsElicitation() || turn.IsElicitation() {
		t.Fatal("IsElicitation")
	}
	r.Ended(q, approval.Outcome{Status: approval.StatusRejected}, false)
	r.Ended(turn, approval.Outcome{Status: approval.StatusRejected}, false)
	if got := h.nextResumed(t); got.to.Resumed != turn.ID {
		t.Fatalf("resumed %s first, want the turn's %s (not the question %s)", got.to.Resumed, turn.ID, q.ID)
	}
}
