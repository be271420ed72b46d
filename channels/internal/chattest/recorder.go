// Package chattest has a channel for tests that records the cards it is
// given: the chat of another platform beside the one a test drives (an
// approvers' chat, an escalation step's chat), when that platform's own
// behaviour is tested elsewhere against its fake.
package chattest

import (
	"context"
	"fmt"
	"sync"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
)

// Recorder is a channel named ChannelName (default "feishu") that records
// the cards it shows and settles, and says nothing.
type Recorder struct {
	// ChannelName is the channel's name; empty is "feishu".
	ChannelName string

	mu      sync.Mutex
	shown   []cards.View
	settled []cards.View
}

var _ channels.Channel = (*Recorder)(nil)

// Name implements channels.Channel.
func (c *Recorder) Name() string {
	if c.ChannelName == "" {
		return "feishu"
	}
	return c.ChannelName
}

// Start implements channels.Channel.
func (c *Recorder) Start(context.Context, channels.Handler) error { return nil }

// Close implements channels.Channel.
func (c *Recorder) Close(context.Context) error { return nil }

// Ready implements channels.Channel.
func (c *Recorder) Ready() error { return nil }

// Send implements channels.Channel; it says nothing.
func (c *Recorder) Send(context.Context, channels.Target, channels.Outgoing) error { return nil }

// ShowApproval records v and returns a reference numbered in order.
func (c *Recorder) ShowApproval(_ context.Context, to channels.Target, v cards.View) (approval.CardRef, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shown = append(c.shown, v)
	return approval.CardRef{Channel: c.Name(), ChatID: to.ChatID, MessageID: fmt.Sprintf("msg_%d", len(c.shown))}, nil
}

// SettleApproval records v.
func (c *Recorder) SettleApproval(_ context.Context, _ approval.CardRef, v cards.View) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settled = append(c.settled, v)
	return nil
}

// Views returns the views shown and settled so far.
func (c *Recorder) Views() (shown, settled []cards.View) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]cards.View(nil), c.shown...), append([]cards.View(nil), c.settled...)
}
