package audit

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// downSink fails every Write while down is set and reports each attempt
// on tried (1, 2, …); then it stores the records.
type downSink struct {
	down  atomic.Bool
	n     atomic.Int64
	tried chan int64
	MemorySink
}

func (s *downSink) Write(ctx context.Context, recs []Record) error {
	n := s.n.Add(1)
	select {
	case s.tried <- n:
	default:
	}
	if s.down.Load() {
		return errors.New("disk full")
	}
	return s.MemorySink.Write(ctx, recs)
}

func (s *downSink) String() string { return "down" }

// waitTry waits for the sink's attempt number n or later.
func waitTry(t *testing.T, s *downSink, n int64) {
	t.Helper()
	for {
		select {
		case got := <-s.tried:
			if got >= n {
				return
			}
		case <-testCtx(t).Done():
			t.Fatalf("sink attempt %d never came", n)
		}
	}
}

// TestHealth: Log.Health says which sink is failing, since when, how many
// records wait and how many were refused since start; a sink that
// writes again is no longer failing, and the refused count stays.
func TestHealth(t *testing.T) {
	s := &downSink{tried: make(chan int64, 64)}
	s.down.Store(true)
	l := NewLog(LogConfig{Writer: "h", QueueSize: 1, FlushInterval: -1, RetryMin: time.Millisecond, RetryMax: time.Millisecond},
		stepClock(), nil, s)
	defer l.Close(testCtx(t))

	if h := l.Health(); len(h.Failing) != 0 || h.Queued != 0 || h.Refused != 0 || h.QueueSize != 1 {
		t.Fatalf("Health of a new log = %+v", h)
	}
	l.Append(sample(0))
	waitTry(t, s, 2) // the first failure is recorded before the second try
	h := l.Health()
	if len(h.Failing) != 1 {
		t.Fatalf("Health while the sink fails = %+v, want one failing sink", h)
	}
	f := h.Failing[0]
	if f.Sink != "down" || f.Attempts < 1 || f.Err != "disk full" || f.Since.IsZero() {
		t.Errorf("failing sink = %+v, want sink down, attempts ≥ 1, err disk full, a since", f)
	}
	if h.Queued != 1 {
		t.Errorf("Queued = %d, want 1", h.Queued)
	}
	if err := l.TryAppend(sample(1)); err == nil {
		t.Fatal("TryAppend on a full queue was taken")
	}
	waitTry(t, s, 4)
	h2 := l.Health()
	if h2.Refused != 1 {
		t.Errorf("Refused = %d, want 1", h2.Refused)
	}
	if len(h2.Failing) != 1 || !h2.Failing[0].Since.Equal(f.Since) || h2.Failing[0].Attempts <= f.Attempts {
		t.Errorf("later Health = %+v, want the same since (%v) and more attempts than %d", h2, f.Since, f.Attempts)
	}

	s.down.Store(false)
	if err := l.Flush(testCtx(t)); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	h = l.Health()
	if len(h.Failing) != 0 || h.Queued != 0 || h.Refused != 1 {
		t.Errorf("Health once the sink writes = %+v, want nothing failing or queued, refused 1", h)
	}
}
