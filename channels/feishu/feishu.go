package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	larkws "github.com/hitlbot/hitlbot/third_party/larkws"
	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"

	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/internal/marks"
	"github.com/hitlbot/hitlbot/internal/background"
)

// Name is the channel's name in config, logs, session keys and card refs.
const Name = "feishu"

// Channel is the Feishu adapter (channels.Channel). In and out are separate
// parts, each owning its state:
//
//   - intake (events.go, webhook.go): the events Feishu sends, over the
//     long connection or the webhook: messages handed to the router, card
//     clicks answered with the card's next state;
//   - longConn: the long connection's clients, reconnected and replaced;
//   - openAPI (send.go): the calls to Feishu's Open API, retried and
//     rate-budgeted, with the tenant token it refreshes: messages posted,
//     cards patched;
//   - cardMemory: the views of the cards this process sent or redrew, which
//     the outbound side writes and a click reads.
//
// Channel itself is the outbound surface the router calls (Send,
// ShowApproval, SettleApproval, ShowProgress, OpenStream, the private
// sends) over openAPI, and the lifecycle (Start, Close, Ready).
type Channel struct {
	cfg   Config
	log   *slog.Logger
	in    *intake
	conn  *longConn
	api   *openAPI
	cards *cardMemory

	mu      sync.Mutex
	started bool
	closed  bool
	cancel  context.CancelFunc
	super   chan struct{} // closed when the long connection's supervisor ends

	bg background.Group // messages handed to the router, delayed re-patches; closed with the channel

	now   func() time.Time // the clock of the webhook's timestamp bound and of streamed cards
	marks Marks            // webhook requests seen, and the shared rate budgets (Config.Marks)
}

// intake takes the events Feishu sends, over the long connection
// (sdkDispatcher) or the webhook: it hands messages to the router and
// answers card clicks (events.go), and checks each webhook request first
// (webhook.go).
type intake struct {
	cfg   Config
	log   *slog.Logger
	warns *limitedLog // refused webhook requests
	cards *cardMemory
	bg    *background.Group // the channel's: messages handed to the router
	now   func() time.Time
	marks Marks

	// slot is the router from Start, none once closed.
	slot channels.HandlerSlot

	mu    sync.Mutex
	botID string
}

// longConn runs the long connection's clients (supervise) and says whether
// one is connected.
type longConn struct {
	cfg  Config
	log  *slog.Logger
	http *http.Client

	connected atomic.Bool
	lastErr   atomic.Pointer[string]
	connects  atomic.Int64 // successful connects (first one and reconnects)
}

// openAPI makes the calls to Feishu's Open API (send.go): retried, counted,
// kept within Feishu's per-chat and per-message rates, with a fresh tenant
// token when Feishu refused the SDK's cached one.
type openAPI struct {
	cfg    Config
	log    *slog.Logger
	client *sdk
	http   *http.Client

	chatLimit budget  // messages sent per chat, shared by the replicas (limit.go)
	msgLimit  budget  // patches per message, shared by the replicas
	redraws   redraws // the newest redraw of each card waiting to be patched
	metrics   channels.PlatformMetrics

	mu sync.Mutex
	// token is a tenant token fetched after Feishu refused the SDK's
	// cached one; used until tokenUntil.
	token      string
	tokenUntil time.Time
}

// cardMemory holds the views of the cards this process sent or redrew (by
// message id), so that a click is answered with the card's next state.
type cardMemory struct {
	mu    sync.Mutex
	cards map[string]*shownCard
}

// New checks cfg and returns a channel. It does no I/O.
func New(cfg Config, logger *slog.Logger) (*Channel, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("channel", Name)
	hc := &http.Client{Timeout: cfg.RequestTimeout}
	c := &Channel{cfg: cfg, log: logger, now: time.Now, cards: &cardMemory{cards: map[string]*shownCard{}}}
	c.marks = cfg.Marks
	if c.marks == nil {
		c.marks = marks.NewLocal(func() time.Time { return c.now() })
	}
	now := func() time.Time { return c.now() }
	a := &openAPI{cfg: cfg, log: logger, http: hc, metrics: cfg.Metrics}
	a.chatLimit = budget{store: func() marks.Store { return c.marks }, prefix: "feishu:rate:chat:",
		log: func(err error) {
			a.log.Warn("the shared store failed: the per-chat rate is kept by Feishu's refusals only", "err", err)
		}}
	a.msgLimit = budget{store: func() marks.Store { return c.marks }, prefix: "feishu:rate:msg:",
		log: func(err error) {
			a.log.Warn("the shared store failed: the per-message rate is kept by Feishu's refusals only", "err", err)
		}}
	if a.metrics == nil {
		a.metrics = channels.NoPlatformMetrics{}
	}
	a.client = newSDK(cfg.AppID, cfg.AppSecret, cfg.BaseURL, hc, sdkLogger{logger})
	c.api = a
	c.conn = &longConn{cfg: cfg, log: logger, http: hc}
	c.in = &intake{cfg: cfg, log: logger, warns: newLimitedLog(now), cards: c.cards, bg: &c.bg, now: now,
		marks: c.marks, botID: cfg.BotOpenID}
	return c, nil
}

