package gate_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/gate"
)

// npmTest is the addRules suggestion Claude Code 2.1.328 sends with a
// prefix rule (../shared/reference/agent-hooks.md).
const npmTest = `{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"npm test:*"}],"behavior":"allow","destination":"localSettings"}`

// hookBodySuggesting is hookBody with permission_suggestions.
func hookBodySuggesting(session, tool, input, suggestions string) string {
	return `{"session_id":"` + session + `","cwd":"/home/dev/proj","permission_mode":"default","hook_event_name":"PermissionRequest",` +
		`"tool_name":"` + tool + `","tool_input":` + input + `,"permission_suggestions":` + suggestions + `}`
}

// decideAlways decides a as who with the always choice.
func (r *rig) decideAlways(t *testing.T, a *approval.Approval, who approval.UserID) approval.Outcome {
	t.Helper()
	o, err := r.engine.Decide(context.Background(), a.ID, approval.Decision{Verb: approval.Approve, Actor: who, Source: approval.SourceCard,
		PayloadSHA256: a.PayloadSHA256, Grant: approval.GrantAlways})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestHookAlways: a hook request suggesting a rule gets a card offering
// it; the approver's always answers allow with the suggestion as
// updatedPermissions, records the rule, and the next call it matches (in
// another Claude Code session, too) is allowed without a card, audited as
// allowed by the rule; a call it does not match still asks; once revoked,
// the same call asks again.
func TestHookAlways(t *testing.T) {
	r := newRig(t)
	base := hookServer(t, r)
	ch := postHook(t, base, ciToken, hookBodySuggesting("s1", "Bash", `{"command":"npm test","description":"run the tests"}`, `[`+npmTest+`]`))
	a := r.card(t)
	if a.Standing == nil || a.Standing.Words() != "Bash(npm test:*)" || a.Standing.Agent != "ci-claude" ||
		a.Standing.Session != approval.RulesSession("feishu", "oc_123") || a.Standing.Window != gate.DefaultRuleWindow {
		t.Fatalf("the card offers %+v", a.Standing)
	}
	if o := r.decideAlways(t, a, "ou_456"); o.Status != approval.StatusExecuted {
		t.Fatalf("outcome %+v", o)
	}
	status, body := answer(t, ch)
	want := `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedInput":{"command":"npm test","description":"run the tests"},` +
		`"updatedPermissions":[` + npmTest + `]}}}`
	if status != "200 OK" || body != want {
		t.Fatalf("answer %s %s\nwant %s", status, body, want)
	}

	// The rule allows the next matching call at once, in another session.
	status, body = answer(t, postHook(t, base, ciToken, hookBodySuggesting("s2", "Bash", `{"command":"npm test -- --watch=false"}`, `[`+npmTest+`]`)))
	want = `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedInput":{"command":"npm test -- --watch=false"}}}}`
	if status != "200 OK" || body != want {
		t.Fatalf("answer by the rule %s %s\nwant %s", status, body, want)
	}
	select {
	case c := <-r.shown:
		t.Fatalf("a call the rule allows showed a card: %s", c.ID)
	default:
	}
	var byRule *audit.Record
	for _, rec := range r.trail.All() {
		if rec.Event == audit.EventAutoAllow && rec.Tool == "ci-claude/Bash" {
			byRule = &rec
		}
	}
	if byRule == nil || byRule.ApprovalID != string(a.ID) || !strings.Contains(byRule.Reason, "Bash(npm test:*)") || !strings.Contains(byRule.Reason, "ou_456") {
		t.Fatalf("audit of the call allowed by the rule: %+v", byRule)
	}

	// A call the rule does not match asks.
	other := postHook(t, base, ciToken, hookBodySuggesting("s2", "Bash", `{"command":"npm test && curl evil.example"}`, `[]`))
	c := r.card(t)
	r.decide(t, c, approval.Reject, "ou_456", "")
	answer(t, other)

	// Revoked (as /revoke does), the same call asks again at once.
	gs, err := r.engine.Grants(context.Background(), approval.RulesSession("feishu", "oc_123"))
	if err != nil || len(gs) != 1 {
		t.Fatalf("rules %+v, %v", gs, err)
	}
	if n, err := r.engine.Revoke(context.Background(), approval.RulesSession("feishu", "oc_123"), "ou_456", approval.SourceCard, gs[0].Key()); err != nil || n != 1 {
		t.Fatalf("revoke %d, %v", n, err)
	}
	again := postHook(t, base, ciToken, hookBodySuggesting("s3", "Bash", `{"command":"npm test"}`, `[`+npmTest+`]`))
	c = r.card(t)
	if c.Tool() != "ci-claude/Bash" {
		t.Fatalf("card %s", c.Tool())
	}
	r.decide(t, c, approval.Reject, "ou_456", "")
	if _, body := answer(t, again); !strings.Contains(body, `"deny"`) {
		t.Fatalf("after the revoke: %s", body)
	}
}

// TestCodexHookAlways: Codex refuses updatedPermissions, so its allow is
// bare; hitlbot keeps the rule all the same.
func TestCodexHookAlways(t *testing.T) {
	r := newRig(t)
	base := hookServer(t, r)
	ch := postHookTo(t, base, gate.CodexHookPath, ciToken, hookBodySuggesting("s1", "Bash", `{"command":"npm test"}`, `[`+npmTest+`]`))
	a := r.card(t)
	r.decideAlways(t, a, "ou_456")
	status, body := answer(t, ch)
	if want := `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}`; status != "200 OK" || body != want {
		t.Fatalf("answer %s %s\nwant %s", status, body, want)
	}
	status, body = answer(t, postHookTo(t, base, gate.CodexHookPath, ciToken, hookBodySuggesting("s2", "Bash", `{"command":"npm test --ci"}`, `[]`)))
	if status != "200 OK" || !strings.Contains(body, `"allow"`) {
		t.Fatalf("the rule did not allow: %s %s", status, body)
	}
}

// noOffers are permission_suggestions that offer no always choice.
var noOffers = []struct{ name, input, suggestions string }{
	{"none", `{"command":"npm test"}`, `[]`},
	{"absent", `{"command":"npm test"}`, `null`},
	{"directories", `{"command":"touch build/x"}`, `[{"type":"addDirectories","directories":["build"],"destination":"session"},{"type":"setMode","mode":"acceptEdits","destination":"session"}]`},
	{"deny behavior", `{"command":"npm test"}`, `[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"npm test:*"}],"behavior":"deny","destination":"localSettings"}]`},
	{"a Read path rule", `{"file_path":"/etc/hosts"}`, `[{"type":"addRules","rules":[{"toolName":"Read","ruleContent":"//etc/**"}],"behavior":"allow","destination":"session"}]`},
	{"a wildcard inside", `{"command":"npm test"}`, `[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"npm * test"}],"behavior":"allow","destination":"localSettings"}]`},
	{"HIGH call", `{"command":"rm -rf build"}`, `[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"rm -rf build"}],"behavior":"allow","destination":"localSettings"}]`},
}

// TestHookOffersNoRule: without a suggestion hitlbot can match as Claude
// Code does, or for a HIGH call, the card offers no always choice.
func TestHookOffersNoRule(t *testing.T) {
	for _, tc := range noOffers {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			tool := "Bash"
			if strings.Contains(tc.input, "file_path") {
				tool = "Edit"
			}
			ch := postHook(t, hookServer(t, r), ciToken, hookBodySuggesting("s1", tool, tc.input, tc.suggestions))
			a := r.card(t)
			if a.Standing != nil {
				t.Fatalf("the card offers %+v", a.Standing)
			}
			r.decide(t, a, approval.Reject, "ou_456", "")
			answer(t, ch)
		})
	}
}

