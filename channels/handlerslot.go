package channels

import "sync"

// HandlerSlot holds the Handler a channel hands what comes in to: none
// before Start, the router from Start on (Set), none again once the
// channel closes (Close: nothing more is handed to it, a request that
// comes in then is refused). The zero value is empty. It is safe for
// concurrent use: the platform's goroutines ask it while Start and Close
// run.
type HandlerSlot struct {
	mu     sync.Mutex
	h      Handler
	closed bool
}

// Set makes h the handler, and opens the slot.
func (s *HandlerSlot) Set(h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.h, s.closed = h, false
}

// Close empties the slot: Handler returns nil from now on.
func (s *HandlerSlot) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
}

// Handler returns the handler, or nil before Set and after Close.
func (s *HandlerSlot) Handler() Handler {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	return s.h
}
