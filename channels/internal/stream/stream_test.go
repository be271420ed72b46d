package stream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hitlbot/hitlbot/internal/waitfor"
)

// sink records its calls; fail makes the calls it names fail.
type sink struct {
	mu    sync.Mutex
	calls []string
	fail  map[string]int // call kind -> failures left
	gate  chan struct{}  // when set, Open waits for it
}

func (s *sink) rec(kind, text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, kind+":"+text)
	if s.fail[kind] > 0 {
		s.fail[kind]--
		return errors.New(kind + " failed")
	}
	return nil
}

func (s *sink) Open(_ context.Context, text string) error {
	if s.gate != nil {
		<-s.gate
	}
	return s.rec("open", text)
}
func (s *sink) Update(_ context.Context, text string) error { return s.rec("update", text) }
func (s *sink) Close(_ context.Context, text string, failed bool) error {
	return s.rec(fmt.Sprintf("close(%t)", failed), text)
}

func (s *sink) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// Pieces that come while the platform is busy are sent together, as the
// whole text; the end shows the final text and closes.
func TestCoalescesAndCloses(t *testing.T) {
	s := &sink{gate: make(chan struct{})}
	w := New(s, 0, nil)
	w.Append("a")
	w.Append("b") // may arrive before or while Open waits
	close(s.gate)
	w.Append("c")
	if err := w.Finish(context.Background(), "abcd", false); err != nil {
		t.Fatal(err)
	}
	calls := s.got()
	if !strings.HasPrefix(calls[0], "open:a") || calls[len(calls)-1] != "close(false):abcd" {
		t.Fatalf("calls %q", calls)
	}
	for _, c := range calls[1 : len(calls)-1] {
		if !strings.HasPrefix(c, "update:ab") {
			t.Fatalf("an update that is not the whole text so far: %q", calls)
		}
	}
	if len(calls) > 4 {
		t.Fatalf("%d calls for 3 pieces", len(calls))
	}
}

// A failed update stops the updates, and the end still closes the message.
func TestFailedUpdateStillCloses(t *testing.T) {
	s := &sink{fail: map[string]int{"update": 1}}
	w := New(s, 0, nil)
	w.Append("a")
	waitCalls(t, s, 1)
	w.Append("b")
	waitCalls(t, s, 2)
	w.Append("c")
	if err := w.Finish(context.Background(), "abc", true); err != nil {
		t.Fatal(err)
	}
	calls := s.got()
	if want := []string{"open:a", "update:ab", "close(true):abc"}; strings.Join(calls, "|") != strings.Join(want, "|") {
		t.Fatalf("calls %q, want %q", calls, want)
	}
}

// An open that failed is tried again at the end, with the final text; a
// stream with nothing to show shows nothing.
func TestOpenRetriedAtTheEnd(t *testing.T) {
	s := &sink{fail: map[string]int{"open": 1}}
	w := New(s, 0, nil)
	w.Append("a")
	waitCalls(t, s, 1)
	if err := w.Finish(context.Background(), "all", false); err != nil {
		t.Fatal(err)
	}
	if calls := s.got(); strings.Join(calls, "|") != "open:a|open:all|close(false):all" {
		t.Fatalf("calls %q", calls)
	}
	empty := &sink{}
	if err := New(empty, 0, nil).Finish(context.Background(), "", false); !errors.Is(err, errNotOpened) || len(empty.got()) != 0 {
		t.Fatalf("an empty stream: %v, calls %q", err, empty.got())
	}
}

func waitCalls(t *testing.T, s *sink, n int) {
	t.Helper()
	waitfor.True(t, fmt.Sprintf("%d calls", n), func() bool { return len(s.got()) >= n })
}
