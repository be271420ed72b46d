// Package memstore is the in-process approval.Store: one node, no Redis.
// It keeps everything in maps under one mutex and delivers outcomes to
// subscribers in the same process. What the hot path looks up is indexed
// (pending approvals per chat, the expiry and escalation indexes ordered
// by time) and an approval leaves the indexes when it ends, so the cost of
// one approval does not grow with the number the process has ever held. It has exactly the semantics of the
// Redis store (both pass approval/storetest), so a single-node deployment
// and a test behave as production does.
package memstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/internal/clock"
)

// Options configure a Store.
type Options struct {
	// Clock measures the TTLs of de-duplication marks, grants and cached
	// results. Default: the wall clock.
	Clock clock.Clock
	// Retention is how long records of ended approvals are kept, so a late
	// click gets already_decided instead of missing. Default 7 days.
	Retention time.Duration
}

// Store is an in-memory approval.Store. The zero value is not usable; call New.
type Store struct {
	clk       clock.Clock
	retention time.Duration

	mu     sync.Mutex
	recs   map[approval.ID]*approval.Approval
	latest map[approval.SessionKey]approval.ID          // each session's most recent approval, pending or ended
	marks  map[string]time.Time                         // de-dup marks: key -> expiry
	grants map[approval.SessionKey]map[string]liveGrant // each session's grants by key (see grant.go)
	cache  map[string]cached
	subs   map[int]func(approval.ID, approval.Outcome)
	// due is the expiry index (see Due): pending and claimed approvals
	// (a claim whose run never completes is frozen by the sweeper);
	// an approval leaves it when it ends.
	due *timeIndex
	// esc is the escalation index (see Escalations): pending approvals
	// with a step left, at its time.
	esc *timeIndex
	// rem is the reminder index (see Reminders): pending approvals with a
	// reminder left, at its time.
	rem *timeIndex
	// chats lists the pending approvals of each chat (ChatPending): an
	// approval's own chat, or its approvers' chat, and the chats of the
	// escalation steps taken so far (places). An approval leaves every
	// one when it stops being pending.
	chats   map[approval.Place]map[approval.ID]struct{}
	nextSub int
	puts    int
	// sweepMarksAt is the size of marks and cache together at which a
	// purge next reads them: twice what the last one left, so the reading
	// costs O(1) per mark amortised, not O(every mark) every 256th Put.
	sweepMarksAt int
	// decided lists records in the order they were decided (claimed or
	// ended), so a purge reads only those old enough to go, not every
	// record.
	decided []decidedRec
}

// decidedRec is a record's id and when it was decided.
type decidedRec struct {
	id approval.ID
	at time.Time
}

// cacheKey scopes an idempotency key to its session, as the Redis store does.
func cacheKey(r *approval.Approval) string { return string(r.Session) + "\x00" + r.IdempotencyKey }

type cached struct {
	hash    string
	outcome approval.Outcome
	expires time.Time
}

// DefaultRetention is how long ended approvals are kept.
const DefaultRetention = 7 * 24 * time.Hour

// New returns an empty store.
func New(opts Options) *Store {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	return &Store{
		clk:       opts.Clock,
		retention: opts.Retention,
		recs:      map[approval.ID]*approval.Approval{},
		latest:    map[approval.SessionKey]approval.ID{},
		marks:     map[string]time.Time{},
		grants:    map[approval.SessionKey]map[string]liveGrant{},
		cache:     map[string]cached{},
		subs:      map[int]func(approval.ID, approval.Outcome){},
		due:       newTimeIndex(),
		esc:       newTimeIndex(),
		rem:       newTimeIndex(),
		chats:     map[approval.Place]map[approval.ID]struct{}{},
	}
}

type published struct {
	id approval.ID
	o  approval.Outcome
}

