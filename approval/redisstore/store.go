package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/internal/clock"
)

// DefaultPrefix is the key prefix when Options.Prefix is empty.
const DefaultPrefix = "hitl:"

// DefaultRetention is how long records of ended approvals are kept when
// Options.Retention is not set.
const DefaultRetention = 7 * 24 * time.Hour

// maxLife caps the part of a pending record's TTL that comes from its
// expiry, so that an absurd ExpiresAt cannot pin a record for ever.
const maxLife = 366 * 24 * time.Hour

// Options configure a Store.
type Options struct {
	// Prefix is put in front of every key and of the pub/sub channel, so
	// that several deployments (or tests) can share one Redis. It must not
	// contain '{' or '}', which would change the keys' hash slots.
	// Default "hitl:".
	Prefix string
	// Clock is used for nothing but purge decisions: the TTL of a pending
	// record is (ExpiresAt - Clock.Now() at Put) + Retention. Whether an
	// approval has expired is judged by ClaimRequest.Now, never by this
	// clock. Default: the wall clock.
	Clock clock.Clock
	// Retention is how long records of ended approvals are kept, so that a
	// late click gets already_decided or expired instead of missing.
	// Default 7 days.
	Retention time.Duration
	// Logger receives what cannot be returned as an error (an undecodable
	// pub/sub message). Default slog.Default().
	Logger *slog.Logger
	// ReplicaAcks, when positive, has every claim acknowledged by at least
	// this many replicas (Redis WAIT, sent with the claim in its round
	// trip) before a tool may run on it. Redis replicates asynchronously: a
	// claim the primary took but no replica has yet is lost when a replica
	// is promoted (Sentinel failover), and the approval is pending again
	// there, so a second click could run the tool a second time. A claim
	// acknowledged by fewer replicas within ReplicaAckTimeout comes back
	// with ClaimResult.Unreplicated, and the engine runs nothing on it.
	// 0 (default) does not wait.
	ReplicaAcks int
	// ReplicaAckTimeout bounds the wait for ReplicaAcks. Default 1s.
	ReplicaAckTimeout time.Duration
	// NoAutoPipeline sends each of the store's single commands and scripts
	// in a round trip of its own. By default, on a single server or a
	// Sentinel master (a *redis.Client), they go through go-redis's
	// auto-pipeliner (Client.AutoPipeline): the commands that replicas'
	// conversations send at the same moment share one write and one read
	// on one connection, which costs both this process and Redis less per
	// command (bot bench -mode agent -redis at -c 100: 7 commands a
	// conversation in about 3 round trips, ~15 % less CPU in each). Every
	// command still waits for its own reply, in order for its goroutine;
	// a command re-sent after a lost reply is recognised by its nonce as
	// it is without batching. A Cluster client is never batched, and the
	// pipelines the store builds itself (Put's, the claim with WAIT, the
	// indexes) are sent as they are. The auto-pipeliner's goroutines end
	// when the client is closed.
	NoAutoPipeline bool
}

// commander is what the store sends single commands and scripts through:
// the client, or its auto-pipeliner (Options.NoAutoPipeline).
type commander interface {
	redis.Cmdable
	redis.Scripter
}

// commanderOf returns the auto-pipeliner of client when it can have one
// and off is false, and the client otherwise.
func commanderOf(client redis.UniversalClient, off bool) (commander, error) {
	c, ok := client.(*redis.Client)
	if off || !ok {
		return client, nil
	}
	ap, err := c.AutoPipeline()
	if err != nil {
		return nil, err
	}
	return ap, nil
}

// Store is an approval.Store on Redis. It is safe for concurrent use; create
// it with New.
type Store struct {
	c         redis.UniversalClient
	cmd       commander // c or its auto-pipeliner: single commands and scripts
	prefix    string
	channel   string
	clk       clock.Clock
	retention time.Duration
	log       *slog.Logger
	acks      int           // Options.ReplicaAcks
	ackWait   time.Duration // Options.ReplicaAckTimeout

	// nonceBase (64 random bits, 11 characters) and seq make a nonce
	// unique to each call (see scripts.go: a call that go-redis re-sends
	// after a lost reply is recognised). Nonces are stored in records, so
	// they are short: base64 for the random part, base 36 for seq.
	nonceBase string
	seq       atomic.Uint64

	// hints keeps what each Put read of its approval's chat index, for
	// the ChatCode that follows it (see chatHints).
	hints chatHints
	// ended keeps chat-index entries of approvals that left pending, for
	// the next pipeline to remove (see endedQueue).
	ended endedQueue

	put, claim, complete, cancel, addCards, pending, resolve *redis.Script
	putGrant, listGrants, revoke, step                       *redis.Script
}

var _ approval.Store = (*Store)(nil)

