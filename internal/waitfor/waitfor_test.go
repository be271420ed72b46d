package waitfor

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestWithinReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int64
	go func() {
		for range 3 {
			time.Sleep(time.Millisecond)
			n.Add(1)
		}
	}()
	Within(t, 5*time.Second, "three ticks", func() bool { return n.Load() >= 3 })
}

// fatalRecorder stands in for a test that must fail: Fatalf records the
// message and ends the goroutine, as testing.T's does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = format
	panic(f)
}

func TestWithinFailsNamingWhatItWaitedFor(t *testing.T) {
	f := &fatalRecorder{TB: t}
	func() {
		defer func() {
			if r := recover(); r != f {
				t.Fatalf("recovered %v, want the failing test", r)
			}
		}()
		Within(f, 20*time.Millisecond, "something that never happens", func() bool { return false })
	}()
	if f.msg == "" {
		t.Fatal("Within returned without failing the test")
	}
}
