// Package waitfor lets a test wait for a condition that another goroutine
// or process will make true: a card settled, a server answering, a cluster
// ready. It polls with a short backoff and fails the test, naming what it
// waited for, when the time is up. Tests never assert speed with it: the
// limits are generous bounds for loaded machines, not measurements.
package waitfor

import (
	"testing"
	"time"
)

// Default is the limit of True: generous, for a loaded CI machine.
const Default = 15 * time.Second

// minPoll and maxPoll bound the pause between two checks: it starts short,
// so a condition that holds soon is seen soon, and doubles up to maxPoll,
// so a long wait does not spin.
const (
	minPoll = 2 * time.Millisecond
	maxPoll = 100 * time.Millisecond
)

// True polls cond until it holds, failing the test after Default.
func True(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Within(t, Default, what, cond)
}

// Within polls cond until it holds, failing the test after d.
func Within(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	pause := minPoll
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(pause)
		pause = min(2*pause, maxPoll)
	}
}
