package approval_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

// TestPrivacyValidation: a privacy rule is group, none or empty, per risk
// and per tool; anything else is refused, naming its path.
func TestPrivacyValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		risks   map[string]approval.Privacy
		tool    approval.Privacy
		wantErr string // "" : valid
	}{
		{name: "none at all"},
		{name: "group per risk", risks: map[string]approval.Privacy{"HIGH": "group", "medium": "none"}},
		{name: "group per tool", tool: "group"},
		{name: "empty per risk", risks: map[string]approval.Privacy{"LOW": ""}},
		{name: "upper case", risks: map[string]approval.Privacy{"HIGH": "GROUP"}},
		{name: "unknown value per risk", risks: map[string]approval.Privacy{"HIGH": "private"}, wantErr: `privacy.HIGH: "private" is not group or none`},
		{name: "unknown risk", risks: map[string]approval.Privacy{"SEVERE": "group"}, wantErr: "privacy.SEVERE:"},
		{name: "unknown value per tool", tool: "secret", wantErr: `tools.drop_table.privacy: "secret" is not group or none`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := approval.DefaultPolicyConfig()
			c.Privacy = tc.risks
			if tc.tool != "" {
				c.Tools = map[string]approval.ToolPolicy{"drop_table": {Privacy: tc.tool}}
			}
			err := c.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Validate() = %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}

// TestPrivacyVerdict: the verdict carries privacy.<risk>, and a tool's
// own rule replaces it.
func TestPrivacyVerdict(t *testing.T) {
	c := approval.DefaultPolicyConfig()
	c.Privacy = map[string]approval.Privacy{"high": "group"}
	c.Tools = map[string]approval.ToolPolicy{"peek": {Privacy: "group"}, "wipe": {Privacy: "none"}}
	p, err := approval.NewPolicy(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool   string
		effect approval.Effect
		want   approval.Privacy
	}{
		{"drop", approval.EffectDestructive, approval.PrivacyGroup},
		{"write", approval.EffectWrite, approval.PrivacyNone},
		{"peek", approval.EffectWrite, approval.PrivacyGroup},
		{"wipe", approval.EffectDestructive, approval.PrivacyNone},
	} {
		v, err := p.Evaluate(approval.CallInfo{Tool: tc.tool, Effect: tc.effect, Confidence: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if v.Privacy != tc.want {
			t.Errorf("%s: privacy %q, want %q", tc.tool, v.Privacy, tc.want)
		}
	}
}

// TestPrivateAndMaySee: privacy group hides an approval of a group chat
// from everyone but its requester and the people its rule lets approve;
// a 1:1 chat, privacy none and the rule "chat" hide nothing.
func TestPrivateAndMaySee(t *testing.T) {
	users := approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"bob", "dave"}}
	for _, tc := range []struct {
		name    string
		privacy approval.Privacy
		group   bool
		rule    approval.ApproverRule
		private bool
		see     map[approval.UserID]bool
		viewers []approval.UserID
	}{
		{"group chat, users", approval.PrivacyGroup, true, users, true,
			map[approval.UserID]bool{"alice": true, "bob": true, "dave": true, "carol": false, "": false}, []approval.UserID{"alice", "bob", "dave"}},
		{"group chat, requester", approval.PrivacyGroup, true, approval.ApproverRule{Mode: approval.ApproverRequester}, true,
			map[approval.UserID]bool{"alice": true, "bob": false, "carol": false}, []approval.UserID{"alice"}},
		{"group chat, four eyes", approval.PrivacyGroup, true, approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"alice", "bob"}, NotRequester: true}, true,
			map[approval.UserID]bool{"alice": true, "bob": true, "carol": false}, []approval.UserID{"alice", "bob"}},
		{"group chat, mode chat: nobody is an onlooker", approval.PrivacyGroup, true, approval.ApproverRule{Mode: approval.ApproverChat}, false,
			map[approval.UserID]bool{"alice": true, "carol": true}, []approval.UserID{"alice"}},
		{"1:1 chat", approval.PrivacyGroup, false, users, false,
			map[approval.UserID]bool{"alice": true, "carol": true}, []approval.UserID{"alice", "bob", "dave"}},
		{"privacy none", approval.PrivacyNone, true, users, false,
			map[approval.UserID]bool{"carol": true}, []approval.UserID{"alice", "bob", "dave"}},
		{"no privacy (an older record)", "", true, users, false,
			map[approval.UserID]bool{"carol": true}, []approval.UserID{"alice", "bob", "dave"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &approval.Approval{Requester: "alice", Approvers: tc.rule, Privacy: tc.privacy, Group: tc.group}
			if got := a.Private(); got != tc.private {
				t.Errorf("Private() = %v, want %v", got, tc.private)
			}
			for u, want := range tc.see {
				if got := a.MaySee(u); got != want {
					t.Errorf("MaySee(%q) = %v, want %v", u, got, want)
				}
			}
			if got := a.Viewers(); !slices.Equal(got, tc.viewers) {
				t.Errorf("Viewers() = %v, want %v", got, tc.viewers)
			}
		})
	}
	var none *approval.Approval
	if none.Private() || none.MaySee("alice") {
		t.Error("a nil approval is private or may be seen")
	}
}

