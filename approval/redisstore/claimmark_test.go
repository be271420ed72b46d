package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/storetest"
)

// TestClaimMark: a claim given a decision's de-duplication mark sets it in
// its own round trip; a claim that finds it set (another replica's, or a
// re-delivered click's) is a duplicate and changes nothing, whatever it
// asks; once the mark is forgotten the same key decides again.
func TestClaimMark(t *testing.T) {
	s, cnt, _ := countedStore(t)
	ctx := context.Background()
	now := storetest.T0.Add(time.Minute)
	a := storetest.NewApproval(t)
	if _, err := s.Put(ctx, a, approval.Outcome{}); err != nil {
		t.Fatal(err)
	}
	req := approval.ClaimRequest{Intent: approval.IntentReject, PayloadSHA256: "0", Actor: "bob", Source: approval.SourceCard, Now: now,
		Mark: "evt:test:click-1", MarkTTL: time.Minute}
	// A tampered reject: refused, but the click is marked all the same,
	// as Seen before the claim marked it.
	if r, err := s.Claim(ctx, a.ID, req); err != nil || r.Code != approval.ClaimTampered {
		t.Fatalf("tampered claim = %+v, %v", r, err)
	}
	req.PayloadSHA256, req.Intent = a.PayloadSHA256, approval.IntentApprove
	cnt.take()
	if r, err := s.Claim(ctx, a.ID, req); err != nil || r.Code != approval.ClaimDuplicate || r.Approval != nil {
		t.Fatalf("claim with the same mark = %+v, %v; want duplicate", r, err)
	}
	if got := withoutHandshakes(cnt.take()); len(got) != 1 {
		t.Fatalf("a marked claim sent %v, want one round trip", got)
	}
	if got, _ := s.Get(ctx, a.ID); got.State != approval.StatePending {
		t.Fatalf("a duplicate claim changed the approval: %s", got.State)
	}
	// Seen's marks are another key space: the click's mark is not one.
	if first, err := s.Seen(ctx, req.Mark, time.Minute); err != nil || !first {
		t.Fatalf("Seen(%q) = %v, %v", req.Mark, first, err)
	}
	if err := s.ForgetClaimMark(ctx, a.ID, req.Mark); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Claim(ctx, a.ID, req); err != nil || r.Code != approval.ClaimOK {
		t.Fatalf("claim after the mark was forgotten = %+v, %v; want claimed", r, err)
	}
	// Without a TTL nothing is marked, as with Seen.
	b := storetest.NewApproval(t)
	if _, err := s.Put(ctx, b, approval.Outcome{}); err != nil {
		t.Fatal(err)
	}
	unmarked := req
	unmarked.PayloadSHA256, unmarked.Mark, unmarked.MarkTTL = "0", "evt:test:click-2", 0
	for range 2 {
		if r, err := s.Claim(ctx, b.ID, unmarked); err != nil || r.Code != approval.ClaimTampered {
			t.Fatalf("claim without a TTL = %+v, %v; want tampered twice", r, err)
		}
	}
}
