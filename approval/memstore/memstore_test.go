package memstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/approval/storetest"
	"github.com/hitlbot/hitlbot/internal/clock"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{New: func(t *testing.T) (approval.Store, func(time.Duration)) {
		clk := clock.NewFake(time.Now())
		return memstore.New(memstore.Options{Clock: clk}), clk.Advance
	}})
}

// TestRetention: records of approvals ended longer than the retention ago
// are dropped by a later Put's purge, younger ones stay, and one claimed
// long ago whose run has not completed stays until it has ended and aged.
func TestRetention(t *testing.T) {
	ctx := context.Background()
	t0 := storetest.T0
	clk := clock.NewFake(t0)
	s := memstore.New(memstore.Options{Clock: clk, Retention: time.Hour})
	put := func(at time.Time) *approval.Approval {
		t.Helper()
		a := storetest.NewApproval(t)
		a.CreatedAt, a.ExpiresAt = at, at.Add(5*time.Minute)
		if _, err := s.Put(ctx, a, approval.Outcome{}); err != nil {
			t.Fatal(err)
		}
		return a
	}
	exists := func(id approval.ID) bool {
		_, err := s.Get(ctx, id)
		if err != nil && approval.KindOf(err) != errkind.NotFound {
			t.Fatal(err)
		}
		return err == nil
	}
	old := put(t0)
	if _, _, err := s.Cancel(ctx, old.ID, approval.Outcome{}, t0); err != nil {
		t.Fatal(err)
	}
	stuck := put(t0)
	res, err := s.Claim(ctx, stuck.ID, approval.ClaimRequest{Intent: approval.IntentApprove, PayloadSHA256: stuck.PayloadSHA256,
		Actor: "bob", Source: approval.SourceCard, Channel: "test", ChatID: "chat", Now: t0,
		Outcome: func(st approval.Status) approval.Outcome { return approval.Outcome{Status: st} }})
	if err != nil || res.Code != approval.ClaimOK {
		t.Fatalf("claim: %+v, %v", res, err)
	}
	young := put(t0.Add(90 * time.Minute))
	if _, _, err := s.Cancel(ctx, young.ID, approval.Outcome{}, t0.Add(90*time.Minute)); err != nil {
		t.Fatal(err)
	}
	purge := func(at time.Time) { // a purge runs every 256th Put
		for range 256 {
			put(at)
		}
	}
	purge(t0.Add(2 * time.Hour))
	if exists(old.ID) || !exists(stuck.ID) || !exists(young.ID) {
		t.Fatalf("after 2h: old %v (want gone), claimed %v, young %v (want kept)", exists(old.ID), exists(stuck.ID), exists(young.ID))
	}
	if _, err := s.Complete(ctx, stuck.ID, approval.StateFrozen, approval.Outcome{Status: approval.StatusFrozen}, 0); err != nil {
		t.Fatal(err)
	}
	purge(t0.Add(3 * time.Hour))
	if exists(stuck.ID) || exists(young.ID) {
		t.Fatalf("after 3h: the frozen one %v, young %v, want both gone", exists(stuck.ID), exists(young.ID))
	}
}

// TestResolveAfterRetention: a frozen approval decided longer than the
// retention ago cannot be resolved (missing, as in Redis, where its record
// has expired), whether or not a purge has dropped it yet; a younger one
// can.
func TestResolveAfterRetention(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(storetest.T0)
	s := memstore.New(memstore.Options{Clock: clk, Retention: time.Hour})
	a := storetest.NewApproval(t)
	if _, err := s.Put(ctx, a, approval.Outcome{}); err != nil {
		t.Fatal(err)
	}
	decided := storetest.T0.Add(time.Minute)
	if r, err := s.Claim(ctx, a.ID, approval.ClaimRequest{Intent: approval.IntentApprove, PayloadSHA256: a.PayloadSHA256, Actor: "bob", Now: decided}); err != nil || r.Code != approval.ClaimOK {
		t.Fatalf("claim: %v %v", r.Code, err)
	}
	if _, err := s.Complete(ctx, a.ID, approval.StateFrozen, approval.Outcome{Status: approval.StatusFrozen}, 0); err != nil {
		t.Fatal(err)
	}
	req := approval.ResolveRequest{Resolution: approval.ResolveDone, PayloadSHA256: a.PayloadSHA256, Actor: "carol", Now: decided.Add(time.Hour + time.Second)}
	if r, err := s.Resolve(ctx, a.ID, req); err != nil || r.Code != approval.ClaimMissing {
		t.Fatalf("resolution past the retention = %v, %v; want missing", r.Code, err)
	}
	req.Now = decided.Add(time.Hour)
	if r, err := s.Resolve(ctx, a.ID, req); err != nil || r.Code != approval.ClaimOK {
		t.Fatalf("resolution within the retention = %v, %v; want claimed", r.Code, err)
	}
}

