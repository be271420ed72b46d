package api

import (
	"context"
	"sync"

	"github.com/hitlbot/hitlbot/words"
)

// capGate makes the per-user cap on pending actions (MaxPendingPerUser)
// one step: a message request counts the user's pending approvals and, if
// it may go on, reserves a place for its conversation before the next
// request of the same user counts. The reservation lasts until the request
// ends, by which time the approval the turn asked for (if any) is in the
// store and counted from there.
//
// The gate is in process: it makes the cap exact for the requests one
// replica serves. Replicas do not see each other's reservations, so
// requests of one user that reach several replicas at the same moment can
// together open more than the cap.
type capGate struct {
	mu    sync.Mutex
	users map[string]*userSlots // by User.UserID(); an entry lives while requests hold it
}

// userSlots is the gate of one user.
type userSlots struct {
	refs int // requests holding this entry; guarded by capGate.mu

	// turn is held (a token in it) by the one request that counts and
	// reserves; a channel rather than a mutex so that waiting ends with
	// the request's context.
	turn chan struct{}
	// inflight holds the conversations whose message requests passed the
	// cap and have not ended (a count, in case a conversation has more
	// than one). Guarded by turn.
	inflight map[string]int
}

// acquire returns the user's entry, holding a reference to it.
func (g *capGate) acquire(user string) *userSlots {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.users == nil {
		g.users = map[string]*userSlots{}
	}
	s := g.users[user]
	if s == nil {
		s = &userSlots{turn: make(chan struct{}, 1), inflight: map[string]int{}}
		g.users[user] = s
	}
	s.refs++
	return s
}

// put drops a reference taken by acquire.
func (g *capGate) put(user string, s *userSlots) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s.refs--
	if s.refs == 0 {
		delete(g.users, user)
	}
}

func (s *userSlots) lock(ctx context.Context) error {
	select {
	case s.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *userSlots) unlock() { <-s.turn }

// admit checks the caller's cap for a message in conversation convID and
// returns the conversation's pending action (nil if none) and a release
// function that the caller must call when the request ends. A message in a
// conversation that has a pending action always passes (it may be a typed
// 确认 / 取消; a new approval there would replace the pending one); any
// other message passes only while the user's pending approvals plus the
// conversations of the user's other requests in flight are fewer than the
// cap. The count and the reservation happen while no other request of the
// same user (on this replica) counts.
//
// A nil release with a nil error means ctx ended (the client went away).
func (a *inbound) admit(ctx context.Context, u User, convID string) (*pendingEntry, func(), *apiError) {
	max := a.cfg.MaxPendingPerUser
	if max <= 0 { // no cap: nothing to reserve
		_, in, err := a.tokens.pendingOf(ctx, u, convID)
		if err != nil {
			return nil, nil, storeFailure(err)
		}
		return in, func() {}, nil
	}
	key := u.UserID()
	s := a.caps.acquire(key)
	if err := s.lock(ctx); err != nil {
		a.caps.put(key, s)
		return nil, nil, nil
	}
	own, err := a.tokens.approvalsOf(ctx, u, true)
	if err != nil {
		s.unlock()
		a.caps.put(key, s)
		return nil, nil, storeFailure(err)
	}
	var in *pendingEntry
	pendingConvs := make(map[string]bool, len(own))
	for _, o := range own {
		pendingConvs[o.entry.Conversation] = true
		if o.entry.Conversation == convID {
			in = &pendingEntry{o.entry, turnOf(o.rec)}
		}
	}
	if in == nil {
		// A request in flight whose approval is already in the store is
		// counted once.
		count := len(own)
		for conv := range s.inflight {
			if !pendingConvs[conv] {
				count++
			}
		}
		if count >= max {
			s.unlock()
			a.caps.put(key, s)
			return nil, nil, fail(CodeRateLimited, words.APITooManyPending)
		}
	}
	s.inflight[convID]++
	s.unlock()
	release := func() {
		// Not bounded by the request's context: it has ended by now,
		// and the turn is held only for map updates and store reads.
		s.turn <- struct{}{}
		if s.inflight[convID]--; s.inflight[convID] <= 0 {
			delete(s.inflight, convID)
		}
		s.unlock()
		a.caps.put(key, s)
	}
	return in, release, nil
}
