package background

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestGoCloseWait(t *testing.T) {
	var g Group
	// Nothing running: Wait returns at once.
	if err := g.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var ran atomic.Int64
	for range 10 {
		if !g.Go(func() { <-release; ran.Add(1) }) {
			t.Fatal("Go refused before Close")
		}
	}
	g.Close()
	g.Close() // twice is harmless
	if g.Go(func() { ran.Add(100) }) {
		t.Fatal("Go started a goroutine after Close")
	}
	// Wait is bounded by its context while goroutines run.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := g.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with goroutines running: %v", err)
	}
	// Several waiters all return once the last goroutine has.
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- g.Wait(context.Background())
		}()
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if ran.Load() != 10 {
		t.Fatalf("ran %d, want 10", ran.Load())
	}
}

// TestConcurrent starts, closes and waits from many goroutines at once (run
// with -race): every goroutine Go accepted has run when Wait returns after
// Close.
func TestConcurrent(t *testing.T) {
	var (
		g        Group
		accepted atomic.Int64
		ran      atomic.Int64
		callers  sync.WaitGroup
	)
	for i := range 50 {
		callers.Add(1)
		go func() {
			defer callers.Done()
			if i == 25 {
				g.Close()
			}
			if g.Go(func() { ran.Add(1) }) {
				accepted.Add(1)
			}
			_ = g.Wait(context.Background())
		}()
	}
	callers.Wait()
	g.Close()
	if err := g.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ran.Load() != accepted.Load() {
		t.Fatalf("accepted %d, ran %d", accepted.Load(), ran.Load())
	}
}
