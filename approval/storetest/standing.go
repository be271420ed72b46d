package storetest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

// testStandingRoundTrip: the standing rule an agent's approval offers
// (Approval.Standing) is kept whole by Put, and a claim choosing it
// (GrantAlways) records the choice; an approval without one comes back
// without.
func testStandingRoundTrip(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewApproval(t)
	a.Risk = approval.RiskMedium
	st := approval.Standing{Session: approval.RulesSession("feishu", "oc_ops"), Agent: "ci-claude",
		Rules:      []approval.PermissionRule{{ToolName: "Bash", RuleContent: "npm test:*"}, {ToolName: "Bash", RuleContent: "npm run lint"}},
		Window:     30 * 24 * time.Hour,
		Suggestion: json.RawMessage(`{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"npm test:*"}],"behavior":"allow","destination":"localSettings"}`)}
	a.Standing = &st
	put(t, s, a)
	got := get(t, s, a.ID)
	if got.Standing == nil || !reflect.DeepEqual(*got.Standing, st) {
		t.Fatalf("Standing = %+v, want %+v", got.Standing, st)
	}
	res, err := s.Claim(ctx(t), a.ID, approval.ClaimRequest{Intent: approval.IntentApprove, Actor: "bob", Source: approval.SourceCard,
		PayloadSHA256: a.PayloadSHA256, Now: T0.Add(time.Second), Channel: a.Channel, ChatID: a.ChatID, Grant: approval.GrantAlways})
	if err != nil || res.Code != approval.ClaimOK {
		t.Fatalf("Claim = %+v, %v", res, err)
	}
	got = get(t, s, a.ID)
	if got.Grant != approval.GrantAlways || got.Grant.For(got) != approval.GrantAlways || got.Standing == nil {
		t.Fatalf("after the claim: grant %q (applies %q), standing %+v", got.Grant, got.Grant.For(got), got.Standing)
	}

	plain := NewApproval(t)
	put(t, s, plain)
	if got := get(t, s, plain.ID); got.Standing != nil || approval.GrantAlways.For(got) == approval.GrantAlways {
		t.Fatalf("an approval without a standing rule came back with %+v", got.Standing)
	}
}

// testStandingRules: a standing rule is a grant of a chat's rules session
// (RulesSession) that keeps its agent and rules, lives for its long
// window, is listed in that chat's rules session only, is found by its
// key, and is gone at once when revoked.
func testStandingRules(t *testing.T, s approval.Store, _ func(time.Duration)) {
	chat := fmt.Sprintf("oc_rules_%d", time.Now().UnixNano())
	sess := approval.RulesSession("feishu", chat)
	st := approval.Standing{Session: sess, Agent: "ci-claude", Rules: []approval.PermissionRule{{ToolName: "Bash", RuleContent: "npm test:*"}}, Window: 30 * 24 * time.Hour}
	at := time.Now().Add(-time.Minute).Truncate(time.Millisecond).UTC()
	g := approval.Grant{Session: sess, User: "ou_req", Tool: "ci-claude/Bash", PayloadSHA256: st.Hash(), Summary: st.Words(),
		ApprovalID: approval.NewID(sess), ApprovedBy: "ou_zhang", ApprovedAt: at, ExpiresAt: time.Now().Add(st.Window).UTC(),
		Agent: st.Agent, Rules: st.Rules}
	if err := s.PutGrant(ctx(t), g, st.Window); err != nil {
		t.Fatal(err)
	}
	gs, err := s.Grants(ctx(t), sess)
	if err != nil || len(gs) != 1 {
		t.Fatalf("Grants = %+v, %v; want the rule", gs, err)
	}
	if !gs[0].StandingRule() || gs[0].Agent != "ci-claude" || !reflect.DeepEqual(gs[0].Rules, st.Rules) || gs[0].Summary != "Bash(npm test:*)" ||
		gs[0].ApprovedBy != "ou_zhang" || !gs[0].ApprovedAt.Equal(at) {
		t.Fatalf("Grants[0] = %+v, want %+v", gs[0], g)
	}
	if found, err := s.GrantFor(ctx(t), sess, g.Key()); err != nil || found == nil || !found.StandingRule() {
		t.Fatalf("GrantFor = %+v, %v", found, err)
	}
	if other, err := s.Grants(ctx(t), approval.RulesSession("feishu", chat+"_other")); err != nil || len(other) != 0 {
		t.Fatalf("another chat's rules = %+v, %v", other, err)
	}
	if own, err := s.Grants(ctx(t), approval.SessionKey("feishu:"+chat)); err != nil || len(own) != 0 {
		t.Fatalf("the chat's own session lists %+v, %v", own, err)
	}
	if n, err := s.Revoke(ctx(t), sess, g.Key()); err != nil || n != 1 {
		t.Fatalf("Revoke = %d, %v", n, err)
	}
	if gs, err := s.Grants(ctx(t), sess); err != nil || len(gs) != 0 {
		t.Fatalf("after Revoke: %+v, %v", gs, err)
	}
	if found, err := s.GrantFor(ctx(t), sess, g.Key()); err != nil || found != nil {
		t.Fatalf("GrantFor after Revoke = %+v, %v", found, err)
	}
}
