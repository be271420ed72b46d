package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	lark "github.com/larksuite/oapi-sdk-go/v3"
	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	larkevent "github.com/larksuite/oapi-sdk-go/v3/event"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"

	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/internal/background"
)

// Name is the channel's name in config, logs, session keys and card refs.
const Name = "feishu"

// Channel is the Feishu adapter (channels.Channel).
type Channel struct {
	cfg    Config
	log    *slog.Logger
	client *lark.Client
	http   *http.Client
	disp   *dispatcher.EventDispatcher

	mu      sync.Mutex
	h       channels.Handler
	botID   string
	started bool
	closed  bool
	cancel  context.CancelFunc
	super   chan struct{} // closed when the long connection's supervisor ends
	cards   map[string]*shownCard
	// token is a tenant token fetched after Feishu refused the SDK's
	// cached one; used until tokenUntil.
	token      string
	tokenUntil time.Time

	connected atomic.Bool
	lastErr   atomic.Pointer[string]
	connects  atomic.Int64 // successful connects (first one and reconnects)

	bg background.Group // messages handed to the router, delayed re-patches; closed with the channel

	chatLimit keyLimiter // messages sent per chat
	msgLimit  keyLimiter // patches per message
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
	c := &Channel{
		cfg:   cfg,
		log:   logger,
		http:  hc,
		botID: cfg.BotOpenID,
		cards: map[string]*shownCard{},
	}
	c.client = lark.NewClient(cfg.AppID, cfg.AppSecret,
		lark.WithOpenBaseUrl(cfg.BaseURL),
		lark.WithHttpClient(hc),
		lark.WithLogger(sdkLogger{logger}),
		lark.WithLogLevel(larkcore.LogLevelInfo))
	token, key := "", ""
	if cfg.Mode == ModeWebhook {
		token, key = cfg.VerificationToken, cfg.EncryptKey
	}
	c.disp = dispatcher.NewEventDispatcher(token, key).
		OnP2MessageReceiveV1(c.onMessage).
		OnP2CardActionTrigger(c.onCardAction).
		// Events a console often subscribes along: acked and ignored, so
		// the long connection does not answer 500 and make Feishu retry.
		OnP2MessageReadV1(func(context.Context, *larkim.P2MessageReadV1) error { return nil }).
		OnP2ChatMemberBotAddedV1(func(context.Context, *larkim.P2ChatMemberBotAddedV1) error { return nil }).
		OnP2ChatMemberBotDeletedV1(func(context.Context, *larkim.P2ChatMemberBotDeletedV1) error { return nil }).
		OnP2ChatAccessEventBotP2pChatEnteredV1(func(context.Context, *larkim.P2ChatAccessEventBotP2pChatEnteredV1) error { return nil }).
		OnP2MessageReactionCreatedV1(func(context.Context, *larkim.P2MessageReactionCreatedV1) error { return nil }).
		OnP2MessageReactionDeletedV1(func(context.Context, *larkim.P2MessageReactionDeletedV1) error { return nil })
	c.disp.InitConfig(larkevent.WithLogger(sdkLogger{logger}), larkevent.WithLogLevel(larkcore.LogLevelInfo))
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
	c.h = h
	c.mu.Unlock()

	if c.botOpenID() == "" {
		if id, err := c.fetchBotOpenID(ctx); err != nil {
			c.log.Warn("could not read the bot's open_id; in groups any mention will count as one of the bot (set bot_open_id)", "err", err)
		} else {
			c.mu.Lock()
			c.botID = id
			c.mu.Unlock()
		}
	}
	if c.cfg.Mode == ModeWebhook {
		c.log.Info("feishu channel ready (webhook mode)")
		return nil
	}

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ready := make(chan struct{})
	var once sync.Once
	firstErr := make(chan error, 1)
	c.mu.Lock()
	c.cancel = cancel
	c.super = make(chan struct{})
	super := c.super
	c.mu.Unlock()
	go c.supervise(runCtx, super, func() { once.Do(func() { close(ready) }) }, firstErr)

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
		return fmt.Errorf("feishu: long connection not connected after %v: %s", c.cfg.StartTimeout, c.lastError())
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
func (c *Channel) supervise(ctx context.Context, done chan struct{}, ready func(), firstErr chan<- error) {
	defer close(done)
	backoff := time.Second
	for {
		cli := c.newWSClient(ready)
		err := cli.Start(ctx)
		c.connected.Store(false)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("stopped")
		}
		c.setLastError(err)
		if c.connects.Load() == 0 {
			var ce *larkws.ClientError
			if errors.As(err, &ce) {
				firstErr <- err
				return
			}
		}
		c.log.Warn("feishu long connection stopped; starting a new one", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Minute)
	}
}

