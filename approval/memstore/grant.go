package memstore

import (
	"context"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

// PutGrant implements approval.GrantStore.
func (s *Store) PutGrant(ctx context.Context, g approval.Grant, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return approval.E("memstore.PutGrant", errkind.Unavailable, "", err)
	}
	now := s.clk.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneGrantsLocked(g.Session)
	if ttl <= 0 {
		return nil
	}
	m := s.grants[g.Session]
	if m == nil {
		m = map[string]liveGrant{}
		s.grants[g.Session] = m
	}
	m[g.Key()] = liveGrant{g: g, exp: now.Add(ttl)}
	return nil
}

// GrantFor implements approval.GrantStore.
func (s *Store) GrantFor(ctx context.Context, sess approval.SessionKey, key string) (*approval.Grant, error) {
	if err := ctx.Err(); err != nil {
		return nil, approval.E("memstore.GrantFor", errkind.Unavailable, "", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneGrantsLocked(sess)
	lg, ok := s.grants[sess][key]
	if !ok {
		return nil, nil
	}
	return &lg.g, nil
}

// Grants implements approval.GrantStore.
func (s *Store) Grants(ctx context.Context, sess approval.SessionKey) ([]approval.Grant, error) {
	if err := ctx.Err(); err != nil {
		return nil, approval.E("memstore.Grants", errkind.Unavailable, "", err)
	}
	s.mu.Lock()
	s.pruneGrantsLocked(sess)
	out := make([]approval.Grant, 0, len(s.grants[sess]))
	for _, lg := range s.grants[sess] {
		out = append(out, lg.g)
	}
	s.mu.Unlock()
	approval.SortGrants(out)
	return out, nil
}

// Revoke implements approval.GrantStore.
func (s *Store) Revoke(ctx context.Context, sess approval.SessionKey, keys ...string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, approval.E("memstore.Revoke", errkind.Unavailable, "", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneGrantsLocked(sess)
	m := s.grants[sess]
	if len(keys) == 0 {
		delete(s.grants, sess)
		return len(m), nil
	}
	n := 0
	for _, k := range keys {
		if _, ok := m[k]; ok {
			delete(m, k)
			n++
		}
	}
	return n, nil
}

// pruneGrantsLocked drops the session's grants that have expired.
func (s *Store) pruneGrantsLocked(sess approval.SessionKey) {
	now := s.clk.Now()
	m := s.grants[sess]
	for k, lg := range m {
		if !now.Before(lg.exp) {
			delete(m, k)
		}
	}
	if m != nil && len(m) == 0 {
		delete(s.grants, sess)
	}
}

// liveGrant is a grant and when the store ends it (by its own clock).
type liveGrant struct {
	g   approval.Grant
	exp time.Time
}

// ChatPending implements approval.Store: it reads the chat's own list
// (Store.chats), O(approvals pending there), not every record.
func (s *Store) ChatPending(ctx context.Context, channel, chatID string) ([]*approval.Approval, error) {
	if err := ctx.Err(); err != nil {
		return nil, approval.E("memstore.ChatPending", errkind.Unavailable, "", err)
	}
	s.mu.Lock()
	ids := s.chats[approval.Place{Channel: channel, ChatID: chatID}]
	out := make([]*approval.Approval, 0, len(ids))
	for id := range ids {
		if r := s.recs[id]; r != nil && r.State == approval.StatePending {
			out = append(out, r.Clone())
		}
	}
	s.mu.Unlock()
	approval.SortByCreation(out)
	return out, nil
}
