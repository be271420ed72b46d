package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/internal/testredis"
)

func TestMain(m *testing.M) { testredis.Main(m) }

// testCtx returns a context that ends with the test (or after 30s).
func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// epoch is the start of every test clock.
var epoch = time.Date(2026, 3, 1, 9, 30, 0, 123456789, time.UTC)

// stepClock returns a clock that starts at epoch and moves on one
// millisecond per call; it is safe for concurrent use.
func stepClock() func() time.Time {
	var n atomic.Int64
	return func() time.Time { return epoch.Add(time.Duration(n.Add(1)) * time.Millisecond) }
}

// sampleEvents cycle through the records sample makes.
var sampleEvents = []Event{
	EventWriteRequest, EventConfirm, EventExecute, EventWriteRequest, EventReject,
	EventExecuteFailed, EventReplay, EventExpire, EventSupersede, EventCancel,
	EventUnauthorized, EventTampered, EventExecuteUnknown,
}

// sample returns the i-th test record, as a caller of Append fills it in.
func sample(i int) Record {
	sum := sha256.Sum256([]byte(fmt.Sprintf("sql\n{\"q\":%d}", i)))
	r := Record{
		Event:         sampleEvents[i%len(sampleEvents)],
		ApprovalID:    fmt.Sprintf("ap_%08x_%032x", i%7, i),
		Session:       "feishu:oc_42",
		Tool:          "sql",
		PayloadSHA256: hex.EncodeToString(sum[:]),
		Actor:         "ou_alice",
		Source:        "card",
		Outcome:       "executed",
	}
	if r.Event == EventConfirm {
		r.Reason = `looks right — "ok" 好`
	}
	if i%2 == 0 { // a traced approval's records name its trace
		r.TraceID = fmt.Sprintf("%032x", i+1)
	}
	if r.Event == EventExecuteFailed {
		r.Outcome = "failed"
		r.Error = `timeout after 5s: <db> & "orders" — 超时`
	}
	return r
}

// buildChain appends n sample records to a Log named writer and returns them
// as a MemorySink got them.
func buildChain(t testing.TB, writer string, n int) []Record {
	t.Helper()
	mem := NewMemorySink()
	l := NewLog(LogConfig{Writer: writer, FlushInterval: -1}, stepClock(), nil, mem)
	for i := range n {
		l.Append(sample(i))
	}
	if err := l.Close(testCtx(t)); err != nil {
		t.Fatalf("Close: %v", err)
	}
	recs, _ := mem.Read(testCtx(t))
	if len(recs) != n {
		t.Fatalf("chain has %d records, want %d", len(recs), n)
	}
	return recs
}

// newRedis returns a client of a test Redis and a stream key of this test.
func newRedis(t testing.TB) (redis.UniversalClient, string) {
	t.Helper()
	c, prefix := testredis.Start(t)
	return c, prefix + "{audit}:stream"
}

// logBuf collects what a logger writes.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuf) count(s string) int { return strings.Count(l.String(), s) }

// captureLogger returns a JSON logger and what it wrote.
func captureLogger() (*slog.Logger, *logBuf) {
	b := &logBuf{}
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// sameRecord reports whether a and b hold the same record (times compared
// as instants).
func sameRecord(a, b Record) bool {
	if !a.Time.Equal(b.Time) {
		return false
	}
	a.Time, b.Time = time.Time{}, time.Time{}
	return a == b
}

// seqs returns the Seq of each record.
func seqs(recs []Record) []uint64 {
	out := make([]uint64, len(recs))
	for i, r := range recs {
		out[i] = r.Seq
	}
	return out
}
