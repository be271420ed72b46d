package cli_test

import (
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels/cli"
)

// alwaysView is the card of another agent's MEDIUM call offering the
// standing rule Bash(npm test:*).
func alwaysView(t *testing.T, offer bool) cards.View {
	t.Helper()
	args, hash, err := approval.HashCall("ci-claude/Bash", []byte(`{"command":"npm test"}`))
	if err != nil {
		t.Fatal(err)
	}
	a := &approval.Approval{ID: approval.NewID("feishu:oc_ops#agent:ci-claude"), Session: "feishu:oc_ops#agent:ci-claude", Risk: approval.RiskMedium,
		Calls: []approval.Call{{Tool: "ci-claude/Bash", Args: args, PayloadSHA256: hash}}, PayloadSHA256: hash,
		CreatedAt: time.Unix(0, 0), ExpiresAt: time.Unix(60, 0)}
	if offer {
		a.Standing = &approval.Standing{Session: approval.RulesSession("feishu", "oc_ops"), Agent: "ci-claude",
			Rules: []approval.PermissionRule{{ToolName: "Bash", RuleContent: "npm test:*"}}, Window: time.Hour}
	}
	return cards.Pending(a, approval.DefaultOutcomeText("en"), "en")
}

// cliChoices: what an answer line at bot chat's prompt decides.
var cliChoices = []struct {
	line    string
	offer   bool
	approve bool
	grant   approval.GrantChoice
}{
	{"a", true, true, approval.GrantAlways},
	{"always", true, true, approval.GrantAlways},
	{"以后都允许", true, true, approval.GrantAlways},
	{"y", true, true, approval.GrantUnset},
	{"n", true, false, approval.GrantUnset},
	{"a", false, false, approval.GrantUnset}, // no rule offered: not an approval
	{"y", false, true, approval.GrantUnset},
}

func TestAlwaysChoice(t *testing.T) {
	for _, tc := range cliChoices {
		v := alwaysView(t, tc.offer)
		approve, grant := cli.Choice(v, tc.line)
		if approve != tc.approve || grant != tc.grant {
			t.Errorf("offer %v, %q: approve %v grant %q; want %v %q", tc.offer, tc.line, approve, grant, tc.approve, tc.grant)
		}
	}
	for _, lang := range []string{"en", "zh"} {
		v := alwaysView(t, true)
		got := cli.PromptFor(v, lang)
		want := map[string]string{"en": "Approve: [y] yes, [a] always allow Bash(npm test:*) for ci-claude, [N] reject? ",
			"zh": "批准：[y] 是，[a] 以后都允许 Bash(npm test:*)（ci-claude），[N] 拒绝？"}[lang]
		if got != want {
			t.Errorf("prompt %s = %q, want %q", lang, got, want)
		}
	}
	if got := cli.PromptFor(alwaysView(t, false), "en"); got != cli.ConfirmPrompt("en") {
		t.Errorf("prompt without a rule = %q", got)
	}
}
