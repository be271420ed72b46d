package api

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/words"
)

// Name is the channel's name in config, logs and session keys.
const Name = "api"

// API is the HTTP API: a channels.Channel named "api" whose chats are HTTP
// requests. Create it with New, register it with the router, mount
// Handler (or Mount), and Start it with the router as its Handler.
//
// In and out are separate parts. API itself is the outbound side, what the
// presenter, the router and the engine call: TurnEvent, ShowApproval and
// SettleApproval publish to the conversations in flight, in order and
// without waiting (an outbox, which keeps a resumed turn's answer first);
// Send drops what is said outside a turn. The inbound side
// is an inbound (http.go), the HTTP handler of the routes, which hands
// messages to the router; the two meet in conversations (the requests
// waiting in each conversation, and the approvals a local turn waits for)
// and in a tokenLedger (the pending-action tokens every replica shares).
type API struct {
	cfg    Config
	engine *approval.Engine
	log    *slog.Logger

	in     *inbound       // the HTTP handler (and the router it hands messages to)
	convs  *conversations // the requests in flight, per conversation
	tokens *tokenLedger   // the pending-action token entries
	out    *outbox        // publishes to convs in order, keeping resumed answers first
}

// conversations is what the two sides of the API share in this process:
// the requests in flight in each conversation (which the outbound side
// publishes to and the inbound side waits on), and the approvals that a
// turn of this process waits for.
type conversations struct {
	mu    sync.Mutex
	convs map[string]*conv          // chat id -> the requests in flight in it
	local map[approval.ID]localTurn // approvals shown by turns of this process
}

// tokenLedger reads and writes the pending-action token entries (in
// Config.TokenStore, shared by every replica): which API approvals a user
// has, and the answers of resumed turns kept for the client.
type tokenLedger struct {
	cfg    Config
	engine *approval.Engine
	log    *slog.Logger
}

// localTurn records that a turn of this process waits for an approval.
type localTurn struct {
	chatID    string
	expiresAt time.Time
}