// publish delivers outcomes to subscribers; it must be called without s.mu held.
func (s *Store) publish(ps ...published) {
	if len(ps) == 0 {
		return
	}
	s.mu.Lock()
	fns := make([]func(approval.ID, approval.Outcome), 0, len(s.subs))
	for _, fn := range s.subs {
		fns = append(fns, fn)
	}
	s.mu.Unlock()
	for _, p := range ps {
		for _, fn := range fns {
			fn(p.id, p.o.Clone())
		}
	}
}

// Put implements approval.Store.
func (s *Store) Put(ctx context.Context, a *approval.Approval, supersededOutcome approval.Outcome) (*approval.Approval, error) {
	const op = "memstore.Put"
	if err := ctx.Err(); err != nil {
		return nil, approval.E(op, errkind.Unavailable, a.ID, err)
	}
	if !a.ID.Valid() {
		return nil, approval.E(op, errkind.Invalid, a.ID, fmt.Errorf("malformed approval id"))
	}
	if a.State != approval.StatePending {
		return nil, approval.E(op, errkind.Invalid, a.ID, fmt.Errorf("state %q, want pending", a.State))
	}
	s.mu.Lock()
	if _, dup := s.recs[a.ID]; dup {
		s.mu.Unlock()
		return nil, approval.E(op, errkind.Conflict, a.ID, fmt.Errorf("approval exists"))
	}
	s.puts++
	if s.puts%256 == 0 {
		s.purgeLocked(a.CreatedAt)
	}
	var old *approval.Approval
	var pub []published
	if prev, ok := s.latest[a.Session]; ok {
		if r := s.recs[prev]; r != nil && r.State == approval.StatePending {
			o := supersededOutcome.Clone()
			o.Status = approval.StatusSuperseded
			s.endedLocked(r)
			r.State = approval.StateSuperseded
			r.DecidedAt = a.CreatedAt
			s.decided = append(s.decided, decidedRec{r.ID, r.DecidedAt})
			r.DecidedVia = approval.SourceSystem
			r.Outcome = &o
			old = r.Clone()
			pub = append(pub, published{r.ID, o})
		}
	}
	s.recs[a.ID] = a.Clone()
	s.latest[a.Session] = a.ID
	s.due.set(a.ID, a.ExpiresAt)
	if _, at, ok := a.NextEscalation(); ok {
		s.esc.set(a.ID, at)
	}
	if _, at, ok := a.NextReminder(); ok {
		s.rem.set(a.ID, at)
	}
	for _, p := range places(a) {
		s.listLocked(a.ID, p)
	}
	s.mu.Unlock()
	s.publish(pub...)
	return old, nil
}

// purgeLocked drops ended records older than the retention (and the
// session pointers to them) and expired marks. It reads the records in the
// order they were decided and stops at the first one too young to go; one
// decided that long ago but still claimed (its run never completed) goes
// to the back, to be read again. Marks and cached results are read once
// they have doubled since the last reading (an expired one is never
// honoured meanwhile: Seen and Claim check the expiry).
func (s *Store) purgeLocked(now time.Time) {
	n := len(s.decided)
	for i := 0; i < n && now.Sub(s.decided[0].at) > s.retention; i++ {
		d := s.decided[0]
		s.decided = s.decided[1:]
		r := s.recs[d.id]
		switch {
		case r == nil || !r.DecidedAt.Equal(d.at):
			// Gone, or listed again since.
		case !r.State.Terminal():
			s.decided = append(s.decided, d)
		default:
			delete(s.recs, d.id)
			if s.latest[r.Session] == d.id {
				delete(s.latest, r.Session)
			}
		}
	}
	if cap(s.decided) > 1024 && len(s.decided) < cap(s.decided)/4 {
		s.decided = append([]decidedRec(nil), s.decided...)
	}
	if len(s.marks)+len(s.cache) < s.sweepMarksAt {
		return
	}
	wall := s.clk.Now()
	for k, exp := range s.marks {
		if !wall.Before(exp) {
			delete(s.marks, k)
		}
	}
	for k, c := range s.cache {
		if !wall.Before(c.expires) {
			delete(s.cache, k)
		}
	}
	s.sweepMarksAt = max(2*(len(s.marks)+len(s.cache)), 1024)
}

