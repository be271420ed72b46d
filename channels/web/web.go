package web

import (
	"bytes"
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/internal/clip"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/words"
)

// Name is the channel's name.
const Name = "web"

// LocalUser is the user of an anonymous loopback connection.
const LocalUser = "local"

// TokenUser is who a bearer token stands for.
type TokenUser struct {
	// User is the user id (chat ids, approvals and the audit trail use it).
	// It must be unique across tenants.
	User string `json:"user" mapstructure:"user"`
	// Tenant is the user's organisation (the HTTP API scopes by it; the
	// web chat only logs it).
	Tenant string `json:"tenant" mapstructure:"tenant"`
}

// ToolLookup finds a tool by name; *agent.Registry implements it.
type ToolLookup interface {
	Get(name string) (agent.Tool, bool)
}

// Config configures the web chat.
type Config struct {
	// Tokens maps a bearer token to the user it stands for (from config;
	// secrets come from the environment or files). A socket that presents
	// a token not in this map is refused with 401.
	Tokens map[string]TokenUser
	// AllowAnonymousLocal admits a socket without a token from a loopback
	// address as the single user "local" (the zero-config setup). Leave it
	// off behind a reverse proxy on the same host.
	AllowAnonymousLocal bool
	// Lang is the language of the text the channel writes itself
	// (confirmation text, error messages): "zh" or "en". Default "en".
	Lang string
	// PageLang is the language of the page (its labels, its greeting):
	// "zh", "en", or empty for the browser's (the request's
	// Accept-Language, which the browser sends from its language
	// settings; Lang when it names neither).
	PageLang string
	// MaxMessageBytes caps one frame from a client; a larger one closes
	// the socket. Default 64 KiB.
	MaxMessageBytes int64
	// PingInterval is how often the server pings each socket; a socket
	// that does not answer within twice this is closed. Default 30s.
	PingInterval time.Duration
	// Views are the pending cards the chat shows again by itself: when a
	// page reconnects (or the server restarted) it re-sends the session's
	// pending confirmation, and a confirmation step this process does not
	// know is recovered from it. cmd/bot gives the Presenter
	// (channels.Assembly.Presenter). Required.
	Views channels.Views
	// Tools describes tools for the confirmation dialog (tool_description
	// when the approval carries no sentence for its approver). Optional:
	// without it the call's summary is shown.
	Tools ToolLookup
	// Greeting is what the page shows when it opens (what the bot can do,
	// requests to try). Optional: without it the page opens empty.
	Greeting Greeting
	// GreetingIn, when set, is the greeting in each language (a page in
	// the browser's language greets in it); it wins over Greeting.
	GreetingIn func(words.Lang) Greeting
	// Logger receives operational logs. Default slog.Default().
	Logger *slog.Logger
	// Clock stamps frames and ages kept steps and messages. Default the
	// wall clock.
	Clock clock.Clock
}

// Limits of what is kept for sessions nobody watches, and of steps.
const (
	backlogMax    = 50
	backlogMaxAge = 10 * time.Minute
	stepRetention = time.Hour
	sendQueue     = 256
	writeTimeout  = 10 * time.Second
	handleTimeout = 30 * time.Second
)

//go:embed static
var staticFiles embed.FS

// Web is the web chat channel. It implements channels.Channel; Handler
// serves the page and the socket.
type Web struct {
	cfg      Config
	log      *slog.Logger
	clk      clock.Clock
	upgrader websocket.Upgrader
	mux      *http.ServeMux

	ctx    context.Context // for calls into the Handler; ends after Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // sockets, responses being decided, the janitor
	stop   chan struct{}

	mu         sync.Mutex
	h          channels.Handler
	started    bool
	closed     bool
	conns      map[*conn]struct{}
	chats      map[string]*chat         // by chat id "<user>/<session_id>"
	steps      map[string]*step         // by step id
	byApproval map[approval.ID][]string // approval → its step ids on this process
	stepSeq    uint64                   // orders steps by when they were recorded
}

// chat is one user's session and the sockets watching it.
type chat struct {
	id        string
	user      approval.UserID
	sessionID string
	conns     map[*conn]struct{}
	backlog   []kept
}

type kept struct {
	at    time.Time
	frame []byte
}

type stepState int