// New checks cfg and returns the API. It does no I/O.
func New(cfg Config, engine *approval.Engine, logger *slog.Logger) (*API, error) {
	if engine == nil {
		return nil, errors.New("api.New: an approval engine is required")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	if logger == nil {
		logger = slog.Default()
	}
	log := logger.With("channel", Name)
	convs := &conversations{convs: map[string]*conv{}, local: map[approval.ID]localTurn{}}
	tokens := &tokenLedger{cfg: cfg, engine: engine, log: log}
	in := &inbound{cfg: cfg, lang: words.Of(cfg.Lang), engine: engine, log: log, users: map[[32]byte]User{},
		convs: convs, tokens: tokens}
	for tok, u := range cfg.Tokens {
		in.users[sha256.Sum256([]byte(tok))] = u
	}
	in.mux = http.NewServeMux()
	in.mount(in.mux)
	a := &API{cfg: cfg, engine: engine, log: log, in: in, convs: convs, tokens: tokens, out: newOutbox(convs, tokens, log)}
	return a, nil
}

// Handler returns the HTTP handler of the API's routes:
//
//	POST /agent/chat
//	GET  /api/approvals
//	GET  /api/approvals/{id}
//	POST /api/approvals/{id}/decision
//	POST /api/approvals/{id}/cancel
//
// Mount it on a server's mux for these paths, or call Mount.
func (a *API) Handler() http.Handler { return a.in.mux }

// routes are the API's paths and the methods each takes.
var routes = []struct{ path, allow string }{
	{"/agent/chat", "POST"},
	{"/api/approvals", "GET, HEAD"},
	{"/api/approvals/{id}", "GET, HEAD"},
	{"/api/approvals/{id}/decision", "POST"},
	{"/api/approvals/{id}/cancel", "POST"},
}

// Mount registers the API's routes on mux (Go 1.22 method patterns), and
// for each path a pattern without a method that answers any other method
// with 405 and Allow. Without those, a catch-all "/" on the same mux (the
// web chat's) would match a wrong method and answer 404: the mux answers
// 405 by itself only when no pattern matches the path for any method.
func (a *API) Mount(mux *http.ServeMux) { a.in.mount(mux) }

// ---- channels.Channel

// Name returns "api".
func (a *API) Name() string { return Name }

// Start stores the handler (the router); the API answers 503 until then.
func (a *API) Start(ctx context.Context, h channels.Handler) error {
	if h == nil {
		return errors.New("api.Start: nil handler")
	}
	a.in.slot.Set(h)
	return nil
}

// Close makes new requests answer 503 (requests in flight end on their
// own, bounded by TurnTimeout) and waits, bounded by ctx, for the answers
// of resumed turns still being kept (outbox); those heard later are kept
// on the listener's path.
func (a *API) Close(ctx context.Context) error {
	a.in.slot.Close()
	return a.out.close(ctx)
}

// Ready reports whether the API accepts requests.
func (a *API) Ready() error {
	if a.in.slot.Handler() == nil {
		return errors.New("api: not running (not started, or closed)")
	}
	return nil
}

// Send drops what it is given. Everything a turn says reaches the API as
// turn events (TurnEvent), so what comes through Send is said outside a
// turn: a reminder that an approval waits, the notice that it was
// escalated. The API has no chat to show those in, and no request waits
// for them (each waits for its own turn's events); the approval's state
// and audit trail (GET /api/approvals/{id}) say the same.
func (a *API) Send(ctx context.Context, to channels.Target, out channels.Outgoing) error {
	return nil
}

// TurnEvent hands what a turn says and where it stands to the requests
// waiting in its conversation, and keeps the answer of a resumed turn with
// the approval's token, where GET /api/approvals/{id} and the next
// POST /agent/chat of the conversation find it (channels.TurnListener).
// It does not wait for the store: the answer is kept by a worker of the
// conversation, which publishes the turn's end once it is kept (outbox).
func (a *API) TurnEvent(ctx context.Context, to channels.Target, ev channels.TurnEvent) {
	var keep *agent.TurnResult
	if ev.Kind == agent.SayTurnEnded && ev.Result != nil && ev.Result.Resumed != "" {
		keep = ev.Result
	}
	a.out.say(ctx, to.ChatID, keep, event{turn: to.ReplyTo, turnEv: &ev})
}

// keepTimeout bounds the keeping of one resumed answer.
const keepTimeout = 10 * time.Second

// keepResumed records a resumed turn's answer in its approval's token
// entry (the store every replica shares), within keepTimeout or until ctx
// ends. Failures are logged: the answer is in the conversation's history
// either way.
func (l *tokenLedger) keepResumed(ctx context.Context, res agent.TurnResult) {
	ctx, cancel := context.WithTimeout(ctx, keepTimeout)
	defer cancel()
	log := l.log.With("approval_id", res.Resumed)
	rec, err := l.engine.Get(ctx, res.Resumed)
	if err != nil {
		log.Warn("reading the approval of a resumed turn failed; its answer is not kept for the client", "err", err)
		return
	}
	e, ok, err := l.tokenEntryOf(ctx, rec)
	if err != nil {
		log.Warn("reading the token of a resumed turn failed; its answer is not kept for the client", "err", err)
		return
	}
	if !ok {
		return // not an approval of the API
	}
	now := l.cfg.Clock.Now()
	acts := make([]Action, len(res.Actions))
	for i, x := range res.Actions {
		acts[i] = Action{Tool: x.Tool, Input: x.Input, Result: x.Result, Status: x.Status, IsError: x.IsError}
	}
	e.Resumed = &Resumed{ApprovalID: res.Resumed, Text: res.Text, Actions: acts, At: now.UTC()}
	e.ResumedTaken = false
	if err := l.cfg.TokenStore.Put(ctx, e, l.retention(e, now)); err != nil {
		log.Warn("writing a resumed turn's answer failed; it is not kept for the client", "err", err)
	}
}

// tokenEntryOf returns the pending-action token entry of rec, an approval
// of the API: through the token its card reference holds, or, when the
// approval has none (the replica that showed it stopped after it gave the
// client the token but before the engine recorded the card), by the
// approval's id among the token entries of its requester. ok is false
// for an approval that is not the API's.
func (l *tokenLedger) tokenEntryOf(ctx context.Context, rec *approval.Approval) (TokenEntry, bool, error) {
	if token := tokenOf(rec); token != "" {
		e, err := l.cfg.TokenStore.Get(ctx, token)
		return e, err == nil, err
	}
	if rec.Channel != Name {
		return TokenEntry{}, false, nil
	}
	tenant, user, _, ok := splitChatID(rec.ChatID)
	if !ok {
		return TokenEntry{}, false, nil
	}
	es, err := l.cfg.TokenStore.List(ctx, tenant, user)
	if err != nil {
		return TokenEntry{}, false, err
	}
	for _, e := range es {
		if e.Approval == rec.ID {
			return e, true, nil
		}
	}
	return TokenEntry{}, false, nil
}

// retention is how long a token entry is kept from now: TokenRetention
// past its approval's expiry, and at least TokenRetention.
func (l *tokenLedger) retention(e TokenEntry, now time.Time) time.Duration {
	return max(e.ExpiresAt.Add(l.cfg.TokenRetention).Sub(now), l.cfg.TokenRetention)
}

// collectResumed returns the resumed answers of u's conversation convID
// not given yet, oldest first, and marks them given. A failure to read or
// mark is logged; the answers stay for a later request.
func (l *tokenLedger) collectResumed(ctx context.Context, u User, convID string) []Resumed {
	es, err := l.cfg.TokenStore.List(ctx, u.Tenant, u.ID)
	if err != nil {
		l.log.Warn("listing resumed answers failed", "user_id", u.UserID(), "err", err)
		return nil
	}
	var out []Resumed
	now := l.cfg.Clock.Now()
	for _, e := range es {
		if e.Resumed == nil || e.ResumedTaken || e.Conversation != convID || !ownedBy(e, u) {
			continue
		}
		e.ResumedTaken = true
		if err := l.cfg.TokenStore.Put(context.WithoutCancel(ctx), e, l.retention(e, now)); err != nil {
			l.log.Warn("marking a resumed answer as given failed; it is given again later", "approval_id", e.Approval, "err", err)
		}
		out = append(out, *e.Resumed)
	}
	return out
}

// tokenOf returns the pending-action token of an approval of the API
// (the MessageID of its API card), or "".
func tokenOf(rec *approval.Approval) string {
	for _, c := range rec.Cards {
		if c.Channel == Name && ValidToken(c.MessageID) {
			return c.MessageID
		}
	}
	return ""
}

// ShowApproval issues a pending-action token for the approval (stored in
// the TokenStore, so any replica can take the confirmation) and hands it
// to the requests waiting in the conversation. The card reference's
// MessageID is the token.
func (a *API) ShowApproval(ctx context.Context, to channels.Target, v cards.View) (approval.CardRef, error) {
	tenant, user, convID, ok := splitChatID(to.ChatID)
	if !ok {
		return approval.CardRef{}, fmt.Errorf("api: chat id %q is not tenant/user/conversation", to.ChatID)
	}
	now := a.cfg.Clock.Now()
	e := TokenEntry{Token: NewToken(), Approval: v.ApprovalID, Tenant: tenant, User: user, Conversation: convID,
		CreatedAt: now.UTC(), ExpiresAt: v.ExpiresAt.UTC()}
	turn := ""
	if rec, err := a.engine.Get(ctx, v.ApprovalID); err == nil {
		turn = turnOf(rec)
		e.SharedWith = sharedWith(rec.Approvers, User{ID: user, Tenant: tenant})
	} else {
		// The approval stays decidable by id; only the lists of other
		// deciders miss it.
		a.log.Warn("reading the approval to show failed; it is listed for its requester only", "approval_id", v.ApprovalID, "err", err)
	}
	ttl := v.ExpiresAt.Sub(now) + a.cfg.TokenRetention
	if err := a.cfg.TokenStore.Put(ctx, e, ttl); err != nil {
		return approval.CardRef{}, err
	}
	a.convs.waitsFor(v.ApprovalID, to.ChatID, v.ExpiresAt, now)
	pa := pendingAction(v, e.Token)
	a.out.say(ctx, to.ChatID, nil, event{turn: turn, shown: &pa})
	return approval.CardRef{Channel: Name, ChatID: to.ChatID, MessageID: e.Token}, nil
}

// SettleApproval tells the requests waiting in the conversation how the
// approval ended. The token stays in the store until TokenRetention has
// passed: a reuse reads the approval's state and answers 404 (decided) or
// 410 (expired), and GET /api/approvals can list ended approvals.
func (a *API) SettleApproval(ctx context.Context, ref approval.CardRef, v cards.View) error {
	local := a.convs.settled(v.ApprovalID)
	a.out.say(ctx, ref.ChatID, nil, event{settled: &settled{view: v, local: local}})
	return nil
}

// sharedWith returns whom besides its requester an approval is listed for,
// by its approver rule: the requester's whole tenant for "chat" (the API's
// chat is the tenant), each listed "tenant/user" for "users".
func sharedWith(rule approval.ApproverRule, requester User) []User {
	switch rule.Mode {
	case approval.ApproverChat:
		return []User{{Tenant: requester.Tenant}}
	case approval.ApproverUsers:
		var out []User
		for _, id := range rule.Users {
			parts := strings.Split(string(id), "/")
			if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
				continue // not an API user (a Feishu open_id, say)
			}
			if u := (User{ID: parts[1], Tenant: parts[0]}); u != requester {
				out = append(out, u)
			}
		}
		return out
	}
	return nil
}

