package agent_test

import (
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/hitltest"
	"github.com/hitlbot/hitlbot/words"
)

// untrustedTool is a Foreign tool whose effect comes from an untrusted
// server fs.
type untrustedTool struct{ *hitltest.Tool }

func (untrustedTool) Definition() string { return "def-1" }
func (untrustedTool) EffectSource() approval.Words {
	return approval.Say(words.MCPRiskUntrusted, "fs")
}

var _ agent.Foreign = untrustedTool{}

// riskTests: what Registry.Risk says of each tool under a policy whose
// tools.<name> overrides are given.
var riskTests = []struct {
	name      string
	tool      string
	overrides map[string]approval.ToolPolicy
	risk      approval.Risk
	en, zh    string // the reason, exactly
}{
	{name: "a read", tool: "look", risk: approval.RiskLow, en: "LOW risk (a read)", zh: "低风险（只读）"},
	{name: "a write", tool: "note", risk: approval.RiskMedium,
		en: "MEDIUM risk: asks the first time; once approved, the same call runs without asking for 5m",
		zh: "中风险：首次需要确认；批准后 5m 内相同操作无需再确认"},
	{name: "destructive", tool: "erase", risk: approval.RiskHigh, en: "HIGH risk (destructive)", zh: "高风险（破坏性操作）"},
	{name: "overridden to LOW", tool: "erase", overrides: map[string]approval.ToolPolicy{"erase": {Risk: "LOW"}},
		risk: approval.RiskLow, en: "LOW risk", zh: "低风险"},
	{name: "confirm never", tool: "note", overrides: map[string]approval.ToolPolicy{"note": {Confirm: "never"}},
		risk: approval.RiskMedium, en: "configured to run without confirmation", zh: "已配置为无需确认"},
	{name: "foreign: the reason says where its effect came from", tool: "fs__write_file", risk: approval.RiskMedium,
		en: "MEDIUM risk: asks the first time; once approved, the same call runs without asking for 5m; untrusted server fs: its annotations are ignored",
		zh: "中风险：首次需要确认；批准后 5m 内相同操作无需再确认；服务器 fs 未受信任：忽略其注解"},
	{name: "foreign behind a wrapper", tool: "fs__delete", risk: approval.RiskHigh,
		en: "HIGH risk (destructive); untrusted server fs: its annotations are ignored",
		zh: "高风险（破坏性操作）；服务器 fs 未受信任：忽略其注解"},
	{name: "foreign overridden: the override is the reason", tool: "fs__write_file",
		overrides: map[string]approval.ToolPolicy{"fs__write_file": {Risk: "HIGH"}},
		risk:      approval.RiskHigh, en: "HIGH risk (write)", zh: "高风险（写入）"},
}

func riskRegistry(t *testing.T) *agent.Registry {
	t.Helper()
	reg := agent.NewRegistry()
	if err := reg.Register(hitltest.NewTool("look", approval.EffectRead), hitltest.NewTool("note", approval.EffectWrite),
		hitltest.NewTool("erase", approval.EffectDestructive)); err != nil {
		t.Fatal(err)
	}
	if err := reg.SetGroup("fs", untrustedTool{hitltest.NewTool("fs__write_file", approval.EffectWrite)},
		wrapped{untrustedTool{hitltest.NewTool("fs__delete", approval.EffectDestructive)}}); err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestRegistryRisk(t *testing.T) {
	reg := riskRegistry(t)
	for _, test := range riskTests {
		cfg := approval.DefaultPolicyConfig()
		cfg.Tools = test.overrides
		pol, err := approval.NewPolicy(cfg)
		if err != nil {
			t.Fatal(err)
		}
		risk, why, ok := reg.Risk(pol, test.tool)
		if !ok || risk != test.risk || why.EN != test.en || why.ZH != test.zh {
			t.Errorf("%s: Risk(%s) = %v, %+v, %v; want %v, {%q %q}, true", test.name, test.tool, risk, why, ok, test.risk, test.en, test.zh)
		}
	}
}

func TestRegistryRiskCannotSay(t *testing.T) {
	reg := riskRegistry(t)
	pol, err := approval.NewPolicy(approval.DefaultPolicyConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, why, ok := reg.Risk(pol, "nope"); ok || !why.IsZero() {
		t.Errorf("an unknown tool: ok %v, why %+v; want false and no reason", ok, why)
	}
	if _, why, ok := reg.Risk(nil, "look"); ok || !why.IsZero() {
		t.Errorf("no policy: ok %v, why %+v; want false and no reason", ok, why)
	}
	// The tool's own effect for {} is asked, and the policy in force decides.
	off := approval.DefaultPolicyConfig()
	off.Enabled = false
	pol, err = approval.NewPolicy(off)
	if err != nil {
		t.Fatal(err)
	}
	if risk, why, ok := reg.Risk(pol, "erase"); !ok || risk != approval.RiskHigh || !strings.Contains(why.EN, "turned off") {
		t.Errorf("approvals off: %v %+v %v", risk, why, ok)
	}
}