// New returns a Store on client, which may be a single server, a Sentinel
// (failover) or a Cluster client. Scripts are loaded lazily: the first run of
// each uses EVALSHA, falls back to EVAL (which caches it on the server), and
// later runs are a single EVALSHA. The Store does not own the client: the
// caller closes it.
func New(client redis.UniversalClient, opts Options) (*Store, error) {
	const op = "redisstore.New"
	if client == nil {
		return nil, approval.E(op, errkind.Invalid, "", errors.New("nil redis client"))
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if strings.ContainsAny(opts.Prefix, "{}") {
		return nil, approval.E(op, errkind.Invalid, "", fmt.Errorf("prefix %q contains '{' or '}'", opts.Prefix))
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ReplicaAcks < 0 {
		return nil, approval.E(op, errkind.Invalid, "", fmt.Errorf("replica acks %d is negative", opts.ReplicaAcks))
	}
	if opts.ReplicaAckTimeout <= 0 {
		opts.ReplicaAckTimeout = time.Second
	}
	cmd, err := commanderOf(client, opts.NoAutoPipeline)
	if err != nil {
		return nil, approval.E(op, errkind.Invalid, "", fmt.Errorf("auto-pipeline: %w", err))
	}
	var nb [8]byte
	if _, err := rand.Read(nb[:]); err != nil {
		return nil, approval.E(op, errkind.Internal, "", err)
	}
	return &Store{
		nonceBase:  base64.RawURLEncoding.EncodeToString(nb[:]),
		c:          client,
		cmd:        cmd,
		prefix:     opts.Prefix,
		channel:    opts.Prefix + "outcomes",
		clk:        opts.Clock,
		retention:  opts.Retention,
		log:        opts.Logger,
		acks:       opts.ReplicaAcks,
		ackWait:    opts.ReplicaAckTimeout,
		put:        redis.NewScript(putLua),
		claim:      redis.NewScript(claimLua),
		complete:   redis.NewScript(completeLua),
		cancel:     redis.NewScript(cancelLua),
		addCards:   redis.NewScript(addCardsLua),
		pending:    redis.NewScript(pendingLua),
		resolve:    redis.NewScript(resolveLua),
		putGrant:   redis.NewScript(putGrantLua),
		listGrants: redis.NewScript(listGrantsLua),
		revoke:     redis.NewScript(revokeLua),
		step:       redis.NewScript(stepLua),
	}, nil
}

// nonce returns a string unique to one call of one Store.
func (s *Store) nonce() string {
	return s.nonceBase + strconv.FormatUint(s.seq.Add(1), 36) // nonceBase has a fixed length
}

// ---- keys

// base returns "<prefix>{<shard>}:", the start of every key of one shard.
func (s *Store) base(shard string) string { return s.prefix + "{" + shard + "}:" }

// recordKey returns the key of an approval's record.
func (s *Store) recordKey(shard string, id approval.ID) string {
	return s.base(shard) + "ap:" + string(id)
}

// pointerKey returns the key that names the session's latest approval
// (pending or ended; see Pending and Latest).
func (s *Store) pointerKey(sess approval.SessionKey) string {
	return s.base(approval.Shard(sess)) + "pending:" + string(sess)
}

// idemKey returns the key of the cached result for an idempotency key in a
// session. The session's length makes the encoding unambiguous. The Lua
// scripts build the same string.
func (s *Store) idemKey(sess approval.SessionKey, key string) string {
	return s.base(approval.Shard(sess)) + "idem:" + strconv.Itoa(len(sess)) + ":" + string(sess) + ":" + key
}

func (s *Store) seenKey(key string) string { return s.prefix + "seen:" + key }
func (s *Store) dueKey() string            { return s.prefix + "due" }
func (s *Store) escKey() string            { return s.prefix + "esc" }
func (s *Store) remKey() string            { return s.prefix + "remind" }

// ---- errors

// unavailable maps a Redis or network error to errkind.Unavailable. The error
// text comes from go-redis (an address at most), never a password.
func unavailable(op string, id approval.ID, err error) error {
	return approval.E(op, errkind.Unavailable, id, fmt.Errorf("%w: %w", approval.ErrUnavailable, err))
}

func ctxErr(ctx context.Context, op string, id approval.ID) error {
	if err := ctx.Err(); err != nil {
		return unavailable(op, id, err)
	}
	return nil
}

func notFound(op string, id approval.ID) error {
	return approval.E(op, errkind.NotFound, id, approval.ErrNotFound)
}

func internal(op string, id approval.ID, format string, args ...any) error {
	return approval.E(op, errkind.Internal, id, fmt.Errorf(format, args...))
}

// ---- encoding

// splitTime returns t as whole unix milliseconds (rounded down) and the
// nanoseconds within that millisecond: two numbers a Lua double holds
// exactly, compared in order they give time.Time's order.
func splitTime(t time.Time) (ms int64, ns int64) {
	n := int64(t.Nanosecond())
	return t.Unix()*1000 + n/1e6, n % 1e6
}

func fmtTime(t time.Time) string { return t.Format(time.RFC3339Nano) }

// durMS returns d in whole milliseconds, rounded up, at least 1.
func durMS(d time.Duration) int64 {
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return max(int64(ms), 1)
}

func outcomeJSON(o approval.Outcome) (string, error) {
	k, plain := plainOutcome(o)
	if plain {
		if j, ok := plainOutcomes.Load(k); ok {
			return j.(string), nil
		}
	}
	b, err := json.Marshal(o)
	if err == nil && plain && plainOutcomesN.Add(1) <= maxPlainOutcomes {
		plainOutcomes.Store(k, string(b))
	}
	return string(b), err
}

// plainOutcomes keeps the JSON of the outcomes that say nothing but a
// status and its sentence (plainOutcome), by those: a claim sends two or
// three of them (expired, superseded, rejected) and a put one, always the
// same few. At most maxPlainOutcomes are kept (plainOutcomesN counts
// them), so that an odd sentence cannot grow the map for ever.
var (
	plainOutcomes  sync.Map // outcomeKey -> string
	plainOutcomesN atomic.Int64
)

const maxPlainOutcomes = 256

// outcomeKey is what a plain outcome holds.
type outcomeKey struct {
	status  approval.Status
	content string
	isError bool
}

// plainOutcome returns the key of o when o holds nothing but its status,
// its sentence and whether it is an error (TestPlainOutcomeKnowsEveryField
// fails when approval.Outcome gains a field this does not look at).
func plainOutcome(o approval.Outcome) (outcomeKey, bool) {
	plain := o.Detail == "" && len(o.Results) == 0 && o.DecidedBy == "" && o.Comment == "" && o.DecidedVia == "" &&
		o.Approvals == 0 && o.Quorum == 0 && o.Resolution == ""
	return outcomeKey{o.Status, o.Content, o.IsError}, plain
}

// replyCode returns the first element of a script's reply, "" if none.
func replyCode(res []any) string {
	if len(res) == 0 {
		return ""
	}
	s, _ := res[0].(string)
	return s
}

// ---- approval.Store

// Due implements approval.Store: a ZRANGEBYSCORE of the expiry index.
func (s *Store) Due(ctx context.Context, now time.Time, limit int) ([]approval.ID, error) {
	return s.dueIn(ctx, "redisstore.Due", s.dueKey(), now, limit)
}

// dueIn returns up to limit ids of the index key (the expiry, the
// escalation or the reminder index) scored at or before now, earliest
// first.
func (s *Store) dueIn(ctx context.Context, op, key string, now time.Time, limit int) ([]approval.ID, error) {
	ms, _ := splitTime(now)
	ids, err := s.c.ZRangeByScore(ctx, key, &redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(ms, 10), Count: int64(limit)}).Result()
	if err != nil {
		return nil, unavailable(op, "", err)
	}
	out := make([]approval.ID, len(ids))
	for i, id := range ids {
		out[i] = approval.ID(id)
	}
	return out, nil
}

// Undue implements approval.Store: a ZREM from the expiry index.
func (s *Store) Undue(ctx context.Context, ids ...approval.ID) error {
	if len(ids) == 0 {
		return nil
	}
	m := make([]any, len(ids))
	for i, id := range ids {
		m[i] = string(id)
	}
	if err := s.c.ZRem(ctx, s.dueKey(), m...).Err(); err != nil {
		return unavailable("redisstore.Undue", "", err)
	}
	return nil
}

// Put implements approval.Store in one round trip (the put script).
func (s *Store) Put(ctx context.Context, a *approval.Approval, supersededOutcome approval.Outcome) (*approval.Approval, error) {
	const op = "redisstore.Put"
	if err := ctxErr(ctx, op, a.ID); err != nil {
		return nil, err
	}
	shard, ok := a.ID.Shard()
	if !ok {
		return nil, approval.E(op, errkind.Invalid, a.ID, errors.New("malformed approval id"))
	}
	if a.State != approval.StatePending {
		return nil, approval.E(op, errkind.Invalid, a.ID, fmt.Errorf("state %q, want pending", a.State))
	}
	if shard != approval.Shard(a.Session) {
		// The record and its session's pointer must share a hash slot.
		return nil, approval.E(op, errkind.Invalid, a.ID, errors.New("the id's shard does not match its session (create ids with approval.NewID)"))
	}
	fs, err := encodeRecord(a)
	if err != nil {
		return nil, approval.E(op, errkind.Invalid, a.ID, err)
	}
	o := supersededOutcome.Clone()
	o.Status = approval.StatusSuperseded
	oj, err := outcomeJSON(o)
	if err != nil {
		return nil, approval.E(op, errkind.Invalid, a.ID, err)
	}
	life := min(max(a.ExpiresAt.Sub(s.clk.Now()), 0), maxLife)
	expMS, _ := splitTime(a.ExpiresAt)
	args := append([]any{
		s.base(shard), string(a.ID), durMS(life + s.retention), oj, fmtTime(a.CreatedAt),
		s.channel, durMS(s.retention), s.nonce(),
	}, fs...)
	keys := []string{s.recordKey(shard, a.ID), s.pointerKey(a.Session)}
	// The put script and the expiry and chat index entries travel in one
	// pipeline: one round trip. The indexes live in slots of their own, so
	// they cannot be part of the script; a lost entry only delays the
	// sweeper's expiry or leaves the approval out of the chat's /pending,
	// never a claim.
	due := redis.Z{Score: float64(expMS), Member: string(a.ID)}
	// An approval asked in an approvers' chat (approve_in) is listed
	// there, not in its requester's chat.
	place := a.DecidesIn()
	chat := s.chatKey(place.Channel, place.ChatID)
	chatTTL := time.Duration(durMS(life+s.retention)) * time.Millisecond
	_, escAt, escalates := a.NextEscalation()
	escMS, _ := splitTime(escAt)
	esc := redis.Z{Score: float64(escMS), Member: string(a.ID)}
	_, remAt, reminds := a.NextReminder()
	remMS, _ := splitTime(remAt)
	rem := redis.Z{Score: float64(remMS), Member: string(a.ID)}
	// The chat's index is read back in the same pipeline (pruned of
	// entries past the retention first, as chatIDs does), so that the
	// card's short code needs no round trip of its own (ChatCode).
	oldMS, _ := splitTime(s.clk.Now().Add(-s.retention))
	var idsCmd *redis.StringSliceCmd
	send := func(pipe redis.Pipeliner, script func(context.Context, redis.Scripter, []string, ...any) *redis.Cmd) *redis.Cmd {
		c := script(ctx, pipe, keys, args...)
		pipe.ZAdd(ctx, s.dueKey(), due)
		pipe.ZAdd(ctx, chat, due)
		pipe.PExpire(ctx, chat, chatTTL)
		if escalates {
			pipe.ZAdd(ctx, s.escKey(), esc)
		}
		if reminds {
			pipe.ZAdd(ctx, s.remKey(), rem)
		}
		s.ended.drain(ctx, pipe)
		pipe.ZRemRangeByScore(ctx, chat, "-inf", "("+strconv.FormatInt(oldMS, 10))
		idsCmd = pipe.ZRange(ctx, chat, 0, hintMax)
		return c
	}
	pipe := s.c.Pipeline()
	putCmd := send(pipe, s.put.EvalSha)
	_, err = pipe.Exec(ctx)
	if err != nil && redis.HasErrorPrefix(putCmd.Err(), "NOSCRIPT") {
		// The server does not know the script yet (first use, or after a
		// restart): the script did not run; send it in full (EVAL also
		// caches it for the next EVALSHA).
		pipe = s.c.Pipeline()
		putCmd = send(pipe, s.put.Eval)
		_, err = pipe.Exec(ctx)
	}
	if err != nil {
		return nil, unavailable(op, a.ID, err)
	}
	res, err := putCmd.Slice()
	if err != nil {
		return nil, unavailable(op, a.ID, err)
	}
	code := replyCode(res)
	ids := idsCmd.Val()
	if code == "superseded" && len(res) == 3 {
		// The approval this Put superseded was read as listed; it is not
		// pending any more.
		oldID, _ := res[2].(string)
		ids = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == oldID })
	}
	if code != "conflict" {
		s.hints.put(a.ID, ids)
	}
	switch {
	case code == "conflict":
		return nil, approval.E(op, errkind.Conflict, a.ID, errors.New("approval exists"))
	case code == "ok":
		return nil, nil
	case code == "superseded" && len(res) == 3:
		oldID, _ := res[2].(string)
		old, err := decodeReply(approval.ID(oldID), res[1])
		if err != nil {
			return nil, internal(op, a.ID, "superseded record: %v", err)
		}
		s.ended.add(s, old)
		return old, nil
	}
	return nil, internal(op, a.ID, "unexpected put reply %v", res)
}

