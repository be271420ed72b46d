package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/internal/clock"
)

// TokenEntry is what one pending-action token stands for: the approval it
// decides, the user it was issued to, and the conversation it came from.
type TokenEntry struct {
	// Token is "pa_" followed by 32 hex digits (128 random bits).
	Token string `json:"token"`
	// Approval is the approval the token decides.
	Approval approval.ID `json:"approval_id"`
	// Tenant and User own the token: only they may use it.
	Tenant string `json:"tenant"`
	User   string `json:"user"`
	// Conversation is the conversationId of the chat that asked.
	Conversation string `json:"conversation_id"`
	// CreatedAt and ExpiresAt copy the approval's.
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	// SharedWith are the others whose lists show the token, because the
	// approval's rule lets them decide it: a User with an empty ID stands
	// for the whole tenant.
	SharedWith []User `json:"shared_with,omitempty"`
	// Resumed is the answer of the turn the approval's outcome resumed
	// after its request had returned; ResumedTaken is set once a
	// POST /agent/chat of the conversation has given it.
	Resumed      *Resumed `json:"resumed,omitempty"`
	ResumedTaken bool     `json:"resumed_taken,omitempty"`
}

// owners returns the index keys of e: its owner's and those it is shared
// with ("tenant/" for a whole tenant).
func (e TokenEntry) owners() []string {
	keys := []string{ownerKey(e.Tenant, e.User)}
	for _, u := range e.SharedWith {
		keys = append(keys, ownerKey(u.Tenant, u.ID))
	}
	return keys
}

// TokenStore maps pending-action tokens to approvals and keeps, per user,
// an index of that user's tokens (the approvals the user may list and the
// per-user cap counts). Every replica must see the same tokens, so a
// deployment with several replicas uses RedisTokens; MemoryTokens serves
// one process.
//
// Errors: Get returns an error of kind errkind.NotFound for an
// unknown or lapsed token; a store that cannot be reached returns an error
// of kind errkind.Unavailable.
type TokenStore interface {
	// Put records e under e.Token for ttl and adds it to its owner's index
	// and to the index of each of e.SharedWith.
	Put(ctx context.Context, e TokenEntry, ttl time.Duration) error
	// Get returns the entry of a token.
	Get(ctx context.Context, token string) (TokenEntry, error)
	// Delete forgets a token and removes it from every index it is in.
	// Deleting an unknown token is not an error.
	Delete(ctx context.Context, token string) error
	// List returns the live entries of one index, oldest first: a user's
	// (their own tokens and those shared with them) or, with user "", a
	// tenant's (the tokens shared with the whole tenant).
	List(ctx context.Context, tenant, user string) ([]TokenEntry, error)
}

// NewToken returns a fresh token: "pa_" + 32 hex digits.
func NewToken() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("api: crypto/rand failed: " + err.Error())
	}
	return "pa_" + hex.EncodeToString(b[:])
}

