package memstore_test

import (
	"context"
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