const (
	stepOpen     stepState = iota // waiting for an answer
	stepDeciding                  // an answer is being decided
	stepResolved                  // ended (status says how)
)

// step is one confirmation shown in a chat. Its id is
// "confirm_<approval id>_<tool>" (the seed's confirm_{id}_{tool_name} with
// the approval's id as the id): the same approval has the same step id on
// every showing, every replica and after a restart.
type step struct {
	id         string
	seq        uint64 // when it was recorded (newer steps win result matching)
	approvalID approval.ID
	chatID     string
	user       approval.UserID
	sessionID  string
	hash       string
	view       cards.View
	frame      []byte // the agent.user_confirm frame, re-sent on reconnect
	state      stepState
	status     approval.Status
	resolvedAt time.Time
	reported   []bool // per call of view.Calls: an agent.tool_result named this step for it
}

// New checks cfg and returns the channel. It does no I/O.
func New(cfg Config) (*Web, error) {
	if cfg.Lang == "" {
		cfg.Lang = string(words.EN)
	}
	lang, err := words.Parse(cfg.Lang)
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	cfg.Lang = string(lang)
	if cfg.Views == nil {
		return nil, errors.New("web: Config.Views is required (the Presenter's views: a reconnecting page gets its pending confirmation from them)")
	}
	for tok, u := range cfg.Tokens {
		if tok == "" || strings.TrimSpace(u.User) == "" {
			return nil, errors.New("web: tokens: every token needs a non-empty token and user")
		}
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = 64 << 10
	}
	if cfg.PingInterval <= 0 {
		cfg.PingInterval = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Web{
		cfg: cfg, log: cfg.Logger.With("channel", Name), clk: cfg.Clock,
		ctx: ctx, cancel: cancel, stop: make(chan struct{}),
		conns: map[*conn]struct{}{}, chats: map[string]*chat{}, steps: map[string]*step{}, byApproval: map[approval.ID][]string{},
	}
	w.upgrader = websocket.Upgrader{CheckOrigin: sameHost, HandshakeTimeout: 10 * time.Second}
	sub, err := fs.Sub(staticFiles, "static")
	if err != nil {
		return nil, err
	}
	w.mux = http.NewServeMux()
	w.mux.HandleFunc("/ws", w.serveWS) // any method: serveWS answers 405 to all but GET
	pageLang := lang
	if cfg.PageLang != "" {
		if pageLang, err = words.Parse(cfg.PageLang); err != nil {
			return nil, fmt.Errorf("web: page: %w", err)
		}
	}
	bodies := map[words.Lang][]byte{}
	for _, l := range words.Langs {
		g := cfg.Greeting
		if cfg.GreetingIn != nil {
			g = cfg.GreetingIn(l)
		}
		if bodies[l], err = page(sub, l, g); err != nil {
			return nil, err
		}
	}
	w.mux.Handle("/", pageHeaders(servePage(bodies, pageLang, cfg.PageLang == "", http.FileServerFS(sub))))
	return w, nil
}

// Handler serves the page at /, its assets, and the WebSocket at /ws.
func (w *Web) Handler() http.Handler { return w.mux }

// Name returns "web".
func (w *Web) Name() string { return Name }

// Start hands the channel its Handler; the socket accepts connections from
// then on. It does no network I/O of its own (cmd/bot serves Handler).
func (w *Web) Start(_ context.Context, h channels.Handler) error {
	if h == nil {
		return errors.New("web: Start needs a Handler")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errors.New("web: closed")
	}
	if w.started {
		return errors.New("web: already started")
	}
	w.h, w.started = h, true
	w.wg.Add(1)
	go w.janitor()
	return nil
}

// Close closes every socket and waits, bounded by ctx, for the answers
// being decided.
func (w *Web) Close(ctx context.Context) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	conns := make([]*conn, 0, len(w.conns))
	for c := range w.conns {
		conns = append(conns, c)
	}
	w.mu.Unlock()
	close(w.stop)
	for _, c := range conns {
		c.close()
	}
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	defer w.cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("web: close: %w", ctx.Err())
	}
}

// Ready reports whether the channel accepts sockets.
func (w *Web) Ready() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.closed:
		return errors.New("web: closed")
	case !w.started:
		return errors.New("web: not started")
	}
	return nil
}