// Get implements approval.Store.
func (s *Store) Get(ctx context.Context, id approval.ID) (*approval.Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.recs[id]
	if r == nil {
		return nil, approval.E("memstore.Get", errkind.NotFound, id, approval.ErrNotFound)
	}
	return r.Clone(), nil
}

// Outcomes implements approval.Store, under one hold of the lock.
func (s *Store) Outcomes(ctx context.Context, ids []approval.ID) ([]*approval.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return nil, approval.E("memstore.Outcomes", errkind.Unavailable, "", err)
	}
	out := make([]*approval.Outcome, len(ids))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, id := range ids {
		if r := s.recs[id]; r != nil && r.State.Terminal() && r.Outcome != nil {
			o := r.Outcome.Clone()
			out[i] = &o
		}
	}
	return out, nil
}

// AddCards implements approval.Store.
func (s *Store) AddCards(ctx context.Context, id approval.ID, cards []approval.CardRef) (*approval.Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.recs[id]
	if r == nil {
		return nil, approval.E("memstore.AddCards", errkind.NotFound, id, approval.ErrNotFound)
	}
	r.Cards = append(r.Cards, cards...)
	if r.State == approval.StateClaimed || (r.State == approval.StatePending && len(r.Votes) == 0) {
		return nil, nil
	}
	return r.Clone(), nil
}

// Pending implements approval.Store.
func (s *Store) Pending(ctx context.Context, sk approval.SessionKey) (*approval.Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.latest[sk]
	if !ok {
		return nil, nil
	}
	r := s.recs[id]
	if r == nil || r.State != approval.StatePending {
		return nil, nil
	}
	return r.Clone(), nil
}

