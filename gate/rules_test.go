package gate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
)

// examplePolicy is the policy of the example config.
var examplePolicy = map[string]RuleConfig{
	"Read|Glob|Grep":             {Risk: "LOW"},
	"Bash(rm *)|Bash(git push*)": {Risk: "HIGH"},
	"*":                          {Risk: "MEDIUM"},
}

// exampleTests: what examplePolicy gives each call, and the pattern that
// decides it.
var exampleTests = []struct {
	tool, input string
	want        approval.Risk
	pattern     string
}{
	{"Read", `{"file_path":"/etc/hosts"}`, approval.RiskLow, "Read|Glob|Grep"},
	{"Grep", `{"pattern":"TODO"}`, approval.RiskLow, "Read|Glob|Grep"},
	{"Bash", `{"command":"rm -rf /"}`, approval.RiskHigh, "Bash(rm *)|Bash(git push*)"},
	{"Bash", `{"command":"ls"}`, approval.RiskMedium, "*"},
	{"Bash", `{"command":"git push origin main"}`, approval.RiskHigh, "Bash(rm *)|Bash(git push*)"},
	{"Bash", `{"command":"git pushy"}`, approval.RiskHigh, "Bash(rm *)|Bash(git push*)"},
	{"Bash", `{"command":"git status"}`, approval.RiskMedium, "*"},
	// The glob matches the whole argument, from its start.
	{"Bash", `{"command":"sudo rm -rf /"}`, approval.RiskMedium, "*"},
	{"Bash", `{"command":"rm"}`, approval.RiskMedium, "*"},
	{"WebFetch", `{"url":"https://example.com"}`, approval.RiskMedium, "*"},
	// Names are case-sensitive.
	{"read", `{"file_path":"/etc/hosts"}`, approval.RiskMedium, "*"},
	// A call with no string primary argument never matches Name(glob).
	{"Bash", `{"command":["rm","-rf","/"]}`, approval.RiskMedium, "*"},
	{"Bash", `{}`, approval.RiskMedium, "*"},
	{"Bash", `not json`, approval.RiskMedium, "*"},
}

func TestRulesExample(t *testing.T) {
	r, err := CompileRules("ci", examplePolicy)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range exampleTests {
		risk, pattern := r.Risk(tt.tool, json.RawMessage(tt.input))
		if risk != tt.want || pattern != tt.pattern {
			t.Errorf("Risk(%s, %s) = %v, %q; want %v, %q", tt.tool, tt.input, risk, pattern, tt.want, tt.pattern)
		}
	}
}