// Send says something in a chat: agent.tool_result for a tool result,
// agent.message otherwise.
func (w *Web) Send(_ context.Context, to channels.Target, out channels.Outgoing) error {
	user, sid, err := splitChatID(to.ChatID)
	if err != nil {
		return err
	}
	var frame []byte
	if out.Kind == channels.OutToolResult {
		args := json.RawMessage(out.Args)
		if len(args) > 0 && !json.Valid(args) {
			args = nil
		}
		w.mu.Lock()
		stepID := w.resultStepLocked(to.ChatID, out.Tool, args)
		frame = mustJSON(toolResultFrame{Type: typeToolResult, Event: typeToolResult, SessionID: sid, StepID: stepID,
			ToolName: out.Tool, ToolArgs: args, Content: out.Text, IsError: out.IsError, Timestamp: w.now(),
			Metadata: resultMetadata{ToolName: out.Tool, ToolArgs: args, IsError: out.IsError}})
		w.deliverLocked(w.chatLocked(to.ChatID, user, sid), frame)
		w.mu.Unlock()
		return nil
	}
	kind := out.Kind
	if kind == "" {
		kind = channels.OutNotice
	}
	frame = mustJSON(messageFrame{Type: typeAgentMessage, Event: typeAgentMessage, SessionID: sid, Kind: string(kind), Content: out.Text,
		ReplyTo: to.ReplyTo, IsError: out.IsError, Timestamp: w.now()})
	w.mu.Lock()
	w.deliverLocked(w.chatLocked(to.ChatID, user, sid), frame)
	w.mu.Unlock()
	return nil
}

