package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval/errkind"
)

// roundTripSinks are the sinks a chain must survive.
var roundTripSinks = []struct {
	name string
	open func(t *testing.T) (Sink, Reader)
}{
	{"memory", func(t *testing.T) (Sink, Reader) {
		m := NewMemorySink()
		return m, m
	}},
	{"file", func(t *testing.T) (Sink, Reader) {
		s, err := NewFileSink(filepath.Join(t.TempDir(), "audit.jsonl"), true)
		if err != nil {
			t.Fatal(err)
		}
		return s, s
	}},
	{"redis", func(t *testing.T) (Sink, Reader) {
		c, key := newRedis(t)
		s := NewRedisSink(c, key, 0)
		return s, s
	}},
}

func TestRoundTrip(t *testing.T) {
	const n = 600 // more than two batches
	for _, tc := range roundTripSinks {
		t.Run(tc.name, func(t *testing.T) {
			sink, reader := tc.open(t)
			ref := NewMemorySink() // what the log handed over, to compare with
			l := NewLog(LogConfig{Writer: "rt"}, stepClock(), nil, sink, ref)
			for i := range n - 2 {
				l.Append(sample(i))
			}
			odd := sample(1)
			odd.Error = "bad byte \xff here" // repaired to U+FFFD so that JSON keeps it
			l.Append(odd)
			zoned := sample(2)
			zoned.Time = time.Date(2026, 3, 1, 18, 0, 0, 0, time.FixedZone("CST", 8*3600))
			l.Append(zoned)
			seq, head := l.Head()
			if err := l.Close(testCtx(t)); err != nil {
				t.Fatalf("Close: %v", err)
			}

			got, err := reader.Read(testCtx(t))
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			want, _ := ref.Read(testCtx(t))
			if len(got) != n || len(want) != n {
				t.Fatalf("read %d records, the log wrote %d, want %d", len(got), len(want), n)
			}
			for i := range got {
				if !sameRecord(got[i], want[i]) {
					t.Fatalf("record %d read back as\n%+v\nwritten as\n%+v", i, got[i], want[i])
				}
			}
			if err := Verify(got); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			last := got[n-1]
			if seq != n || head != last.Hash {
				t.Errorf("Head = %d %s, want %d %s", seq, head, n, last.Hash)
			}
			if e := got[n-2].Error; e != "bad byte \uFFFD here" {
				t.Errorf("invalid UTF-8 stored as %q", e)
			}
			if !last.Time.Equal(zoned.Time) || last.Time.Location() != time.UTC {
				t.Errorf("time stored as %v, want %v in UTC", last.Time, zoned.Time)
			}
			if got[0].Writer != "rt" || got[0].Seq != 1 || got[0].Prev != "" || !got[0].Time.Equal(epoch.Add(time.Millisecond)) {
				t.Errorf("first record %+v", got[0])
			}
		})
	}
}

func TestConcurrentAppend(t *testing.T) {
	const goroutines, perG = 50, 100
	mem := NewMemorySink() // shared by two writers, like a stream shared by replicas
	// Room for every record (a full queue refuses them: see
	// TestFullQueueRefusesWithoutBlocking); many small batches.
	logs := []*Log{
		NewLog(LogConfig{Writer: "replica-a", QueueSize: goroutines * perG, BatchSize: 16}, stepClock(), nil, mem),
		NewLog(LogConfig{Writer: "replica-b", QueueSize: goroutines * perG, BatchSize: 16}, stepClock(), nil, mem),
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				r := sample(i)
				r.ApprovalID = fmt.Sprintf("g%02d-%03d", g, i)
				logs[g%2].Append(r)
			}
		})
	}
	wg.Wait()
	for _, l := range logs {
		if err := l.Close(testCtx(t)); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}

	recs, _ := mem.Read(testCtx(t))
	if len(recs) != goroutines*perG {
		t.Fatalf("%d records, want %d", len(recs), goroutines*perG)
	}
	if err := Verify(recs); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	perWriter := map[string][]uint64{}
	next := map[string]int{} // goroutine -> next i expected
	for _, r := range recs {
		perWriter[r.Writer] = append(perWriter[r.Writer], r.Seq)
		g, i, _ := strings.Cut(r.ApprovalID, "-")
		if want := fmt.Sprintf("%03d", next[g]); i != want {
			t.Fatalf("goroutine %s: record %s where %s was expected (Append order lost)", g, i, want)
		}
		next[g]++
	}
	for _, l := range logs {
		got := perWriter[l.Writer()]
		if len(got) != goroutines*perG/2 {
			t.Errorf("writer %s: %d records, want %d", l.Writer(), len(got), goroutines*perG/2)
		}
		for i, s := range got {
			if s != uint64(i+1) {
				t.Fatalf("writer %s: record %d has seq %d, want %d", l.Writer(), i, s, i+1)
			}
		}
		if seq, _ := l.Head(); seq != uint64(len(got)) {
			t.Errorf("writer %s: Head seq %d, want %d", l.Writer(), seq, len(got))
		}
	}
}