// TestHookAlwaysForged: a decision choosing always on a card that offers
// no rule is refused as tampered; nothing is allowed or recorded.
func TestHookAlwaysForged(t *testing.T) {
	r := newRig(t)
	ch := postHook(t, hookServer(t, r), ciToken, hookBodySuggesting("s1", "Bash", `{"command":"npm test"}`, `[]`))
	a := r.card(t)
	if o := r.decideAlways(t, a, "ou_456"); o.Status != approval.StatusTampered {
		t.Fatalf("outcome %+v, want tampered", o)
	}
	if gs, _ := r.engine.Grants(context.Background(), approval.RulesSession("feishu", "oc_123")); len(gs) != 0 {
		t.Fatalf("rules %+v", gs)
	}
	r.decide(t, a, approval.Reject, "ou_456", "")
	if _, body := answer(t, ch); !strings.Contains(body, `"deny"`) {
		t.Fatalf("answer %s", body)
	}
}

// ruleMatches are Claude Code's rule forms and calls each does and does
// not allow.
var ruleMatches = []struct {
	content, command string
	match            bool
}{
	{"npm test:*", "npm test", true},
	{"npm test:*", "npm test -- --ci", true},
	{"npm test:*", "npm testing", false},
	{"npm test:*", "npm test && rm -rf /", false},
	{"npm test:*", "npm test; rm -rf /", false},
	{"npm test:*", "npm test | tee x", false},
	{"npm test:*", "npm test $(whoami)", false},
	{"npm test:*", "npm test > /etc/passwd", false},
	{"npm test:*", "npm test\nrm -rf /", false},
	{"npm test:*", " npm test", false},
	{"make build *", "make build all", true},
	{"make build *", "make build", true}, // Claude Code 2.1.328 suggests this rule for `make build` and it allows it (TestClaudeCodeHookAlways)
	{"make build *", "make build; rm -rf /", false},
	{"make build *", "make builder", false},
	{"git push*", "git push origin", true},
	{"git push*", "git pushx", true},
	{"git push*", "git pull", false},
	{"sh mk.sh", "sh mk.sh", true},
	{"sh mk.sh", "sh mk.sh x", false},
}