// waitsFor records that a turn of this process, in chat chatID, waits for
// the approval id until expiresAt, and forgets the turns that cannot be
// waiting any more.
func (cs *conversations) waitsFor(id approval.ID, chatID string, expiresAt, now time.Time) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for old, l := range cs.local {
		if now.After(l.expiresAt.Add(time.Hour)) {
			delete(cs.local, old)
		}
	}
	cs.local[id] = localTurn{chatID: chatID, expiresAt: expiresAt}
}

// settled forgets the approval and reports whether a turn of this process
// was waiting for it.
func (cs *conversations) settled(id approval.ID) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	_, ok := cs.local[id]
	delete(cs.local, id)
	return ok
}

// isLocal reports whether a turn of this process waits for the approval.
func (cs *conversations) isLocal(id approval.ID) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	_, ok := cs.local[id]
	return ok
}

// ---- conversations in flight

// chatID is the chat id of an API conversation: "tenant/user/conversation".
func chatID(u User, convID string) string { return u.Tenant + "/" + u.ID + "/" + convID }

func splitChatID(s string) (tenant, user, convID string, ok bool) {
	parts := strings.SplitN(s, "/", 3)
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// turnOf returns the id of the turn that asked for an approval: the
// message id the turn started from, which the agent puts in front of the
// approval's idempotency key ("<message id>/<call ids>"), and which the
// router sends back as Target.ReplyTo of everything the turn says. Empty
// when unknown.
func turnOf(rec *approval.Approval) string {
	if i := strings.IndexByte(rec.IdempotencyKey, '/'); i > 0 {
		return rec.IdempotencyKey[:i]
	}
	return ""
}

// event is something a waiting request may care about.
type event struct {
	// turn is the message id of the turn it belongs to ("" if unknown).
	turn    string
	turnEv  *channels.TurnEvent // TurnEvent: what the turn says, and where it stands
	shown   *PendingAction      // ShowApproval
	settled *settled            // SettleApproval
}

type settled struct {
	view  cards.View
	local bool // a turn of this process was waiting for it
}

// conv is one conversation with requests in flight. Its requests take
// turns (sem); each registers a waiter that receives every event of the
// conversation from then on.
type conv struct {
	sem     chan struct{}
	refs    int
	waiters map[*waiter]struct{}
}

// waiter is an unbounded queue of events, so that publishing never blocks
// the agent.
type waiter struct {
	mu  sync.Mutex
	q   []event
	sig chan struct{}
}

func (w *waiter) push(e event) {
	w.mu.Lock()
	w.q = append(w.q, e)
	w.mu.Unlock()
	select {
	case w.sig <- struct{}{}:
	default:
	}
}

func (w *waiter) pop() (event, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.q) == 0 {
		return event{}, false
	}
	e := w.q[0]
	w.q = w.q[1:]
	return e, true
}