// Name returns "feishu".
func (c *Channel) Name() string { return Name }

// Start begins delivering to h. Over the long connection it connects and
// returns once connected (or failed, or after StartTimeout); the
// connection then reconnects by itself, and a connection the SDK gives up
// on is replaced by a new one. In webhook mode it only arms
// WebhookHandler. Either way it first learns the bot's open_id when the
// config does not give it.
func (c *Channel) Start(ctx context.Context, h channels.Handler) error {
	if h == nil {
		return errors.New("feishu: Start needs a handler")
	}
	c.mu.Lock()
	if c.started || c.closed {
		c.mu.Unlock()
		return errors.New("feishu: Start called twice or after Close")
	}
	c.started = true
	c.mu.Unlock()
	c.in.slot.Set(h)

	if c.in.botOpenID() == "" {
		if id, err := c.api.fetchBotOpenID(ctx); err != nil {
			c.log.Warn("could not read the bot's open_id; in groups any mention will count as one of the bot (set bot_open_id)", "err", err)
		} else {
			c.in.setBotOpenID(id)
		}
	}
	if c.cfg.Mode == ModeWebhook {
		c.log.Info("feishu channel ready (webhook mode)")
		return nil
	}

	// The SDK hands events to sdkDispatcher with a context derived from
	// runCtx: it names this channel.
	runCtx, cancel := context.WithCancel(withIntake(context.WithoutCancel(ctx), c.in))
	ready := make(chan struct{})
	var once sync.Once
	firstErr := make(chan error, 1)
	c.mu.Lock()
	c.cancel = cancel
	c.super = make(chan struct{})
	super := c.super
	c.mu.Unlock()
	go c.conn.supervise(runCtx, super, func() { once.Do(func() { close(ready) }) }, firstErr)

	timer := time.NewTimer(c.cfg.StartTimeout)
	defer timer.Stop()
	select {
	case <-ready:
		c.log.Info("feishu long connection ready")
		return nil
	case err := <-firstErr:
		cancel()
		<-super
		return fmt.Errorf("feishu: long connection: %w", err)
	case <-timer.C:
		cancel()
		<-super
		return fmt.Errorf("feishu: long connection not connected after %v: %s", c.cfg.StartTimeout, c.conn.lastError())
	case <-ctx.Done():
		cancel()
		<-super
		return ctx.Err()
	}
}

// supervise runs long-connection clients until ctx ends: the SDK
// reconnects by itself; when a client stops for good (its retries ran out,
// or a terminal error after it had connected) a new one replaces it, after
// a growing pause. A terminal error before the first connect is reported
// on firstErr and ends the supervisor.
func (lc *longConn) supervise(ctx context.Context, done chan struct{}, ready func(), firstErr chan<- error) {
	defer close(done)
	backoff := time.Second
	for {
		cli := lc.newWSClient(ready)
		err := cli.Start(ctx)
		lc.connected.Store(false)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("stopped")
		}
		lc.setLastError(err)
		if lc.connects.Load() == 0 {
			var ce *larkws.ClientError
			if errors.As(err, &ce) {
				firstErr <- err
				return
			}
		}
		lc.log.Warn("feishu long connection stopped; starting a new one", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Minute)
	}
}

