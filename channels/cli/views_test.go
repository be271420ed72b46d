package cli_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/cli"
)

// waiting is a Views whose chat has one approval waiting.
type waiting struct {
	v     cards.View
	mu    sync.Mutex
	asked []channels.Target
}

func (w *waiting) PendingView(_ context.Context, to channels.Target) (*cards.View, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.asked = append(w.asked, to)
	v := w.v
	return &v, nil
}

func (w *waiting) ApprovalView(context.Context, string, approval.ID, string) (*cards.View, error) {
	return nil, nil
}

// recorder is a Handler that is not the router (a wrapper of it, say):
// it records what the chat hands it, and refuses every message, so that
// the chat does not wait for a turn.
type recorder struct {
	mu      sync.Mutex
	clicks  []channels.CardAction
	message []channels.Message
}

func (r *recorder) HandleMessage(_ context.Context, m channels.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.message = append(r.message, m)
	return errors.New("no agent here")
}

func (r *recorder) HandleCardAction(_ context.Context, a channels.CardAction) (approval.Outcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clicks = append(r.clicks, a)
	return approval.Outcome{Status: approval.StatusExecuted}, nil
}

// TestViewsComeFromTheConfig: the chat prompts first for the approval
// left waiting, read from Config.Views, whatever Handler it is started
// with (before issue 27 it asserted its Handler to an optional interface,
// so a Handler that wrapped the router hid the waiting approval and the
// "y" went to the agent as a message).
func TestViewsComeFromTheConfig(t *testing.T) {
	id := approval.NewID("cli:cli")
	views := &waiting{v: cards.View{ApprovalID: id, Tool: "erase", Summary: "erase: t1", Risk: approval.RiskHigh, PayloadSHA256: "abc"}}
	out := &output{}
	c, err := cli.New(cli.Config{User: "alice", Views: views}, strings.NewReader("y\n"), out)
	if err != nil {
		t.Fatal(err)
	}
	h := &recorder{}
	if err := c.Start(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.message) != 0 {
		t.Fatalf("the answer went to the agent: %+v", h.message)
	}
	if len(h.clicks) != 1 || h.clicks[0].ApprovalID != id || h.clicks[0].Verb != approval.Approve || h.clicks[0].PayloadSHA256 != "abc" {
		t.Fatalf("decisions %+v", h.clicks)
	}
	views.mu.Lock()
	defer views.mu.Unlock()
	if len(views.asked) == 0 || views.asked[0].Channel != cli.Name || views.asked[0].ChatID != cli.ChatID || views.asked[0].UserID != "alice" {
		t.Fatalf("views asked for %+v", views.asked)
	}
}
