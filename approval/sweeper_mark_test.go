package approval_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/waitfor"
)

// markFailingStore fails Seen (the sweeper's round mark) while down is set.
type markFailingStore struct {
	approval.Store
	down atomic.Bool
}

func (s *markFailingStore) Seen(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if s.down.Load() {
		return false, errDown
	}
	return s.Store.Seen(ctx, key, ttl)
}

// lockedBuffer is a bytes.Buffer safe for a logger and a test to share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// TestSweeperSaysItsRoundMarkFails: a round whose mark cannot be set is
// skipped and logged, once per outage (not every round); the sweeper says
// when it can mark its rounds again, and a second outage is logged again.
func TestSweeperSaysItsRoundMarkFails(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC))
	st := &markFailingStore{Store: memstore.New(memstore.Options{Clock: clk})}
	var buf lockedBuffer
	e, err := approval.NewEngine(approval.EngineConfig{Store: st, Dispatcher: &counterTool{}, Audit: &recorder{}, Clock: clk,
		Logger: slog.New(slog.NewJSONHandler(&buf, nil)), PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.RunSweeper(ctx, time.Minute) }()
	t.Cleanup(func() { cancel(); <-done })
	round := func() {
		t.Helper()
		waitfor.True(t, "the sweeper's timer", func() bool { return clk.Timers() == 1 })
		clk.Advance(time.Minute)
		waitfor.True(t, "the sweeper's next timer", func() bool { return clk.Timers() == 1 })
	}
	const failed, back = "the sweeper cannot mark its round", "the sweeper marks its rounds again"
	st.down.Store(true)
	for range 3 {
		round()
	}
	if n := buf.count(failed); n != 1 {
		t.Fatalf("%d lines %q over three failed rounds, want 1; log:\n%s", n, failed, buf.b.String())
	}
	st.down.Store(false)
	round()
	round()
	if n := buf.count(back); n != 1 {
		t.Fatalf("%d lines %q, want 1", n, back)
	}
	st.down.Store(true)
	round()
	if n := buf.count(failed); n != 2 {
		t.Fatalf("%d lines %q after a second outage, want 2", n, failed)
	}
}
