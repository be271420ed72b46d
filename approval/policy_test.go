package approval

import (
	"errors"
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
}

func cfgWith(mod func(*PolicyConfig)) PolicyConfig {
	c := DefaultPolicyConfig()
	if mod != nil {
		mod(&c)
	}
	return c
}

var (
	readCall   = CallInfo{Session: "s", User: "u", Tool: "sql_query", Kind: KindRead, Hash: "h", Confidence: 1}
	writeCall  = CallInfo{Session: "s", User: "u", Tool: "task_create", Kind: KindWrite, Hash: "h", Confidence: 1}
	deleteCall = CallInfo{Session: "s", User: "u", Tool: "sql_execute", Kind: KindDestructive, Hash: "h", Confidence: 1}
)

func withConf(c CallInfo, conf float64) CallInfo { c.Confidence = conf; return c }

var policyTests = []policyTest{
	{"read runs", cfgWith(nil), readCall, false, false, RiskLow, "LOW"},
	{"confident write runs", cfgWith(nil), writeCall, false, false, RiskMedium, "confident"},
	{"destructive asks", cfgWith(nil), deleteCall, false, true, RiskHigh, "HIGH"},
	{"destructive asks even when granted", cfgWith(nil), deleteCall, true, true, RiskHigh, "HIGH"},
	{"unknown kind is HIGH", cfgWith(nil), CallInfo{Tool: "x", Kind: "weird", Confidence: 1}, false, true, RiskHigh, "HIGH"},
	{"strict write asks", cfgWith(func(c *PolicyConfig) { c.Strict = true }), writeCall, false, true, RiskMedium, "strict"},
	{"strict read runs", cfgWith(func(c *PolicyConfig) { c.Strict = true }), readCall, false, false, RiskLow, "LOW"},
	{"strict write with grant runs", cfgWith(func(c *PolicyConfig) { c.Strict = true }), writeCall, true, false, RiskMedium, "approved earlier"},
	{"grant window 0 disables grants", cfgWith(func(c *PolicyConfig) { c.Strict = true; c.GrantWindow = 0 }), writeCall, true, true, RiskMedium, "strict"},
	{"low confidence write asks", cfgWith(nil), withConf(writeCall, 0.65), false, true, RiskMedium, "low confidence (0.65 < 0.85)"},
	{"low confidence read asks", cfgWith(nil), withConf(readCall, 0.5), false, true, RiskLow, "low confidence"},
	{"threshold is inclusive", cfgWith(nil), withConf(writeCall, 0.85), false, false, RiskMedium, "confident"},
	{"per-tool threshold", cfgWith(func(c *PolicyConfig) { c.Tools = map[string]ToolPolicy{"task_create": {ConfidenceThreshold: 0.6}} }), withConf(writeCall, 0.65), false, false, RiskMedium, "confident"},
	{"override risk HIGH", cfgWith(func(c *PolicyConfig) { c.Tools = map[string]ToolPolicy{"task_create": {Risk: "high"}} }), writeCall, false, true, RiskHigh, "HIGH"},
	{"override risk LOW", cfgWith(func(c *PolicyConfig) { c.Tools = map[string]ToolPolicy{"sql_execute": {Risk: "LOW"}} }), deleteCall, false, false, RiskLow, "LOW"},
	{"confirm always", cfgWith(func(c *PolicyConfig) { c.Tools = map[string]ToolPolicy{"sql_query": {Confirm: "always"}} }), readCall, false, true, RiskLow, "always"},
	{"confirm never", cfgWith(func(c *PolicyConfig) { c.Tools = map[string]ToolPolicy{"sql_execute": {Confirm: "never"}} }), deleteCall, false, false, RiskHigh, "without confirmation"},
	{"disabled runs everything", cfgWith(func(c *PolicyConfig) { c.Enabled = false }), deleteCall, false, false, RiskHigh, "turned off"},
}

func TestEvaluate(t *testing.T) {
	for _, tt := range policyTests {
		p, err := NewPolicy(tt.cfg)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		v, err := p.Evaluate(tt.call, func() (bool, error) { return tt.granted, nil })
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if v.NeedsApproval != tt.wantAsk || v.Risk != tt.wantRisk || !strings.Contains(v.Reason, tt.reasonHas) {
			t.Errorf("%s: got ask=%v risk=%s reason=%q; want ask=%v risk=%s reason containing %q",
				tt.name, v.NeedsApproval, v.Risk, v.Reason, tt.wantAsk, tt.wantRisk, tt.reasonHas)
		}
		if v.Timeout != DefaultTimeout {
			t.Errorf("%s: timeout %v", tt.name, v.Timeout)
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
	if d := (ApproverRule{Mode: ApproverUsers, Users: []UserID{"a", "b"}, NotRequester: true}).Describe(); !strings.Contains(d, "a, b") || !strings.Contains(d, "not the person") {
		t.Fatalf("Describe = %q", d)
	}
}

var badPolicies = []struct {
	cfg  PolicyConfig
	path string
}{
	{cfgWith(func(c *PolicyConfig) { c.ConfidenceThreshold = 1.5 }), "confidence_threshold"},
	{cfgWith(func(c *PolicyConfig) { c.GrantWindow = -time.Second }), "grant_window"},
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
