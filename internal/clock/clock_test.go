package clock

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

func fired(tm Timer) bool {
	select {
	case <-tm.C():
		return true
	default:
		return false
	}
}

func TestFakeTimers(t *testing.T) {
	f := NewFake(t0)
	a, b := f.NewTimer(time.Minute), f.NewTimer(2*time.Minute)
	if f.Timers() != 2 || fired(a) || fired(b) {
		t.Fatal("timers fired before the clock moved")
	}
	f.Advance(59 * time.Second)
	if fired(a) {
		t.Fatal("a fired early")
	}
	f.Advance(time.Second)
	if !fired(a) || fired(b) || f.Timers() != 1 {
		t.Fatal("at 1m: want a fired, b waiting")
	}
	if b.Stop() != true || b.Stop() != false || f.Timers() != 0 {
		t.Fatal("Stop of a waiting timer")
	}
	f.Advance(time.Hour)
	if fired(b) {
		t.Fatal("a stopped timer fired")
	}
	if got := f.Now(); !got.Equal(t0.Add(time.Hour + time.Minute)) {
		t.Fatalf("Now = %v", got)
	}
	if z := f.NewTimer(0); !fired(z) || z.Stop() {
		t.Fatal("a zero timer fires at once and cannot be stopped")
	}
}

func TestReal(t *testing.T) {
	var c Clock = Real{}
	tm := c.NewTimer(time.Millisecond)
	<-tm.C()
	if c.Now().IsZero() {
		t.Fatal("zero time")
	}
}