// Get implements approval.Store in one round trip (HGETALL).
func (s *Store) Get(ctx context.Context, id approval.ID) (*approval.Approval, error) {
	const op = "redisstore.Get"
	shard, ok := id.Shard()
	if !ok {
		return nil, notFound(op, id)
	}
	f, err := s.cmd.HGetAll(ctx, s.recordKey(shard, id)).Result()
	if err != nil {
		return nil, unavailable(op, id, err)
	}
	if len(f) == 0 {
		return nil, notFound(op, id)
	}
	a, err := decodeRecord(id, f)
	if err != nil {
		return nil, internal(op, id, "%v", err)
	}
	return a, nil
}

// outcomesBatch is how many records one pipeline of Outcomes reads.
const outcomesBatch = 1000

// Outcomes implements approval.Store: HGET of each record's state,
// pipelined, outcomesBatch to a round trip (a Cluster client splits each
// pipeline by node); then, only when some have ended, the records of
// those (HGETALL, pipelined: an outcome is kept in chunks, see
// fields.add), whose outcomes alone are decoded. A poll that finds
// nothing ended (the usual case: the outcome messages came) reads a few
// bytes per approval.
func (s *Store) Outcomes(ctx context.Context, ids []approval.ID) ([]*approval.Outcome, error) {
	const op = "redisstore.Outcomes"
	out := make([]*approval.Outcome, len(ids))
	var ended []int // indexes in ids
	for start := 0; start < len(ids); start += outcomesBatch {
		batch := ids[start:min(start+outcomesBatch, len(ids))]
		pipe := s.c.Pipeline()
		cmds := make([]*redis.StringCmd, len(batch))
		for i, id := range batch {
			if shard, ok := id.Shard(); ok {
				cmds[i] = pipe.HGet(ctx, s.recordKey(shard, id), "s")
			}
		}
		if pipe.Len() == 0 {
			continue
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, unavailable(op, "", err)
		}
		for i, c := range cmds {
			if c != nil && c.Err() == nil && approval.State(c.Val()).Terminal() { // redis.Nil: no such record
				ended = append(ended, start+i)
			}
		}
	}
	for start := 0; start < len(ended); start += outcomesBatch {
		batch := ended[start:min(start+outcomesBatch, len(ended))]
		pipe := s.c.Pipeline()
		cmds := make([]*redis.MapStringStringCmd, len(batch))
		for i, at := range batch {
			shard, _ := ids[at].Shard()
			cmds[i] = pipe.HGetAll(ctx, s.recordKey(shard, ids[at]))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, unavailable(op, "", err)
		}
		for i, at := range batch {
			f := cmds[i].Val()
			if len(f) == 0 {
				continue // gone since (past its retention)
			}
			a, err := decodeRecord(ids[at], f)
			if err != nil {
				return nil, internal(op, ids[at], "%v", err)
			}
			if a.State.Terminal() {
				out[at] = a.Outcome
			}
		}
	}
	return out, nil
}

