package redisstore_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/approval/storetest"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

// serverTime resets Redis's command statistics and returns a function that
// reports, as "server-µs/op", the server's time per call of cmd since then
// (EVALSHA: the script itself). It is less noisy than ns/op on a loaded machine.
func serverTime(b *testing.B, c redis.UniversalClient, cmd string) func() {
	ctx := context.Background()
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	return func() {
		info := c.Info(ctx, "commandstats").Val()
		for _, line := range strings.Split(info, "\n") {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":")
			if !ok {
				continue
			}
			for _, kv := range strings.Split(rest, ",") {
				if v, ok := strings.CutPrefix(kv, "usec_per_call="); ok {
					f, _ := strconv.ParseFloat(v, 64)
					b.ReportMetric(f, "server-µs/op")
				}
			}
		}
	}
}

// putMany stores n pending approvals, each in a session of its own.
func putMany(b *testing.B, s *redisstore.Store, n int) []*approval.Approval {
	b.Helper()
	ctx := context.Background()
	as := make([]*approval.Approval, n)
	for i := range as {
		as[i] = storetest.NewApproval(b)
		if _, err := s.Put(ctx, as[i], approval.Outcome{}); err != nil {
			b.Fatal(err)
		}
	}
	return as
}

func approveReq(a *approval.Approval) approval.ClaimRequest {
	return approval.ClaimRequest{Intent: approval.IntentApprove, PayloadSHA256: a.PayloadSHA256, Actor: "bob",
		Source: approval.SourceCard, Now: storetest.T0.Add(time.Minute),
		Outcome: func(st approval.Status) approval.Outcome { return approval.Outcome{Content: "status " + string(st)} }}
}

// BenchmarkPut stores pending approvals, each in a new session.
func BenchmarkPut(b *testing.B) {
	s, c := newStoreClient(b, redisstore.Options{})
	putMany(b, s, 1) // load the script
	as := make([]*approval.Approval, b.N)
	for i := range as {
		as[i] = storetest.NewApproval(b)
	}
	ctx := context.Background()
	b.ReportAllocs()
	report := serverTime(b, c, "evalsha")
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.Put(ctx, as[i], approval.Outcome{}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	report()
}

// BenchmarkClaim approves pending approvals: one EVALSHA each.
func BenchmarkClaim(b *testing.B) {
	s, c := newStoreClient(b, redisstore.Options{})
	as := putMany(b, s, b.N+1)
	ctx := context.Background()
	if _, err := s.Claim(ctx, as[b.N].ID, approveReq(as[b.N])); err != nil { // load the script
		b.Fatal(err)
	}
	b.ReportAllocs()
	report := serverTime(b, c, "evalsha")
	b.ResetTimer()
	for i := range b.N {
		r, err := s.Claim(ctx, as[i].ID, approveReq(as[i]))
		if err != nil || r.Code != approval.ClaimOK {
			b.Fatalf("Claim = %+v, %v", r.Code, err)
		}
	}
	b.StopTimer()
	report()
}

// BenchmarkClaimParallel approves pending approvals from GOMAXPROCS goroutines.
func BenchmarkClaimParallel(b *testing.B) {
	s := newStore(b, redisstore.Options{})
	as := putMany(b, s, b.N+1)
	ctx := context.Background()
	if _, err := s.Claim(ctx, as[b.N].ID, approveReq(as[b.N])); err != nil {
		b.Fatal(err)
	}
	next := make(chan *approval.Approval, b.N)
	for _, a := range as[:b.N] {
		next <- a
	}
	close(next)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a := <-next
			if r, err := s.Claim(ctx, a.ID, approveReq(a)); err != nil || r.Code != approval.ClaimOK {
				b.Errorf("Claim = %+v, %v", r.Code, err)
				return
			}
		}
	})
}

