package approval

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

type policyTest struct {
	name      string
	cfg       PolicyConfig
	call      CallInfo
	granted   bool
	wantAsk   bool
	wantRisk  Risk
	reasonHas string
	zhHas     string // part of the Chinese reason; "" checks only that there is one
}

func cfgWith(mod func(*PolicyConfig)) PolicyConfig {
	c := DefaultPolicyConfig()
	if mod != nil {
		mod(&c)
	}
	return c
}

var (
	readCall   = CallInfo{Session: "s", User: "u", Tool: "sql_query", Effect: EffectRead, Hash: "h", Confidence: 1}
	writeCall  = CallInfo{Session: "s", User: "u", Tool: "task_create", Effect: EffectWrite, Hash: "h", Confidence: 1}
	deleteCall = CallInfo{Session: "s", User: "u", Tool: "sql_execute", Effect: EffectDestructive, Hash: "h", Confidence: 1}
	strict     = cfgWith(func(c *PolicyConfig) { c.Strict = true })
	ddl        = Words{EN: "CREATE TABLE changes the schema (DDL)", ZH: "CREATE TABLE 会修改数据库结构（DDL）"}
)

func withConf(c CallInfo, conf float64) CallInfo { c.Confidence = conf; return c }

// withRows is c with a blast radius of n rows (atMost: an upper bound).
func withRows(c CallInfo, n int64, atMost bool) CallInfo {
	c.Blast = Blast{Rows: n, Measured: true, AtMost: atMost}
	return c
}

func withHigh(c CallInfo, w Words) CallInfo { c.Blast.High = w; return c }

func tool(name string, tp ToolPolicy) PolicyConfig {
	return cfgWith(func(c *PolicyConfig) { c.Tools = map[string]ToolPolicy{name: tp} })
}

