package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/agent/model"
	"github.com/hitlbot/hitlbot/approval"
)

// rulesCallLoopTests: "/call" through the loop with the rules model and
// the default policy. verb is how the approval is decided; empty means no
// approval may be asked for.
var rulesCallLoopTests = []struct {
	name   string
	msg    string
	verb   approval.Verb
	status approval.Status // of the turn's one action
	text   string          // the turn's answer starts with it
	runs   int64           // runs of erase (look for the read)
}{
	{name: "destructive: asks, runs once after approval", msg: `/call erase {"target":"orders"}`, verb: approval.Approve,
		status: approval.StatusExecuted, text: "erase: erase done (run 1)", runs: 1},
	{name: "destructive: asks, never runs after rejection", msg: "/call erase\n{\"target\": \"orders\"}", verb: approval.Reject,
		status: approval.StatusRejected, text: "erase was rejected, so it did not run.", runs: 0},
	{name: "arguments the schema refuses: no card, the answer says so", msg: `/call erase {"target":5}`,
		status: "invalid", text: "erase: Error:", runs: 0},
	{name: "a LOW read runs at once", msg: `/call look {"target":"x"}`,
		status: approval.StatusExecuted, text: "look: look done (run 1)", runs: 1},
}

func TestRulesCallThroughTheLoop(t *testing.T) {
	for _, test := range rulesCallLoopTests {
		t.Run(test.name, func(t *testing.T) {
			rules, err := model.NewRules(model.RulesConfig{}, model.RulesDeps{})
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, rules)
			ch := h.submit(t, "s1", test.msg)
			if test.verb != "" {
				a := h.nextApproval(t)
				if a.Tool() != "erase" || a.Risk != approval.RiskHigh || a.State != approval.StatePending || string(a.Calls[0].Args) != `{"target":"orders"}` {
					t.Fatalf("approval = %+v", a)
				}
				if n := h.del.Runs.Load(); n != 0 {
					t.Fatalf("erase ran %d times before anyone decided", n)
				}
				h.decide(t, a, test.verb)
			}
			r := result(t, ch)
			if test.verb == "" && len(h.shown) != 0 {
				t.Fatal("an approval was asked for")
			}
			runs := h.del.Runs.Load()
			if strings.HasPrefix(test.msg, "/call look") {
				runs = h.read.Runs.Load()
			}
			if runs != test.runs || !strings.HasPrefix(r.Text, test.text) || len(r.Actions) != 1 || r.Actions[0].Status != test.status {
				t.Fatalf("runs %d, answer %q, actions %+v; want runs %d, an answer starting %q, one action %s", runs, r.Text, r.Actions, test.runs, test.text, test.status)
			}
			if test.verb == "" {
				return
			}
			// The turn waited for the approval before it went on.
			h.speak.mu.Lock()
			var kinds []agent.SayKind
			for _, e := range h.speak.events {
				kinds = append(kinds, e.Kind)
			}
			h.speak.mu.Unlock()
			if len(kinds) == 0 || kinds[0] != agent.SayAwaiting {
				t.Fatalf("events %v, want the turn to wait first", kinds)
			}
			conv, _ := h.history.Load(context.Background(), "s1")
			if len(conv.Suspended) != 0 {
				t.Fatalf("history = %+v", conv)
			}
		})
	}
}