func (lc *longConn) newWSClient(ready func()) *larkws.Client {
	up := func(what string) func() {
		return func() {
			lc.connected.Store(true)
			lc.connects.Add(1)
			lc.log.Info("feishu long connection " + what)
			ready()
		}
	}
	return larkws.NewClient(lc.cfg.AppID, lc.cfg.AppSecret,
		larkws.WithEventHandler(sdkDispatcher),
		larkws.WithDomain(lc.cfg.BaseURL),
		larkws.WithHttpClient(lc.http),
		larkws.WithLogger(sdkLogger{lc.log}),
		larkws.WithLogLevel(larkcore.LogLevelInfo),
		larkws.WithOnReady(up("connected")),
		larkws.WithOnReconnected(up("reconnected")),
		larkws.WithOnDisconnected(func() {
			lc.connected.Store(false)
			lc.log.Warn("feishu long connection lost")
		}),
		larkws.WithOnReconnecting(func() { lc.log.Info("feishu long connection reconnecting") }),
		larkws.WithOnError(func(err error) {
			lc.setLastError(err)
			lc.log.Warn("feishu long connection error", "err", err)
		}),
	)
}

func (lc *longConn) setLastError(err error) {
	s := err.Error()
	lc.lastErr.Store(&s)
}

func (lc *longConn) lastError() string {
	if p := lc.lastErr.Load(); p != nil {
		return *p
	}
	return "no error reported"
}

// Close stops the long connection and waits, bounded by ctx, for the
// messages handed to the router and the card updates in flight.
func (c *Channel) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	c.in.slot.Close()
	c.bg.Close()
	cancel, super := c.cancel, c.super
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	if super != nil {
		select {
		case <-super:
		case <-ctx.Done():
			return fmt.Errorf("feishu: close: %w", ctx.Err())
		}
	}
	if err := c.bg.Wait(ctx); err != nil {
		return fmt.Errorf("feishu: close: %w", err)
	}
	return nil
}

// Ready reports whether the channel can receive: in webhook mode once
// started; over the long connection while it is connected.
func (c *Channel) Ready() error {
	c.mu.Lock()
	started, closed := c.started, c.closed
	c.mu.Unlock()
	switch {
	case closed:
		return errors.New("closed")
	case !started:
		return errors.New("not started")
	case c.cfg.Mode == ModeWebhook:
		return nil
	case !c.conn.connected.Load():
		return fmt.Errorf("long connection not connected (last error: %s)", c.conn.lastError())
	}
	return nil
}

// botOpenID is the bot's open_id (a mention of it addresses the bot).
func (c *intake) botOpenID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.botID
}

func (c *intake) setBotOpenID(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.botID = id
}

// fetchBotOpenID reads GET /open-apis/bot/v3/info.
func (o *openAPI) fetchBotOpenID(ctx context.Context) (string, error) {
	var out struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
		Bot  struct {
			OpenID string `json:"open_id"`
		} `json:"bot"`
	}
	err := o.do(ctx, "bot info", func(ctx context.Context, opts ...larkcore.RequestOptionFunc) (*larkcore.ApiResp, int, string, error) {
		resp, err := o.client.Get(ctx, "/open-apis/bot/v3/info", opts...)
		if err != nil {
			return nil, 0, "", err
		}
		if err := json.Unmarshal(resp.RawBody, &out); err != nil {
			return resp, 0, "", fmt.Errorf("decode: %w", err)
		}
		return resp, out.Code, out.Msg, nil
	})
	if err != nil {
		return "", err
	}
	if out.Bot.OpenID == "" {
		return "", errors.New("bot info has no open_id")
	}
	return out.Bot.OpenID, nil
}

// sdkLogger sends the SDK's logs (API client, long connection, event
// dispatcher) to slog, at the same level: JSON lines like every other.
// Without a logger it uses slog.Default() at the time of the call.
type sdkLogger struct{ l *slog.Logger }

func (s sdkLogger) log(ctx context.Context, level slog.Level, args []interface{}) {
	l := s.l
	if l == nil {
		l = slog.Default()
	}
	if !l.Enabled(ctx, level) {
		return
	}
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = fmt.Sprint(a)
	}
	l.Log(ctx, level, "lark sdk: "+strings.Join(parts, " "))
}

func (s sdkLogger) Debug(ctx context.Context, args ...interface{}) { s.log(ctx, slog.LevelDebug, args) }
func (s sdkLogger) Info(ctx context.Context, args ...interface{})  { s.log(ctx, slog.LevelInfo, args) }
func (s sdkLogger) Warn(ctx context.Context, args ...interface{})  { s.log(ctx, slog.LevelWarn, args) }
func (s sdkLogger) Error(ctx context.Context, args ...interface{}) { s.log(ctx, slog.LevelError, args) }

var _ channels.Channel = (*Channel)(nil)