// TestMaySeeAfterEscalation: the people a step of a private approval's
// escalation lists may see it once the step is taken, not before; a step
// of mode chat adds nobody by name (its chat gets the whole card).
func TestMaySeeAfterEscalation(t *testing.T) {
	a := &approval.Approval{Requester: "alice", Privacy: approval.PrivacyGroup, Group: true,
		Approvers: approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"bob"}},
		Escalation: []approval.Escalation{
			{After: time.Minute, Approvers: approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"dave", "bob"}}},
			{After: 2 * time.Minute, To: approval.Place{Channel: "feishu", ChatID: "oc_oncall"}, Approvers: approval.ApproverRule{Mode: approval.ApproverChat}},
		}}
	for _, c := range []struct {
		taken   int
		dave    bool
		viewers []approval.UserID
	}{
		{0, false, []approval.UserID{"alice", "bob"}},
		{1, true, []approval.UserID{"alice", "bob", "dave"}},
		{2, true, []approval.UserID{"alice", "bob", "dave"}},
	} {
		a.Escalated = c.taken
		if got := a.MaySee("dave"); got != c.dave {
			t.Errorf("%d steps taken: MaySee(dave) = %v, want %v", c.taken, got, c.dave)
		}
		if a.MaySee("erin") {
			t.Errorf("%d steps taken: an onlooker may see it", c.taken)
		}
		if got := a.Viewers(); !slices.Equal(got, c.viewers) {
			t.Errorf("%d steps taken: Viewers() = %v, want %v", c.taken, got, c.viewers)
		}
	}
}

// grantChecks are who may see and revoke a grant of alice, by the
// approval that gave it: private in a group (bob approves), not private,
// or its record gone (nil). "" is everyone in a chat.
var grantChecks = []struct {
	name              string
	private, gone     bool
	user              approval.UserID
	maySee, mayRevoke bool
}{
	{name: "private, onlooker", private: true, user: "carol"},
	{name: "private, the whole chat", private: true, user: ""},
	{name: "private, grantee", private: true, user: "alice", maySee: true, mayRevoke: true},
	{name: "private, approver", private: true, user: "bob", maySee: true, mayRevoke: true},
	{name: "plain, onlooker", user: "carol", maySee: true},
	{name: "plain, the whole chat", user: "", maySee: true},
	{name: "plain, approver", user: "bob", maySee: true, mayRevoke: true},
	{name: "gone, grantee", gone: true, user: "alice", maySee: true, mayRevoke: true},
	{name: "gone, approver", gone: true, user: "bob"},
	{name: "gone, the whole chat", gone: true, user: ""},
}

// TestGrantMaySeeAndRevoke: a grant is seen as its approval is
// (MaySee), revoked by its grantee or whom that approval's rule lets
// decide; without the approval's record, by its grantee only.
func TestGrantMaySeeAndRevoke(t *testing.T) {
	for _, tc := range grantChecks {
		t.Run(tc.name, func(t *testing.T) {
			a := &approval.Approval{ID: approval.NewID("fake:c1"), Requester: "alice", Group: true,
				Approvers: approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"bob"}}}
			if tc.private {
				a.Privacy = approval.PrivacyGroup
			}
			g := approval.Grant{Session: "fake:c1", User: "alice", Tool: "sql_execute", ApprovalID: a.ID}
			if tc.gone {
				a = nil
			}
			if got := approval.GrantMaySee(g, a, tc.user); got != tc.maySee {
				t.Errorf("GrantMaySee = %v, want %v", got, tc.maySee)
			}
			if got := approval.GrantMayRevoke(g, a, tc.user, "fake", "c1"); got != tc.mayRevoke {
				t.Errorf("GrantMayRevoke = %v, want %v", got, tc.mayRevoke)
			}
		})
	}
}
