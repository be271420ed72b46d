package model

import (
	"testing"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
)

// TestRulesAnswersAnUpdate: when the turn goes on after an update on an
// earlier approval (a system message last: a resolution of its frozen
// call), the rules model reports what became of the calls, and never reads
// the user's message again (which would ask for the same call once more).
func TestRulesAnswersAnUpdate(t *testing.T) {
	m := mustRules(t, RulesConfig{})
	call := agent.ToolCall{ID: "rules-1", Name: "task_delete", Args: []byte(`{"id":1}`)}
	got := complete(t, m, builtinToolSpecs,
		agent.Message{Role: agent.RoleUser, Content: "delete task 1"},
		agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{call}},
		agent.Message{Role: agent.RoleTool, ToolCallID: "rules-1", Status: approval.StatusExecuted,
			Content: "Done: its result had been unknown; bob checked by hand and recorded that it took effect."},
		agent.Message{Role: agent.RoleAssistant, Content: "task_delete: the result is unknown"},
		agent.Message{Role: agent.RoleSystem, Content: "Update on the earlier approval ap_x: bob resolved it as done."},
	)
	if len(got.ToolCalls) != 0 || got.Content != "task_delete: Done: its result had been unknown; bob checked by hand and recorded that it took effect." {
		t.Fatalf("answer = %+v", got)
	}
	// Newer messages came since: the update itself is the answer.
	got = complete(t, m, builtinToolSpecs,
		agent.Message{Role: agent.RoleUser, Content: "delete task 1"},
		agent.Message{Role: agent.RoleAssistant, Content: "…"},
		agent.Message{Role: agent.RoleUser, Content: "list tasks"},
		agent.Message{Role: agent.RoleAssistant, Content: "1 buy milk"},
		agent.Message{Role: agent.RoleSystem, Content: "Update on the earlier approval ap_x: bob resolved it as abandoned."},
	)
	if len(got.ToolCalls) != 0 || got.Content != "Update on the earlier approval ap_x: bob resolved it as abandoned." {
		t.Fatalf("answer = %+v", got)
	}
}
