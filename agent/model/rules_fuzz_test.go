package model

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
)

// FuzzRules checks that the rules model never panics, always answers, and
// that every call it makes has a confidence in [0, 1] and arguments that
// are a JSON object. The second input is used as a tool result, to fuzz
// the summary turn too.
func FuzzRules(f *testing.F) {
	for _, test := range rulesTests {
		f.Add(test.in, "")
	}
	for _, test := range configTests {
		f.Add(test.in, "Rejected by alice")
	}
	f.Add("create a task: \xff\xfe", `{"status":"expired"}`)
	f.Add("task: \"\"", "已拒绝")
	f.Add("/sql '", "")
	f.Add("remind me to", "status: cancelled")

	m, err := NewRules(RulesConfig{Patterns: configPatterns}, RulesDeps{})
	if err != nil {
		f.Fatal(err)
	}
	tools := append([]agent.ToolSpec{{Name: "shout"}, {Name: "deploy"}, {Name: "pay"}, {Name: "flag"}, {Name: "size"}}, builtinToolSpecs...)
	f.Fuzz(func(t *testing.T, text, result string) {
		ctx := context.Background()
		resp, err := m.Complete(ctx, agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: text}}, Tools: tools})
		if err != nil {
			t.Fatalf("Complete(%q): %v", text, err)
		}
		msg := resp.Message
		if msg.Role != agent.RoleAssistant {
			t.Fatalf("%q: role %q", text, msg.Role)
		}
		if msg.Content == "" && len(msg.ToolCalls) == 0 {
			t.Fatalf("%q: empty answer", text)
		}
		for _, c := range msg.ToolCalls {
			if c.Confidence < 0 || c.Confidence > 1 || c.Confidence != c.Confidence {
				t.Errorf("%q: confidence %v", text, c.Confidence)
			}
			var obj map[string]any
			if err := json.Unmarshal(c.Args, &obj); err != nil || obj == nil {
				t.Errorf("%q: args %q are not a JSON object: %v", text, c.Args, err)
			}
			if c.ID != "rules-1" || c.Name == "" {
				t.Errorf("%q: call %+v", text, c)
			}
		}

		// The summary turn: the call's result comes back.
		msgs := []agent.Message{{Role: agent.RoleUser, Content: text}, msg, {Role: agent.RoleTool, ToolCallID: "rules-1", Content: result}}
		resp, err = m.Complete(ctx, agent.Request{Messages: msgs, Tools: tools})
		if err != nil {
			t.Fatalf("summary of %q: %v", result, err)
		}
		if len(resp.Message.ToolCalls) != 0 || resp.Message.Content == "" {
			t.Errorf("summary of %q: %+v, want a non-empty text", result, resp.Message)
		}
	})
}