func (c *Channel) newWSClient(ready func()) *larkws.Client {
	up := func(what string) func() {
		return func() {
			c.connected.Store(true)
			c.connects.Add(1)
			c.log.Info("feishu long connection " + what)
			ready()
		}
	}
	return larkws.NewClient(c.cfg.AppID, c.cfg.AppSecret,
		larkws.WithEventHandler(c.disp),
		larkws.WithDomain(c.cfg.BaseURL),
		larkws.WithHttpClient(c.http),
		larkws.WithLogger(sdkLogger{c.log}),
		larkws.WithLogLevel(larkcore.LogLevelInfo),
		larkws.WithOnReady(up("connected")),
		larkws.WithOnReconnected(up("reconnected")),
		larkws.WithOnDisconnected(func() {
			c.connected.Store(false)
			c.log.Warn("feishu long connection lost")
		}),
		larkws.WithOnReconnecting(func() { c.log.Info("feishu long connection reconnecting") }),
		larkws.WithOnError(func(err error) {
			c.setLastError(err)
			c.log.Warn("feishu long connection error", "err", err)
		}),
	)
}

func (c *Channel) setLastError(err error) {
	s := err.Error()
	c.lastErr.Store(&s)
}

func (c *Channel) lastError() string {
	if p := c.lastErr.Load(); p != nil {
		return *p
	}
	return "no error reported"
}

// Close stops the long connection and waits, bounded by ctx, for the
// messages handed to the router and the card updates in flight.
func (c *Channel) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
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
	case !c.connected.Load():
		return fmt.Errorf("long connection not connected (last error: %s)", c.lastError())
	}
	return nil
}

// maxWebhookBody bounds a webhook request body.
const maxWebhookBody = 1 << 20

// WebhookHandler serves Feishu's events and card callbacks in webhook mode
// (mount it at /webhook/feishu, and give that URL both as the event
// request URL and as the callback request URL). Every request is decrypted
// and its signature checked with the EncryptKey; a bad signature or an
// unencrypted body is refused (HTTP 500, as the SDK answers). In long
// connection mode, or before Start, it answers 503.
func (c *Channel) WebhookHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.cfg.Mode != ModeWebhook || c.handler() == nil {
			http.Error(w, "feishu webhook not enabled", http.StatusServiceUnavailable)
			return
		}
		if r.Method != http.MethodPost {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
		if err != nil {
			http.Error(w, "body too large or unreadable", http.StatusBadRequest)
			return
		}
		resp := c.disp.Handle(r.Context(), &larkevent.EventReq{Header: r.Header, Body: body, RequestURI: r.RequestURI})
		if resp == nil {
			http.Error(w, "no response", http.StatusInternalServerError)
			return
		}
		if resp.StatusCode != http.StatusOK {
			c.log.Warn("feishu webhook request refused", "status", resp.StatusCode, "body", truncate(string(resp.Body), 200))
		}
		for k, vs := range resp.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(resp.Body)
	})
}

func (c *Channel) handler() channels.Handler {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	return c.h
}

func (c *Channel) botOpenID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.botID
}

// fetchBotOpenID reads GET /open-apis/bot/v3/info.
func (c *Channel) fetchBotOpenID(ctx context.Context) (string, error) {
	var out struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
		Bot  struct {
			OpenID string `json:"open_id"`
		} `json:"bot"`
	}
	err := c.do(ctx, "bot info", func(ctx context.Context, opts ...larkcore.RequestOptionFunc) (*larkcore.ApiResp, int, string, error) {
		resp, err := c.client.Get(ctx, "/open-apis/bot/v3/info", nil, larkcore.AccessTokenTypeTenant, opts...)
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

// sdkLogger sends the SDK's logs to slog.
type sdkLogger struct{ l *slog.Logger }

func (s sdkLogger) Debug(ctx context.Context, args ...interface{}) {
	s.l.DebugContext(ctx, "lark sdk: "+fmt.Sprint(args...))
}
func (s sdkLogger) Info(ctx context.Context, args ...interface{}) {
	s.l.InfoContext(ctx, "lark sdk: "+fmt.Sprint(args...))
}
func (s sdkLogger) Warn(ctx context.Context, args ...interface{}) {
	s.l.WarnContext(ctx, "lark sdk: "+fmt.Sprint(args...))
}
func (s sdkLogger) Error(ctx context.Context, args ...interface{}) {
	s.l.ErrorContext(ctx, "lark sdk: "+fmt.Sprint(args...))
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

var _ channels.Channel = (*Channel)(nil)
