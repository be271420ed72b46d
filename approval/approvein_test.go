package approval_test

import (
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
)

// TestApproveInConfig: approve_in.<risk> and tools.<name>.approve_in are
// checked alike, each problem named by its path.
func TestApproveInConfig(t *testing.T) {
	cases := []struct {
		name    string
		p       approval.Place
		wantErr string
	}{
		{"feishu", approval.Place{Channel: "feishu", ChatID: "oc_dba"}, ""},
		{"dingtalk", approval.Place{Channel: "dingtalk", ChatID: "cid1=="}, ""},
		{"web", approval.Place{Channel: "web", ChatID: "s1"}, `channel: "web" is not feishu or dingtalk`},
		{"no channel", approval.Place{ChatID: "oc_dba"}, `channel: "" is not feishu or dingtalk`},
		{"no chat", approval.Place{Channel: "feishu"}, "chat_id: is required"},
	}
	for _, tc := range cases {
		for _, path := range []string{"approve_in.HIGH", "tools.drop_table.approve_in"} {
			cfg := approval.DefaultPolicyConfig()
			if path == "approve_in.HIGH" {
				cfg.ApproveIn = map[string]approval.Place{"HIGH": tc.p}
			} else {
				p := tc.p
				cfg.Tools = map[string]approval.ToolPolicy{"drop_table": {ApproveIn: &p}}
			}
			err := cfg.Validate()
			if tc.wantErr == "" && err != nil {
				t.Errorf("%s %s: %v", tc.name, path, err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), path+"."+tc.wantErr)) {
				t.Errorf("%s %s: %v, want %q", tc.name, path, err, path+"."+tc.wantErr)
			}
		}
	}
	cfg := approval.DefaultPolicyConfig()
	cfg.ApproveIn = map[string]approval.Place{"EXTREME": {Channel: "feishu", ChatID: "oc_x"}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "approve_in.EXTREME: unknown risk") {
		t.Errorf("an unknown risk: %v", err)
	}
}

// TestApproveInVerdict: the verdict carries the approvers' chat of the
// call's risk, a tool's own replaces it, and a risk without one has none.
func TestApproveInVerdict(t *testing.T) {
	cfg := approval.DefaultPolicyConfig()
	cfg.ApproveIn = map[string]approval.Place{"high": {Channel: "feishu", ChatID: "oc_ops"}}
	cfg.Tools = map[string]approval.ToolPolicy{"drop_table": {ApproveIn: &approval.Place{Channel: "dingtalk", ChatID: "cid_dba"}}}
	p, err := approval.NewPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool   string
		effect approval.Effect
		want   *approval.Place
	}{
		{"sql", approval.EffectDestructive, &approval.Place{Channel: "feishu", ChatID: "oc_ops"}},
		{"drop_table", approval.EffectDestructive, &approval.Place{Channel: "dingtalk", ChatID: "cid_dba"}},
		{"drop_table", approval.EffectWrite, &approval.Place{Channel: "dingtalk", ChatID: "cid_dba"}},
		{"sql", approval.EffectWrite, nil},
	} {
		v, err := p.Evaluate(approval.CallInfo{Tool: tc.tool, Effect: tc.effect, Confidence: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if (v.ApproveIn == nil) != (tc.want == nil) || v.ApproveIn != nil && *v.ApproveIn != *tc.want {
			t.Errorf("%s %s: ApproveIn %+v, want %+v", tc.tool, tc.effect, v.ApproveIn, tc.want)
		}
	}
}

// TestApproveInRequest: Engine.Request copies the verdict's approvers'
// chat into the record (both stores keep it), and drops it when it is the
// requester's own chat; a decision in the requester's chat under mode
// chat is unauthorized, one in the approvers' chat runs the tool once.
func TestApproveInRequest(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		ops := approval.Place{Channel: "feishu", ChatID: "oc_ops"}
		in := func(p approval.Place) func(*approval.Request) {
			return func(r *approval.Request) {
				r.Verdict.Approvers = approval.ApproverRule{Mode: approval.ApproverChat}
				r.Verdict.ApproveIn = &p
			}
		}
		a := request(t, f.a, in(ops))
		if got, err := f.b.Get(t.Context(), a.ID); err != nil || got.ApproveIn == nil || *got.ApproveIn != ops {
			t.Fatalf("record's ApproveIn = %+v, %v", got, err)
		}
		d := decision(a, approval.Approve, "bob")
		d.Channel, d.ChatID = a.Channel, a.ChatID
		if o := decide(t, f.b, a.ID, d); o.Status != approval.StatusUnauthorized {
			t.Fatalf("bob in the requester's chat = %s, want unauthorized", o.Status)
		}
		d.Channel, d.ChatID = ops.Channel, ops.ChatID
		if o := decide(t, f.b, a.ID, d); o.Status != approval.StatusExecuted || f.tool.runs.Load() != 1 {
			t.Fatalf("bob in the approvers' chat = %s after %d runs", o.Status, f.tool.runs.Load())
		}
		own := request(t, f.a, in(approval.Place{Channel: "test", ChatID: "chat-1"}))
		if own.ApproveIn != nil {
			t.Fatalf("an approvers' chat that is the requester's own: ApproveIn %+v, want nil", own.ApproveIn)
		}
	})
}
