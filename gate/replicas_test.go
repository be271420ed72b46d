package gate_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/gate"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

func TestMain(m *testing.M) { testredis.Main(m) }

// redisReplicas returns n stores, each with a client of its own, on one
// real Redis: n replicas.
func redisReplicas(t testing.TB, n int) []approval.Store {
	t.Helper()
	c, prefix := testredis.Start(t)
	addr := c.(*redis.Client).Options().Addr
	out := make([]approval.Store, n)
	for i := range out {
		rc := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { rc.Close() })
		s, err := redisstore.New(rc, redisstore.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = s
	}
	return out
}

// TestTwoReplicas: the agent waits on replica A; the card is decided on
// replica B; A's waiter answers. The agent's retry with the same
// tool_use_id on B (as after a restart of A) finds the same approval.
func TestTwoReplicas(t *testing.T) {
	stores := redisReplicas(t, 2)
	a, b := newRigOn(t, stores[0]), newRigOn(t, stores[1])
	q := gate.Ask{Tool: "Bash", Input: json.RawMessage(`{"command":"kubectl rollout restart deploy/api"}`), Key: "toolu_r"}
	ans, err := a.gate.Ask(context.Background(), a.ci, q)
	if err != nil || ans.Status != gate.StatusPending {
		t.Fatalf("ask on A: %+v, %v", ans, err)
	}
	card := a.card(t)
	again, err := b.gate.Ask(context.Background(), b.ci, q)
	if err != nil || again.ID != ans.ID {
		t.Fatalf("the retry on B: %+v, %v; want %s", again, err, ans.ID)
	}
	select {
	case x := <-b.shown:
		t.Fatalf("the retry on B showed a second card: %s", x.ID)
	default:
	}
	done := make(chan gate.Answer, 1)
	go func() {
		got, err := a.gate.Wait(context.Background(), a.ci, ans.ID, time.Minute)
		if err != nil {
			t.Error(err)
		}
		done <- got
	}()
	b.decide(t, card, approval.Approve, "ou_456", "")
	select {
	case got := <-done:
		if got.Status != gate.StatusAllowed || got.DecidedBy != "ou_456" {
			t.Fatalf("A's waiter: %+v", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("A's waiter did not hear B's decision")
	}
}
