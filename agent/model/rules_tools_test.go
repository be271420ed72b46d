package model_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/agent/model"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/hitltest"
	"github.com/hitlbot/hitlbot/words"
)

// mcpTool is a Foreign tool of the untrusted server fs.
type mcpTool struct{ *hitltest.Tool }

func (mcpTool) Definition() string { return "def" }
func (mcpTool) EffectSource() approval.Words {
	return approval.Say(words.MCPRiskUntrusted, "fs")
}

var _ agent.Foreign = mcpTool{}

// toolsRegistry holds built-in tools and the foreign tools of server fs.
func toolsRegistry(t *testing.T) *agent.Registry {
	t.Helper()
	look := hitltest.NewTool("look", approval.EffectRead)
	look.About = "Looks at a thing. Never changes it.\nSecond line."
	erase := hitltest.NewTool("erase", approval.EffectDestructive)
	erase.About = "Erases a thing for good"
	reg := agent.NewRegistry()
	if err := reg.Register(look, erase, hitltest.NewTool("note", approval.EffectWrite)); err != nil {
		t.Fatal(err)
	}
	write := hitltest.NewTool("fs__write_file", approval.EffectDestructive)
	write.About = "Create a new file or overwrite an existing one. Use with care."
	if err := reg.SetGroup("fs", mcpTool{write}); err != nil {
		t.Fatal(err)
	}
	return reg
}

func specsOf(reg *agent.Registry) []agent.ToolSpec {
	var specs []agent.ToolSpec
	for _, t := range reg.Tools() {
		specs = append(specs, agent.ToolSpec{Name: t.Name(), Description: t.Description(), Schema: t.Schema()})
	}
	// Offered in an order that is not sorted, to show that /tools sorts.
	specs[0], specs[len(specs)-1] = specs[len(specs)-1], specs[0]
	return specs
}

// toolsListTests: /tools with the risks of a real registry under a real
// policy (the tool erase overridden to LOW).
var toolsListTests = []struct {
	in   string
	want string
}{
	{in: "/tools", want: "The tools here (4): name — risk and why — what it does\n" +
		"• erase — LOW risk — Erases a thing for good\n" +
		"• fs__write_file — HIGH risk (destructive); untrusted server fs: its annotations are ignored — Create a new file or overwrite an existing one.\n" +
		"• look — LOW risk (a read) — Looks at a thing.\n" +
		"• note — MEDIUM risk: asks the first time; once approved, the same call runs without asking for 5m — does note\n" +
		"Call one with /call <tool> <JSON arguments>; as for any call, the policy decides whether a person confirms it first."},
	{in: "/工具", want: "可用的工具（4 个）：名称 — 风险及原因 — 用途\n" +
		"• erase — 低风险 — Erases a thing for good\n" +
		"• fs__write_file — 高风险（破坏性操作）；服务器 fs 未受信任：忽略其注解 — Create a new file or overwrite an existing one.\n" +
		"• look — 低风险（只读） — Looks at a thing.\n" +
		"• note — 中风险：首次需要确认；批准后 5m 内相同操作无需再确认 — does note\n" +
		"用 /call <工具> <JSON 参数> 调用；和其他调用一样，由审批策略决定是否先请人确认。"},
}

func TestRulesToolsListsRisks(t *testing.T) {
	reg := toolsRegistry(t)
	cfg := approval.DefaultPolicyConfig()
	cfg.Tools = map[string]approval.ToolPolicy{"erase": {Risk: "LOW"}}
	pol, err := approval.NewPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.NewRules(model.RulesConfig{}, model.RulesDeps{Tools: reg, Risk: func(name string) (approval.Risk, approval.Words, bool) {
		return reg.Risk(pol, name)
	}})
	if err != nil {
		t.Fatal(err)
	}
	specs := specsOf(reg)
	for _, in := range []string{"/tools", "  /TOOLS  ", "／ｔｏｏｌｓ", "/tools."} {
		resp, err := m.Complete(context.Background(), agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: in}}, Tools: specs})
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Message.Content; got != toolsListTests[0].want || len(resp.Message.ToolCalls) != 0 {
			t.Errorf("%q:\n%s\nwant:\n%s", in, got, toolsListTests[0].want)
		}
	}
	for _, test := range toolsListTests {
		resp, err := m.Complete(context.Background(), agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: test.in}}, Tools: specs})
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Message.Content; got != test.want {
			t.Errorf("%q:\n%s\nwant:\n%s", test.in, got, test.want)
		}
	}
}

// Without Risk, /tools leaves the risk out; a tool Risk cannot judge
// shows "?"; no tools says so; "/tools and more" is not the command.
func TestRulesToolsWithoutRisk(t *testing.T) {
	reg := toolsRegistry(t)
	specs := specsOf(reg)
	ask := func(m *model.Rules, in string, specs []agent.ToolSpec) string {
		t.Helper()
		resp, err := m.Complete(context.Background(), agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: in}}, Tools: specs})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Message.Content
	}
	plain, err := model.NewRules(model.RulesConfig{}, model.RulesDeps{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ask(plain, "/tools", specs); !strings.Contains(got, "\n• erase — Erases a thing for good\n") || strings.Contains(got, "LOW") {
		t.Errorf("without Risk:\n%s", got)
	}
	unsure, err := model.NewRules(model.RulesConfig{}, model.RulesDeps{Risk: func(string) (approval.Risk, approval.Words, bool) {
		return 0, approval.Words{}, false
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := ask(unsure, "/tools", specs); !strings.Contains(got, "\n• erase — ? — Erases a thing for good\n") {
		t.Errorf("Risk cannot say:\n%s", got)
	}
	if got := ask(plain, "/tools", nil); got != "No tools are available here." {
		t.Errorf("no tools: %q", got)
	}
	if got := ask(plain, "/工具", nil); got != "这里没有可用的工具。" {
		t.Errorf("no tools, in Chinese: %q", got)
	}
	if got := ask(plain, "/tools of mine", specs); !strings.Contains(got, "I understand these commands") {
		t.Errorf("/tools with more words: %q, want the help", got)
	}
}
