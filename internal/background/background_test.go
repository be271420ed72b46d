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

// TestGoInOrder: functions of one key run in the order of the calls, one
// at a time; another key's run beside them (the first function of key a
// waits for one of key b); Wait waits for those still queued; after Close
// nothing is queued.
func TestGoInOrder(t *testing.T) {
	var g Group
	var mu sync.Mutex
	got := map[string][]int{}
	running := map[string]int{}
	bStarted := make(chan struct{})
	var once sync.Once
	const n = 200
	for i := range n {
		for _, key := range []string{"a", "b"} {
			ok := g.GoInOrder(key, func() {
				mu.Lock()
				running[key]++
				if running[key] > 1 {
					t.Errorf("key %s: two functions at once", key)
				}
				mu.Unlock()
				if key == "a" && i == 0 {
					select {
					case <-bStarted:
					case <-time.After(10 * time.Second):
						t.Error("key b did not run while key a's first function waited for it")
					}
				}
				if key == "b" {
					once.Do(func() { close(bStarted) })
				}
				mu.Lock()
				got[key] = append(got[key], i)
				running[key]--
				mu.Unlock()
			})
			if !ok {
				t.Fatal("GoInOrder refused before Close")
			}
		}
	}
	if err := g.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"a", "b"} {
		if len(got[key]) != n {
			t.Fatalf("key %s: %d functions ran after Wait, want %d", key, len(got[key]), n)
		}
		for i, v := range got[key] {
			if v != i {
				t.Fatalf("key %s: function %d ran in place %d", key, v, i)
			}
		}
	}
	g.mu.Lock()
	lanes := len(g.lanes)
	g.mu.Unlock()
	if lanes != 0 {
		t.Fatalf("%d lanes left after every function ran", lanes)
	}
	g.Close()
	if g.GoInOrder("a", func() { t.Error("ran after Close") }) {
		t.Fatal("GoInOrder after Close reported true")
	}
}
