//go:build linux

package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/approval/storetest"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

// With ReplicaAcks, a claim reports whether enough replicas acknowledged
// it: through a Sentinel with its replica in sync it is replicated; with
// the replica gone it is not, and the claim still happened on the master.
// A reject is not a claim a tool runs on: it is never marked.
//
// The bounds: a replica in sync (online at the master's offset, waited for
// before the first claim) acknowledges within ackBound on a loaded machine;
// the claims after the replica is killed must time out, so they use a store
// with a short bound.
func TestReplicaAcks(t *testing.T) {
	t.Parallel()
	const ackBound, deadBound = 5 * time.Second, 300 * time.Millisecond
	sen := testredis.StartSentinel(t, 1)
	c, err := redisstore.NewClient(redisstore.ClientConfig{Addrs: sen.Addrs, MasterName: sen.MasterName})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	prefix := randomPrefix()
	store := func(bound time.Duration) *redisstore.Store {
		s, err := redisstore.New(c, redisstore.Options{Prefix: prefix, ReplicaAcks: 1, ReplicaAckTimeout: bound})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	live, dead := store(ackBound), store(deadBound)
	ctx := context.Background()
	claim := func(s *redisstore.Store, intent approval.Intent) approval.ClaimResult {
		t.Helper()
		a := storetest.NewApproval(t)
		if _, err := s.Put(ctx, a, approval.Outcome{}); err != nil {
			t.Fatal(err)
		}
		r, err := s.Claim(ctx, a.ID, approval.ClaimRequest{Intent: intent, PayloadSHA256: a.PayloadSHA256, Actor: "bob",
			Source: approval.SourceCard, Now: storetest.T0})
		if err != nil || r.Code != approval.ClaimOK {
			t.Fatalf("claim: %+v, %v", r, err)
		}
		return r
	}
	sen.WaitInSync()
	if r := claim(live, approval.IntentApprove); r.Unreplicated {
		t.Fatalf("a claim the replica has was reported unreplicated (replica in sync, bound %v)", ackBound)
	}
	master := sen.Master()
	for _, n := range sen.Nodes {
		if n != master {
			sen.Kill(n)
		}
	}
	r := claim(dead, approval.IntentApprove)
	if !r.Unreplicated || r.Approval.State != approval.StateClaimed {
		t.Fatalf("a claim no replica has: %+v", r)
	}
	if r := claim(dead, approval.IntentReject); r.Unreplicated {
		t.Fatal("a reject was reported unreplicated")
	}
}

// Negative acknowledgements are refused at New.
func TestReplicaAcksInvalid(t *testing.T) {
	c, _ := testredis.Start(t)
	if _, err := redisstore.New(c, redisstore.Options{ReplicaAcks: -1}); approval.KindOf(err) != errkind.Invalid {
		t.Fatalf("New with -1 replica acks: %v", err)
	}
}

// On a Cluster the claim and its WAIT go to the master that owns the
// record's slot (a WAIT elsewhere would count another connection's
// writes). The test cluster has no replicas: every claim is unreplicated,
// and still taken, on the right node.
func TestReplicaAcksCluster(t *testing.T) {
	t.Parallel()
	addrs := testredis.StartCluster(t, 3)
	c, err := redisstore.NewClient(redisstore.ClientConfig{Addrs: addrs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	s, err := redisstore.New(c, redisstore.Options{Prefix: randomPrefix(), ReplicaAcks: 1, ReplicaAckTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 6 { // sessions spread over the slots
		a := storetest.NewApproval(t)
		if _, err := s.Put(ctx, a, approval.Outcome{}); err != nil {
			t.Fatal(err)
		}
		r, err := s.Claim(ctx, a.ID, approval.ClaimRequest{Intent: approval.IntentApprove, PayloadSHA256: a.PayloadSHA256, Actor: "bob",
			Source: approval.SourceCard, Now: storetest.T0})
		if err != nil || r.Code != approval.ClaimOK || !r.Unreplicated {
			t.Fatalf("claim %d: %+v, %v", i, r, err)
		}
		if got, err := s.Get(ctx, a.ID); err != nil || got.State != approval.StateClaimed {
			t.Fatalf("claim %d: the record is %+v, %v", i, got, err)
		}
	}
}