// precedenceTests: one policy and one call each; the most specific
// alternative wins, then the highest risk, and no match is HIGH.
var precedenceTests = []struct {
	name    string
	policy  map[string]string // pattern → risk
	tool    string
	input   string
	want    approval.Risk
	pattern string
}{
	{"Name beats *", map[string]string{"*": "HIGH", "Read": "LOW"}, "Read", `{}`, approval.RiskLow, "Read"},
	{"Name(glob) beats Name", map[string]string{"Bash": "HIGH", "Bash(ls*)": "LOW"}, "Bash", `{"command":"ls -l"}`, approval.RiskLow, "Bash(ls*)"},
	{"Name(glob) beats *", map[string]string{"*": "LOW", "Bash(rm *)": "MEDIUM"}, "Bash", `{"command":"rm x"}`, approval.RiskMedium, "Bash(rm *)"},
	{"Name when the glob does not match", map[string]string{"Bash": "HIGH", "Bash(ls*)": "LOW"}, "Bash", `{"command":"rm x"}`, approval.RiskHigh, "Bash"},
	{"equal globs: the highest risk", map[string]string{"Bash(git *)": "LOW", "Bash(git push*)": "HIGH"}, "Bash", `{"command":"git push"}`, approval.RiskHigh, "Bash(git push*)"},
	{"equal globs: the highest risk, either order", map[string]string{"Bash(*)": "HIGH", "Bash(ls *)": "LOW"}, "Bash", `{"command":"ls -l"}`, approval.RiskHigh, "Bash(*)"},
	{"the same name twice: the highest risk", map[string]string{"Read": "LOW", "Read|Write": "MEDIUM"}, "Read", `{}`, approval.RiskMedium, "Read|Write"},
	{"no match is HIGH", map[string]string{"Read": "LOW"}, "Write", `{}`, approval.RiskHigh, ""},
	{"an empty policy: HIGH", map[string]string{}, "Read", `{}`, approval.RiskHigh, ""},
	{"* alone", map[string]string{"*": "low"}, "mcp__github__create_issue", `{}`, approval.RiskLow, "*"},
	{"an MCP name is plain", map[string]string{"mcp__github__create_issue": "MEDIUM", "*": "HIGH"}, "mcp__github__create_issue", `{}`, approval.RiskMedium, "mcp__github__create_issue"},
	{"spaces around |", map[string]string{" Read |  Glob ": "LOW"}, "Glob", `{}`, approval.RiskLow, " Read |  Glob "},
	{"a trailing :* is a prefix", map[string]string{"Bash(npm run test:*)": "LOW"}, "Bash", `{"command":"npm run test -- --watch"}`, approval.RiskLow, "Bash(npm run test:*)"},
	{"a trailing :* also matches the prefix alone", map[string]string{"Bash(npm run test:*)": "LOW"}, "Bash", `{"command":"npm run test"}`, approval.RiskLow, "Bash(npm run test:*)"},
	{"a : elsewhere is literal", map[string]string{"Bash(a:b)": "LOW"}, "Bash", `{"command":"a:b"}`, approval.RiskLow, "Bash(a:b)"},
	{"* matches / and spaces", map[string]string{"Write(/tmp/*)": "LOW"}, "Write", `{"file_path":"/tmp/a b/c.txt"}`, approval.RiskLow, "Write(/tmp/*)"},
	{"? is literal", map[string]string{"Read(a?c)": "LOW"}, "Read", `{"file_path":"abc"}`, approval.RiskHigh, ""},
	{"a | inside parentheses is the glob's", map[string]string{"Bash(ls | wc*)": "LOW"}, "Bash", `{"command":"ls | wc -l"}`, approval.RiskLow, "Bash(ls | wc*)"},
	{"nested parentheses", map[string]string{"Bash(echo $(date)*)": "LOW"}, "Bash", `{"command":"echo $(date) now"}`, approval.RiskLow, "Bash(echo $(date)*)"},
	{"primary argument order: command first", map[string]string{"Tool(a*)": "LOW"}, "Tool", `{"path":"a","command":"b"}`, approval.RiskHigh, ""},
	{"primary argument: the first that is a string", map[string]string{"Tool(a*)": "LOW"}, "Tool", `{"command":7,"file_path":null,"path":"abc"}`, approval.RiskLow, "Tool(a*)"},
	{"primary argument: query", map[string]string{"WebSearch(*weather*)": "LOW"}, "WebSearch", `{"query":"weather in Paris"}`, approval.RiskLow, "WebSearch(*weather*)"},
	{"primary argument: url", map[string]string{"WebFetch(https://docs.*)": "LOW"}, "WebFetch", `{"url":"https://docs.example.com/"}`, approval.RiskLow, "WebFetch(https://docs.*)"},
	{"primary argument: notebook_path", map[string]string{"NotebookEdit(*.ipynb)": "MEDIUM"}, "NotebookEdit", `{"notebook_path":"a.ipynb"}`, approval.RiskMedium, "NotebookEdit(*.ipynb)"},
	{"a key's case matters", map[string]string{"Bash(rm *)": "LOW"}, "Bash", `{"Command":"rm x"}`, approval.RiskHigh, ""},
	{"escaped JSON strings are decoded", map[string]string{"Bash(rm *)": "HIGH", "*": "LOW"}, "Bash", `{"command":"\u0072m -rf /"}`, approval.RiskHigh, "Bash(rm *)"},
}