// AddCards implements approval.Store in one round trip.
func (s *Store) AddCards(ctx context.Context, id approval.ID, cards []approval.CardRef) (*approval.Approval, error) {
	const op = "redisstore.AddCards"
	shard, ok := id.Shard()
	if !ok {
		return nil, notFound(op, id)
	}
	args := make([]any, 1, 1+4*len(cards))
	args[0] = s.nonce()
	for _, c := range cards {
		// The script stores the short form when the card is in the
		// approval's own chat, else the JSON.
		j, err := cardJSON(c)
		if err != nil {
			return nil, approval.E(op, errkind.Invalid, id, err)
		}
		ch := c.Channel
		if c.Private {
			ch = "" // never the approval's channel: the script keeps the JSON
		}
		args = append(args, ch, c.ChatID, c.MessageID, j)
	}
	v, err := s.addCards.Run(ctx, s.cmd, []string{s.recordKey(shard, id)}, args...).Result()
	if errors.Is(err, redis.Nil) {
		return nil, notFound(op, id)
	}
	if err != nil {
		return nil, unavailable(op, id, err)
	}
	if v == "live" {
		return nil, nil // pending or claimed: the caller has the record
	}
	a, err := decodeReply(id, v)
	if err != nil {
		return nil, internal(op, id, "record: %v", err)
	}
	return a, nil
}

