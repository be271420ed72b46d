package feishu

import (
	"context"
	"sync"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels"
)

// recorder is a channels.Handler that records what it gets; a card
// action is answered as rejected.
type recorder struct {
	mu   sync.Mutex
	msgs []channels.Message
	acts []channels.CardAction
}

func (r *recorder) HandleMessage(_ context.Context, m channels.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, m)
	return nil
}

func (r *recorder) HandleCardAction(_ context.Context, a channels.CardAction) (approval.Outcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acts = append(r.acts, a)
	return approval.Outcome{Status: approval.StatusRejected, DecidedBy: a.UserID}, nil
}

func (r *recorder) messages() []channels.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]channels.Message(nil), r.msgs...)
}

func (r *recorder) actions() []channels.CardAction {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]channels.CardAction(nil), r.acts...)
}