// policyTests is the decision table of PolicyConfig's documentation, one
// row (or more) per line, with the defaults unless a row says otherwise.
var policyTests = []policyTest{
	// LOW reads run, whatever the confidence.
	{"read runs", cfgWith(nil), readCall, false, false, RiskLow, "LOW", "低风险"},
	{"low confidence read runs", cfgWith(nil), withConf(readCall, 0.5), false, false, RiskLow, "LOW", "只读"},
	{"strict read runs", strict, readCall, false, false, RiskLow, "LOW", ""},
	{"strict low confidence read runs", strict, withConf(readCall, 0.1), false, false, RiskLow, "LOW", ""},
	// MEDIUM asks the first time; a live grant skips the question.
	{"confident write asks the first time", cfgWith(nil), writeCall, false, true, RiskMedium, "first time", "首次"},
	{"write with a grant runs", cfgWith(nil), writeCall, true, false, RiskMedium, "approved earlier", "已批准"},
	{"grant window 0: write asks", cfgWith(func(c *PolicyConfig) { c.GrantWindow = 0 }), writeCall, true, true, RiskMedium, "MEDIUM risk", "中风险"},
	// Low confidence asks, grant or not (but not for a LOW read).
	{"low confidence write asks", cfgWith(nil), withConf(writeCall, 0.65), false, true, RiskMedium, "low confidence (0.65 < 0.85)", "置信度低（0.65 < 0.85）"},
	{"low confidence write asks despite a grant", cfgWith(nil), withConf(writeCall, 0.65), true, true, RiskMedium, "low confidence", ""},
	{"threshold is inclusive", cfgWith(nil), withConf(writeCall, 0.85), false, true, RiskMedium, "first time", ""},
	{"threshold is inclusive, granted", cfgWith(nil), withConf(writeCall, 0.85), true, false, RiskMedium, "approved earlier", ""},
	{"per-tool threshold", tool("task_create", ToolPolicy{ConfidenceThreshold: 0.6}), withConf(writeCall, 0.65), true, false, RiskMedium, "approved earlier", ""},
	{"per-tool threshold, low", tool("task_create", ToolPolicy{ConfidenceThreshold: 0.9}), withConf(writeCall, 0.88), true, true, RiskMedium, "0.88 < 0.90", ""},
	{"LOW write runs", tool("task_create", ToolPolicy{Risk: "LOW"}), writeCall, false, false, RiskLow, "LOW", ""},
	{"LOW write with low confidence asks", tool("task_create", ToolPolicy{Risk: "LOW"}), withConf(writeCall, 0.5), false, true, RiskLow, "low confidence", ""},
	{"low confidence destructive asks", cfgWith(nil), withConf(deleteCall, 0.5), false, true, RiskHigh, "HIGH", ""},
	// Strict: MEDIUM asks every time.
	{"strict write asks", strict, writeCall, false, true, RiskMedium, "strict", "严格模式"},
	{"strict write asks despite a grant", strict, writeCall, true, true, RiskMedium, "strict", ""},
	// HIGH always asks.
	{"destructive asks", cfgWith(nil), deleteCall, false, true, RiskHigh, "HIGH risk (destructive)", "高风险（破坏性操作）"},
	{"destructive asks even when granted", cfgWith(nil), deleteCall, true, true, RiskHigh, "HIGH", ""},
	{"unknown kind is HIGH", cfgWith(nil), CallInfo{Tool: "x", Effect: "weird", Confidence: 1}, false, true, RiskHigh, "HIGH", ""},
	{"override risk HIGH", tool("task_create", ToolPolicy{Risk: "high"}), writeCall, false, true, RiskHigh, "HIGH", ""},
	{"override risk LOW", tool("sql_execute", ToolPolicy{Risk: "LOW"}), deleteCall, false, false, RiskLow, "LOW", ""},
	// The blast radius raises the risk, and the reason says why.
	{"more than high_rows is HIGH", cfgWith(nil), withRows(writeCall, 29, false), false, true, RiskHigh, "affects 29 rows, more than 20", "影响 29 行，超过 20 行"},
	{"more than high_rows is HIGH despite a grant", cfgWith(nil), withRows(writeCall, 29, false), true, true, RiskHigh, "affects 29 rows", ""},
	{"high_rows itself is not more", cfgWith(nil), withRows(writeCall, 20, false), false, true, RiskMedium, "first time", ""},
	{"high_rows itself, granted", cfgWith(nil), withRows(writeCall, 20, false), true, false, RiskMedium, "approved earlier", ""},
	{"an upper bound counts", cfgWith(nil), withRows(writeCall, 40, true), false, true, RiskHigh, "may affect up to 40 rows, more than 20", "最多影响 40 行，超过 20 行"},
	{"unmeasured rows do not count", cfgWith(nil), CallInfo{Tool: "t", Effect: EffectWrite, Confidence: 1, Blast: Blast{Rows: 99}}, false, true, RiskMedium, "first time", ""},
	{"high_rows 0 turns the row rule off", cfgWith(func(c *PolicyConfig) { c.HighRows = 0 }), withRows(writeCall, 1000, false), false, true, RiskMedium, "first time", ""},
	{"custom high_rows", cfgWith(func(c *PolicyConfig) { c.HighRows = 5 }), withRows(writeCall, 6, false), false, true, RiskHigh, "affects 6 rows, more than 5", "超过 5 行"},
	{"a DDL is HIGH", cfgWith(nil), withHigh(writeCall, ddl), true, true, RiskHigh, "CREATE TABLE changes the schema", "修改数据库结构"},
	{"the tool's reason and the rows", cfgWith(nil), withHigh(withRows(deleteCall, 50, false), Words{"DELETE without WHERE removes every row", "没有 WHERE 的 DELETE 会删除所有行"}),
		false, true, RiskHigh, "DELETE without WHERE removes every row; affects 50 rows, more than 20", "没有 WHERE 的 DELETE 会删除所有行；影响 50 行，超过 20 行"},
	{"the blast radius raises an override", tool("task_create", ToolPolicy{Risk: "LOW"}), withRows(writeCall, 29, false), false, true, RiskHigh, "affects 29 rows", ""},
	{"a LOW read is not raised by what it does not change", cfgWith(nil), readCall, false, false, RiskLow, "LOW", ""},
	// Configuration first.
	{"confirm always", tool("sql_query", ToolPolicy{Confirm: "always"}), readCall, false, true, RiskLow, "always", "每次"},
	{"confirm never", tool("sql_execute", ToolPolicy{Confirm: "never"}), deleteCall, false, false, RiskHigh, "without confirmation", ""},
	{"confirm never and many rows", tool("sql_execute", ToolPolicy{Confirm: "never"}), withRows(CallInfo{Tool: "sql_execute", Effect: EffectWrite, Confidence: 1}, 29, false), false, false, RiskHigh, "without confirmation", ""},
	{"disabled runs everything", cfgWith(func(c *PolicyConfig) { c.Enabled = false }), deleteCall, false, false, RiskHigh, "turned off", "已关闭"},
}