// Pending implements approval.Store in one round trip.
func (s *Store) Pending(ctx context.Context, sess approval.SessionKey) (*approval.Approval, error) {
	v, err := s.pending.Run(ctx, s.cmd, []string{s.pointerKey(sess)}, s.base(approval.Shard(sess))).Result()
	return s.pendingReply("redisstore.Pending", v, err)
}

// Latest implements approval.Store in one round trip (the pending script,
// taking any state).
func (s *Store) Latest(ctx context.Context, sess approval.SessionKey) (*approval.Approval, error) {
	v, err := s.pending.Run(ctx, s.cmd, []string{s.pointerKey(sess)}, s.base(approval.Shard(sess)), "any").Result()
	return s.pendingReply("redisstore.Latest", v, err)
}

// pendingReply decodes the reply of the pending script.
func (s *Store) pendingReply(op string, v any, err error) (*approval.Approval, error) {
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, unavailable(op, "", err)
	}
	res, ok := v.([]any)
	if !ok || len(res) != 2 {
		return nil, internal(op, "", "unexpected pending reply %T", v)
	}
	id, _ := res[0].(string)
	a, err := decodeReply(approval.ID(id), res[1])
	if err != nil {
		return nil, internal(op, approval.ID(id), "pending record: %v", err)
	}
	return a, nil
}

// Claim implements approval.Store in one round trip (the claim script). It
// fails closed: when Redis cannot be reached it returns an error of kind
// errkind.Unavailable, never a claim.
func (s *Store) Claim(ctx context.Context, id approval.ID, req approval.ClaimRequest) (approval.ClaimResult, error) {
	const op = "redisstore.Claim"
	if err := ctxErr(ctx, op, id); err != nil {
		return approval.ClaimResult{}, err
	}
	shard, ok := id.Shard()
	if !ok {
		return approval.ClaimResult{Code: approval.ClaimMissing}, nil
	}
	// The three outcomes the claim may end the approval with, computed up
	// front because the script decides which one applies (the rejected
	// one only for a reject, the only intent that can end so).
	var rej, exp, sup string
	var err error
	exp, err = outcomeJSON(req.OutcomeFor(approval.StatusExpired))
	if err == nil && req.Intent != approval.IntentExpire {
		sup, err = outcomeJSON(req.OutcomeFor(approval.StatusSuperseded))
	}
	if err == nil && req.Intent == approval.IntentReject {
		o := req.OutcomeFor(approval.StatusRejected)
		o.DecidedBy = req.Actor
		rej, err = outcomeJSON(o)
	}
	if err != nil {
		return approval.ClaimResult{}, approval.E(op, errkind.Invalid, id, err)
	}
	verdicts, hashText := "", req.PayloadSHA256
	var editH, editJ, proposed string
	if req.Intent == approval.IntentApprove {
		verdicts = string(req.Verdicts)
		if ed := req.Edited; ed != nil {
			j, err := encodeFrozen(ed)
			if err != nil {
				return approval.ClaimResult{}, approval.E(op, errkind.Invalid, id, err)
			}
			editJ = string(j)
			editH, proposed, hashText = encodeHash(ed.PayloadSHA256), encodeHash(req.PayloadSHA256), ed.PayloadSHA256
		}
	}
	var vote string
	if req.Intent == approval.IntentApprove {
		b, err := json.Marshal(approval.Vote{By: req.Actor, Via: req.Source, At: req.Now, Comment: req.Comment})
		if err != nil {
			return approval.ClaimResult{}, approval.E(op, errkind.Invalid, id, err)
		}
		vote = string(b)
	}
	nowMS, nowNS := splitTime(req.Now)
	base := s.base(shard)
	keys := []string{base + "ap:" + string(id)}
	args := []any{base, string(id), string(req.Intent), encodeHash(req.PayloadSHA256),
		string(req.Actor), string(req.Source), req.Comment,
		nowMS, nowNS, fmtTime(req.Now), rej, exp, sup,
		s.channel, durMS(s.retention), s.nonce(), req.Channel, req.ChatID, hashText, verdicts, editH, editJ, proposed, string(req.Grant), vote}
	if req.Mark != "" && req.MarkTTL > 0 {
		// The decision's de-duplication mark, set by the script first: in
		// the record's slot, so one script may set it (a mark with no TTL
		// would expire at once, as Seen's: none is set).
		keys = append(keys, s.claimMarkKey(shard, req.Mark))
		args = append(args, durMS(req.MarkTTL))
	}
	var res []any
	acked := int64(-1) // not asked
	if s.acks > 0 {
		res, acked, err = s.claimAcked(ctx, s.claim, keys, args)
	} else {
		res, err = s.claim.Run(ctx, s.cmd, keys, args...).Slice()
	}
	if err != nil {
		return approval.ClaimResult{}, unavailable(op, id, err)
	}
	code := replyCode(res)
	switch code {
	case "missing":
		return approval.ClaimResult{Code: approval.ClaimMissing}, nil
	case "duplicate":
		return approval.ClaimResult{Code: approval.ClaimDuplicate}, nil
	}
	if len(res) != 4 {
		return approval.ClaimResult{}, internal(op, id, "unexpected claim reply of %d items", len(res))
	}
	ended, _ := res[1].(int64)
	a, err := decodeReply(id, res[2])
	if err != nil {
		return approval.ClaimResult{}, internal(op, id, "%v", err)
	}
	out := approval.ClaimResult{Code: approval.ClaimCode(code), Approval: a, Ended: ended == 1}
	if out.Code == approval.ClaimOK || out.Ended {
		s.ended.add(s, a) // claimed or ended: out of its chats' lists
	}
	if acked >= 0 && acked < int64(s.acks) && (out.Ended || out.Code == approval.ClaimOK) {
		// An approve claim is marked: a tool would run on it. A reject or
		// an expiry has ended the approval on the primary all the same;
		// lost in a failover, the approval would be pending again there.
		out.Unreplicated = !out.Ended
		s.log.Warn("redisstore: a transition was not acknowledged by enough replicas in time", "approval_id", string(id),
			"code", code, "ended", out.Ended, "acked", acked, "want", s.acks, "timeout", s.ackWait)
	}
	if c, _ := res[3].(string); c != "" {
		var entry struct {
			Outcome approval.Outcome `json:"outcome"`
		}
		if err := json.Unmarshal([]byte(c), &entry); err != nil {
			// The claim has happened; a broken cache entry only means
			// the call runs instead of replaying. Say so, and go on.
			s.log.Error("redisstore: undecodable cached result", "approval_id", string(id), "err", err)
		} else {
			out.Cached = &entry.Outcome
		}
	}
	return out, nil
}