// BenchmarkComplete completes claimed approvals, caching the result.
func BenchmarkComplete(b *testing.B) {
	s, c := newStoreClient(b, redisstore.Options{})
	as := putMany(b, s, b.N+1)
	ctx := context.Background()
	for _, a := range as {
		if _, err := s.Claim(ctx, a.ID, approveReq(a)); err != nil {
			b.Fatal(err)
		}
	}
	o := approval.Outcome{Status: approval.StatusExecuted, Content: "1 row affected",
		Results: []approval.Result{{Tool: "sql_execute", Status: approval.StatusExecuted, Content: "1 row affected"}}}
	if _, err := s.Complete(ctx, as[b.N].ID, approval.StateExecuted, o, time.Hour); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	report := serverTime(b, c, "evalsha")
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.Complete(ctx, as[i].ID, approval.StateExecuted, o, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	report()
}

// BenchmarkSeen is the de-duplication of incoming events: SET NX PX.
func BenchmarkSeen(b *testing.B) {
	s, c := newStoreClient(b, redisstore.Options{})
	ctx := context.Background()
	keys := make([]string, b.N)
	for i := range keys {
		keys[i] = "feishu:ev-" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	report := serverTime(b, c, "set")
	b.ResetTimer()
	for i := range b.N {
		if first, err := s.Seen(ctx, keys[i], 10*time.Minute); err != nil || !first {
			b.Fatalf("Seen = %v, %v", first, err)
		}
	}
	b.StopTimer()
	report()
}

// BenchmarkPendingMemory measures what one pending approval costs in Redis:
// MEMORY USAGE (SAMPLES 0) of its record and its session pointer, and the
// growth of used_memory per approval (record, pointer, expiry-index entry,
// TTL entries, dictionary slots), on a Redis of its own. Each iteration
// stores one pending approval in a new session: the conformance suite's
// approval ("suite"), or one shaped as bot bench's ("bench": what
// Engine.Request stores for it; "bench+card": with the card reference the
// router adds in agent mode).
func BenchmarkPendingMemory(b *testing.B) {
	for _, kind := range []string{"suite", "bench", "bench+card"} {
		b.Run(kind, func(b *testing.B) { benchPendingMemory(b, kind) })
	}
}

// benchApproval is what Engine.Request stores for bot bench's i-th request.
func benchApproval(i int) *approval.Approval {
	sess := approval.SessionKey("bench:chat-" + strconv.Itoa(i))
	args := []byte(`{"n":` + strconv.Itoa(i) + `}`)
	h := approval.PayloadHash("bench_op", args)
	now := time.Now()
	return &approval.Approval{ID: approval.NewID(sess), Session: sess, Channel: "bench", ChatID: "chat-" + strconv.Itoa(i),
		Requester: "bench", Approvers: approval.ApproverRule{Mode: approval.ApproverRequester},
		Calls:         []approval.Call{{Tool: "bench_op", Args: args, PayloadSHA256: h, CallID: "c1"}},
		PayloadSHA256: h, Risk: approval.RiskHigh, Summary: "increment the counter",
		CreatedAt: now, ExpiresAt: now.Add(5 * time.Minute), State: approval.StatePending}
}

func benchPendingMemory(b *testing.B, kind string) {
	srv := testredis.StartServer(b)
	c := srv.Client()
	s, err := redisstore.New(c, redisstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	put := func(n int) []*approval.Approval {
		as := make([]*approval.Approval, n)
		for i := range as {
			if kind == "suite" {
				as[i] = storetest.NewApproval(b)
			} else {
				as[i] = benchApproval(10000 + i)
			}
			if _, err := s.Put(ctx, as[i], approval.Outcome{}); err != nil {
				b.Fatal(err)
			}
			if kind == "bench+card" {
				card := approval.CardRef{Channel: "bench", ChatID: as[i].ChatID, MessageID: string(as[i].ID)}
				if _, err := s.AddCards(ctx, as[i].ID, []approval.CardRef{card}); err != nil {
					b.Fatal(err)
				}
			}
		}
		return as
	}
	put(1)
	before := usedMemory(b, c.Info(ctx, "memory").Val())
	b.ResetTimer()
	as := put(b.N)
	b.StopTimer()
	after := usedMemory(b, c.Info(ctx, "memory").Val())
	n := min(len(as), 200)
	var rec, ptr int64
	for _, a := range as[:n] {
		rk, pk, _ := redisstore.Keys(s, a)
		rec += c.MemoryUsage(ctx, rk, 0).Val()
		ptr += c.MemoryUsage(ctx, pk, 0).Val()
	}
	b.ReportMetric(float64(rec+ptr)/float64(n), "bytes/pending")
	b.ReportMetric(float64(rec)/float64(n), "record-bytes")
	b.ReportMetric(float64(ptr)/float64(n), "pointer-bytes")
	if b.N >= 1000 {
		b.ReportMetric(float64(after-before)/float64(b.N), "used_memory-bytes/pending")
	}
	if enc := c.ObjectEncoding(ctx, func() string { rk, _, _ := redisstore.Keys(s, as[0]); return rk }()).Val(); enc != "" {
		b.Logf("record encoding: %s", enc)
	}
}

func usedMemory(b *testing.B, info string) int64 {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal(fmt.Errorf("no used_memory in INFO"))
	return 0
}