// Latest implements approval.Store.
func (s *Store) Latest(ctx context.Context, sk approval.SessionKey) (*approval.Approval, error) {
	if err := ctx.Err(); err != nil {
		return nil, approval.E("memstore.Latest", errkind.Unavailable, "", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.recs[s.latest[sk]]
	if r == nil {
		return nil, nil
	}
	return r.Clone(), nil
}

// endLocked moves r to a terminal state with outcome o. Its session
// pointer stays (Latest): the session's latest approval has ended.
func (s *Store) endLocked(r *approval.Approval, st approval.State, req approval.ClaimRequest, o approval.Outcome) published {
	s.endedLocked(r)
	r.State = st
	r.DecidedAt = req.Now
	s.decided = append(s.decided, decidedRec{r.ID, r.DecidedAt})
	r.Outcome = &o
	return published{r.ID, o.Clone()}
}

// Claim implements approval.Store.
func (s *Store) Claim(ctx context.Context, id approval.ID, req approval.ClaimRequest) (approval.ClaimResult, error) {
	if err := ctx.Err(); err != nil {
		return approval.ClaimResult{}, approval.E("memstore.Claim", errkind.Unavailable, id, err)
	}
	s.mu.Lock()
	res, pub := s.claimLocked(id, req)
	s.mu.Unlock()
	if pub != nil {
		s.publish(*pub)
	}
	return res, nil
}

func (s *Store) claimLocked(id approval.ID, req approval.ClaimRequest) (approval.ClaimResult, *published) {
	r := s.recs[id]
	if r == nil {
		return approval.ClaimResult{Code: approval.ClaimMissing}, nil
	}
	out := func(code approval.ClaimCode, ended bool) approval.ClaimResult {
		return approval.ClaimResult{Code: code, Approval: r.Clone(), Ended: ended}
	}
	if req.Intent == approval.IntentExpire {
		if r.State != approval.StatePending {
			return out(approval.ClaimAlreadyClaimed, false), nil
		}
		if req.Now.Before(r.ExpiresAt) {
			return out(approval.ClaimNotYet, false), nil
		}
		o := req.OutcomeFor(approval.StatusExpired)
		r.DecidedVia = approval.SourceSystem
		p := s.endLocked(r, approval.StateExpired, req, o)
		return out(approval.ClaimExpired, true), &p
	}
	switch r.State {
	case approval.StatePending:
	case approval.StateSuperseded:
		return out(approval.ClaimSuperseded, false), nil
	case approval.StateExpired:
		return out(approval.ClaimExpired, false), nil
	default:
		return out(approval.ClaimAlreadyClaimed, false), nil
	}
	if s.latest[r.Session] != r.ID {
		// Put supersedes atomically, so this cannot happen; treat it as
		// superseded rather than let a stale approval run.
		o := req.OutcomeFor(approval.StatusSuperseded)
		r.DecidedVia = approval.SourceSystem
		p := s.endLocked(r, approval.StateSuperseded, req, o)
		return out(approval.ClaimSuperseded, true), &p
	}
	verb := approval.Approve
	if req.Intent == approval.IntentReject {
		verb = approval.Reject
	}
	if !r.AllowsIn(req.Actor, verb, req.Channel, req.ChatID) { // who may decide: approval/mayapprove.go
		return out(approval.ClaimUnauthorized, false), nil
	}
	if req.PayloadSHA256 != r.PayloadSHA256 {
		return out(approval.ClaimTampered, false), nil
	}
	if !req.Now.Before(r.ExpiresAt) {
		o := req.OutcomeFor(approval.StatusExpired)
		r.DecidedVia = approval.SourceSystem
		p := s.endLocked(r, approval.StateExpired, req, o)
		return out(approval.ClaimExpired, true), &p
	}
	if req.Intent == approval.IntentApprove {
		// The quorum (approval/mayapprove.go): a vote, or the approve that claims.
		if code := r.CountVote(approval.Vote{By: req.Actor, Via: req.Source, At: req.Now, Comment: req.Comment}); code != approval.ClaimOK {
			return out(code, false), nil
		}
	}
	r.DecidedBy, r.DecidedVia, r.Comment = req.Actor, req.Source, req.Comment
	if req.Intent == approval.IntentReject {
		o := req.OutcomeFor(approval.StatusRejected)
		o.DecidedBy = req.Actor
		p := s.endLocked(r, approval.StateRejected, req, o)
		return out(approval.ClaimOK, true), &p
	}
	s.unlistLocked(r)
	s.esc.remove(r.ID)
	s.rem.remove(r.ID)
	r.State = approval.StateClaimed
	r.DecidedAt = req.Now
	r.Grant = req.Grant
	r.Verdicts = req.Verdicts
	if ed := req.Edited; ed != nil {
		r.ProposedSHA256, r.PayloadSHA256 = r.PayloadSHA256, ed.PayloadSHA256
		r.Calls = append([]approval.Call(nil), ed.Calls...)
		r.Risk, r.Reason, r.ReasonZH, r.Summary, r.Preview = ed.Risk, ed.Reason, ed.ReasonZH, ed.Summary, ed.Preview
		r.SummaryZH, r.PreviewZH = ed.SummaryZH, ed.PreviewZH
	}
	s.decided = append(s.decided, decidedRec{r.ID, r.DecidedAt})
	res := out(approval.ClaimOK, false)
	if r.IdempotencyKey != "" {
		if c, ok := s.cache[cacheKey(r)]; ok && c.hash == r.PayloadSHA256 && s.clk.Now().Before(c.expires) {
			o := c.outcome.Clone()
			res.Cached = &o
		}
	}
	return res, nil
}

// Complete implements approval.Store.
func (s *Store) Complete(ctx context.Context, id approval.ID, st approval.State, o approval.Outcome, cacheTTL time.Duration) ([]approval.CardRef, error) {
	const op = "memstore.Complete"
	if err := ctx.Err(); err != nil {
		return nil, approval.E(op, errkind.Unavailable, id, err)
	}
	switch st {
	case approval.StateExecuted, approval.StateFailed, approval.StateFrozen:
	default:
		return nil, approval.E(op, errkind.Invalid, id, fmt.Errorf("state %q is not executed, failed or frozen", st))
	}
	s.mu.Lock()
	r := s.recs[id]
	if r == nil {
		s.mu.Unlock()
		return nil, approval.E(op, errkind.NotFound, id, approval.ErrNotFound)
	}
	if r.State != approval.StateClaimed {
		s.mu.Unlock()
		return nil, approval.E(op, errkind.Conflict, id, fmt.Errorf("state %q, want claimed", r.State))
	}
	if st == approval.StateExecuted && r.IdempotencyKey != "" && cacheTTL > 0 {
		s.cache[cacheKey(r)] = cached{hash: r.PayloadSHA256, outcome: o.Clone(), expires: s.clk.Now().Add(cacheTTL)}
	}
	oc := o.Clone()
	s.endedLocked(r)
	r.State = st
	r.Outcome = &oc
	cards := append([]approval.CardRef(nil), r.Cards...)
	s.mu.Unlock()
	s.publish(published{id, o})
	return cards, nil
}

// Resolve implements approval.Store (see memstore's resolveLocked and
// redisstore's resolveLua: the same steps).
func (s *Store) Resolve(ctx context.Context, id approval.ID, req approval.ResolveRequest) (approval.ClaimResult, error) {
	if err := ctx.Err(); err != nil {
		return approval.ClaimResult{}, approval.E("memstore.Resolve", errkind.Unavailable, id, err)
	}
	if !req.Resolution.Valid() {
		return approval.ClaimResult{}, approval.E("memstore.Resolve", errkind.Invalid, id, fmt.Errorf("unknown resolution %q", req.Resolution))
	}
	s.mu.Lock()
	res, pub := s.resolveLocked(id, req)
	s.mu.Unlock()
	if pub != nil {
		s.publish(*pub)
	}
	return res, nil
}

func (s *Store) resolveLocked(id approval.ID, req approval.ResolveRequest) (approval.ClaimResult, *published) {
	r := s.recs[id]
	if r == nil || !r.DecidedAt.IsZero() && req.Now.Sub(r.DecidedAt) > s.retention {
		// A record older than the retention is gone (Redis: its TTL),
		// whether or not the purge has come by yet.
		return approval.ClaimResult{Code: approval.ClaimMissing}, nil
	}
	out := func(code approval.ClaimCode, ended bool) approval.ClaimResult {
		return approval.ClaimResult{Code: code, Approval: r.Clone(), Ended: ended}
	}
	if r.State != approval.StateFrozen {
		return out(approval.ClaimNotFrozen, false), nil
	}
	if !r.AllowsIn(req.Actor, approval.Approve, req.Channel, req.ChatID) {
		return out(approval.ClaimUnauthorized, false), nil
	}
	if req.PayloadSHA256 != r.PayloadSHA256 {
		return out(approval.ClaimTampered, false), nil
	}
	r.DecidedBy, r.DecidedVia, r.Comment = req.Actor, req.Source, req.Comment
	if req.Resolution == approval.ResolveRetry {
		r.State, r.Outcome = approval.StateClaimed, nil
		r.DecidedAt = req.Now
		s.decided = append(s.decided, decidedRec{r.ID, r.DecidedAt})
		s.due.set(r.ID, req.Now) // the sweeper freezes it again if its run never ends
		return out(approval.ClaimOK, false), nil
	}
	o := req.Outcome.Clone()
	o.Status, o.Resolution, o.DecidedBy = req.Resolution.ResolvedStatus(), req.Resolution, req.Actor
	p := s.endLocked(r, req.Resolution.ResolvedState(), approval.ClaimRequest{Now: req.Now}, o)
	return out(approval.ClaimOK, true), &p
}

// Cancel implements approval.Store.
func (s *Store) Cancel(ctx context.Context, id approval.ID, o approval.Outcome, now time.Time) (*approval.Approval, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, approval.E("memstore.Cancel", errkind.Unavailable, id, err)
	}
	s.mu.Lock()
	r := s.recs[id]
	if r == nil {
		s.mu.Unlock()
		return nil, false, approval.E("memstore.Cancel", errkind.NotFound, id, approval.ErrNotFound)
	}
	if r.State != approval.StatePending {
		c := r.Clone()
		s.mu.Unlock()
		return c, false, nil
	}
	o = o.Clone()
	o.Status = approval.StatusCancelled
	r.DecidedBy, r.DecidedVia = o.DecidedBy, o.DecidedVia
	if r.DecidedVia == "" {
		r.DecidedVia = approval.SourceSystem
	}
	p := s.endLocked(r, approval.StateCancelled, approval.ClaimRequest{Now: now}, o)
	c := r.Clone()
	s.mu.Unlock()
	s.publish(p)
	return c, true, nil
}

// Seen implements approval.Store.
func (s *Store) Seen(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, approval.E("memstore.Seen", errkind.Unavailable, "", err)
	}
	return s.setNX("seen\x00"+key, ttl), nil
}