// claimAcked runs the claim (or resolve) script and WAIT for s.acks replicas in one
// pipeline on one connection: WAIT counts the replicas that have every
// write made so far on its own connection, so it must follow the claim on
// the same one. On a Cluster that is a client of the master that owns the
// record's slot. It returns the claim's reply and how many replicas
// acknowledged.
func (s *Store) claimAcked(ctx context.Context, script *redis.Script, keys []string, args []any) ([]any, int64, error) {
	var c redis.Cmdable = s.c
	if cc, ok := s.c.(*redis.ClusterClient); ok {
		node, err := cc.MasterForKey(ctx, keys[0])
		if err != nil {
			return nil, 0, err
		}
		c = node
	}
	for attempt := 0; ; attempt++ {
		var claim *redis.Cmd
		var wait *redis.Cmd
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			claim = script.EvalSha(ctx, p, keys, args...)
			wait = p.Do(ctx, "WAIT", s.acks, s.ackWait.Milliseconds())
			return nil
		})
		if err != nil && redis.HasErrorPrefix(claim.Err(), "NOSCRIPT") && attempt == 0 {
			// Not loaded on this server yet (a restart, a failover):
			// load it and send the pair again.
			if lerr := script.Load(ctx, c).Err(); lerr != nil {
				return nil, 0, lerr
			}
			continue
		}
		if err := claim.Err(); err != nil {
			return nil, 0, err
		}
		res, err := claim.Slice()
		if err != nil {
			return nil, 0, err
		}
		n, err := wait.Int64()
		if err != nil {
			// The claim happened; how far it was copied is unknown.
			s.log.Warn("redisstore: WAIT after a claim failed", "err", err)
			n = 0
		}
		return res, n, nil
	}
}

// Complete implements approval.Store in one round trip (the complete script).
func (s *Store) Complete(ctx context.Context, id approval.ID, st approval.State, o approval.Outcome, cacheTTL time.Duration) ([]approval.CardRef, error) {
	const op = "redisstore.Complete"
	if err := ctxErr(ctx, op, id); err != nil {
		return nil, err
	}
	switch st {
	case approval.StateExecuted, approval.StateFailed, approval.StateFrozen:
	default:
		return nil, approval.E(op, errkind.Invalid, id, fmt.Errorf("state %q is not executed, failed or frozen", st))
	}
	shard, ok := id.Shard()
	if !ok {
		return nil, notFound(op, id)
	}
	oj, err := outcomeJSON(o)
	if err != nil {
		return nil, approval.E(op, errkind.Invalid, id, err)
	}
	var ttl int64
	if cacheTTL > 0 {
		ttl = durMS(cacheTTL)
	}
	base := s.base(shard)
	keys := []string{base + "ap:" + string(id)}
	args := []any{base, string(id), string(st), oj, ttl, s.channel, durMS(s.retention), s.nonce()}
	var res []string
	if s.ended.empty() {
		res, err = s.complete.Run(ctx, s.cmd, keys, args...).StringSlice()
	} else {
		// The chat-index entries of approvals that left pending (this
		// one's among them, queued by its claim) go in the same round
		// trip.
		pipe := s.c.Pipeline()
		cmd := s.complete.EvalSha(ctx, pipe, keys, args...)
		s.ended.drain(ctx, pipe)
		_, _ = pipe.Exec(ctx)
		res, err = cmd.StringSlice()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			// Not loaded on the server yet: the script did not run.
			res, err = s.complete.Run(ctx, s.cmd, keys, args...).StringSlice()
		}
	}
	if err != nil {
		return nil, unavailable(op, id, err)
	}
	if len(res) == 0 {
		return nil, internal(op, id, "empty reply of the complete script")
	}
	switch res[0] {
	case "ok":
		if len(res) < 3 {
			return nil, internal(op, id, "unexpected complete reply of %d items", len(res))
		}
		s.ended.addIDs(s.dueKey(), string(id)) // ended: out of the expiry index
		var cards []approval.CardRef
		for i, c := range res[3:] {
			ref, err := decodeCard(c, res[1], res[2])
			if err != nil {
				return nil, internal(op, id, "record field c%d: %v", i+1, err)
			}
			cards = append(cards, ref)
		}
		return cards, nil
	case "missing":
		return nil, notFound(op, id)
	}
	return nil, approval.E(op, errkind.Conflict, id, fmt.Errorf("state %q, want claimed", res[0]))
}

