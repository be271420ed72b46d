package redisstore

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
)

// maxEnded bounds endedQueue: past it, more entries are not kept (the
// index is pruned of them when read, as before).
const maxEnded = 1024

// endedQueue keeps the chat-index entries of approvals this Store saw
// leave pending (a claim that claimed or ended one, a cancel, a Put that
// superseded one), and the expiry-index (Due) entries of those that ended
// (those and a Complete): the next pipeline this Store sends (Put,
// Complete, SeenAndPending) removes them (ZREM), so that a chat's index
// holds its pending approvals and few others, and the expiry index the
// approvals not ended, at no round trip of its own. An entry
// lost so (the queue full, the pipeline failed, the process gone) is pruned
// when the index is read (chatRecords), as every entry was before.
type endedQueue struct {
	mu sync.Mutex
	q  map[string][]any // chat index key -> ids
	n  int
}

// add queues the entries of a, which is no longer pending: its approvers'
// chat or its own (DecidesIn), and the chats of the escalation steps taken.
func (e *endedQueue) add(s *Store, a *approval.Approval) {
	if a == nil || a.State == approval.StatePending {
		return
	}
	place := a.DecidesIn()
	keys := []string{s.chatKey(place.Channel, place.ChatID)}
	for _, st := range a.Taken() {
		keys = append(keys, s.chatKey(st.To.Channel, st.To.ChatID))
	}
	if a.State.Terminal() {
		// Ended: out of the expiry index too, so that Due names the
		// approvals that may still expire (or whose claim may go
		// stale), not every one since the last sweep. A claimed one
		// stays: the sweeper freezes a claim nobody completed.
		keys = append(keys, s.dueKey())
	}
	for _, k := range keys {
		e.addIDs(k, string(a.ID))
	}
}

// addIDs queues the removal of ids from the chat index key.
func (e *endedQueue) addIDs(key string, ids ...any) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n+len(ids) > maxEnded {
		return false
	}
	if e.q == nil {
		e.q = make(map[string][]any)
	}
	e.q[key] = append(e.q[key], ids...)
	e.n += len(ids)
	return true
}

// empty reports whether nothing is queued (a quick look: a racing add is
// sent with the next pipeline).
func (e *endedQueue) empty() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n == 0
}

// drain adds the queued removals to pipe and forgets them.
func (e *endedQueue) drain(ctx context.Context, pipe redis.Pipeliner) {
	e.mu.Lock()
	q := e.q
	e.q, e.n = nil, 0
	e.mu.Unlock()
	for k, ids := range q {
		pipe.ZRem(ctx, k, ids...)
	}
}
