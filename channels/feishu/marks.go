package feishu

import "github.com/hitlbot/hitlbot/channels/internal/marks"

// Marks is where webhook mode remembers the requests it accepted (their
// timestamp, nonce and signature). approval.Store implements it.
type Marks = marks.Store

// UseStore makes webhook mode remember every request it accepted in s,
// the store the replicas share (approval.Store), so a captured request is
// refused by every replica, not only by the one that saw it first. Call
// before Start. Without it the requests are remembered in this process
// only.
func (c *Channel) UseStore(s Marks) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s != nil {
		c.marks = s
	}
}

func (c *Channel) store() Marks {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.marks
}