// claimAs is a claim of a by bob (an allowed approver of
// storetest.NewApproval) with intent at now.
func claimAs(t *testing.T, s *memstore.Store, a *approval.Approval, intent approval.Intent, now time.Time) {
	t.Helper()
	res, err := s.Claim(context.Background(), a.ID, approval.ClaimRequest{Intent: intent, PayloadSHA256: a.PayloadSHA256,
		Actor: "bob", Source: approval.SourceCard, Channel: "test", ChatID: "chat", Now: now})
	if err != nil || res.Code != approval.ClaimOK && res.Code != approval.ClaimExpired {
		t.Fatalf("claim (%s): %+v, %v", intent, res.Code, err)
	}
}

// endings are the ways an approval stops being pending, and whether it
// stays in the expiry index after (a claim not completed does: the
// sweeper freezes it if its run never ends).
var endings = []struct {
	name    string
	end     func(t *testing.T, s *memstore.Store, a *approval.Approval)
	wantDue bool
}{
	{"cancelled", func(t *testing.T, s *memstore.Store, a *approval.Approval) {
		if _, ok, err := s.Cancel(context.Background(), a.ID, approval.Outcome{}, storetest.T0.Add(90*time.Second)); !ok || err != nil {
			t.Fatalf("cancel: %v, %v", ok, err)
		}
	}, false},
	{"rejected", func(t *testing.T, s *memstore.Store, a *approval.Approval) {
		claimAs(t, s, a, approval.IntentReject, storetest.T0.Add(90*time.Second))
	}, false},
	{"expired", func(t *testing.T, s *memstore.Store, a *approval.Approval) {
		claimAs(t, s, a, approval.IntentExpire, a.ExpiresAt)
	}, false},
	{"superseded", func(t *testing.T, s *memstore.Store, a *approval.Approval) {
		b := storetest.NewApproval(t, a.Session)
		b.ChatID = "elsewhere" // its own chat, so a's chats are empty once a has ended
		if _, err := s.Put(context.Background(), b, approval.Outcome{}); err != nil {
			t.Fatal(err)
		}
	}, false},
	{"claimed", func(t *testing.T, s *memstore.Store, a *approval.Approval) {
		claimAs(t, s, a, approval.IntentApprove, storetest.T0.Add(90*time.Second))
	}, true},
	{"executed", func(t *testing.T, s *memstore.Store, a *approval.Approval) {
		claimAs(t, s, a, approval.IntentApprove, storetest.T0.Add(90*time.Second))
		if _, err := s.Complete(context.Background(), a.ID, approval.StateExecuted, approval.Outcome{Status: approval.StatusExecuted}, time.Hour); err != nil {
			t.Fatal(err)
		}
	}, false},
	{"frozen by its run", func(t *testing.T, s *memstore.Store, a *approval.Approval) {
		claimAs(t, s, a, approval.IntentApprove, storetest.T0.Add(90*time.Second))
		if _, err := s.Complete(context.Background(), a.ID, approval.StateFrozen, approval.Outcome{Status: approval.StatusFrozen}, 0); err != nil {
			t.Fatal(err)
		}
	}, false},
}

// TestEndedLeaveIndexes: an approval that stops being pending leaves the
// lists of its chats (its own and an escalation step's) and the
// escalation index at once, and the expiry index when it has ended (a
// claim stays there until completed), so neither the indexes nor what
// reads them grow with the approvals the process has ever held.
func TestEndedLeaveIndexes(t *testing.T) {
	ctx := context.Background()
	step := approval.Place{Channel: "dingtalk", ChatID: "cidleads"}
	later := storetest.T0.Add(time.Hour)
	for _, tc := range endings {
		t.Run(tc.name, func(t *testing.T) {
			s := memstore.New(memstore.Options{Clock: clock.NewFake(storetest.T0)})
			a := storetest.NewApproval(t)
			a.Escalation = []approval.Escalation{
				{After: time.Minute, To: step, Approvers: approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"dave"}}},
				{After: 2 * time.Minute, To: approval.Place{Channel: "test", ChatID: "oncall"}, Approvers: approval.ApproverRule{Mode: approval.ApproverChat}},
			}
			if _, err := s.Put(ctx, a, approval.Outcome{}); err != nil {
				t.Fatal(err)
			}
			if r, err := s.Escalate(ctx, a.ID, storetest.T0.Add(time.Minute)); err != nil || r.Code != approval.EscalateTaken {
				t.Fatalf("escalate: %+v, %v", r.Code, err)
			}
			tc.end(t, s, a)
			for _, p := range []approval.Place{{Channel: a.Channel, ChatID: a.ChatID}, step} {
				if got, err := s.ChatPending(ctx, p.Channel, p.ChatID); err != nil || len(got) != 0 {
					t.Errorf("ChatPending(%v) = %d approvals, %v; want none", p, len(got), err)
				}
			}
			if got, err := s.Escalations(ctx, later, 0); err != nil || len(got) != 0 {
				t.Errorf("Escalations = %v, %v; want none", got, err)
			}
			due, err := s.Due(ctx, later, 0)
			if err != nil {
				t.Fatal(err)
			}
			if inDue := slices.Contains(due, a.ID); inDue != tc.wantDue {
				t.Errorf("in the expiry index: %v, want %v (Due = %v)", inDue, tc.wantDue, due)
			}
		})
	}
}
