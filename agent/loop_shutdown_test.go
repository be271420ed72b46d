package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
)

// blocked is a Model that answers only when its context ends, failing
// with that, as the OpenAI client does when its request is cancelled.
type blocked struct{ asked chan struct{} }

func (b blocked) Complete(ctx context.Context, _ agent.Request) (agent.Response, error) {
	close(b.asked)
	<-ctx.Done()
	return agent.Response{}, &agent.ModelError{Public: "The language model failed; please try again.",
		Err: fmt.Errorf("openai: chat completion: %w", ctx.Err())}
}

// TestShutdownIsNotAModelFailure: closing the loop while the model is
// answering (a server shutdown, the end of `bot chat`) stops the turn; it
// does not say that the language model failed.
func TestShutdownIsNotAModelFailure(t *testing.T) {
	m := blocked{asked: make(chan struct{})}
	h := newHarness(t, m)
	done := h.submit(t, "s1", "hello")
	select {
	case <-m.asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the model was not asked")
	}
	if err := h.loop.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var r agent.TurnResult
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the turn did not end")
	}
	h.speak.mu.Lock()
	defer h.speak.mu.Unlock()
	for _, s := range h.speak.said {
		if strings.Contains(s.Text, "language model failed") || s.IsError {
			t.Fatalf("said %+v at shutdown", s)
		}
	}
	if strings.Contains(r.Text, "language model failed") || r.Err == nil {
		t.Fatalf("turn result %+v", r)
	}
}