// resultStepLocked returns the step a tool result belongs to: the newest
// step of the chat with a call of that tool and those arguments that ran
// or may still run (open, being decided, or ended executed, replayed,
// failed or frozen) and whose result was not reported yet; "" when the
// call needed no confirmation. The call is marked reported.
func (w *Web) resultStepLocked(chatID, tool string, args json.RawMessage) string {
	var best *step
	bestCall := -1
	for _, st := range w.steps {
		if st.chatID != chatID || best != nil && st.seq < best.seq {
			continue
		}
		if st.state == stepResolved {
			switch st.status {
			case approval.StatusExecuted, approval.StatusReplayed, approval.StatusFailed, approval.StatusFrozen:
			default:
				continue
			}
		}
		for i, c := range st.view.Calls {
			if i < len(st.reported) && !st.reported[i] && c.Tool == tool && sameJSON(c.Args, args) {
				best, bestCall = st, i
				break
			}
		}
	}
	if best == nil {
		return ""
	}
	best.reported[bestCall] = true
	return best.id
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// ShowApproval sends agent.user_confirm to the session's sockets and
// returns the step id as the card's message id.
func (w *Web) ShowApproval(_ context.Context, to channels.Target, v cards.View) (approval.CardRef, error) {
	user, sid, err := splitChatID(to.ChatID)
	if err != nil {
		return approval.CardRef{}, err
	}
	if v.WaitsIn != "" {
		// The status of an approval decided in an approvers' chat
		// (approve_in): nothing to answer on this page, so a notice, not
		// a step; its end is said the same way (SettleApproval).
		w.notify(to.ChatID, user, sid, cards.Text(v, w.cfg.Lang))
		return approval.CardRef{Channel: Name, ChatID: to.ChatID, MessageID: statusRef + string(v.ApprovalID)}, nil
	}
	st, err := w.newStep(to.ChatID, user, sid, v)
	if err != nil {
		return approval.CardRef{}, err
	}
	w.mu.Lock()
	st = w.adoptStepLocked(st)
	w.deliverLocked(w.chatLocked(to.ChatID, user, sid), st.frame)
	w.mu.Unlock()
	w.log.Info("confirmation shown", "chat_id", to.ChatID, "user_id", user, "approval_id", v.ApprovalID, "msg_id", st.id)
	return approval.CardRef{Channel: Name, ChatID: to.ChatID, MessageID: st.id}, nil
}

// ShowProgress sends the step of ref again, drawn from v, the pending
// view of its approval with a quorum's votes so far or an escalation's
// line (channels.ProgressShower): the page updates the step it has, with
// the same step_id. A step this process does not know (shown by another
// replica, or before a restart) or has resolved is left alone.
func (w *Web) ShowProgress(_ context.Context, ref approval.CardRef, v cards.View) error {
	w.mu.Lock()
	st := w.steps[ref.MessageID]
	if st == nil || st.state == stepResolved {
		w.mu.Unlock()
		return nil
	}
	chatID, user, sid := st.chatID, st.user, st.sessionID
	w.mu.Unlock()
	fresh, err := w.newStep(chatID, user, sid, v)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if st.state == stepResolved || fresh.id != st.id {
		return nil
	}
	st.view, st.frame = fresh.view, fresh.frame
	w.deliverLocked(w.chatLocked(chatID, user, sid), st.frame)
	return nil
}

var _ channels.ProgressShower = (*Web)(nil)

// SettleApproval sends agent.confirm_resolved for the step, and for every
// other step of the same approval this process showed (a re-sent one).
func (w *Web) SettleApproval(_ context.Context, ref approval.CardRef, v cards.View) error {
	if strings.HasPrefix(ref.MessageID, statusRef) {
		user, sid, err := splitChatID(ref.ChatID)
		if err != nil {
			return err
		}
		w.notify(ref.ChatID, user, sid, cards.Text(v, w.cfg.Lang))
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	ids := append([]string{ref.MessageID}, w.byApproval[v.ApprovalID]...)
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		if st := w.steps[id]; st != nil {
			w.settleStepLocked(st, v)
			continue
		}
		if id != ref.MessageID {
			continue
		}
		// A step this process does not know (shown before a restart, or
		// by another replica): tell whoever watches the chat here.
		user, sid, err := splitChatID(ref.ChatID)
		if err != nil {
			return err
		}
		w.deliverLocked(w.chatLocked(ref.ChatID, user, sid), mustJSON(w.resolvedOf(sid, id, v)))
	}
	return nil
}

// statusRef begins the card reference of an approval's status shown as a
// notice (approve_in): "status:<approval id>".
const statusRef = "status:"

// notify delivers text as a notice to the chat chatID (user's session
// sid).
func (w *Web) notify(chatID string, user approval.UserID, sid, text string) {
	frame := mustJSON(messageFrame{Type: typeAgentMessage, Event: typeAgentMessage, SessionID: sid, Kind: string(channels.OutNotice),
		Content: text, Timestamp: w.now()})
	w.mu.Lock()
	w.deliverLocked(w.chatLocked(chatID, user, sid), frame)
	w.mu.Unlock()
}

func statusText(v cards.View) string {
	if v.StatusText != "" {
		return v.StatusText
	}
	return string(v.Status)
}

// newStep builds a step and its agent.user_confirm frame.
func (w *Web) newStep(chatID string, user approval.UserID, sid string, v cards.View) (*step, error) {
	card, err := cards.WebJSON(v)
	if err != nil {
		return nil, err
	}
	st := &step{id: stepIDOf(v), approvalID: v.ApprovalID, chatID: chatID, user: user,
		sessionID: sid, hash: v.PayloadSHA256, view: v, reported: make([]bool, len(v.Calls))}
	var args json.RawMessage
	switch len(v.Calls) {
	case 0:
		args = json.RawMessage("{}")
	case 1:
		args = v.Calls[0].Args
	default:
		type toolCall struct {
			Tool string          `json:"tool"`
			Args json.RawMessage `json:"args"`
		}
		list := make([]toolCall, len(v.Calls))
		for i, c := range v.Calls {
			list[i] = toolCall{c.Tool, c.Args}
		}
		if args, err = json.Marshal(list); err != nil {
			return nil, err
		}
	}
	desc := v.About // written for the approver; the model's description only when there is none
	if desc == "" && w.cfg.Tools != nil && len(v.Calls) == 1 {
		if t, ok := w.cfg.Tools.Get(v.Tool); ok {
			desc = t.Description()
		}
	}
	if desc == "" {
		desc = clip.FirstLine(v.Summary)
	}
	frame, err := json.Marshal(confirmFrame{
		Type: typeUserConfirm, Event: typeUserConfirm, SessionID: sid, StepID: st.id, Timestamp: w.now(),
		Content: cards.Text(v, w.cfg.Lang),
		Metadata: confirmMetadata{ToolName: v.Tool, ToolDescription: desc, ToolArgs: args, RequiresConfirmation: true,
			Risk: v.Risk.String(), ExpiresAt: v.ExpiresAt.UTC().Format(time.RFC3339), PayloadSHA256: v.PayloadSHA256,
			ApprovalID: v.ApprovalID, Summary: v.Summary, Preview: v.Preview, Reason: v.Reason, Requester: v.Requester, Approvers: v.Approvers,
			About: v.About, RiskText: v.RiskText, ShortHash: v.ShortHash, Progress: v.Progress, Escalated: v.Escalated},
		Card: card,
	})
	if err != nil {
		return nil, fmt.Errorf("web: confirmation frame: %w", err)
	}
	st.frame = frame
	return st, nil
}

// adoptStepLocked records a step built by newStep and returns the step to
// use: the one already recorded under the same id while it has not ended
// (two showings of one approval are one step), else the new one.
func (w *Web) adoptStepLocked(st *step) *step {
	old := w.steps[st.id]
	if old != nil && old.state != stepResolved && old.chatID == st.chatID {
		return old
	}
	w.stepSeq++
	st.seq = w.stepSeq
	w.steps[st.id] = st
	if old == nil {
		w.byApproval[st.approvalID] = append(w.byApproval[st.approvalID], st.id)
	}
	return st
}

// stepOf returns the recorded step with that id, or nil.
func (w *Web) stepOf(id string) *step {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.steps[id]
}

// stepIDOf is the step id of an approval's confirmation.
func stepIDOf(v cards.View) string {
	return "confirm_" + string(v.ApprovalID) + "_" + stepTool(v.Tool)
}

// approvalOfStep returns the approval id in a step id.
func approvalOfStep(stepID string) (approval.ID, bool) {
	rest, ok := strings.CutPrefix(stepID, "confirm_")
	const n = len("ap_") + 8 + 1 + 32
	if !ok || len(rest) < n+2 || rest[n] != '_' {
		return "", false
	}
	id := approval.ID(rest[:n])
	return id, id.Valid()
}

// resolveLocked ends a step once and tells its chat.
func (w *Web) resolveLocked(st *step, status approval.Status, text string, by approval.UserID, result string) {
	if st.state == stepResolved {
		return
	}
	st.state, st.status, st.resolvedAt = stepResolved, status, w.clk.Now()
	w.deliverLocked(w.chatLocked(st.chatID, st.user, st.sessionID), mustJSON(resolvedFrame{Type: typeConfirmResolved, Event: typeConfirmResolved,
		SessionID: st.sessionID, StepID: st.id, Content: text, Status: status, StatusText: text, DecidedBy: by, Result: result, Timestamp: w.now()}))
}

// chatLocked returns the chat, creating it.
func (w *Web) chatLocked(id string, user approval.UserID, sid string) *chat {
	c := w.chats[id]
	if c == nil {
		c = &chat{id: id, user: user, sessionID: sid, conns: map[*conn]struct{}{}}
		w.chats[id] = c
	}
	return c
}

// deliverLocked sends a frame to every socket watching the chat, or keeps
// it for the next one to join.
func (w *Web) deliverLocked(c *chat, frame []byte) {
	if len(c.conns) == 0 {
		c.backlog = append(c.backlog, kept{w.clk.Now(), frame})
		if len(c.backlog) > backlogMax {
			c.backlog = c.backlog[len(c.backlog)-backlogMax:]
		}
		return
	}
	for k := range c.conns {
		k.enqueue(frame)
	}
}

// janitor forgets old steps and unwatched chats.
func (w *Web) janitor() {
	defer w.wg.Done()
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.prune()
		}
	}
}