// Forget implements approval.Store.
func (s *Store) Forget(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return approval.E("memstore.Forget", errkind.Unavailable, "", err)
	}
	s.mu.Lock()
	delete(s.marks, "seen\x00"+key)
	s.mu.Unlock()
	return nil
}

func (s *Store) setNX(key string, ttl time.Duration) bool {
	now := s.clk.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if exp, ok := s.marks[key]; ok && now.Before(exp) {
		return false
	}
	s.marks[key] = now.Add(ttl)
	return true
}

// Subscribe implements approval.Store.
func (s *Store) Subscribe(ctx context.Context, fn func(approval.ID, approval.Outcome)) error {
	s.mu.Lock()
	n := s.nextSub
	s.nextSub++
	s.subs[n] = fn
	s.mu.Unlock()
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		delete(s.subs, n)
		s.mu.Unlock()
	})
	return nil
}

// Due implements approval.Store. An approval leaves the index when it
// ends (or with Undue), so Due names pending approvals and claims not
// completed.
func (s *Store) Due(ctx context.Context, now time.Time, limit int) ([]approval.ID, error) {
	return s.dueIn(ctx, "memstore.Due", s.due, now, limit)
}

// Undue implements approval.Store.
func (s *Store) Undue(ctx context.Context, ids ...approval.ID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		s.due.remove(id)
	}
	return nil
}

