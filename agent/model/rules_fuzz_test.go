package model

import (
	"context"
	"encoding/json"
	"strings"
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
	f.Add(`/call task_list {"a":[1,{}]}`, "")
	f.Add("/tools", "")
	f.Add("/调用 task_create ｛\"title\"：\"x\"｝", "")

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

// FuzzCallCommand sends "/call <tool> <text>" for a fuzzed text and one
// of the offered tools (or one that is not offered), and checks that the
// rules model never panics, always answers, and calls exactly when it
// should: a call only of an offered tool, with confidence 1 and arguments
// that are one JSON object; when the text (trimmed) is empty or one JSON
// object, a call with {} or that text as written; when it is not, a call
// only if folding its full-width punctuation made it one, rune for rune.
func FuzzCallCommand(f *testing.F) {
	for _, test := range callTests {
		if rest, ok := strings.CutPrefix(test.in, "/call "); ok {
			_, args, _ := strings.Cut(strings.TrimSpace(rest), " ")
			f.Add(uint8(0), args)
		}
	}
	f.Add(uint8(1), `{"a":"\u00e9\"}{"}`)
	f.Add(uint8(2), "｛＂a＂：1｝")
	f.Add(uint8(3), "{\"a\":1}\u00a0")
	f.Add(uint8(4), "\xff{}")
	f.Add(uint8(5), `{"a":"\xff"}`)
	m, err := NewRules(RulesConfig{}, RulesDeps{})
	if err != nil {
		f.Fatal(err)
	}
	names := []string{"fs__write_file", "task_list", "task_create", "nope"}
	f.Fuzz(func(t *testing.T, pick uint8, text string) {
		tool := names[int(pick)%len(names)]
		msg := "/call " + tool + " " + text
		resp, err := m.Complete(context.Background(), agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: msg}}, Tools: callToolSpecs})
		if err != nil {
			t.Fatalf("%q: %v", msg, err)
		}
		got := resp.Message
		if got.Role != agent.RoleAssistant || (got.Content == "") == (len(got.ToolCalls) == 0) {
			t.Fatalf("%q: answer %+v, want a text or a call", msg, got)
		}
		jt := strings.TrimSpace(text)
		isObject := func(s string) bool { return json.Valid([]byte(s)) && strings.HasPrefix(s, "{") }
		offered := tool != "nope"
		if !offered {
			if len(got.ToolCalls) != 0 {
				t.Fatalf("%q: called %s, which is not offered", msg, got.ToolCalls[0].Name)
			}
			return
		}
		valid := jt == "" || isObject(jt)
		if valid && len(got.ToolCalls) != 1 {
			t.Fatalf("%q: no call (text %q), want one", msg, got.Content)
		}
		if len(got.ToolCalls) == 0 {
			return
		}
		c := got.ToolCalls[0]
		args := string(c.Args)
		if len(got.ToolCalls) != 1 || c.Name != tool || c.Confidence != 1 || !isObject(args) {
			t.Fatalf("%q: calls %+v", msg, got.ToolCalls)
		}
		switch {
		case jt == "":
			if args != "{}" {
				t.Fatalf("%q: args %q, want {}", msg, args)
			}
		case valid:
			if args != jt {
				t.Fatalf("%q: args %q, want the text as written", msg, args)
			}
		default: // only folding can have made it an object
			a, b := []rune(args), []rune(jt)
			if len(a) != len(b) {
				t.Fatalf("%q: args %q are not the text folded rune for rune", msg, args)
			}
			folded := false
			for i := range a {
				switch {
				case a[i] == b[i]:
				case (b[i] >= '\uFF01' && b[i] <= '\uFF5E' && a[i] == b[i]-0xFEE0) || (b[i] == '\u3000' && a[i] == ' '):
					folded = true
				default:
					t.Fatalf("%q: args %q differ from the text at rune %d", msg, args, i)
				}
			}
			if !folded {
				t.Fatalf("%q: args %q from a text that is not an object, with nothing folded", msg, args)
			}
		}
	})
}
