package redisstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/approval/storetest"
	"github.com/hitlbot/hitlbot/internal/testredis"
	"github.com/hitlbot/hitlbot/internal/waitfor"
)

// waitFor polls cond until it holds or d has passed (waitfor.Within).
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	waitfor.Within(t, d, what, cond)
}

func randomPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "c" + hex.EncodeToString(b[:]) + ":"
}

// TestCluster runs the conformance suite on a three-node Redis Cluster
// through a go-redis ClusterClient. A script that touched a key served by
// another node would fail there ("non local key"); the test first checks
// that this cluster does refuse such a script.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node Redis Cluster")
	}
	addrs := testredis.StartCluster(t, 3)
	cc, err := redisstore.NewClient(redisstore.ClientConfig{Addrs: addrs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	ctx := context.Background()

	// Our Go slot computation agrees with the server's.
	for _, k := range []string{"hitl:{0a1b2c3d}:ap:x", "plain", "a{}b", "{x}y", "hitl:seen:feishu:{ev}"} {
		got, err := cc.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if int(got) != keySlot(k) {
			t.Fatalf("CLUSTER KEYSLOT %q = %d, keySlot = %d", k, got, keySlot(k))
		}
	}
	// This cluster refuses a script that reaches a key on another node.
	k1, k2 := "{a}k", "{b}k" // slots 15495 and 3300: different nodes of three
	err = cc.Eval(ctx, "redis.call('SET', KEYS[1], 1); return redis.call('GET', ARGV[1])", []string{k1}, k2).Err()
	if err == nil {
		t.Fatalf("a script touching %s (slot %d) and %s (slot %d) ran; the test cluster does not catch cross-slot scripts", k1, keySlot(k1), k2, keySlot(k2))
	}
	t.Logf("cross-node script refused as expected: %v", err)

	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) (approval.Store, func(time.Duration)) {
			s, err := redisstore.New(cc, redisstore.Options{Prefix: randomPrefix()})
			if err != nil {
				t.Fatal(err)
			}
			return s, time.Sleep
		},
	})
}