func TestEvaluate(t *testing.T) {
	for _, tt := range policyTests {
		p, err := NewPolicy(tt.cfg)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		asked := false
		v, err := p.Evaluate(tt.call, func() (bool, error) { asked = true; return tt.granted, nil })
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if v.NeedsApproval != tt.wantAsk || v.Risk != tt.wantRisk || !strings.Contains(v.Reason, tt.reasonHas) {
			t.Errorf("%s: got ask=%v risk=%s reason=%q; want ask=%v risk=%s reason containing %q",
				tt.name, v.NeedsApproval, v.Risk, v.Reason, tt.wantAsk, tt.wantRisk, tt.reasonHas)
		}
		if v.ReasonZH == "" || !strings.Contains(v.ReasonZH, tt.zhHas) {
			t.Errorf("%s: Chinese reason %q, want one containing %q", tt.name, v.ReasonZH, tt.zhHas)
		}
		if v.Timeout != DefaultTimeout {
			t.Errorf("%s: timeout %v", tt.name, v.Timeout)
		}
		if v.Grantable != (v.Risk == RiskMedium && !tt.cfg.Strict && tt.cfg.GrantWindow > 0) {
			t.Errorf("%s: grantable %v", tt.name, v.Grantable)
		}
		if asked && v.Risk != RiskMedium {
			t.Errorf("%s: the grant was consulted for a %s call", tt.name, v.Risk)
		}
	}
}