// endedLocked takes r, which is ending now, out of every index: the
// chats it is listed in, the escalation, reminder and expiry indexes.
func (s *Store) endedLocked(r *approval.Approval) {
	s.unlistLocked(r)
	s.esc.remove(r.ID)
	s.rem.remove(r.ID)
	s.due.remove(r.ID)
}

// places returns the chats r is listed in while pending (ChatPending):
// its own chat, or its approvers' chat when it has one, and the chats of
// the escalation steps taken so far.
func places(r *approval.Approval) []approval.Place {
	ps := []approval.Place{r.DecidesIn()}
	for _, st := range r.Taken() {
		ps = append(ps, st.To)
	}
	return ps
}

// listLocked lists the pending approval id in the chat p.
func (s *Store) listLocked(id approval.ID, p approval.Place) {
	m := s.chats[p]
	if m == nil {
		m = map[approval.ID]struct{}{}
		s.chats[p] = m
	}
	m[id] = struct{}{}
}

// unlistLocked takes r out of the chats it is listed in.
func (s *Store) unlistLocked(r *approval.Approval) {
	for _, p := range places(r) {
		if m := s.chats[p]; m != nil {
			delete(m, r.ID)
			if len(m) == 0 {
				delete(s.chats, p)
			}
		}
	}
}

// Ping implements approval.Store.
func (s *Store) Ping(ctx context.Context) error { return ctx.Err() }

// Len reports how many approval records the store holds (for metrics and tests).
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.recs)
}

var _ approval.Store = (*Store)(nil)
