package metrics

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
)

// TestAgentToolLabelsAreBounded: an agent behind the gate names the tools
// it asks for (its approvals' tool is "<agent>/<tool>") and may name new
// ones without end; its approvals get at most MaxToolLabels tool labels of
// their own, the rest share "<agent>/(other)". Another agent's count is
// its own, and built-in tools keep their names.
func TestAgentToolLabelsAreBounded(t *testing.T) {
	m := New("v")
	ctx := context.Background()
	n := notifierOf(m)
	ask := func(tool string) {
		a := &approval.Approval{Calls: []approval.Call{{Tool: tool}}, Risk: approval.RiskHigh}
		_, _ = n.Show(ctx, a)
		_ = n.Settle(ctx, a, approval.Outcome{Status: approval.StatusRejected})
	}
	for i := range MaxToolLabels + 50 {
		ask(fmt.Sprintf("ci/tool%03d", i))
	}
	ask("ops/Bash")
	ask("erase")
	text := scrape(t, m)
	for _, metric := range []string{"hitlbot_approvals_requested_total", "hitlbot_approvals_decided_total"} {
		labels := map[string]bool{}
		for _, line := range strings.Split(text, "\n") {
			if rest, ok := strings.CutPrefix(line, metric+"{"); ok {
				_, v, _ := strings.Cut(rest, `tool="`)
				v, _, _ = strings.Cut(v, `"`)
				if strings.HasPrefix(v, "ci/") {
					labels[v] = true
				}
			}
		}
		if !labels["ci/(other)"] || !labels["ci/tool000"] || labels[fmt.Sprintf("ci/tool%03d", MaxToolLabels)] {
			t.Errorf("%s: the labels of agent ci are not its first %d tools and ci/(other)", metric, MaxToolLabels)
		}
		if want := MaxToolLabels + 1; len(labels) != want {
			t.Errorf("%s: %d tool labels of agent ci; want %d", metric, len(labels), want)
		}
	}
	wantLines(t, text, `hitlbot_approvals_requested_total{risk="HIGH",tool="ci/(other)"} 50`,
		`hitlbot_approvals_requested_total{risk="HIGH",tool="ops/Bash"} 1`,
		`hitlbot_approvals_requested_total{risk="HIGH",tool="erase"} 1`)
}
