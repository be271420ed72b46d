package approval_test

import (
	"context"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
)

// standingOffer is a standing rule an agent's approval offers.
func standingOffer() *approval.Standing {
	return &approval.Standing{Session: approval.RulesSession("test", "chat-1"), Agent: "ci-claude",
		Rules: []approval.PermissionRule{{ToolName: "Bash", RuleContent: "npm test:*"}}, Window: 30 * 24 * time.Hour}
}

// TestStandingRuleChosen: choosing always on an approval that offers a
// standing rule runs it, records the rule in the rules session (on the
// store every replica reads) with who allowed it and when, and audits it;
// a revoke on the other replica ends it.
func TestStandingRuleChosen(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		ctx := context.Background()
		a := request(t, f.a, func(r *approval.Request) {
			r.Verdict.Risk, r.Standing = approval.RiskMedium, standingOffer()
		})
		if a.Standing == nil {
			t.Fatal("the approval does not keep the standing rule it offers")
		}
		d := decision(a, approval.Approve, "bob")
		d.Grant = approval.GrantAlways
		if o := decide(t, f.b, a.ID, d); o.Status != approval.StatusExecuted {
			t.Fatalf("decision = %+v", o)
		}
		if got := confirmGrant(f.audit, a.ID); got != "always" {
			t.Fatalf("confirm audit grant = %q, want always", got)
		}
		gs, err := f.a.Grants(ctx, approval.RulesSession("test", "chat-1"))
		if err != nil || len(gs) != 1 {
			t.Fatalf("rules = %+v, %v", gs, err)
		}
		g := gs[0]
		if !g.StandingRule() || g.Agent != "ci-claude" || g.Summary != "Bash(npm test:*)" || g.ApprovedBy != "bob" || g.ApprovalID != a.ID ||
			g.ExpiresAt.Sub(f.clk.Now()) != 30*24*time.Hour {
			t.Fatalf("rule = %+v", g)
		}
		rec := findAudit(f.audit, a.ID, audit.EventStandingRule)
		if rec == nil || rec.Actor != "bob" || rec.Session != string(approval.RulesSession("test", "chat-1")) || rec.Reason == "" {
			t.Fatalf("standing_rule audit record = %+v", rec)
		}
		if n, err := f.b.Revoke(ctx, approval.RulesSession("test", "chat-1"), "bob", approval.SourceCard, g.Key()); err != nil || n != 1 {
			t.Fatalf("Revoke = %d, %v", n, err)
		}
		if gs, _ := f.a.Grants(ctx, approval.RulesSession("test", "chat-1")); len(gs) != 0 {
			t.Fatalf("rules after a revoke on the other replica = %+v", gs)
		}
	})
}

// alwaysForgeries are decisions choosing always that must be refused as
// tampered: nothing is claimed, nothing runs, no rule is recorded.
var alwaysForgeries = []struct {
	name  string
	offer bool // the approval offers a standing rule
	risk  approval.Risk
}{
	{"no rule offered", false, approval.RiskMedium},
	{"HIGH: never offered", true, approval.RiskHigh},
}

// TestStandingRuleForged: a click value choosing always on an approval that
// offers no standing rule is refused (tampered, audited) and the approval
// stays pending.
func TestStandingRuleForged(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		for _, tc := range alwaysForgeries {
			t.Run(tc.name, func(t *testing.T) {
				f := newFixture(t, be)
				a := request(t, f.a, func(r *approval.Request) {
					r.Verdict.Risk = tc.risk
					if tc.offer {
						r.Standing = standingOffer()
					}
				})
				d := decision(a, approval.Approve, "bob")
				d.Grant = approval.GrantAlways
				if o := decide(t, f.b, a.ID, d); o.Status != approval.StatusTampered {
					t.Fatalf("decision = %+v, want tampered", o)
				}
				if f.tool.runs.Load() != 0 {
					t.Fatal("the tool ran")
				}
				rec, err := f.a.Get(context.Background(), a.ID)
				if err != nil || rec.State != approval.StatePending {
					t.Fatalf("state = %v, %v; want pending", rec.State, err)
				}
				if findAudit(f.audit, a.ID, audit.EventTampered) == nil {
					t.Fatal("no tampered audit record")
				}
				if gs, _ := f.a.Grants(context.Background(), approval.RulesSession("test", "chat-1")); len(gs) != 0 {
					t.Fatalf("rules = %+v", gs)
				}
			})
		}
	})
}

func findAudit(r *recorder, id approval.ID, ev audit.Event) *audit.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.recs {
		if rec.ApprovalID == string(id) && rec.Event == ev {
			return &rec
		}
	}
	return nil
}