func (w *Web) prune() {
	now := w.clk.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, c := range w.chats {
		c.backlog = fresh(c.backlog, now)
		if len(c.conns) == 0 && len(c.backlog) == 0 {
			delete(w.chats, id)
		}
	}
	for id, st := range w.steps {
		old := st.state == stepResolved && now.Sub(st.resolvedAt) > stepRetention ||
			st.state != stepResolved && now.Sub(st.view.ExpiresAt) > stepRetention
		if !old {
			continue
		}
		delete(w.steps, id)
		ids := w.byApproval[st.approvalID][:0]
		for _, s := range w.byApproval[st.approvalID] {
			if s != id {
				ids = append(ids, s)
			}
		}
		if len(ids) == 0 {
			delete(w.byApproval, st.approvalID)
		} else {
			w.byApproval[st.approvalID] = ids
		}
	}
}

func fresh(b []kept, now time.Time) []kept {
	i := 0
	for i < len(b) && now.Sub(b[i].at) > backlogMaxAge {
		i++
	}
	return b[i:]
}

func (w *Web) now() string { return w.clk.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// serveWS authenticates and upgrades a socket. A method other than GET
// gets 405 with "Allow: GET" (HEAD included: there is nothing to show).
func (w *Web) serveWS(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		rw.Header().Set("Allow", http.MethodGet)
		http.Error(rw, "the web chat socket answers GET (a WebSocket upgrade) only", http.StatusMethodNotAllowed)
		return
	}
	w.mu.Lock()
	h, ok := w.h, w.started && !w.closed
	w.mu.Unlock()
	if !ok {
		http.Error(rw, "the web chat is not running", http.StatusServiceUnavailable)
		return
	}
	who, ok := w.authenticate(r)
	if !ok {
		rw.Header().Set("WWW-Authenticate", `Bearer realm="hitlbot"`)
		http.Error(rw, "a valid token is required: open the page as /?token=<your token>", http.StatusUnauthorized)
		return
	}
	ws, err := w.upgrader.Upgrade(rw, r, nil)
	if err != nil {
		w.log.Info("websocket upgrade refused", "user_id", who.User, "err", err)
		return
	}
	c := &conn{w: w, ws: ws, h: h, user: approval.UserID(who.User), tenant: who.Tenant,
		out: make(chan []byte, sendQueue), done: make(chan struct{}), joined: map[string]bool{}}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		_ = ws.Close()
		return
	}
	w.conns[c] = struct{}{}
	w.wg.Add(2)
	w.mu.Unlock()
	w.log.Debug("socket connected", "user_id", c.user, "tenant", c.tenant)
	go c.writeLoop()
	go c.readLoop()
}