// Cancel implements approval.Store in one round trip.
func (s *Store) Cancel(ctx context.Context, id approval.ID, o approval.Outcome, now time.Time) (*approval.Approval, bool, error) {
	const op = "redisstore.Cancel"
	if err := ctxErr(ctx, op, id); err != nil {
		return nil, false, err
	}
	shard, ok := id.Shard()
	if !ok {
		return nil, false, notFound(op, id)
	}
	o = o.Clone()
	o.Status = approval.StatusCancelled
	oj, err := outcomeJSON(o)
	if err != nil {
		return nil, false, approval.E(op, errkind.Invalid, id, err)
	}
	via := o.DecidedVia
	if via == "" {
		via = approval.SourceSystem
	}
	base := s.base(shard)
	res, err := s.cancel.Run(ctx, s.cmd, []string{base + "ap:" + string(id)},
		string(id), oj, fmtTime(now), s.channel, durMS(s.retention), s.nonce(), string(via), string(o.DecidedBy)).Slice()
	if err != nil {
		return nil, false, unavailable(op, id, err)
	}
	code := replyCode(res)
	if code == "missing" {
		return nil, false, notFound(op, id)
	}
	if len(res) != 2 {
		return nil, false, internal(op, id, "unexpected cancel reply of %d items", len(res))
	}
	a, err := decodeReply(id, res[1])
	if err != nil {
		return nil, false, internal(op, id, "%v", err)
	}
	if code == "cancelled" {
		s.ended.add(s, a)
	}
	return a, code == "cancelled", nil
}

// Seen implements approval.Store in one round trip (SET NX PX GET of the
// call's nonce, see markFirst).
func (s *Store) Seen(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	const op = "redisstore.Seen"
	if err := ctxErr(ctx, op, ""); err != nil {
		return false, err
	}
	if ttl <= 0 {
		// A mark that expires at once: every call is the first, as in memstore.
		return true, nil
	}
	nonce := s.nonce()
	first, err := markFirst(s.cmd.SetArgs(ctx, s.seenKey(key), nonce, markArgs(ttl)), nonce)
	if err != nil {
		return false, unavailable(op, "", err)
	}
	return first, nil
}

// markArgs are the arguments of the SET that sets a de-duplication mark
// for ttl: NX, and GET, which answers what the key held (nil: nothing,
// and the mark is set).
func markArgs(ttl time.Duration) redis.SetArgs {
	return redis.SetArgs{Mode: "NX", Get: true, TTL: time.Duration(durMS(ttl)) * time.Millisecond}
}

// markFirst reads the reply of a mark's SET (markArgs) whose value was
// nonce, the call's own: first when the key held nothing, or held this
// very nonce, when go-redis sent the SET again after its first reply was
// lost (the first run set it). A mark is its call's, not a duplicate of
// itself: a resume claim that won never hears "lost" (which would leave
// the turn with nobody to go on), an inbound message is not dropped as a
// duplicate of itself.
func markFirst(cmd *redis.StatusCmd, nonce string) (bool, error) {
	switch old, err := cmd.Result(); {
	case errors.Is(err, redis.Nil):
		return true, nil
	case err != nil:
		return false, err
	default:
		return old == nonce, nil
	}
}

var _ approval.InboundStore = (*Store)(nil)

// SeenAndPending implements approval.InboundStore in one round trip: the
// SET NX of every key and the pending script, pipelined (on a Cluster,
// go-redis sends one pipeline per node).
func (s *Store) SeenAndPending(ctx context.Context, keys []string, ttl time.Duration, sess approval.SessionKey) approval.InboundCheck {
	const op = "redisstore.SeenAndPending"
	var c approval.InboundCheck
	c.First = make([]bool, len(keys))
	for i := range c.First {
		c.First[i] = true
	}
	if err := ctxErr(ctx, op, ""); err != nil {
		c.SeenErr, c.PendingErr = err, err
		return c
	}
	seen := make([]*redis.StatusCmd, len(keys))
	nonces := make([]string, len(keys)) // one per key, as if each were a Seen
	var pend *redis.Cmd
	_, _ = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		if ttl > 0 {
			for i, k := range keys {
				nonces[i] = s.nonce()
				seen[i] = p.SetArgs(ctx, s.seenKey(k), nonces[i], markArgs(ttl))
			}
		}
		pend = s.pending.EvalSha(ctx, p, []string{s.pointerKey(sess)}, s.base(approval.Shard(sess)))
		s.ended.drain(ctx, p)
		return nil
	})
	for i, cmd := range seen {
		if cmd == nil {
			break // ttl <= 0: every call is the first, as in Seen
		}
		switch first, err := markFirst(cmd, nonces[i]); {
		case err == nil:
			c.First[i] = first
		default:
			for j := range c.First {
				c.First[j] = true
			}
			c.SeenErr = unavailable(op, "", err)
		}
		if c.SeenErr != nil {
			break
		}
	}
	v, err := pend.Result()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// The script is not loaded on that server yet: Pending loads it.
		c.Pending, c.PendingErr = s.Pending(ctx, sess)
		return c
	}
	c.Pending, c.PendingErr = s.pendingReply("redisstore.Pending", v, err)
	return c
}