// join returns the conversation's state, holding a reference to it.
func (cs *conversations) join(id string) *conv {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c := cs.convs[id]
	if c == nil {
		c = &conv{sem: make(chan struct{}, 1), waiters: map[*waiter]struct{}{}}
		cs.convs[id] = c
	}
	c.refs++
	return c
}

func (cs *conversations) leave(id string, c *conv) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c.refs--
	if c.refs == 0 {
		delete(cs.convs, id)
	}
}

func (cs *conversations) subscribe(c *conv) *waiter {
	w := &waiter{sig: make(chan struct{}, 1)}
	cs.mu.Lock()
	c.waiters[w] = struct{}{}
	cs.mu.Unlock()
	return w
}

func (cs *conversations) unsubscribe(c *conv, w *waiter) {
	cs.mu.Lock()
	delete(c.waiters, w)
	cs.mu.Unlock()
}

func (cs *conversations) publish(chatID string, e event) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c := cs.convs[chatID]
	if c == nil {
		return
	}
	for w := range c.waiters {
		w.push(e)
	}
}

// lock takes the conversation's turn for one request.
func (c *conv) lock(ctx context.Context) error {
	select {
	case c.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *conv) unlock() { <-c.sem }

var (
	_ channels.Channel      = (*API)(nil)
	_ channels.TurnListener = (*API)(nil)
)
