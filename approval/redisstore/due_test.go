package redisstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/approval/storetest"
)

// TestDueLosesEnded: an approval that ended (cancelled, rejected,
// executed) leaves the expiry index with the store's next pipeline, not
// at the next sweep; a pending one and a claimed one (the sweeper freezes
// a claim nobody completed) stay. Before, Due named all five until the
// sweeper claimed each.
func TestDueLosesEnded(t *testing.T) {
	s := newStore(t, redisstore.Options{})
	ctx := context.Background()
	var ids []approval.ID
	put := func() *approval.Approval {
		a := storetest.NewApproval(t)
		if _, err := s.Put(ctx, a, approval.Outcome{}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a.ID)
		return a
	}
	approve := func(a *approval.Approval) approval.ClaimRequest {
		return approval.ClaimRequest{Intent: approval.IntentApprove, PayloadSHA256: a.PayloadSHA256, Actor: "bob", Source: approval.SourceCard, Now: storetest.T0}
	}
	pending, cancelled, rejected, claimed, executed := put(), put(), put(), put(), put()
	if _, ok, err := s.Cancel(ctx, cancelled.ID, approval.Outcome{}, storetest.T0); !ok || err != nil {
		t.Fatalf("Cancel = %v, %v", ok, err)
	}
	req := approve(rejected)
	req.Intent = approval.IntentReject
	if r, err := s.Claim(ctx, rejected.ID, req); err != nil || !r.Ended {
		t.Fatalf("reject = %+v, %v", r, err)
	}
	for _, a := range []*approval.Approval{claimed, executed} {
		if r, err := s.Claim(ctx, a.ID, approve(a)); err != nil || r.Code != approval.ClaimOK {
			t.Fatalf("claim = %+v, %v", r, err)
		}
	}
	if _, err := s.Complete(ctx, executed.ID, approval.StateExecuted, approval.Outcome{Status: approval.StatusExecuted}, 0); err != nil {
		t.Fatal(err)
	}
	later := put() // its pipeline carries the removals
	all, err := s.Due(ctx, storetest.T0.Add(time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []approval.ID
	for _, id := range all {
		if slices.Contains(ids, id) {
			got = append(got, id)
		}
	}
	want := []approval.ID{pending.ID, claimed.ID, later.ID}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("Due = %v, want the pending, the claimed and the later one %v", got, want)
	}
}