// claimMarkKey returns the key of a decision's de-duplication mark set
// by a claim of an approval of shard (approval.ClaimRequest.Mark): in the
// record's slot, unlike Seen's marks.
func (s *Store) claimMarkKey(shard, key string) string { return s.base(shard) + "seen:" + key }

var _ approval.MarkClaimer = (*Store)(nil)

// ForgetClaimMark implements approval.MarkClaimer (DEL).
func (s *Store) ForgetClaimMark(ctx context.Context, id approval.ID, key string) error {
	const op = "redisstore.ForgetClaimMark"
	if err := ctxErr(ctx, op, id); err != nil {
		return err
	}
	shard, ok := id.Shard()
	if !ok {
		return nil // no claim of it marks anything
	}
	if err := s.cmd.Del(ctx, s.claimMarkKey(shard, key)).Err(); err != nil {
		return unavailable(op, id, err)
	}
	return nil
}

// Forget implements approval.Store (DEL).
func (s *Store) Forget(ctx context.Context, key string) error {
	const op = "redisstore.Forget"
	if err := ctxErr(ctx, op, ""); err != nil {
		return err
	}
	if err := s.cmd.Del(ctx, s.seenKey(key)).Err(); err != nil {
		return unavailable(op, "", err)
	}
	return nil
}

// message is what the scripts publish on the outcome channel.
type message struct {
	ID      approval.ID      `json:"id"`
	Outcome approval.Outcome `json:"outcome"`
}

// Subscribe implements approval.Store. It opens one pub/sub connection for
// this subscription and returns once Redis has confirmed the subscription.
// go-redis re-subscribes by itself after a reconnect; outcomes published
// while the connection was down are lost (waiters fall back to their
// timeout and to polling the record). Through a Sentinel, a switchover
// whose old master stays up does not break the connection: the
// subscription stays on the old master until Sentinel demotes it (some
// 10 s), and waiters learn outcomes by polling meanwhile
// (TestSentinelSwitchover). fn is called from one goroutine, in
// the order of publication; undecodable messages are logged and skipped.
var _ approval.WantSubscriber = (*Store)(nil)

func (s *Store) Subscribe(ctx context.Context, fn func(approval.ID, approval.Outcome)) error {
	return s.subscribe(ctx, "redisstore.Subscribe", nil, fn)
}

var _ approval.WantSubscriber = (*Store)(nil)

// SubscribeWanted implements approval.WantSubscriber: the id is read from
// the front of the message as the scripts write it ({"id":"…","outcome":…})
// and the outcome is decoded only when want(id) holds. A message of
// another form is decoded whole, as Subscribe does.
func (s *Store) SubscribeWanted(ctx context.Context, want func(approval.ID) bool, fn func(approval.ID, approval.Outcome)) error {
	return s.subscribe(ctx, "redisstore.SubscribeWanted", want, fn)
}

// messageID returns the approval id at the front of an outcome message as
// the scripts publish it, or false when the message has another form.
func messageID(payload string) (approval.ID, bool) {
	rest, ok := strings.CutPrefix(payload, `{"id":"`)
	if !ok {
		return "", false
	}
	i := strings.IndexByte(rest, '"')
	if i < 0 || !strings.HasPrefix(rest[i:], `","outcome":`) {
		return "", false
	}
	return approval.ID(rest[:i]), true
}

func (s *Store) subscribe(ctx context.Context, op string, want func(approval.ID) bool, fn func(approval.ID, approval.Outcome)) error {
	if err := ctxErr(ctx, op, ""); err != nil {
		return err
	}
	ps := s.c.Subscribe(ctx, s.channel)
	for {
		m, err := ps.Receive(ctx)
		if err != nil {
			_ = ps.Close()
			return unavailable(op, "", err)
		}
		if _, ok := m.(*redis.Subscription); ok {
			break
		}
	}
	ch := ps.Channel()
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
	go func() {
		defer stop()
		for msg := range ch {
			if ctx.Err() != nil {
				continue // closing: drain without delivering
			}
			if want != nil {
				if id, ok := messageID(msg.Payload); ok && !want(id) {
					continue // nobody here waits for it: not decoded
				}
			}
			var m message
			if err := json.Unmarshal([]byte(msg.Payload), &m); err != nil {
				s.log.Warn("redisstore: undecodable outcome message", "err", err, "channel", msg.Channel)
				continue
			}
			if !m.ID.Valid() {
				s.log.Warn("redisstore: outcome message without a valid approval id", "err", errors.New("malformed id"), "channel", msg.Channel)
				continue
			}
			fn(m.ID, m.Outcome)
		}
	}()
	return nil
}

// Ping implements approval.Store.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.c.Ping(ctx).Err(); err != nil {
		return unavailable("redisstore.Ping", "", err)
	}
	return nil
}
