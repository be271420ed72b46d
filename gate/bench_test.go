package gate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/gate"
)

// latencies collects durations from many goroutines and reports their
// p50 and p99 in milliseconds.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) report(b *testing.B) {
	slices.Sort(l.d)
	if len(l.d) == 0 {
		return
	}
	at := func(q float64) float64 { return float64(l.d[int(q*float64(len(l.d)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// BenchmarkAutoAllowedHTTP: agents' requests the policy allows at once
// (a LOW pattern), POST /api/approvals over HTTP, 100 at a time: the
// latency an agent's harmless step pays for asking.
func BenchmarkAutoAllowedHTTP(b *testing.B) {
	r := newRig(b)
	srv := httptest.NewServer(r.gate.HTTP(people))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 200}}
	var lat latencies
	b.SetParallelism(50) // × GOMAXPROCS 2 = 100 in flight
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest("POST", srv.URL+"/api/approvals", strings.NewReader(`{"tool_name":"Read","input":{"file_path":"/srv/app/main.go"}}`))
			req.Header.Set("Authorization", "Bearer "+ciToken)
			req.Header.Set("Content-Type", "application/json")
			t0 := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			lat.add(time.Since(t0))
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status":"allowed"`) {
				b.Errorf("%d %s", resp.StatusCode, body)
				return
			}
		}
	})
	lat.report(b)
}

// BenchmarkClickToAnswer: an agent waits on replica A, the card is
// decided on replica B (real Redis): the time from the decision to the
// agent's answer, 1 at a time.
func BenchmarkClickToAnswer(b *testing.B) {
	stores := redisReplicas(b, 2)
	a, bb := newRigOn(b, stores[0]), newRigOn(b, stores[1])
	var lat latencies
	for i := 0; b.Loop(); i++ {
		ans, err := a.gate.Ask(context.Background(), a.ci, gate.Ask{Tool: "Bash", Input: json.RawMessage(fmt.Sprintf(`{"command":"make deploy-%d"}`, i))})
		if err != nil {
			b.Fatal(err)
		}
		card := <-a.shown
		done := make(chan time.Time, 1)
		go func() {
			got, err := a.gate.Wait(context.Background(), a.ci, ans.ID, time.Minute)
			if err != nil || got.Status != gate.StatusAllowed {
				b.Errorf("%+v %v", got, err)
			}
			done <- time.Now()
		}()
		time.Sleep(time.Millisecond) // let the waiter register (it would find the ended record otherwise: still correct, not measured)
		t0 := time.Now()
		if _, err := bb.engine.Decide(context.Background(), card.ID, approval.Decision{Verb: approval.Approve, Actor: "ou_456",
			Source: approval.SourceCard, PayloadSHA256: card.PayloadSHA256}); err != nil {
			b.Fatal(err)
		}
		lat.add((<-done).Sub(t0))
	}
	lat.report(b)
}