// ValidToken reports whether s has the form NewToken produces.
func ValidToken(s string) bool {
	if len(s) != 3+32 || !strings.HasPrefix(s, "pa_") {
		return false
	}
	for i := 3; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func tokenNotFound(op string) error {
	return approval.E(op, errkind.NotFound, "", errors.New("unknown pending-action token"))
}

// ---- memory

// MemoryTokens is a TokenStore in process memory, for a single node. The
// zero value is not usable; call NewMemoryTokens.
type MemoryTokens struct {
	clk clock.Clock

	mu     sync.Mutex
	tokens map[string]memToken
	owners map[string]map[string]struct{} // owner key -> tokens
}

type memToken struct {
	e       TokenEntry
	expires time.Time
}

// NewMemoryTokens returns an empty store whose TTLs run on clk (nil: the
// wall clock).
func NewMemoryTokens(clk clock.Clock) *MemoryTokens {
	if clk == nil {
		clk = clock.Real{}
	}
	return &MemoryTokens{clk: clk, tokens: map[string]memToken{}, owners: map[string]map[string]struct{}{}}
}

func ownerKey(tenant, user string) string { return tenant + "/" + user }

// Put implements TokenStore.
func (m *MemoryTokens) Put(ctx context.Context, e TokenEntry, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return approval.E("api.MemoryTokens.Put", errkind.Unavailable, e.Approval, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clk.Now()
	m.purgeLocked(now)
	m.tokens[e.Token] = memToken{e: e, expires: now.Add(ttl)}
	for _, k := range e.owners() {
		if m.owners[k] == nil {
			m.owners[k] = map[string]struct{}{}
		}
		m.owners[k][e.Token] = struct{}{}
	}
	return nil
}

// Get implements TokenStore.
func (m *MemoryTokens) Get(ctx context.Context, token string) (TokenEntry, error) {
	if err := ctx.Err(); err != nil {
		return TokenEntry{}, approval.E("api.MemoryTokens.Get", errkind.Unavailable, "", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.tokens[token]
	if !ok || !m.clk.Now().Before(t.expires) {
		return TokenEntry{}, tokenNotFound("api.MemoryTokens.Get")
	}
	return t.e, nil
}

// Delete implements TokenStore.
func (m *MemoryTokens) Delete(ctx context.Context, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.deleteLocked(token)
	return nil
}

func (m *MemoryTokens) deleteLocked(token string) {
	t, ok := m.tokens[token]
	if !ok {
		return
	}
	delete(m.tokens, token)
	for _, k := range t.e.owners() {
		delete(m.owners[k], token)
		if len(m.owners[k]) == 0 {
			delete(m.owners, k)
		}
	}
}

// List implements TokenStore.
func (m *MemoryTokens) List(ctx context.Context, tenant, user string) ([]TokenEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, approval.E("api.MemoryTokens.List", errkind.Unavailable, "", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clk.Now()
	var out []TokenEntry
	for tok := range m.owners[ownerKey(tenant, user)] {
		if t := m.tokens[tok]; now.Before(t.expires) {
			out = append(out, t.e)
		}
	}
	sortEntries(out)
	return out, nil
}

// purgeLocked drops lapsed tokens.
func (m *MemoryTokens) purgeLocked(now time.Time) {
	for tok, t := range m.tokens {
		if !now.Before(t.expires) {
			m.deleteLocked(tok)
		}
	}
}

func sortEntries(es []TokenEntry) {
	slices.SortFunc(es, func(a, b TokenEntry) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Token, b.Token)
	})
}

// ---- Redis

// RedisTokens is a TokenStore on Redis, shared by every replica. Keys:
// Prefix+"apitok:"+token holds the entry as JSON with the token's TTL;
// Prefix+"apiuser:"+tenant+"/"+user is a sorted set of the tokens of one
// index (a user's, or with an empty user a tenant's; see TokenStore.List)
// scored by their lapse time (unix ms), trimmed as it is read. No command
// touches two keys, so it runs unchanged on Redis Cluster.
type RedisTokens struct {
	c      redis.UniversalClient
	prefix string
	clk    clock.Clock
}

// NewRedisTokens returns a token store on client. prefix is the
// deployment's key prefix (the one the approval store uses, e.g.
// "hitl:"); clk (nil: the wall clock) trims lapsed index entries.
func NewRedisTokens(client redis.UniversalClient, prefix string, clk clock.Clock) *RedisTokens {
	if clk == nil {
		clk = clock.Real{}
	}
	return &RedisTokens{c: client, prefix: prefix, clk: clk}
}

func (r *RedisTokens) tokenKey(token string) string { return r.prefix + "apitok:" + token }
func (r *RedisTokens) ownerIndex(tenant, user string) string {
	return r.prefix + "apiuser:" + ownerKey(tenant, user)
}

func redisUnavailable(op string, err error) error {
	return approval.E(op, errkind.Unavailable, "", fmt.Errorf("%w: %w", approval.ErrUnavailable, err))
}

// extendTTL sets the TTL of KEYS[1] to ARGV[1] ms unless it is longer
// already (PEXPIRE … GT, which needs Redis 7, on any version; a key without
// a TTL gets one).
var extendTTL = redis.NewScript(`
local t = redis.call('PTTL', KEYS[1])
if t < tonumber(ARGV[1]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return 0
`)

// Put implements TokenStore.
func (r *RedisTokens) Put(ctx context.Context, e TokenEntry, ttl time.Duration) error {
	const op = "api.RedisTokens.Put"
	b, err := json.Marshal(e)
	if err != nil {
		return approval.E(op, errkind.Internal, e.Approval, err)
	}
	if ttl < time.Millisecond {
		ttl = time.Millisecond
	}
	lapse := r.clk.Now().Add(ttl).UnixMilli()
	_, err = r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, r.tokenKey(e.Token), b, ttl)
		for _, k := range e.owners() {
			idx := r.prefix + "apiuser:" + k
			p.ZAdd(ctx, idx, redis.Z{Score: float64(lapse), Member: e.Token})
			// The index outlives its tokens: each Put extends it to at
			// least twice the new token's TTL, and never shortens it, so
			// a short-lived token does not take longer-lived ones out of
			// the index with it. Lapsed members are trimmed by List; the
			// key's TTL only bounds the garbage of users who stopped
			// calling.
			extendTTL.Eval(ctx, p, []string{idx}, (2 * ttl).Milliseconds())
		}
		return nil
	})
	if err != nil {
		return redisUnavailable(op, err)
	}
	return nil
}