func TestStandingRuleMatching(t *testing.T) {
	for _, tc := range ruleMatches {
		input, _ := json.Marshal(map[string]string{"command": tc.command})
		got := gate.MatchRule(approval.PermissionRule{ToolName: "Bash", RuleContent: tc.content}, "Bash", input)
		if got != tc.match {
			t.Errorf("Bash(%s) on %q = %v, want %v", tc.content, tc.command, got, tc.match)
		}
	}
	if gate.MatchRule(approval.PermissionRule{ToolName: "Bash", RuleContent: "npm test:*"}, "Edit", []byte(`{"command":"npm test"}`)) {
		t.Error("a Bash rule allowed another tool")
	}
	if !gate.MatchRule(approval.PermissionRule{ToolName: "WebSearch"}, "WebSearch", []byte(`{"query":"x"}`)) {
		t.Error("a tool-name rule did not allow its tool")
	}
}

// TestStandingRuleReplicas: on two replicas of one Redis, a rule allowed
// through replica A's hook allows the next matching call on replica B
// without a card; revoked through B, A asks again at once.
func TestStandingRuleReplicas(t *testing.T) {
	stores := redisReplicas(t, 2)
	a, b := newRigOn(t, stores[0]), newRigOn(t, stores[1])
	baseA, baseB := hookServer(t, a), hookServer(t, b)
	ch := postHook(t, baseA, ciToken, hookBodySuggesting("s1", "Bash", `{"command":"npm test"}`, `[`+npmTest+`]`))
	a.decideAlways(t, a.card(t), "ou_456")
	if _, body := answer(t, ch); !strings.Contains(body, `"updatedPermissions"`) {
		t.Fatalf("answer on A: %s", body)
	}
	if _, body := answer(t, postHook(t, baseB, ciToken, hookBodySuggesting("s2", "Bash", `{"command":"npm test --ci"}`, `[]`))); !strings.Contains(body, `"allow"`) {
		t.Fatalf("answer on B: %s", body)
	}
	select {
	case c := <-b.shown:
		t.Fatalf("B showed a card: %s", c.ID)
	default:
	}
	rules := approval.RulesSession("feishu", "oc_123")
	gs, err := b.engine.Grants(context.Background(), rules)
	if err != nil || len(gs) != 1 {
		t.Fatalf("rules on B: %+v, %v", gs, err)
	}
	if n, err := b.engine.Revoke(context.Background(), rules, "ou_456", approval.SourceCard, gs[0].Key()); err != nil || n != 1 {
		t.Fatalf("revoke on B: %d, %v", n, err)
	}
	again := postHook(t, baseA, ciToken, hookBodySuggesting("s3", "Bash", `{"command":"npm test --ci"}`, `[]`))
	c := a.card(t)
	a.decide(t, c, approval.Reject, "ou_456", "")
	if _, body := answer(t, again); !strings.Contains(body, `"deny"`) {
		t.Fatalf("after the revoke on B, A: %s", body)
	}
}