func TestRulesPrecedence(t *testing.T) {
	for _, tt := range precedenceTests {
		t.Run(tt.name, func(t *testing.T) {
			policy := map[string]RuleConfig{}
			for p, risk := range tt.policy {
				policy[p] = RuleConfig{Risk: risk}
			}
			r, err := CompileRules("ci", policy)
			if err != nil {
				t.Fatal(err)
			}
			risk, pattern := r.Risk(tt.tool, json.RawMessage(tt.input))
			if risk != tt.want || pattern != tt.pattern {
				t.Errorf("Risk(%s, %s) = %v, %q; want %v, %q", tt.tool, tt.input, risk, pattern, tt.want, tt.pattern)
			}
		})
	}
}

// TestRulesNil: rules that failed to compile match nothing.
func TestRulesNil(t *testing.T) {
	var r *Rules
	if risk, pattern := r.Risk("Read", json.RawMessage(`{}`)); risk != approval.RiskHigh || pattern != "" {
		t.Fatalf("nil Rules: %v, %q", risk, pattern)
	}
}

// compileErrorTests: policies CompileRules refuses, and what the error
// says (every part of want must be in it).
var compileErrorTests = []struct {
	name   string
	policy map[string]RuleConfig
	want   []string
}{
	{"an empty pattern", map[string]RuleConfig{"": {Risk: "LOW"}}, []string{`agents[ci].policy."": the pattern is empty`}},
	{"a blank pattern", map[string]RuleConfig{"  ": {Risk: "LOW"}}, []string{`agents[ci].policy."  ": the pattern is empty`}},
	{"an unclosed (", map[string]RuleConfig{"Bash(rm *": {Risk: "HIGH"}}, []string{`agents[ci].policy."Bash(rm *": unbalanced parentheses`}},
	{"a ) closing nothing", map[string]RuleConfig{"Bash)": {Risk: "HIGH"}}, []string{`agents[ci].policy."Bash)": unbalanced parentheses`, "byte 5"}},
	{"an empty alternative", map[string]RuleConfig{"Read||Grep": {Risk: "LOW"}}, []string{`"Read||Grep": alternative 2 of 3: it is empty`}},
	{"a | at the end", map[string]RuleConfig{"Read|": {Risk: "LOW"}}, []string{`"Read|": alternative 2 of 2: it is empty`}},
	{"an unknown risk", map[string]RuleConfig{"Read": {Risk: "SAFE"}}, []string{`agents[ci].policy."Read".risk: unknown risk "SAFE"`, "LOW, MEDIUM or HIGH"}},
	{"no risk", map[string]RuleConfig{"Read": {}}, []string{`agents[ci].policy."Read".risk: unknown risk ""`}},
	{"text after the glob", map[string]RuleConfig{"Bash(a)(b)": {Risk: "LOW"}}, []string{`"(b)" follows the closing )`}},
	{"an empty glob", map[string]RuleConfig{"Bash()": {Risk: "LOW"}}, []string{"Bash() has an empty glob"}},
	{"a glob without a name", map[string]RuleConfig{"(rm *)": {Risk: "LOW"}}, []string{"without a tool name"}},
	{"a glob on *", map[string]RuleConfig{"*(rm *)": {Risk: "LOW"}}, []string{"* alone matches every tool"}},
	{"a wildcard in a name", map[string]RuleConfig{"mcp__github__*": {Risk: "LOW"}}, []string{`tool name "mcp__github__*" holds a wildcard`}},
	{"a space in a name", map[string]RuleConfig{"Bash (rm *)": {Risk: "LOW"}}, []string{`tool name "Bash " holds a space`}},
	{"every problem at once", map[string]RuleConfig{"Read|": {Risk: "LOW"}, "Write": {Risk: "nope"}, "*": {Risk: "MEDIUM"}},
		[]string{`"Read|": alternative 2 of 2`, `"Write".risk: unknown risk "nope"`}},
}

