package marks

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestLocal(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	l := NewLocal(func() time.Time { return now })
	seen := func(key string, want bool) {
		t.Helper()
		first, err := l.Seen(ctx, key, time.Minute)
		if err != nil || first != want {
			t.Fatalf("Seen(%q) = %v, %v; want %v", key, first, err, want)
		}
	}
	seen("a", true)
	seen("a", false)
	seen("b", true)
	if err := l.Forget(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	seen("a", true) // forgotten: accepted again
	now = now.Add(time.Minute)
	seen("b", true) // expired: accepted again
}

func TestLocalPrunes(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	l := NewLocal(func() time.Time { return now })
	for i := range minPrune - 1 {
		if _, err := l.Seen(ctx, fmt.Sprint("old", i), time.Second); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(time.Hour)
	if _, err := l.Seen(ctx, "new", time.Second); err != nil {
		t.Fatal(err)
	}
	if n := len(l.m); n != 1 {
		t.Fatalf("%d marks after pruning, want 1 (the live one)", n)
	}
}
