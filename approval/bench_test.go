package approval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/internal/clock"
)

// okTool is a trivial Dispatcher.
type okTool struct{ runs atomic.Int64 }

func (t *okTool) Dispatch(context.Context, approval.Call) (approval.Result, error) {
	t.runs.Add(1)
	return approval.Result{Content: "ok"}, nil
}

func benchEngines(b *testing.B, be backend) (ea, eb *approval.Engine, tool *okTool, rt func() int64) {
	b.Helper()
	sa, sb, rt := be.new(b, clock.Real{})
	tool = &okTool{}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	mk := func(s approval.Store) *approval.Engine {
		e, err := approval.NewEngine(approval.EngineConfig{Store: s, Dispatcher: tool, Audit: nopAuditor{}, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		if err := e.Start(ctx); err != nil {
			b.Fatal(err)
		}
		return e
	}
	return mk(sa), mk(sb), tool, rt
}

type nopAuditor struct{}

func (nopAuditor) Append(audit.Record) {}

// benchConcurrency × GOMAXPROCS round trips are in flight at once, as
// many conversations are in production.
const benchConcurrency = 32

var benchArgs = json.RawMessage(`{"statement":"UPDATE orders SET status = 'paid' WHERE id = 1"}`)

func benchRequest(seq int64) approval.Request {
	return approval.Request{
		Session:   approval.SessionKey(fmt.Sprintf("bench:chat-%d", seq)),
		Channel:   "bench",
		Requester: "alice",
		Calls:     []approval.Call{{Tool: "sql_execute", Args: benchArgs, CallID: "c1"}},
		Verdict:   approval.Verdict{NeedsApproval: true, Risk: approval.RiskHigh, Timeout: time.Minute},
		Summary:   "mark order 1 paid",
	}
}

// BenchmarkRoundTrip measures the full round trip of one approval: request
// on engine A, a waiter on A, the decision on engine B (another replica),
// the waiter wakes with the outcome.
func BenchmarkRoundTrip(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			ea, eb, tool, rt := benchEngines(b, be)
			var seq atomic.Int64
			var rt0 int64
			if rt != nil {
				rt0 = rt()
			}
			b.ReportAllocs()
			b.SetParallelism(benchConcurrency)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					a, err := ea.Request(ctx, benchRequest(seq.Add(1)))
					if err != nil {
						b.Error(err)
						return
					}
					done := make(chan approval.Outcome, 1)
					go func() {
						o, err := ea.Wait(ctx, a.ID)
						if err != nil {
							b.Error(err)
						}
						done <- o
					}()
					if _, err := eb.Decide(ctx, a.ID, approval.Decision{Verb: approval.Approve, Actor: "alice", Source: approval.SourceCard, PayloadSHA256: a.PayloadSHA256}); err != nil {
						b.Error(err)
						return
					}
					if o := <-done; o.Status != approval.StatusExecuted {
						b.Errorf("outcome %+v", o)
						return
					}
				}
			})
			b.StopTimer()
			if tool.runs.Load() != int64(b.N) {
				b.Fatalf("tool ran %d times for %d approvals", tool.runs.Load(), b.N)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "roundtrips/s")
			if rt != nil {
				b.ReportMetric(float64(rt()-rt0)/float64(b.N), "redis-rt/op")
			}
		})
	}
}

// BenchmarkDedup measures one de-duplication mark (SET NX with a TTL).
func BenchmarkDedup(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			s, _, _ := be.new(b, clock.Real{})
			var seq atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					n := seq.Add(1)
					first, err := s.Seen(ctx, fmt.Sprintf("bench:ev-%d", n/2), time.Minute)
					if err != nil {
						b.Error(err)
						return
					}
					_ = first
				}
			})
		})
	}
}

// BenchmarkPendingMemory measures the process heap one pending approval
// with a blocked Wait costs (and, for Redis, what its keys cost there: see
// the redisstore benchmarks).
func BenchmarkPendingMemory(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			const k = 2000
			ea, _, _, _ := benchEngines(b, be)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			for range b.N {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				started := make(chan struct{}, k)
				for i := range k {
					a, err := ea.Request(ctx, benchRequest(int64(i)+time.Now().UnixNano()))
					if err != nil {
						b.Fatal(err)
					}
					go func() {
						started <- struct{}{}
						_, _ = ea.Wait(ctx, a.ID)
					}()
				}
				for range k {
					<-started
				}
				time.Sleep(100 * time.Millisecond) // let every Wait reach its select
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc+(after.StackInuse-before.StackInuse))/k, "process-B/pending")
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/k, "heap-B/pending")
			}
		})
	}
}