func TestCompileRulesErrors(t *testing.T) {
	for _, tt := range compileErrorTests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := CompileRules("ci", tt.policy)
			if err == nil {
				t.Fatalf("compiled: %+v", r)
			}
			if r != nil {
				t.Errorf("rules returned with the error %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestCompileRulesDeterministic: the same policy compiles to the same
// answers and errors, whatever the order a map gives its keys in (Go
// randomises it): among equals, the first pattern in sorted order
// decides.
func TestCompileRulesDeterministic(t *testing.T) {
	good := map[string]RuleConfig{"Bash(a*)": {Risk: "HIGH"}, "Bash(*b)": {Risk: "HIGH"}, "Bash(*c*)": {Risk: "HIGH"}, "Bash(*)": {Risk: "MEDIUM"}}
	bad := map[string]RuleConfig{"x||": {Risk: "LOW"}, "y)": {Risk: "LOW"}, "z(": {Risk: "LOW"}, "Read": {Risk: "?"}}
	_, first := CompileRules("ci", bad)
	for range 50 {
		r, err := CompileRules("ci", good)
		if err != nil {
			t.Fatal(err)
		}
		// "abc" matches Bash(a*) and Bash(*c*), both HIGH; not Bash(*b).
		if risk, p := r.Risk("Bash", json.RawMessage(`{"command":"abc"}`)); risk != approval.RiskHigh || p != "Bash(*c*)" {
			t.Fatalf("Risk = %v, %q; want HIGH, Bash(*c*)", risk, p)
		}
		if _, err := CompileRules("ci", bad); err.Error() != first.Error() {
			t.Fatalf("errors differ: %q and %q", err, first)
		}
	}
}

// globTests: matchGlob against what the glob should match.
var globTests = []struct {
	glob, s string
	want    bool
}{
	{"", "", true},
	{"", "a", false},
	{"*", "", true},
	{"*", "anything / at all", true},
	{"rm *", "rm -rf /", true},
	{"rm *", "rm", false},
	{"rm *", "rm ", true},
	{"rm *", "xrm -rf", false},
	{"*.go", "a/b/c.go", true},
	{"*.go", "a.go.txt", false},
	{"a*b*c", "aXbYc", true},
	{"a*b*c", "abcbc", true},
	{"a*b*c", "acb", false},
	{"**", "x", true},
	{"a*a*a*a*b", strings.Repeat("a", 200), false},
	{"长*", "长城", true},
	{"*城", "长城", true},
	{"长*", "城长", false},
}

func TestMatchGlob(t *testing.T) {
	for _, tt := range globTests {
		if got := matchGlob(tt.glob, tt.s); got != tt.want {
			t.Errorf("matchGlob(%q, %q) = %v, want %v", tt.glob, tt.s, got, tt.want)
		}
	}
}

// approveInPlaces are agents' approve_in places and the problem each has
// ("" for none).
var approveInPlaces = []struct {
	place   Place
	wantErr string
}{
	{Place{Channel: "feishu", ChatID: "oc_ops"}, ""},
	{Place{Channel: "web", ChatID: "local/ops"}, ""},
	{Place{Channel: "web", ChatID: "acme/alice/ops-1"}, ""},
	{Place{Channel: "api"}, ""},
	{Place{Channel: "web", ChatID: "ops"}, `approve_in.chat_id: "ops" is not a web chat: write <user>/<session_id>`},
	{Place{Channel: "web", ChatID: "local/has space"}, "is not a web chat"},
	{Place{Channel: "dingtalk"}, "approve_in.chat_id: is required for channel dingtalk"},
	{Place{Channel: "slack", ChatID: "C1"}, `approve_in.channel: "slack" is not feishu, dingtalk, web or api`},
}

// TestValidateApproveIn: an agent's approve_in is checked as the channel
// will use it; a web chat is <user>/<session_id>, as the web channel
// names its chats.
func TestValidateApproveIn(t *testing.T) {
	env := func(string) string { return "agent-token-0123456789abcdef" }
	for _, tc := range approveInPlaces {
		err := Validate([]AgentConfig{{Name: "ci", TokenEnv: "T", ApproveIn: tc.place}}, env, nil)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%+v: %v", tc.place, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), "agents[ci]."+tc.wantErr) && !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%+v: %v, want %q", tc.place, err, tc.wantErr)
		}
	}
}
