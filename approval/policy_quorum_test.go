package approval_test

import (
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
)

// quorumConfigs are approver rules with a quorum, and the problem each
// has ("" for none).
var quorumConfigs = []struct {
	name    string
	ac      approval.ApproverConfig
	notReq  bool
	wantErr string
}{
	{"2 of 3 users", approval.ApproverConfig{Mode: approval.ApproverUsers, Users: []string{"a", "b", "c"}, Quorum: 2}, false, ""},
	{"2 in the chat", approval.ApproverConfig{Mode: approval.ApproverChat, Quorum: 2}, true, ""},
	{"4 of 3 users", approval.ApproverConfig{Mode: approval.ApproverUsers, Users: []string{"a", "b", "c"}, Quorum: 4}, false, "quorum: 4 is more than the 3 users listed"},
	{"2 with mode requester", approval.ApproverConfig{Quorum: 2}, false, "quorum: 2 needs that many people, but mode requester has one"},
	{"negative", approval.ApproverConfig{Mode: approval.ApproverChat, Quorum: -1}, false, "quorum: -1 is negative"},
	{"a user listed twice", approval.ApproverConfig{Mode: approval.ApproverUsers, Users: []string{"a", "a"}, Quorum: 2}, false, `"a" is listed twice`},
}

// TestQuorumConfig: approvers.HIGH and tools.<name>.approvers are checked
// alike, each problem named by its path; a tool's rule replaces the
// risk's, quorum and all.
func TestQuorumConfig(t *testing.T) {
	for _, tc := range quorumConfigs {
		for _, path := range []string{"approvers.HIGH", "tools.drop_table.approvers"} {
			cfg := approval.DefaultPolicyConfig()
			cfg.HighNeedsOther = tc.notReq
			if tc.notReq {
				cfg.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverChat}}
			}
			if path == "approvers.HIGH" {
				cfg.Approvers = map[string]approval.ApproverConfig{"HIGH": tc.ac}
			} else {
				ac := tc.ac
				cfg.Tools = map[string]approval.ToolPolicy{"drop_table": {Approvers: &ac}}
			}
			err := cfg.Validate()
			if tc.wantErr == "" && err != nil {
				t.Errorf("%s %s: %v", tc.name, path, err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), path+".") || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("%s %s: %v, want %q under %s", tc.name, path, err, tc.wantErr, path)
			}
		}
	}
	cfg := approval.DefaultPolicyConfig()
	cfg.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverChat}}
	cfg.Tools = map[string]approval.ToolPolicy{"drop_table": {Approvers: &approval.ApproverConfig{Mode: approval.ApproverUsers, Users: []string{"dba1", "dba2", "dba3"}, Quorum: 2}}}
	p, err := approval.NewPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for tool, want := range map[string]approval.ApproverRule{
		"drop_table": {Mode: approval.ApproverUsers, Users: []approval.UserID{"dba1", "dba2", "dba3"}, Quorum: 2},
		"sql":        {Mode: approval.ApproverChat},
	} {
		v, err := p.Evaluate(approval.CallInfo{Tool: tool, Effect: approval.EffectDestructive, Confidence: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if v.Approvers.Mode != want.Mode || v.Approvers.Quorum != want.Quorum || len(v.Approvers.Users) != len(want.Users) {
			t.Errorf("%s: rule %+v, want %+v", tool, v.Approvers, want)
		}
	}
}
