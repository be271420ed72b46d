package feishu

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/hitlbot/hitlbot/channels/internal/marks"
)

// Feishu allows 5 messages per second to one chat (shared by every bot in
// a group) and 5 PATCHes per second of one message, and answers more with
// HTTP 400, code 230020 (doc server-docs/im-v1/message/create and
// …/message-card/patch; docs/platform-rules.md). A budget keeps every
// replica together under those rates: a call takes one of 5 slots of its
// chat (or message), a mark in the store the replicas share
// (Config.Marks: approval.Store's Seen, SET NX with an expiry) that lasts
// a second and a margin, so at most 5 calls start in any second whichever
// replica makes them. When all 5 are taken the call waits and tries
// again. Bursts (a tool result, a summary and a settled card at once)
// queue briefly instead of drawing 230020; other bots in the group still
// can, and do() retries those.
const (
	perKeyRate = 5
	// slotHold is how long a slot stays taken: the platform's second,
	// and a margin for the time a request takes to reach it.
	slotHold = time.Second + 150*time.Millisecond
	// slotRetry is the wait before trying the slots again when all are
	// taken.
	slotRetry = 100 * time.Millisecond
)

// budget is the per-second budget of one kind of key (chats, messages).
type budget struct {
	store  func() marks.Store // the shared store (read at each call)
	prefix string             // "feishu:rate:chat:", "feishu:rate:msg:"
	// onWait, when set, is called each time a call finds every slot
	// taken (tests use it to move the clock).
	onWait func()
	failed sync.Once // the store's first failure is logged once
	log    func(err error)
}

// take blocks until a call for key may go, or ctx ends. When the store
// fails, the call goes (the platform's 230020 is retried); the failure is
// logged once.
func (b *budget) take(ctx context.Context, key string) error {
	if key == "" {
		return nil
	}
	store := b.store()
	for {
		for i := range perKeyRate {
			first, err := store.Seen(ctx, b.prefix+key+":"+strconv.Itoa(i), slotHold)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				b.failed.Do(func() {
					if b.log != nil {
						b.log(err)
					}
				})
				return nil
			}
			if first {
				return nil
			}
		}
		if b.onWait != nil {
			b.onWait()
		}
		t := time.NewTimer(slotRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
