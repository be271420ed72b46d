package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/channels/api"
)

// The router tells the API, typed, when a message was not taken: a
// conversation with too many messages queued answers 429 rate_limited,
// an assistant shutting down 503 unavailable. Nothing is read from words.
func TestRefusedMessagesAreTypedErrors(t *testing.T) {
	t.Run("busy", func(t *testing.T) {
		h := newHarness(t, func(s *setup) {
			s.cfg.TurnTimeout = 100 * time.Millisecond
			s.loop = func(c *agent.LoopConfig) { c.QueueSize = 1 }
		})
		// A turn that blocks, a message queued behind it (both requests
		// stop waiting), then one message too many.
		for _, msg := range []string{"wait", "hello"} {
			if st, res := h.chat(tokAlice, map[string]any{"message": msg, "conversationId": "c-busy"}); st != http.StatusOK || !res.Incomplete {
				t.Fatalf("%q: %d %+v", msg, st, res)
			}
		}
		st, e := h.chatError(tokAlice, map[string]any{"message": "one more", "conversationId": "c-busy"})
		if st != http.StatusTooManyRequests || e.Error != api.CodeRateLimited {
			t.Fatalf("a full conversation answered %d %+v", st, e)
		}
	})
	t.Run("closing", func(t *testing.T) {
		h := newHarness(t)
		if err := h.loop.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		st, e := h.chatError(tokAlice, map[string]any{"message": "hello", "conversationId": "c-closing"})
		if st != http.StatusServiceUnavailable || e.Error != api.CodeUnavailable {
			t.Fatalf("a closing assistant answered %d %+v", st, e)
		}
	})
}
