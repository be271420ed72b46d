package channels_test

import (
	"testing"

	"github.com/hitlbot/hitlbot/channels"
)

// TestHandlerSlot: empty before Set, the handler after, empty after
// Close, and open again on a new Set.
func TestHandlerSlot(t *testing.T) {
	var s channels.HandlerSlot
	if s.Handler() != nil {
		t.Fatal("a new slot holds a handler")
	}
	h := &channels.Router{}
	s.Set(h)
	if s.Handler() != h {
		t.Fatal("Set did not take")
	}
	s.Close()
	if s.Handler() != nil {
		t.Fatal("a closed slot hands out its handler")
	}
	s.Set(h)
	if s.Handler() != h {
		t.Fatal("Set after Close did not open the slot")
	}
}