// gateSink reports each Write on entered and holds it until release is
// closed (or the write's context ends); then it stores the records.
type gateSink struct {
	entered chan int
	release chan struct{}
	MemorySink
}

func newGateSink() *gateSink {
	return &gateSink{entered: make(chan int, 16), release: make(chan struct{})}
}

func (g *gateSink) Write(ctx context.Context, recs []Record) error {
	select {
	case g.entered <- len(recs):
	default:
	}
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.MemorySink.Write(ctx, recs)
}

func (g *gateSink) String() string { return "gate" }

// TestFullQueueRefusesWithoutBlocking: with QueueSize records waiting for
// a sink that does not answer, Append returns at once and TryAppend says
// the record was refused (kind unavailable): it is not chained, so the
// trail stays whole. The first refusal of an outage is logged, and so is
// the room coming back, with how many records were refused.
func TestFullQueueRefusesWithoutBlocking(t *testing.T) {
	g := newGateSink()
	var logs lockedBuffer
	l := NewLog(LogConfig{Writer: "bp", QueueSize: 2, FlushInterval: -1}, stepClock(), slog.New(slog.NewJSONHandler(&logs, nil)), g)
	defer l.Close(testCtx(t))

	l.Append(sample(0))
	if n := <-g.entered; n != 1 {
		t.Fatalf("first write has %d records, want 1", n)
	}
	if err := l.TryAppend(sample(1)); err != nil { // fills the queue: 2 records not yet written
		t.Fatalf("TryAppend with room: %v", err)
	}
	appended := make(chan struct{})
	go func() {
		l.Append(sample(2))
		close(appended)
	}()
	select {
	case <-appended:
	case <-testCtx(t).Done():
		t.Fatal("Append blocked on a full queue")
	}
	err := l.TryAppend(sample(3))
	if KindOf(err) != errkind.Unavailable {
		t.Fatalf("TryAppend on a full queue = %v, want kind unavailable", err)
	}
	if seq, _ := l.Head(); seq != 2 {
		t.Errorf("Head seq = %d after two refused records, want 2", seq)
	}
	if n := logs.count("audit queue full"); n != 1 {
		t.Errorf("%d log lines for the full queue over two refusals, want 1:\n%s", n, logs.String())
	}

	close(g.release)
	if err := l.Flush(testCtx(t)); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if err := l.TryAppend(sample(4)); err != nil {
		t.Fatalf("TryAppend once the sink caught up: %v", err)
	}
	if err := l.Flush(testCtx(t)); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if n := logs.count(`"refused":2`); n != 1 {
		t.Errorf("the room coming back is not logged with the count refused:\n%s", logs.String())
	}
	recs, _ := g.Read(testCtx(t))
	if want := []uint64{1, 2, 3}; !slices.Equal(seqs(recs), want) {
		t.Fatalf("stored seqs %v, want %v", seqs(recs), want)
	}
	for i, want := range []int{0, 1, 4} {
		if recs[i].ApprovalID != sample(want).ApprovalID {
			t.Errorf("record %d is %s, want %s", i, recs[i].ApprovalID, sample(want).ApprovalID)
		}
	}
	if err := Verify(recs); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

// lockedBuffer is a log destination a test can read while the log writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedBuffer) count(s string) int { return strings.Count(l.String(), s) }

// flakySink fails its first fails writes; with partial, a failing write
// first stores the first half of its batch, as a pipeline cut short does.
type flakySink struct {
	fails   int
	partial bool

	mu       sync.Mutex
	attempts int
	MemorySink
}

func (f *flakySink) Write(ctx context.Context, recs []Record) error {
	f.mu.Lock()
	f.attempts++
	fail := f.fails > 0
	if fail {
		f.fails--
	}
	f.mu.Unlock()
	if !fail {
		return f.MemorySink.Write(ctx, recs)
	}
	if f.partial {
		_ = f.MemorySink.Write(ctx, recs[:(len(recs)+1)/2])
	}
	return errors.New("connection refused")
}

func (f *flakySink) String() string { return "flaky" }

var retryCases = []struct {
	name    string
	fails   int
	partial bool
}{
	{"fails twice, then succeeds", 2, false},
	{"stores part of a batch, then fails twice", 2, true},
}

func TestSinkRetry(t *testing.T) {
	const n = 40
	for _, tc := range retryCases {
		t.Run(tc.name, func(t *testing.T) {
			sink := &flakySink{fails: tc.fails, partial: tc.partial}
			logger, logs := captureLogger()
			l := NewLog(LogConfig{Writer: "retry", RetryMin: time.Millisecond, RetryMax: 4 * time.Millisecond},
				stepClock(), logger, sink)
			for i := range n {
				l.Append(sample(i))
			}
			if err := l.Flush(testCtx(t)); err != nil {
				t.Fatalf("Flush: %v", err)
			}
			if err := l.Close(testCtx(t)); err != nil {
				t.Fatalf("Close: %v", err)
			}
			recs, _ := sink.Read(testCtx(t))
			if err := Verify(recs); err != nil {
				t.Fatalf("Verify: %v", err)
			}
			uniq := Dedupe(recs)
			if len(uniq) != n {
				t.Fatalf("%d distinct records stored (%d in all), want %d", len(uniq), len(recs), n)
			}
			for i, r := range uniq {
				if r.Seq != uint64(i+1) {
					t.Fatalf("record %d has seq %d", i, r.Seq)
				}
			}
			if sink.attempts < 3 {
				t.Errorf("%d write attempts, want at least 3", sink.attempts)
			}
			if got := logs.count(`"sink":"flaky","err":"connection refused"`); got != 2 {
				t.Errorf("logged %d failures with sink and err attributes, want 2; log:\n%s", got, logs)
			}
			if logs.count("audit sink recovered") != 1 {
				t.Errorf("recovery not logged; log:\n%s", logs)
			}
		})
	}
}

// notifySink is a MemorySink that reports each stored batch.
type notifySink struct {
	wrote chan int
	MemorySink
}

func (s *notifySink) Write(ctx context.Context, recs []Record) error {
	err := s.MemorySink.Write(ctx, recs)
	s.wrote <- len(recs)
	return err
}

// A blocked sink does not hold up the others.
func TestSinksProceedIndependently(t *testing.T) {
	g := newGateSink()
	fast := &notifySink{wrote: make(chan int, 100)}
	l := NewLog(LogConfig{Writer: "pipe", FlushInterval: -1}, stepClock(), nil, g, fast)
	const n = 10
	for i := range n {
		l.Append(sample(i))
	}
	for got := 0; got < n; got += <-fast.wrote {
	}
	if g.Len() != 0 {
		t.Fatalf("gate sink stored %d records while blocked", g.Len())
	}
	close(g.release)
	if err := l.Close(testCtx(t)); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if g.Len() != n || fast.Len() != n {
		t.Errorf("stored %d and %d records, want %d each", g.Len(), fast.Len(), n)
	}
}

func TestFlushTimeoutAndClose(t *testing.T) {
	g := newGateSink() // never released
	logger, logs := captureLogger()
	l := NewLog(LogConfig{Writer: "stuck", RetryMin: time.Millisecond}, stepClock(), logger, g)
	l.Append(sample(0))
	l.Append(sample(1))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := l.Flush(ctx)
	if KindOf(err) != errkind.Unavailable || !strings.Contains(err.Error(), "2 record(s) not yet written") {
		t.Errorf("Flush with an ended context = %v", err)
	}
	err = l.Close(ctx)
	if KindOf(err) != errkind.Unavailable || !errors.Is(err, context.Canceled) {
		t.Errorf("Close with an ended context = %v", err)
	}
	if err2 := l.Close(testCtx(t)); err2 == nil || err2.Error() != err.Error() {
		t.Errorf("second Close = %v, want the first's error", err2)
	}

	l.Append(sample(2))
	if !strings.Contains(logs.String(), "appended after Close") {
		t.Errorf("Append after Close not logged; log:\n%s", logs)
	}
	if seq, _ := l.Head(); seq != 2 {
		t.Errorf("Head seq %d after Append on a closed log, want 2", seq)
	}
}

func TestLogWithoutSinks(t *testing.T) {
	l := NewLog(LogConfig{}, nil, nil)
	for i := range 10 {
		l.Append(sample(i))
	}
	seq, head := l.Head()
	if seq != 10 || len(head) != 64 {
		t.Errorf("Head = %d %q", seq, head)
	}
	if err := l.Flush(testCtx(t)); err != nil {
		t.Errorf("Flush: %v", err)
	}
	if err := l.Close(testCtx(t)); err != nil {
		t.Errorf("Close: %v", err)
	}
	if w := l.Writer(); strings.Count(w, "-") < 2 {
		t.Errorf("default writer %q is not hostname-pid-random", w)
	}
}

// The flush interval holds a small batch back until Flush asks for it.
func TestFlushInterval(t *testing.T) {
	s := &notifySink{wrote: make(chan int, 10)}
	l := NewLog(LogConfig{Writer: "fi", FlushInterval: time.Hour, BatchSize: 4}, stepClock(), nil, s)
	defer l.Close(testCtx(t))
	for i := range 4 { // a full batch goes at once
		l.Append(sample(i))
	}
	if n := <-s.wrote; n != 4 {
		t.Fatalf("first write has %d records, want 4", n)
	}
	l.Append(sample(4))
	select {
	case n := <-s.wrote:
		t.Fatalf("a write of %d records before the interval or a Flush", n)
	default:
	}
	if err := l.Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if n := <-s.wrote; n != 1 || s.Len() != 5 {
		t.Errorf("flushed %d records, %d in all; want 1, 5", n, s.Len())
	}
}
