package approval_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
)

// grantCases are the grant choices an approver can make on a MEDIUM call,
// and whether the session is granted the window afterwards.
var grantCases = []struct {
	choice approval.GrantChoice
	grants bool
	audit  string // the confirm record's grant field
}{
	{approval.GrantUnset, true, "session"}, // a plain 确认: the documented default
	{approval.GrantSession, true, "session"},
	{approval.GrantOnce, false, "once"},
}

// TestGrantChoice: the approver's choice is recorded by the claim and the
// confirm audit record; "once" grants nothing, "session" (and no choice)
// grants the window with who approved and when; a revoke on one engine
// (replica) makes the other ask again.
func TestGrantChoice(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		for _, tc := range grantCases {
			t.Run(string(tc.audit)+"/"+string(tc.choice), func(t *testing.T) {
				f := newFixture(t, be)
				ctx := context.Background()
				p, err := approval.NewPolicy(approval.PolicyConfig{Enabled: true, ConfidenceThreshold: 0.85, GrantWindow: 5 * time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				sess := approval.SessionKey(fmt.Sprintf("test:grantchoice-%d", time.Now().UnixNano()))
				args, hash, _ := approval.HashCall("task_create", []byte(`{"title":"buy milk"}`))
				ci := approval.CallInfo{Session: sess, User: "alice", Tool: "task_create", Effect: approval.EffectWrite, Hash: hash, Confidence: 1}
				v, err := f.a.Evaluate(ctx, p, ci)
				if err != nil || !v.NeedsApproval || v.Grant != nil {
					t.Fatalf("first verdict = %+v, %v", v, err)
				}
				a := request(t, f.a, func(r *approval.Request) {
					r.Session, r.Verdict, r.Requester = sess, v, "alice"
					r.Calls = []approval.Call{{Tool: "task_create", Args: args, Summary: "add a task: buy milk"}}
					r.Verdict.Approvers = approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"alice", "zhang"}}
				})
				decidedAt := f.clk.Now().UTC()
				d := decision(a, approval.Approve, "zhang")
				d.Grant = tc.choice
				if o := decide(t, f.b, a.ID, d); o.Status != approval.StatusExecuted {
					t.Fatalf("decision = %+v", o)
				}
				rec, err := f.b.Get(ctx, a.ID)
				if err != nil || rec.Grant != tc.choice {
					t.Fatalf("recorded grant = %q, %v; want %q", rec.Grant, err, tc.choice)
				}
				if got := confirmGrant(f.audit, a.ID); got != tc.audit {
					t.Fatalf("confirm audit grant = %q, want %q", got, tc.audit)
				}
				f.clk.Advance(4 * time.Minute)
				v, err = f.a.Evaluate(ctx, p, ci)
				if err != nil {
					t.Fatal(err)
				}
				if !tc.grants {
					if !v.NeedsApproval || v.Grant != nil {
						t.Fatalf("verdict after a once approval = %+v; want it to ask", v)
					}
					if gs, _ := f.a.Grants(ctx, sess); len(gs) != 0 {
						t.Fatalf("grants after a once approval = %+v", gs)
					}
					return
				}
				if v.NeedsApproval || v.Grant == nil {
					t.Fatalf("verdict 4 minutes after a session approval = %+v; want a run by the grant", v)
				}
				if g := v.Grant; g.ApprovedBy != "zhang" || !g.ApprovedAt.Equal(decidedAt) || g.ApprovalID != a.ID ||
					g.Summary != "add a task: buy milk" || g.User != "alice" {
					t.Fatalf("grant = %+v; want approved by zhang at %v", g, decidedAt)
				}
				gs, err := f.b.Grants(ctx, sess)
				if err != nil || len(gs) != 1 || gs[0].Tool != "task_create" {
					t.Fatalf("Grants on the other engine = %+v, %v", gs, err)
				}
				// Revoked on one replica: the other asks again.
				if n, err := f.b.Revoke(ctx, sess, "zhang", approval.SourceReply, gs[0].Key()); n != 1 || err != nil {
					t.Fatalf("Revoke = %d, %v", n, err)
				}
				if f.audit.count(a.ID, audit.EventRevoke) != 1 {
					t.Fatal("the revoke was not audited")
				}
				if v, _ := f.a.Evaluate(ctx, p, ci); !v.NeedsApproval || v.Grant != nil {
					t.Fatalf("verdict after the revoke = %+v; want it to ask", v)
				}
			})
		}
	})
}

// TestGrantChoiceNotGrantable: a HIGH approval grants nothing whatever the
// choice, and its confirm record names no grant.
func TestGrantChoiceNotGrantable(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := request(t, f.a, func(r *approval.Request) { r.Verdict.Risk = approval.RiskHigh })
		d := decision(a, approval.Approve, "alice")
		d.Grant = approval.GrantSession
		if o := decide(t, f.b, a.ID, d); o.Status != approval.StatusExecuted {
			t.Fatalf("decision = %+v", o)
		}
		if got := confirmGrant(f.audit, a.ID); got != "" {
			t.Fatalf("confirm audit grant = %q, want none", got)
		}
		if gs, _ := f.a.Grants(context.Background(), a.Session); len(gs) != 0 {
			t.Fatalf("a HIGH approval granted %+v", gs)
		}
	})
}

// TestParseGrantChoice is the table of what ParseGrantChoice accepts.
func TestParseGrantChoice(t *testing.T) {
	for _, tc := range parseGrantCases {
		got, err := approval.ParseGrantChoice(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseGrantChoice(%q) = %q, %v; want %q (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}

var parseGrantCases = []struct {
	in   string
	want approval.GrantChoice
	err  bool
}{
	{"", approval.GrantUnset, false},
	{"once", approval.GrantOnce, false},
	{" session ", approval.GrantSession, false},
	{"Session", "", true},
	{"always", approval.GrantAlways, false}, // another agent's standing rule (standing.go)
	{"forever", "", true},
	{"仅本次", "", true},
}

// confirmGrant returns the grant field of the approval's confirm record.
func confirmGrant(r *recorder, id approval.ID) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.recs {
		if rec.ApprovalID == string(id) && rec.Event == audit.EventConfirm {
			return rec.Grant
		}
	}
	return "<no confirm record>"
}