// authenticate finds the user of a socket request.
func (w *Web) authenticate(r *http.Request) (TokenUser, bool) {
	tok := r.URL.Query().Get("token")
	if a := r.Header.Get("Authorization"); tok == "" && len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		tok = strings.TrimSpace(a[7:])
	}
	if tok != "" {
		var found TokenUser
		ok := false
		for k, u := range w.cfg.Tokens { // compare with every token, in constant time each
			if subtle.ConstantTimeCompare([]byte(k), []byte(tok)) == 1 {
				found, ok = u, true
			}
		}
		return found, ok
	}
	if w.cfg.AllowAnonymousLocal && isLoopback(r.RemoteAddr) {
		return TokenUser{User: LocalUser}, true
	}
	return TokenUser{}, false
}

func isLoopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sameHost accepts a request without Origin, or whose Origin names the
// host it was sent to.
func sameHost(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// pageHeaders adds a strict content security policy to the page: its own
// scripts and styles only, sockets to its own host. The page and its
// assets answer GET and HEAD; another method gets 405.
func pageHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			rw.Header().Set("Allow", "GET, HEAD")
			http.Error(rw, "the web chat page answers GET and HEAD only", http.StatusMethodNotAllowed)
			return
		}
		h := rw.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"connect-src 'self' ws://"+r.Host+" wss://"+r.Host+"; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		next.ServeHTTP(rw, r)
	})
}

// splitChatID splits "<user>/<session_id>".
func splitChatID(id string) (approval.UserID, string, error) {
	i := strings.LastIndexByte(id, '/')
	if i <= 0 || !validID.MatchString(id[i+1:]) {
		return "", "", fmt.Errorf("web: %q is not a web chat id (<user>/<session_id>)", id)
	}
	return approval.UserID(id[:i]), id[i+1:], nil
}

func chatID(user approval.UserID, sid string) string { return string(user) + "/" + sid }

// stepTool makes a tool name safe inside a step id.
func stepTool(tool string) string {
	b := []byte(tool)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	if len(b) == 0 {
		return "tool"
	}
	return string(b)
}

var _ channels.Channel = (*Web)(nil)