func TestEvaluateGrantError(t *testing.T) {
	p, _ := NewPolicy(DefaultPolicyConfig())
	boom := errors.New("redis down")
	if _, err := p.Evaluate(withConf(writeCall, 1), func() (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Fatalf("grant lookup error = %v, want it returned (fail closed)", err)
	}
}

func TestApproversAndTimeouts(t *testing.T) {
	cfg := DefaultPolicyConfig()
	cfg.HighNeedsOther = true
	cfg.Approvers = map[string]ApproverConfig{"HIGH": {Mode: ApproverUsers, Users: []string{"ops1", "ops2"}}, "medium": {Mode: ApproverChat}}
	cfg.Timeouts = map[string]time.Duration{"HIGH": 2 * time.Minute}
	p, err := NewPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := p.Evaluate(deleteCall, nil)
	if v.Approvers.Mode != ApproverUsers || len(v.Approvers.Users) != 2 || !v.Approvers.NotRequester || v.Timeout != 2*time.Minute {
		t.Fatalf("HIGH verdict = %+v", v)
	}
	if !v.Approvers.Allows("ops1", "u", Approve, false) || v.Approvers.Allows("u", "u", Approve, true) || !v.Approvers.Allows("u", "u", Reject, false) {
		t.Fatal("HIGH approver rule wrong")
	}
	v, _ = p.Evaluate(writeCall, nil)
	if v.Approvers.Mode != ApproverChat || v.Approvers.NotRequester || v.Timeout != DefaultTimeout || !v.Grantable || v.GrantWindow != 300*time.Second {
		t.Fatalf("MEDIUM verdict = %+v", v)
	}
	v, _ = p.Evaluate(readCall, nil)
	if v.Approvers.Mode != ApproverRequester || v.Grantable {
		t.Fatalf("LOW verdict = %+v", v)
	}
	if d := (ApproverRule{Mode: ApproverUsers, Users: []UserID{"a", "b"}, NotRequester: true}).DescribeIn("en"); !strings.Contains(d, "a, b") || !strings.Contains(d, "not the person") {
		t.Fatalf("DescribeIn(en) = %q", d)
	}
}

func TestDescribeIn(t *testing.T) {
	users := []UserID{"bob", "carol"}
	for _, tc := range []struct {
		rule   ApproverRule
		en, zh string
	}{
		{ApproverRule{}, "only the person who asked", "仅申请人本人"},
		{ApproverRule{Mode: ApproverRequester}, "only the person who asked", "仅申请人本人"},
		{ApproverRule{Mode: ApproverRequester, NotRequester: true}, "only the person who asked", "仅申请人本人"},
		{ApproverRule{NotRequester: true}, "only the person who asked", "仅申请人本人"},
		{ApproverRule{Mode: ApproverChat}, "anyone in this chat", "这个会话中的任何人"},
		{ApproverRule{Mode: ApproverChat, NotRequester: true},
			"anyone in this chat (not the person who asked)", "这个会话中的任何人（申请人本人除外）"},
		{ApproverRule{Mode: ApproverUsers, Users: users}, "only bob, carol", "仅 bob、carol"},
		{ApproverRule{Mode: ApproverUsers, Users: users[:1]}, "only bob", "仅 bob"},
		{ApproverRule{Mode: ApproverUsers, Users: users, NotRequester: true},
			"only bob, carol (not the person who asked)", "仅 bob、carol（申请人本人除外）"},
	} {
		for _, c := range []struct{ lang, want string }{{"en", tc.en}, {"zh", tc.zh}, {"zh-CN", tc.zh}, {"", tc.en}} {
			if got := tc.rule.DescribeIn(c.lang); got != c.want {
				t.Errorf("%+v.DescribeIn(%q) = %q, want %q", tc.rule, c.lang, got, c.want)
			}
			aside := " (" + c.want + ")"
			if c.lang == "zh" || c.lang == "zh-CN" {
				aside = "（" + c.want + "）"
			}
			if got := tc.rule.AsideIn(c.lang); got != aside {
				t.Errorf("%+v.AsideIn(%q) = %q, want %q", tc.rule, c.lang, got, aside)
			}
		}
	}
}

var badPolicies = []struct {
	cfg  PolicyConfig
	path string
}{
	{cfgWith(func(c *PolicyConfig) { c.ConfidenceThreshold = 1.5 }), "confidence_threshold"},
	{cfgWith(func(c *PolicyConfig) { c.GrantWindow = -time.Second }), "grant_window"},
	{cfgWith(func(c *PolicyConfig) { c.HighRows = -1 }), "high_rows"},
	{cfgWith(func(c *PolicyConfig) { c.Tools = map[string]ToolPolicy{"x": {Risk: "SEVERE"}} }), "tools.x.risk"},
	{cfgWith(func(c *PolicyConfig) { c.Tools = map[string]ToolPolicy{"x": {Confirm: "sometimes"}} }), "tools.x.confirm"},
	{cfgWith(func(c *PolicyConfig) { c.Tools = map[string]ToolPolicy{"x": {ConfidenceThreshold: -1}} }), "tools.x.confidence_threshold"},
	{cfgWith(func(c *PolicyConfig) { c.Approvers = map[string]ApproverConfig{"CRITICAL": {}} }), "approvers.CRITICAL"},
	{cfgWith(func(c *PolicyConfig) { c.Approvers = map[string]ApproverConfig{"HIGH": {Mode: ApproverUsers}} }), "approvers.HIGH.users"},
	{cfgWith(func(c *PolicyConfig) { c.Approvers = map[string]ApproverConfig{"HIGH": {Mode: "boss"}} }), "approvers.HIGH.mode"},
	{cfgWith(func(c *PolicyConfig) { c.HighNeedsOther = true }), "high_needs_other"},
	{cfgWith(func(c *PolicyConfig) {
		c.HighNeedsOther = true
		c.Approvers = map[string]ApproverConfig{"HIGH": {Mode: ApproverRequester}}
	}), "approvers.HIGH.mode"},
	{cfgWith(func(c *PolicyConfig) { c.Timeouts = map[string]time.Duration{"HIGH": 0} }), "timeouts.HIGH"},
	{cfgWith(func(c *PolicyConfig) { c.Timeouts = map[string]time.Duration{"SOON": time.Minute} }), "timeouts.SOON"},
	{cfgWith(func(c *PolicyConfig) { c.Escalation = map[string][]EscalationConfig{"SOON": {oncallStep(time.Minute)}} }), "escalation.SOON"},
	{cfgWith(func(c *PolicyConfig) { c.Escalation = map[string][]EscalationConfig{"HIGH": {oncallStep(0)}} }), "escalation.HIGH[0].after"},
	{cfgWith(func(c *PolicyConfig) {
		c.Escalation = map[string][]EscalationConfig{"HIGH": {oncallStep(2 * time.Minute), oncallStep(time.Minute)}}
	}), "escalation.HIGH[1].after"},
	{cfgWith(func(c *PolicyConfig) {
		c.Escalation = map[string][]EscalationConfig{"HIGH": {oncallStep(5 * time.Minute)}}
	}), "escalation.HIGH[0].after"},
	{cfgWith(func(c *PolicyConfig) {
		c.Timeouts = map[string]time.Duration{"HIGH": 10 * time.Minute}
		c.Escalation = map[string][]EscalationConfig{"MEDIUM": {oncallStep(7 * time.Minute)}}
	}), "escalation.MEDIUM[0].after"},
	{cfgWith(func(c *PolicyConfig) {
		st := oncallStep(time.Minute)
		st.To.Channel = "web"
		c.Escalation = map[string][]EscalationConfig{"HIGH": {st}}
	}), "escalation.HIGH[0].to.channel"},
	{cfgWith(func(c *PolicyConfig) {
		st := oncallStep(time.Minute)
		st.To.ChatID = " "
		c.Escalation = map[string][]EscalationConfig{"HIGH": {st}}
	}), "escalation.HIGH[0].to.chat_id"},
	{cfgWith(func(c *PolicyConfig) {
		st := oncallStep(time.Minute)
		st.Approvers = ApproverConfig{}
		c.Escalation = map[string][]EscalationConfig{"HIGH": {st}}
	}), "escalation.HIGH[0].approvers.mode"},
	{cfgWith(func(c *PolicyConfig) {
		st := oncallStep(time.Minute)
		st.Approvers = ApproverConfig{Mode: ApproverUsers}
		c.Escalation = map[string][]EscalationConfig{"HIGH": {st}}
	}), "escalation.HIGH[0].approvers.users"},
	{cfgWith(func(c *PolicyConfig) {
		st := oncallStep(time.Minute)
		st.Approvers.Quorum = 2
		c.Escalation = map[string][]EscalationConfig{"HIGH": {st}}
	}), "escalation.HIGH[0].approvers.quorum"},
	{cfgWith(func(c *PolicyConfig) {
		c.Tools = map[string]ToolPolicy{"drop": {Escalation: []EscalationConfig{oncallStep(time.Hour)}}}
	}), "tools.drop.escalation[0].after"},
	{cfgWith(func(c *PolicyConfig) {
		st := oncallStep(time.Minute)
		st.To = Place{Channel: "feishu", Direct: true}
		c.Escalation = map[string][]EscalationConfig{"HIGH": {st}}
	}), "escalation.HIGH[0].to.direct"},
	{cfgWith(func(c *PolicyConfig) {
		c.Approvers = map[string]ApproverConfig{"HIGH": {Mode: ApproverUsers, Users: []string{"ou_dba"}}}
		c.ApproveIn = map[string]Place{"HIGH": {Channel: "feishu", ChatID: "oc_1", Direct: true}}
	}), "approve_in.HIGH.chat_id"},
	{cfgWith(func(c *PolicyConfig) {
		c.ApproveIn = map[string]Place{"HIGH": {Channel: "feishu", Direct: true}}
	}), "approve_in.HIGH.direct"},
	{cfgWith(func(c *PolicyConfig) {
		c.Approvers = map[string]ApproverConfig{"HIGH": {Mode: ApproverChat}}
		c.ApproveIn = map[string]Place{"HIGH": {Channel: "feishu", Direct: true}}
	}), "approve_in.HIGH.direct"},
	{cfgWith(func(c *PolicyConfig) {
		c.Tools = map[string]ToolPolicy{"drop": {ApproveIn: &Place{Channel: "dingtalk", Direct: true}}}
	}), "tools.drop.approve_in.direct"},
}

// oncallStep is an escalation step after d to the on-call chat, where
// ou_oncall may decide too.
func oncallStep(d time.Duration) EscalationConfig {
	return EscalationConfig{After: d, To: Place{Channel: "feishu", ChatID: "oc_oncall"},
		Approvers: ApproverConfig{Mode: ApproverUsers, Users: []string{"ou_oncall"}}}
}

// TestEscalationVerdict: a call gets its risk's steps, a tool's own steps
// replace them, and a risk without steps never escalates.
func TestEscalationVerdict(t *testing.T) {
	tool := oncallStep(2 * time.Minute)
	tool.Approvers = ApproverConfig{Mode: ApproverChat}
	p, err := NewPolicy(cfgWith(func(c *PolicyConfig) {
		c.Escalation = map[string][]EscalationConfig{"high": {oncallStep(time.Minute), oncallStep(3 * time.Minute)}}
		c.Tools = map[string]ToolPolicy{"drop": {Escalation: []EscalationConfig{tool}}}
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool   string
		effect Effect
		want   string
	}{
		{"sql_execute", EffectDestructive, "[{1m0s {feishu oc_oncall false} {users [ou_oncall] false 0}} {3m0s {feishu oc_oncall false} {users [ou_oncall] false 0}}]"},
		{"drop", EffectDestructive, "[{2m0s {feishu oc_oncall false} {chat [] false 0}}]"},
		{"sql_execute", EffectWrite, "[]"},
	} {
		v, err := p.Evaluate(CallInfo{Tool: c.tool, Effect: c.effect, Confidence: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(v.Escalation); got != c.want {
			t.Errorf("%s %v: Escalation = %s, want %s", c.tool, c.effect, got, c.want)
		}
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, tt := range badPolicies {
		_, err := NewPolicy(tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.path) {
			t.Errorf("%s: got %v, want an error naming %q", tt.path, err, tt.path)
		}
	}
	if _, err := NewPolicy(DefaultPolicyConfig()); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

func TestOutcomeText(t *testing.T) {
	for _, lang := range []string{"en", "zh"} {
		d := DefaultOutcomeText(lang)
		for _, st := range AllStatuses {
			if d[st] == "" {
				t.Errorf("%s: no default text for %s", lang, st)
			}
		}
	}
	custom := OutcomeText{StatusExpired: "too slow"}.With("zh")
	if custom.Text(StatusExpired) != "too slow" || custom.Text(StatusExecuted) != "已执行" {
		t.Errorf("With: %v", custom)
	}
	if err := (OutcomeText{"exploded": "x"}).Validate(); err == nil {
		t.Error("unknown status accepted")
	}
}

// allowsTests: approvals requested by "req".
var allowsTests = []struct {
	rule   ApproverRule
	actor  UserID
	verb   Verb
	inChat bool
	want   bool
}{
	{ApproverRule{}, "req", Approve, false, true},
	{ApproverRule{}, "other", Approve, true, false},
	{ApproverRule{}, "", Approve, true, false},
	{ApproverRule{Mode: ApproverChat}, "other", Approve, true, true},
	{ApproverRule{Mode: ApproverChat}, "other", Reject, true, true},
	{ApproverRule{Mode: ApproverChat}, "other", Approve, false, false}, // a forwarded card, another chat
	{ApproverRule{Mode: ApproverChat}, "other", Reject, false, false},
	{ApproverRule{Mode: ApproverChat}, "req", Approve, false, true}, // the requester is in the chat
	{ApproverRule{Mode: ApproverChat}, "", Approve, true, false},
	{ApproverRule{Mode: ApproverChat, NotRequester: true}, "req", Approve, true, false},
	{ApproverRule{Mode: ApproverChat, NotRequester: true}, "req", Reject, false, true},
	{ApproverRule{Mode: ApproverUsers, Users: []UserID{"ops"}}, "ops", Approve, false, true},
	{ApproverRule{Mode: ApproverUsers, Users: []UserID{"ops"}}, "other", Approve, true, false},
	{ApproverRule{Mode: ApproverUsers}, "other", Approve, true, false},
}

func TestApproverRuleAllows(t *testing.T) {
	for _, tt := range allowsTests {
		if got := tt.rule.Allows(tt.actor, "req", tt.verb, tt.inChat); got != tt.want {
			t.Errorf("%+v.Allows(%q, req, %s, inChat=%v) = %v, want %v", tt.rule, tt.actor, tt.verb, tt.inChat, got, tt.want)
		}
	}
}
