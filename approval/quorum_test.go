package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

// quorumOf is a request modifier: approvers u1 … un, quorum q, and the
// requester may not approve (high_needs_other).
func quorumOf(q, n int) func(*approval.Request) {
	return func(r *approval.Request) {
		rule := approval.ApproverRule{Mode: approval.ApproverUsers, Quorum: q, NotRequester: true}
		for i := range n {
			rule.Users = append(rule.Users, approval.UserID(fmt.Sprintf("u%d", i+1)))
		}
		r.Verdict.Approvers = rule
	}
}

// progressNotes is the test notifier that also records Progress calls.
type progressNotes struct {
	*notifier
	mu       sync.Mutex
	progress []int // the number of votes each Progress call showed
}

func (p *progressNotes) Progress(ctx context.Context, a *approval.Approval) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.progress = append(p.progress, len(a.Votes))
	return nil
}

// TestQuorumEngine: 2 of 3 on two replicas. The first approve (on A) is
// awaiting_quorum with "1/2 approved: u1", audited as a vote, and the cards
// show the progress; the same person again is told they approved already;
// the second (on B) runs the tool once, and a Wait on A gets executed. The
// audit trail holds one vote and one confirm.
func TestQuorumEngine(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		pn := &progressNotes{notifier: f.notes}
		e, err := approval.NewEngine(approval.EngineConfig{Store: f.sa, Notifier: pn, Dispatcher: f.tool, Audit: f.audit, Clock: f.clk, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		a := request(t, f.a, quorumOf(2, 3))
		ch := waitAsync(t, f.a, a.ID)
		o := decide(t, e, a.ID, decision(a, approval.Approve, "u1"))
		if o.Status != approval.StatusAwaitingQuorum || o.Approvals != 1 || o.Quorum != 2 || o.IsError ||
			!strings.HasSuffix(o.Content, ": 1/2 approved: u1") || o.Detail != "1/2 approved: u1" {
			t.Fatalf("first approve = %+v", o)
		}
		if f.tool.runs.Load() != 0 || f.audit.count(a.ID, audit.EventVote) != 1 {
			t.Fatalf("after one vote: %d runs, %d vote records", f.tool.runs.Load(), f.audit.count(a.ID, audit.EventVote))
		}
		pn.mu.Lock()
		shown := append([]int(nil), pn.progress...)
		pn.mu.Unlock()
		if len(shown) != 1 || shown[0] != 1 {
			t.Fatalf("progress shown %v, want [1]", shown)
		}
		if o := decide(t, f.b, a.ID, decision(a, approval.Approve, "u1")); o.Status != approval.StatusAwaitingQuorum || !o.IsError ||
			o.Content != "You have already approved this; 1/2 approved: u1" {
			t.Fatalf("the same person again = %+v", o)
		}
		if o := decide(t, f.b, a.ID, decision(a, approval.Approve, "u3")); o.Status != approval.StatusExecuted {
			t.Fatalf("the approve that reaches the quorum = %+v", o)
		}
		if w := recv(t, ch); w.Status != approval.StatusExecuted || f.tool.runs.Load() != 1 {
			t.Fatalf("Wait = %+v after %d runs", w, f.tool.runs.Load())
		}
		if f.audit.count(a.ID, audit.EventVote) != 1 || f.audit.count(a.ID, audit.EventConfirm) != 1 {
			t.Fatalf("audit: %d votes, %d confirms; want 1 and 1", f.audit.count(a.ID, audit.EventVote), f.audit.count(a.ID, audit.EventConfirm))
		}
		rec, err := f.b.Get(context.Background(), a.ID)
		if err != nil || len(rec.Votes) != 2 || rec.Votes[0].By != "u1" || rec.Votes[1].By != "u3" {
			t.Fatalf("record votes %+v, %v", rec, err)
		}
	})
}

// TestQuorumRacingReplicas: 2 of 4, every approver approving at once on
// alternating replicas, many times over: the tool runs exactly once each
// time, and exactly one decision reports it.
func TestQuorumRacingReplicas(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		for round := range 20 {
			a := request(t, f.a, quorumOf(2, 4))
			before := f.tool.runs.Load()
			var wg sync.WaitGroup
			statuses := make([]approval.Status, 4)
			for i := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					e := f.a
					if i%2 == 1 {
						e = f.b
					}
					o, err := e.Decide(context.Background(), a.ID, decision(a, approval.Approve, approval.UserID(fmt.Sprintf("u%d", i+1))))
					if err != nil {
						t.Error(err)
					}
					statuses[i] = o.Status
				}()
			}
			wg.Wait()
			executed, awaiting := 0, 0
			for _, st := range statuses {
				switch st {
				case approval.StatusExecuted:
					executed++
				case approval.StatusAwaitingQuorum:
					awaiting++
				}
			}
			if runs := f.tool.runs.Load() - before; runs != 1 || executed != 1 || awaiting != 1 {
				t.Fatalf("round %d: %d runs, statuses %v; want one run, one executed, one awaiting_quorum", round, runs, statuses)
			}
		}
	})
}

// TestQuorumRefusals: a rule whose quorum no one can reach is refused when
// the request is made (nothing asked, nothing stored); an edit and a
// mixed per-call decision of an approval that needs several approvers is
// refused as invalid, and nothing is counted (edits are refused the same
// way, in editDecision, before anything is checked against the tool).
func TestQuorumRefusals(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		_, err := f.a.Request(context.Background(), approval.Request{Session: "test:q-unreachable", Channel: "test", ChatID: "c", Requester: "u1",
			Calls: []approval.Call{{Tool: "sql_execute", Args: json.RawMessage(`{"statement":"DROP TABLE t"}`)}},
			Verdict: approval.Verdict{NeedsApproval: true, Risk: approval.RiskHigh,
				Approvers: approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"u1", "u2"}, Quorum: 2, NotRequester: true}}})
		if !errors.Is(err, approval.ErrQuorumUnreachable) || approval.KindOf(err) != errkind.Invalid {
			t.Fatalf("an unreachable quorum's request: %v", err)
		}
		a := request(t, f.a, quorumOf(2, 3), func(r *approval.Request) {
			r.Calls = append(r.Calls, approval.Call{Tool: "sql_execute", Args: json.RawMessage(`{"statement":"DELETE FROM orders WHERE id = 2","database":"demo"}`), CallID: "c2"})
		})
		d := decision(a, approval.Approve, "u1")
		d.Calls = map[string]approval.Verb{"c1": approval.Approve, "c2": approval.Reject}
		if _, err := f.a.Decide(context.Background(), a.ID, d); !errors.Is(err, approval.ErrQuorumNoEdit) || approval.KindOf(err) != errkind.Invalid {
			t.Fatalf("a mixed per-call decision under a quorum: %v", err)
		}
		rec, err := f.a.Get(context.Background(), a.ID)
		if err != nil || rec.State != approval.StatePending || len(rec.Votes) != 0 {
			t.Fatalf("after the refused edit: %+v, %v", rec, err)
		}
	})
}