// Get implements TokenStore.
func (r *RedisTokens) Get(ctx context.Context, token string) (TokenEntry, error) {
	const op = "api.RedisTokens.Get"
	b, err := r.c.Get(ctx, r.tokenKey(token)).Bytes()
	if errors.Is(err, redis.Nil) {
		return TokenEntry{}, tokenNotFound(op)
	}
	if err != nil {
		return TokenEntry{}, redisUnavailable(op, err)
	}
	var e TokenEntry
	if err := json.Unmarshal(b, &e); err != nil {
		return TokenEntry{}, approval.E(op, errkind.Internal, "", err)
	}
	return e, nil
}

// Delete implements TokenStore.
func (r *RedisTokens) Delete(ctx context.Context, token string) error {
	const op = "api.RedisTokens.Delete"
	e, err := r.Get(ctx, token)
	if approval.KindOf(err) == errkind.NotFound {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, r.tokenKey(token))
		for _, k := range e.owners() {
			p.ZRem(ctx, r.prefix+"apiuser:"+k, token)
		}
		return nil
	})
	if err != nil {
		return redisUnavailable(op, err)
	}
	return nil
}

// List implements TokenStore.
func (r *RedisTokens) List(ctx context.Context, tenant, user string) ([]TokenEntry, error) {
	const op = "api.RedisTokens.List"
	idx := r.ownerIndex(tenant, user)
	now := strconv.FormatInt(r.clk.Now().UnixMilli(), 10)
	var toks *redis.StringSliceCmd
	_, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRemRangeByScore(ctx, idx, "-inf", now)
		toks = p.ZRange(ctx, idx, 0, -1)
		return nil
	})
	if err != nil {
		return nil, redisUnavailable(op, err)
	}
	if len(toks.Val()) == 0 {
		return nil, nil
	}
	// One GET per token (not MGET: the keys lie in different slots).
	gets := make([]*redis.StringCmd, len(toks.Val()))
	_, err = r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, t := range toks.Val() {
			gets[i] = p.Get(ctx, r.tokenKey(t))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, redisUnavailable(op, err)
	}
	var out []TokenEntry
	for _, g := range gets {
		b, err := g.Bytes()
		if err != nil {
			continue // lapsed between the two reads
		}
		var e TokenEntry
		if json.Unmarshal(b, &e) == nil {
			out = append(out, e)
		}
	}
	sortEntries(out)
	return out, nil
}

// Interface guards.
var (
	_ TokenStore = (*MemoryTokens)(nil)
	_ TokenStore = (*RedisTokens)(nil)
)
