package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/hitltest"
)

// rowsTool is a write whose dry run affects 5 rows for target "few" and
// 29 for anything else.
type rowsTool struct{ *hitltest.Tool }

func (t rowsTool) Assess(_ context.Context, args json.RawMessage) (approval.Blast, approval.Words) {
	rows := int64(29)
	if strings.Contains(string(args), `"few"`) {
		rows = 5
	}
	return approval.Blast{Rows: rows, Measured: true}, approval.Words{EN: "rows " + string(args), ZH: "行 " + string(args)}
}

// TestEditCheckerMeasuresAgain: the edited arguments are validated against
// the tool's schema, canonicalised, measured again (the blast radius), and
// given the policy's risk and approver rule: an edit to more rows is HIGH
// with its reason, and under high_needs_other not for the requester.
func TestEditCheckerMeasuresAgain(t *testing.T) {
	reg := agent.NewRegistry()
	tool := rowsTool{hitltest.NewTool("bulk", approval.EffectWrite)}
	if err := reg.Register(tool); err != nil {
		t.Fatal(err)
	}
	pc := approval.DefaultPolicyConfig()
	pc.HighNeedsOther = true
	pc.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverChat}}
	pol, err := approval.NewPolicy(pc)
	if err != nil {
		t.Fatal(err)
	}
	ec := agent.EditChecker{Tools: reg, Policy: func() *approval.Policy { return pol }}
	a := &approval.Approval{Session: "test:s", Requester: "alice"}
	c := approval.Call{Tool: "bulk", Args: json.RawMessage(`{"target":"few"}`)}

	few, err := ec.CheckEdit(context.Background(), a, c, json.RawMessage(` { "target" : "few" } `))
	if err != nil || string(few.Args) != `{"target":"few"}` || few.Risk != approval.RiskMedium || few.Summary != `rows {"target":"few"}` ||
		few.SummaryZH != `行 {"target":"few"}` {
		t.Fatalf("few: %+v %v", few, err)
	}
	many, err := ec.CheckEdit(context.Background(), a, c, json.RawMessage(`{"target":"all of them"}`))
	if err != nil || many.Risk != approval.RiskHigh || many.Reason != "affects 29 rows, more than 20" || !many.Approvers.NotRequester ||
		many.Approvers.Allows("alice", "alice", approval.Approve, true) {
		t.Fatalf("many: %+v %v", many, err)
	}
	for _, bad := range []string{`{"target":5}`, `[1]`, `{"target":"x","other":1}`} {
		if _, err := ec.CheckEdit(context.Background(), a, c, json.RawMessage(bad)); err == nil {
			t.Fatalf("%s accepted", bad)
		}
	}
	if _, err := ec.CheckEdit(context.Background(), a, approval.Call{Tool: "ci-claude/Bash"}, json.RawMessage(`{}`)); err == nil {
		t.Fatal("another agent's call accepted")
	}
}
