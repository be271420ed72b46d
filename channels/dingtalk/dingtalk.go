package dingtalk

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/open-dingtalk/dingtalk-stream-sdk-go/card"
	"github.com/open-dingtalk/dingtalk-stream-sdk-go/chatbot"
	"github.com/open-dingtalk/dingtalk-stream-sdk-go/client"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/internal/marks"
	"github.com/hitlbot/hitlbot/internal/background"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/words"
)

// Name is the channel's name in config, logs, session keys and card refs.
const Name = "dingtalk"

// Modes of receiving.
const (
	ModeStream = "stream" // a websocket opened by the bot (default)
	ModeHTTP   = "http"   // DingTalk POSTs to HTTPHandler (outgoing robot)
)

// Config configures the DingTalk channel.
type Config struct {
	// ClientID is the app's AppKey (Client ID) from the developer console.
	ClientID string `mapstructure:"client_id"`
	// ClientSecret is the app's AppSecret (Client Secret). It is a SECRET:
	// it signs HTTP-mode requests and obtains access tokens. Keep it out
	// of config files (use the environment) and out of logs.
	ClientSecret string `mapstructure:"client_secret"`
	// RobotCode is the robot's code for the robot send and card APIs.
	// Default ClientID (true for an internal app's robot).
	RobotCode string `mapstructure:"robot_code"`
	// Mode is "stream" (default) or "http".
	Mode string `mapstructure:"mode"`
	// CardTemplateID is the id ("xxxx.schema") of the interactive card
	// template (see the package documentation). Empty, or in HTTP mode
	// (card clicks arrive only over a stream): approvals are markdown
	// messages answered by typing 确认 / 取消.
	CardTemplateID string `mapstructure:"card_template_id"`
	// AICardTemplateID is the id ("xxxx.schema") of an AI card template
	// whose variable "content" (markdown) shows a streamed answer and
	// "flowStatus" its state (1 processing, 3 finished, 5 failed); the app
	// needs Card.Streaming.Write and Card.Instance.Write. Empty (default):
	// answers come whole, as text.
	AICardTemplateID string `mapstructure:"ai_card_template_id"`
	// StreamInterval is the least time between two updates of a streamed
	// answer's AI card; pieces of text that come between two updates are
	// sent together. Default 500ms, at least 200ms.
	StreamInterval time.Duration `mapstructure:"stream_interval"`
	// APIBaseURL is the OpenAPI base (token, cards, robot send) and the
	// Stream gateway host. Default https://api.dingtalk.com.
	APIBaseURL string `mapstructure:"api_base_url"`
	// WebhookBaseURL is the only scheme and host a sessionWebhook may have
	// before anything is posted to it (SSRF guard). Default
	// https://oapi.dingtalk.com.
	WebhookBaseURL string `mapstructure:"webhook_base_url"`
	// Lang is the language of the channel's own words on cards: "zh" or
	// "en" (default "zh"); keep it the router's.
	Lang string `mapstructure:"lang"`
	// Text overrides the words of each outcome status on the card data a
	// click is answered with. Not a YAML key of its own: the server sets
	// it from approval.outcome_text, so it equals the router's (missing
	// statuses take the defaults of Lang).
	Text approval.OutcomeText `mapstructure:"-"`
	// HTTPTimeout bounds each OpenAPI or webhook call. Default 10s.
	HTTPTimeout time.Duration `mapstructure:"http_timeout"`
	// MaxRetries bounds the new tries of an OpenAPI call DingTalk refused
	// for a rate limit that passes within seconds (HTTP 429, 90018 /
	// QpsLimitForAppkeyAndApi, 90002 / QpsLimitForApi, 90019; see
	// throttle.go): such a call was not carried out, so trying it again
	// never sends a message twice. Nothing else is tried again (a 5xx or
	// a lost answer may have been carried out: the robot send APIs take
	// no idempotency key). Default 4; negative: none.
	MaxRetries int `mapstructure:"max_retries"`
	// MaxRetryWait bounds one wait between those tries: Retry-After when
	// DingTalk sends it, else 1 s doubling (the doc: the QPS limit holds
	// for one second). Default 10s.
	MaxRetryWait time.Duration `mapstructure:"max_retry_wait"`
	// ClickWait is how long a card click waits for its outcome before the
	// card is answered "processing" (the later update shows the outcome).
	// DingTalk shows a spinner meanwhile and drops an answer that comes
	// after 2 s (doc event-callback-card), so it is at most MaxClickWait (1.5s).
	// Default 1s.
	ClickWait time.Duration `mapstructure:"click_wait"`
	// Clock times the click wait (ClickWait): a test gives the channel
	// and the fake DingTalk one clock (dingtalktest SetCallbackClock), so
	// the fake's 2 s callback deadline is measured on the time the
	// channel waits, not on how loaded the machine is. Not a YAML key.
	// Default the wall clock.
	Clock clock.Clock `mapstructure:"-"`
	// MaxSignAge refuses HTTP-mode requests whose timestamp is further from
	// now. Default 1h (DingTalk's rule). Each (timestamp, sign) pair is
	// accepted once: it is remembered until it could no longer verify.
	MaxSignAge time.Duration `mapstructure:"max_sign_age"`
	// LeaseKey is the Redis key of the stream-ownership lease when a lease
	// is given (Lease). Default "hitlbot:dingtalk:stream:<client_id>".
	LeaseKey string `mapstructure:"lease_key"`
	// LeaseTTL is how long a dead owner keeps the stream before another
	// replica takes it; the owner also checks its stream connection every
	// third of it. Default 15s; negative is refused.
	LeaseTTL time.Duration `mapstructure:"lease_ttl"`
	// Lease, when set, makes the stream connection depend on holding it
	// (see NewRedisLease on LeaseKey and LeaseTTL): only the replica that
	// holds it connects. Not a YAML key: the server sets a Redis lease
	// when the store is Redis. Default LocalLease{}: a lone replica.
	Lease Lease `mapstructure:"-"`
	// Marks, when set, is where HTTP mode remembers the (timestamp, sign)
	// pair of every request it accepted: the store the replicas share
	// (approval.Store), so a captured pair is refused by every replica,
	// not only by the one that saw it first. Not a YAML key: the server
	// sets its approval store. Default: this process only.
	Marks Marks `mapstructure:"-"`
	// Metrics counts the OpenAPI's answers (with DingTalk's code),
	// throttles (HTTP 429, DingTalk's throttle codes, batchSend's
	// flowControlledStaffIdList),
	// retries and what was not delivered (deliverResults success:false,
	// invalidStaffIdList, a refused send or card call); none counts
	// nothing. cmd/bot passes its metrics (hitlbot_platform_*).
	Metrics channels.PlatformMetrics `mapstructure:"-"`
}

// DefaultClickWait and MaxClickWait are Config.ClickWait's default and
// most. A card callback must be answered within 2 s ("请在 2 秒内完成业务
// 处理并响应", doc event-callback-card): MaxClickWait leaves half a second
// for the answer's way back.
const (
	DefaultClickWait = time.Second
	MaxClickWait     = 1500 * time.Millisecond
)

// afterAnswer is how long a card update waits after the card's callback
// was answered: DingTalk applies the answer to the card when it gets it,
// and an update sent right behind it could overtake it ("请勿在回调过程
// 中，调用更新接口", doc event-callback-card).
const afterAnswer = 250 * time.Millisecond

// Channel is the DingTalk channel (channels.Channel). In and out are
// separate parts, each owning its state:
//
//   - intake: what DingTalk sends, bot messages (over the stream, or POSTed
//     in HTTP mode) handed to the router, and card clicks answered;
//   - streamConn: stream mode's lease and the connection it allows;
//   - apiClient (openapi.go): the Open API calls, retried and counted;
//   - cardPutter: card updates, held while a click on their card is answered;
//   - chatBook: what replying in each conversation needs, written by the
//     messages that come in and read by what is sent.
//
// Channel itself is the outbound surface the router calls (Send,
// ShowApproval, SettleApproval, ShowProgress, OpenStream, the private
// sends; openapi.go, private.go, aicard.go) and the lifecycle.
type Channel struct {
	cfg   Config
	log   *slog.Logger
	api   *apiClient
	now   func() time.Time
	in    *intake     // bot messages and card clicks, over the stream or HTTP
	conn  *streamConn // stream mode: the lease and the connection it allows
	cards *cardPutter // card updates, held while a click on their card is answered
	chats *chatBook   // what replying in each conversation needs

	mu      sync.Mutex
	started bool
	closed  bool
	bg      background.Group // messages handed to the router, clicks, stream checks; closed with the channel
}

// intake takes what DingTalk sends: bot messages (over the stream, or
// POSTed in HTTP mode, each (timestamp, sign) pair accepted once) handed to
// the router, and card clicks decided and answered within ClickWait.
type intake struct {
	cfg   Config
	log   *slog.Logger
	now   func() time.Time
	clock clock.Clock // Config.Clock, or the wall clock: the click wait
	marks Marks       // HTTP mode: (timestamp, sign) pairs used (Config.Marks, or this process's)
	bg    *background.Group
	cards *cardPutter
	chats *chatBook

	// slot is the router from Start, none once closed.
	slot channels.HandlerSlot
}

// streamConn is stream mode's connection: it is opened by the replica that
// holds the lease, checked and renewed every third of the lease's TTL
// (leaseLoop), and closed when the lease is lost.
type streamConn struct {
	cfg   Config
	log   *slog.Logger
	now   func() time.Time
	lease Lease // Config.Lease, or LocalLease
	in    *intake
	bg    *background.Group

	mu      sync.Mutex
	stream  *stream
	owner   bool
	lastErr error
	stop    context.CancelFunc
	done    chan struct{}
}

// cardPutter updates cards (PUT /v1.0/card/instances), holding an update
// of a card while a click on it is being answered.
type cardPutter struct {
	cfg  Config
	log  *slog.Logger
	api  *apiClient
	bg   *background.Group
	gate clickGate
}

// chatBook remembers, per conversation, what replying in it needs (its
// kind, its sessionWebhook while valid, its robot): written by the bot
// messages that come in, read by what is sent.
type chatBook struct {
	cfg   Config
	hook  *url.URL // the configured sessionWebhook scheme and host
	now   func() time.Time
	mu    sync.Mutex
	chats map[string]chatInfo // conversationId → what replies need
}

// clickGate holds the card updates of a card whose callback is being
// answered until afterAnswer after its answer: DingTalk forbids updating
// a card from inside its callback (doc event-callback-card). It knows
// the callbacks of this replica only.
type clickGate struct {
	mu       sync.Mutex
	inflight map[string]int      // outTrackId → callbacks being answered
	held     map[string][]func() // outTrackId → updates, in order
}

// begin marks a callback of track being answered.
func (g *clickGate) begin(track string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inflight == nil {
		g.inflight, g.held = map[string]int{}, map[string][]func(){}
	}
	g.inflight[track]++
}

// hold keeps update for later and reports true when a callback of track
// is being answered; false: the caller updates now.
func (g *clickGate) hold(track string, update func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inflight[track] == 0 {
		return false
	}
	g.held[track] = append(g.held[track], update)
	return true
}

// end marks a callback of track answered and returns the updates to run
// now (none while another callback of track is being answered).
func (g *clickGate) end(track string) []func() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inflight[track]--; g.inflight[track] > 0 {
		return nil
	}
	delete(g.inflight, track)
	run := g.held[track]
	delete(g.held, track)
	return run
}

// answering holds the updates of track's card from now until answered:
// a callback of the card is being answered.
func (p *cardPutter) answering(track string) { p.gate.begin(track) }

// answered ends a callback of track: afterAnswer later (the SDK writes the
// answer when the handler returns), the updates held meanwhile run, in
// order.
func (p *cardPutter) answered(track string) {
	flush := func() {
		t := time.NewTimer(afterAnswer)
		<-t.C
		for _, u := range p.gate.end(track) {
			u()
		}
	}
	if !p.bg.Go(flush) {
		go flush() // closing: the held updates are still due
	}
}

// putCard sends the card update body of track (PUT /v1.0/card/instances)
// now, or, while a callback of the card is being answered, after its
// answer: then it returns nil at once and a failure is logged.
func (p *cardPutter) putCard(ctx context.Context, track string, body map[string]any) error {
	put := func(ctx context.Context) error {
		var out cardAnswer
		if err := p.api.do(ctx, http.MethodPut, "/v1.0/card/instances", body, &out); err != nil {
			return fmt.Errorf("dingtalk: update card: %w", err)
		}
		return out.err("update card")
	}
	held := p.gate.hold(track, func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.HTTPTimeout)
		defer cancel()
		if err := put(ctx); err != nil {
			p.log.Error("a card update held until its click was answered failed", "msg_id", track, "err", err)
		}
	})
	if held {
		return nil
	}
	return put(ctx)
}

// chatInfo is what the channel remembers of a conversation to reply in it.
type chatInfo struct {
	group     bool
	webhook   string
	webhookTo time.Time
	robotCode string
}

var _ channels.Channel = (*Channel)(nil)

// New checks cfg and returns the channel. It does no I/O.
func New(cfg Config, logger *slog.Logger) (*Channel, error) {
	if cfg.ClientID == "" || cfg.ClientSecret == "" {
		return nil, errors.New("dingtalk: client_id and client_secret are required")
	}
	switch cfg.Mode {
	case "":
		cfg.Mode = ModeStream
	case ModeStream, ModeHTTP:
	default:
		return nil, fmt.Errorf("dingtalk: unknown mode %q (want stream or http)", cfg.Mode)
	}
	if cfg.Lang == "" {
		cfg.Lang = string(words.ZH)
	}
	lang, err := words.Parse(cfg.Lang)
	if err != nil {
		return nil, fmt.Errorf("dingtalk: %w", err)
	}
	cfg.Lang = string(lang)
	if err := cfg.Text.Validate(); err != nil {
		return nil, fmt.Errorf("dingtalk: %w", err)
	}
	if cfg.RobotCode == "" {
		cfg.RobotCode = cfg.ClientID
	}
	if cfg.APIBaseURL == "" {
		cfg.APIBaseURL = "https://api.dingtalk.com"
	}
	cfg.APIBaseURL = strings.TrimRight(cfg.APIBaseURL, "/")
	if u, err := url.Parse(cfg.APIBaseURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("dingtalk: bad api_base_url %q", cfg.APIBaseURL)
	}
	if cfg.WebhookBaseURL == "" {
		cfg.WebhookBaseURL = "https://oapi.dingtalk.com"
	}
	hook, err := url.Parse(cfg.WebhookBaseURL)
	if err != nil || (hook.Scheme != "https" && hook.Scheme != "http") || hook.Host == "" {
		return nil, fmt.Errorf("dingtalk: bad webhook_base_url %q", cfg.WebhookBaseURL)
	}
	if cfg.HTTPTimeout <= 0 {
		cfg.HTTPTimeout = 10 * time.Second
	}
	switch {
	case cfg.ClickWait <= 0:
		cfg.ClickWait = DefaultClickWait
	case cfg.ClickWait > MaxClickWait:
		return nil, fmt.Errorf("dingtalk: click_wait %s: at most %s (DingTalk drops a card callback answered after 2 s)", cfg.ClickWait, MaxClickWait)
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = 4
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	}
	if cfg.MaxRetryWait <= 0 {
		cfg.MaxRetryWait = 10 * time.Second
	}
	if cfg.MaxSignAge <= 0 {
		cfg.MaxSignAge = time.Hour
	}
	switch {
	case cfg.StreamInterval == 0:
		cfg.StreamInterval = DefaultStreamInterval
	case cfg.StreamInterval < minStreamInterval:
		return nil, fmt.Errorf("dingtalk: stream_interval %s: at least %s", cfg.StreamInterval, minStreamInterval)
	}
	if cfg.LeaseKey == "" {
		cfg.LeaseKey = "hitlbot:dingtalk:stream:" + cfg.ClientID
	}
	switch {
	case cfg.LeaseTTL < 0:
		return nil, fmt.Errorf("dingtalk: lease_ttl %s is negative", cfg.LeaseTTL)
	case cfg.LeaseTTL == 0:
		cfg.LeaseTTL = 15 * time.Second
	}
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("channel", Name)
	c := &Channel{cfg: cfg, log: logger, now: time.Now}
	now := func() time.Time { return c.now() }
	lease := cfg.Lease
	if lease == nil {
		lease = LocalLease{}
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	mk := cfg.Marks
	if mk == nil {
		mk = marks.NewLocal(now)
	}
	c.api = &apiClient{base: cfg.APIBaseURL, key: cfg.ClientID, secret: cfg.ClientSecret,
		http: &http.Client{Timeout: cfg.HTTPTimeout}, now: c.now, metrics: cfg.Metrics, log: logger,
		retries: cfg.MaxRetries, maxWait: cfg.MaxRetryWait, sleep: sleepCtx}
	if c.api.metrics == nil {
		c.api.metrics = channels.NoPlatformMetrics{}
	}
	c.chats = &chatBook{cfg: cfg, hook: hook, now: now, chats: map[string]chatInfo{}}
	c.cards = &cardPutter{cfg: cfg, log: logger, api: c.api, bg: &c.bg}
	c.in = &intake{cfg: cfg, log: logger, now: now, clock: clk, marks: mk, bg: &c.bg, cards: c.cards, chats: c.chats}
	c.conn = &streamConn{cfg: cfg, log: logger, now: now, lease: lease, in: c.in, bg: &c.bg}
	return c, nil
}

// Marks is where HTTP mode remembers the (timestamp, sign) pairs it
// accepted (Config.Marks). approval.Store implements it.
type Marks = marks.Store

// Name is "dingtalk".
func (c *Channel) Name() string { return Name }

// Start begins delivering to h. In stream mode it connects at once when it
// holds the lease (an error then is returned) and otherwise waits for the
// lease in the background; in HTTP mode it only arms HTTPHandler.
func (c *Channel) Start(ctx context.Context, h channels.Handler) error {
	if h == nil {
		return errors.New("dingtalk: Start needs a handler")
	}
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return errors.New("dingtalk: started twice")
	}
	c.started = true
	c.mu.Unlock()
	c.in.slot.Set(h)
	if c.cfg.Mode == ModeHTTP {
		return nil
	}
	return c.conn.start(ctx)
}

// start connects at once when this replica takes the lease (an error then
// is returned), and runs leaseLoop in the background either way.
func (sc *streamConn) start(ctx context.Context) error {
	got, err := sc.lease.Acquire(ctx)
	if errors.Is(err, ErrLeaseTTL) {
		return err // a configuration error: retrying cannot help
	}
	if err != nil {
		sc.log.Warn("stream lease unavailable; will retry", "err", err)
	}
	if got {
		if err := sc.connect(ctx); err != nil {
			_ = sc.lease.Release(context.WithoutCancel(ctx))
			return err
		}
	}
	lctx, cancel := context.WithCancel(context.Background())
	sc.mu.Lock()
	sc.stop, sc.done = cancel, make(chan struct{})
	sc.mu.Unlock()
	go sc.leaseLoop(lctx)
	return nil
}

// connect opens a new stream connection (the SDK reconnects it by itself
// once it has existed).
func (sc *streamConn) connect(ctx context.Context) error {
	cli := client.NewStreamClient(
		client.WithAppCredential(client.NewAppCredentialConfig(sc.cfg.ClientID, sc.cfg.ClientSecret)),
		client.WithOpenApiHost(sc.cfg.APIBaseURL),
	)
	cli.RegisterChatBotCallbackRouter(sc.in.onBotMessage)
	cli.RegisterCardCallbackRouter(sc.in.onCardCallback)
	if err := cli.Start(ctx); err != nil {
		cli.Close()
		sc.setErr(err)
		return fmt.Errorf("dingtalk: stream connect: %w", err)
	}
	sc.mu.Lock()
	sc.stream, sc.owner, sc.lastErr = &stream{cli: cli, delay: sc.checkEvery()}, true, nil
	sc.mu.Unlock()
	sc.log.Info("stream connected")
	return nil
}

func (sc *streamConn) disconnect() {
	sc.mu.Lock()
	s := sc.stream
	sc.stream, sc.owner = nil, false
	sc.mu.Unlock()
	if s != nil {
		s.close()
	}
}

// checkEvery is how often the lease loop runs (and so checks the stream).
func (sc *streamConn) checkEvery() time.Duration { return sc.cfg.LeaseTTL / 3 }

// maxCheckDelay bounds the back-off between reconnect attempts of checks.
const maxCheckDelay = time.Minute

// stream is the SDK client of a connection this replica owns, and what
// the last check learnt of it.
//
// The SDK does not tell whether its connection is up, and it reconnects by
// itself with a back-off of up to a minute. But its Start does no I/O and
// returns nil while it has a connection, and otherwise makes one
// connection attempt at once (v0.9.2-beta.1, pinned). So a check is a
// Start: nil means connected (perhaps just now), an error means the
// stream is down (the SDK and later checks keep trying).
type stream struct {
	cli *client.StreamClient

	mu       sync.Mutex
	closed   bool
	checking bool
	err      error         // the last check's failure; nil when up
	next     time.Time     // no reconnecting check before (back-off)
	delay    time.Duration // the back-off after the next failure
}

// close ends the client. A check running then cannot revive it for
// long: it closes the client again when its Start returns.
func (s *stream) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cli.Close()
}

// down is the last check's failure, nil when the stream is up.
func (s *stream) down() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// check runs one check (see stream) unless one is running, the stream is
// closed, or a failed check's back-off has not passed; every is the
// shortest delay between reconnect attempts.
func (s *stream) check(ctx context.Context, now time.Time, every time.Duration, log *slog.Logger) {
	s.mu.Lock()
	if s.closed || s.checking || (s.err != nil && now.Before(s.next)) {
		s.mu.Unlock()
		return
	}
	s.checking = true
	s.mu.Unlock()
	err := s.cli.Start(ctx)
	s.mu.Lock()
	was, closed := s.err, s.closed
	s.checking, s.err = false, err
	switch {
	case err == nil:
		s.delay = every
	default:
		s.next = now.Add(s.delay)
		s.delay = min(2*s.delay, maxCheckDelay)
	}
	s.mu.Unlock()
	if closed {
		// A Start that began after close would have opened a new
		// connection: end it.
		s.cli.Close()
		return
	}
	switch {
	case err != nil && was == nil:
		log.Warn("stream connection down; reconnecting", "err", err)
	case err == nil && was != nil:
		log.Info("stream connection back")
	}
}

// checkStream checks the owned stream in the background (a reconnect
// attempt may take seconds; the lease loop must not wait for it).
func (sc *streamConn) checkStream() {
	sc.mu.Lock()
	s := sc.stream
	sc.mu.Unlock()
	if s == nil {
		return
	}
	sc.bg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), sc.cfg.HTTPTimeout)
		defer cancel()
		s.check(ctx, sc.now(), sc.checkEvery(), sc.log)
	})
}

func (sc *streamConn) setErr(err error) {
	sc.mu.Lock()
	sc.lastErr = err
	sc.mu.Unlock()
}

// leaseLoop renews the lease while connected and tries to take it while
// standing by, every third of its TTL.
func (sc *streamConn) leaseLoop(ctx context.Context) {
	defer close(sc.done)
	every := sc.checkEvery()
	t := time.NewTicker(every)
	defer t.Stop()
	renewed := sc.now() // the last successful acquire or renewal
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sc.mu.Lock()
		owner := sc.owner
		sc.mu.Unlock()
		cctx, cancel := context.WithTimeout(ctx, every)
		if owner {
			ok, err := sc.lease.Renew(cctx)
			switch {
			case err == nil && ok:
				renewed = sc.now()
				sc.checkStream()
			case err == nil:
				sc.log.Warn("stream lease lost to another replica; disconnecting")
				sc.disconnect()
			case sc.now().Sub(renewed) > sc.cfg.LeaseTTL/2:
				// Redis has been unreachable for half a TTL: give the
				// stream up before the lease ends and another replica
				// takes it.
				sc.log.Warn("stream lease not renewed for half its TTL; disconnecting", "err", err)
				sc.setErr(err)
				sc.disconnect()
			default:
				sc.log.Warn("stream lease renewal failed; retrying", "err", err)
			}
		} else {
			ok, err := sc.lease.Acquire(cctx)
			switch {
			case err != nil:
				sc.setErr(err)
			case ok:
				renewed = sc.now()
				if err := sc.connect(cctx); err != nil {
					sc.log.Error("stream connect failed; releasing the lease", "err", err)
					_ = sc.lease.Release(context.WithoutCancel(ctx))
				}
			}
		}
		cancel()
	}
}

// Close stops the stream, releases the lease and waits for clicks being
// decided, bounded by ctx.
func (c *Channel) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.in.slot.Close()
	c.bg.Close()
	c.mu.Unlock()
	if err := c.conn.close(ctx); err != nil {
		return err
	}
	return c.bg.Wait(ctx)
}

// close stops leaseLoop (waiting for it, bounded by ctx), disconnects and
// releases the lease when this replica held it.
func (sc *streamConn) close(ctx context.Context) error {
	sc.mu.Lock()
	stop, done := sc.stop, sc.done
	sc.mu.Unlock()
	if stop != nil {
		stop()
		select { // the loop may be in a connect attempt (bounded by TTL/3)
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	sc.mu.Lock()
	wasOwner := sc.owner
	sc.mu.Unlock()
	sc.disconnect()
	if wasOwner {
		_ = sc.lease.Release(ctx)
	}
	return nil
}

// Ready is nil when the channel can work: HTTP mode once started, stream
// mode when connected (as the lease's owner; the connection is checked
// every LeaseTTL/3) or standing by for the lease.
func (c *Channel) Ready() error {
	c.mu.Lock()
	started, closed := c.started, c.closed
	c.mu.Unlock()
	switch {
	case !started:
		return errors.New("dingtalk: not started")
	case closed:
		return errors.New("dingtalk: closed")
	case c.cfg.Mode == ModeHTTP:
		return nil
	}
	return c.conn.ready()
}

// ready is nil when this replica owns a connection that is up, or stands
// by without a failing lease or connect.
func (sc *streamConn) ready() error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	switch {
	case sc.owner && sc.stream != nil:
		if err := sc.stream.down(); err != nil {
			return fmt.Errorf("dingtalk: stream owner, but the connection is down (reconnecting): %w", err)
		}
		return nil
	case sc.lastErr != nil:
		return fmt.Errorf("dingtalk: standing by, lease or connect failing: %w", sc.lastErr)
	}
	return nil
}

// Owner reports whether this replica holds the stream connection.
func (c *Channel) Owner() bool {
	c.conn.mu.Lock()
	defer c.conn.mu.Unlock()
	return c.conn.owner
}

// onBotMessage is the SDK's bot-message handler: it hands the message to
// the router and returns at once, so the ACK is never late (a late ACK
// makes DingTalk deliver the message again).
func (c *intake) onBotMessage(ctx context.Context, d *chatbot.BotCallbackDataModel) ([]byte, error) {
	if err := c.deliver(ctx, d, ""); err != nil {
		c.log.Error("message not handled", "msg_id", d.MsgId, "err", err)
	}
	return []byte(`{"response":null}`), nil
}

// deliver remembers how to answer the chat and hands the message (with
// eventID, if any) to the router in the background, after the messages of
// the same conversation delivered before it: the router
// de-duplicates and queues, but it may also answer in the chat (a typed
// decision's notice, "an approval is waiting"), which takes up to
// HTTPTimeout. Close waits for it. The error is for a channel not started
// or closed.
func (c *intake) deliver(ctx context.Context, d *chatbot.BotCallbackDataModel, eventID string) error {
	h := c.slot.Handler()
	if h == nil {
		return errors.New("dingtalk: not started or closed")
	}
	m, info, ok := c.message(d)
	if !ok {
		return nil
	}
	m.EventID = eventID
	c.chats.remember(m.ChatID, info)
	ctx = context.WithoutCancel(ctx) // the SDK cancels it with the frame's connection
	// In order within a conversation: the SDK hands frames over from
	// goroutines of its own, but a message acknowledged before another is
	// not overtaken by it here.
	if !c.bg.GoInOrder(m.ChatID, func() {
		ctx, cancel := context.WithTimeout(ctx, c.cfg.HTTPTimeout)
		defer cancel()
		if err := h.HandleMessage(ctx, m); err != nil {
			c.log.Error("message not handled", "chat_id", m.ChatID, "msg_id", m.MessageID, "err", err)
		}
	}) {
		return errors.New("dingtalk: closed")
	}
	return nil
}

// maxChats bounds the conversations remembered; beyond it those whose
// sessionWebhook expired are forgotten (they are taken as groups after).
const maxChats = 10000

// remember keeps what replying in chat id needs (a message without a
// sessionWebhook keeps the one known), forgetting the conversations whose
// sessionWebhook expired once there are more than maxChats.
func (b *chatBook) remember(id string, info chatInfo) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if old, seen := b.chats[id]; seen && info.webhook == "" {
		info.webhook, info.webhookTo = old.webhook, old.webhookTo
	}
	b.chats[id] = info
	if len(b.chats) > maxChats {
		b.pruneLocked()
	}
}

func (b *chatBook) pruneLocked() {
	now := b.now()
	for id, info := range b.chats {
		if now.After(info.webhookTo) {
			delete(b.chats, id)
		}
	}
}

// message converts a bot callback; ok is false for what is not a text
// message addressed to the bot.
func (c *intake) message(d *chatbot.BotCallbackDataModel) (channels.Message, chatInfo, bool) {
	group := d.ConversationType == "2"
	text := strings.TrimSpace(d.Text.Content)
	if d.Msgtype != "" && d.Msgtype != "text" {
		c.log.Debug("non-text message ignored", "msgtype", d.Msgtype, "msg_id", d.MsgId)
		return channels.Message{}, chatInfo{}, false
	}
	if d.ConversationId == "" || text == "" {
		return channels.Message{}, chatInfo{}, false
	}
	user := d.SenderStaffId
	if user == "" {
		user = d.SenderId // external members have no staff id
	}
	m := channels.Message{Channel: Name, ChatID: d.ConversationId, ChatType: "p2p", UserID: approval.UserID(user),
		UserName: d.SenderNick, MessageID: d.MsgId, Text: text}
	if group {
		m.ChatType = "group"
	}
	if d.CreateAt > 0 {
		m.CreatedAt = time.UnixMilli(d.CreateAt)
	}
	info := chatInfo{group: group, robotCode: d.RobotCode}
	if d.SessionWebhook != "" && d.SessionWebhookExpiredTime > 0 {
		if c.chats.webhookAllowed(d.SessionWebhook) {
			info.webhook, info.webhookTo = d.SessionWebhook, time.UnixMilli(d.SessionWebhookExpiredTime)
		} else {
			c.log.Warn("sessionWebhook on a foreign host ignored", "msg_id", d.MsgId)
		}
	}
	return m, info, true
}

// webhookAllowed reports whether u has the configured webhook scheme and
// host.
func (b *chatBook) webhookAllowed(u string) bool {
	p, err := url.Parse(u)
	return err == nil && p.Scheme == b.hook.Scheme && strings.EqualFold(p.Host, b.hook.Host) && p.User == nil
}

// clickParams are the 回传请求 params of a card button.
type clickParams struct {
	action, approvalID, sha string
	// resolution is a frozen card's resolve button's (done, retry,
	// abandon), with action "resolve".
	resolution string
	// grant is the button's grant param (仅本次: once, 本会话允许:
	// session), on a template whose MEDIUM card shows two approve buttons.
	grant approval.GrantChoice
	// answers are the answer button's inputs (action "answer"): question
	// n's text under "answer_<n>", the variable its input is bound to
	// (cards.DingTalkCardData); absent ones are "".
	answers [approval.MaxQuestions]string
}

// answerAction is the action param of a question card's answer button.
const answerAction = "answer"

// parseClick reads a card callback's params; ok is false when a param is
// missing or not a string.
func parseClick(p map[string]any) (clickParams, bool) {
	get := func(k string) string {
		s, _ := p[k].(string)
		return strings.TrimSpace(s)
	}
	cp := clickParams{action: get("action"), approvalID: get("approval_id"), sha: get("payload_sha256"), resolution: get("resolution")}
	g, err := approval.ParseGrantChoice(get("grant"))
	if err != nil {
		return cp, false
	}
	cp.grant = g
	if strings.EqualFold(cp.action, answerAction) {
		// An input's value comes back as a string (every card value is
		// one; cards-forms-privacy-streaming.md B1): anything else is
		// malformed.
		for n := range cp.answers {
			raw, present := p["answer_"+strconv.Itoa(n+1)]
			s, isText := raw.(string)
			if present && !isText {
				return cp, false
			}
			cp.answers[n] = s
		}
	}
	return cp, cp.action != "" && cp.approvalID != ""
}

// answerEdits are the edits of an answer click: the typed text of each
// question answered ({"typed": …}, read by approval.AnswerQuestions as a
// typed answer is); ok is false when no input holds any text.
func answerEdits(p clickParams) (map[string]json.RawMessage, bool) {
	picks := map[string]map[string]string{}
	for n, text := range p.answers {
		if text = strings.TrimSpace(text); text != "" {
			picks["#"+strconv.Itoa(n+1)] = map[string]string{"typed": text}
		}
	}
	if len(picks) == 0 {
		return nil, false
	}
	b, err := json.Marshal(map[string]any{"answers": picks})
	if err != nil {
		return nil, false
	}
	return map[string]json.RawMessage{"#1": b}, true
}

// verbOf maps a button's action to a verb; unknown actions give "".
func verbOf(action string) approval.Verb {
	switch strings.ToLower(action) {
	case "confirm", "approve", "确认":
		return approval.Approve
	case "cancel", "reject", "取消":
		return approval.Reject
	case "resolve":
		return approval.Resolve
	case answerAction:
		// A question answered: approved as the answered input (edits).
		return approval.Approve
	}
	return approval.Verb("")
}

// onCardCallback is the SDK's card handler: it decides the click and
// answers with the card's new data in the same round trip (buttons hidden;
// the outcome, or "processing" when deciding takes longer than ClickWait;
// the approval's Settle updates the card again when it ends).
//
// A click that decides nothing never hides the buttons of the others: a
// store failure (nothing was decided; the router released the click's
// de-duplication mark, so a retry is decided) is said to the clicker
// alone, in userPrivateData, and so are a click the clicker may not make,
// a malformed one and one that found the approval already decided. When
// such a click had been answered "processing" (buttons hidden for
// everyone), the card is put back to pending and the clicker told why.
func (c *intake) onCardCallback(ctx context.Context, req *card.CardRequest) (*card.CardResponse, error) {
	h := c.slot.Handler()
	if h == nil {
		return nil, errors.New("dingtalk: not started or closed")
	}
	// No card update of this card until the answer is on its way.
	c.cards.answering(req.OutTrackId)
	defer c.cards.answered(req.OutTrackId)
	p, ok := parseClick(req.CardActionData.CardPrivateData.Params)
	if !ok {
		c.log.Warn("card callback without approval params", "out_track_id", req.OutTrackId)
		return response(nil), nil
	}
	// Every click of one button by one user has this id: the router
	// answers a repeat with the current outcome (and forgets the id when
	// the decision failed, so trying again works).
	sum := sha256.Sum256([]byte(req.OutTrackId + "\x00" + req.UserId + "\x00" + req.Content))
	a := channels.CardAction{Channel: Name, ChatID: req.SpaceId, MessageID: req.OutTrackId,
		EventID: hex.EncodeToString(sum[:16]), UserID: approval.UserID(req.UserId),
		ApprovalID: approval.ID(p.approvalID), Verb: verbOf(p.action), PayloadSHA256: p.sha, Resolution: approval.Resolution(p.resolution), Grant: p.grant}
	question := strings.EqualFold(p.action, answerAction)
	if question {
		var typed bool
		if a.Edits, typed = answerEdits(p); !typed {
			// Nothing typed: nothing to decide; the clicker alone is told.
			return c.privately(map[string]string{"status_text": channels.AnswerRefusal(c.cfg.Lang, &approval.AnswerTextError{Fault: approval.AnswerEmpty}, "")}), nil
		}
	}
	ch := make(chan clickResult, 1)
	if !c.bg.Go(func() {
		// The decision may run a tool: it must not die with the click's
		// connection or its answer deadline.
		o, err := h.HandleCardAction(context.WithoutCancel(ctx), a)
		if err != nil {
			c.log.Error("card decision failed", "approval_id", a.ApprovalID, "user_id", a.UserID, "err", err)
		}
		ch <- clickResult{o, err}
	}) {
		return nil, errors.New("dingtalk: closed")
	}
	t := c.clock.NewTimer(c.cfg.ClickWait)
	defer t.Stop()
	select {
	case r := <-ch:
		return c.answer(r), nil
	case <-t.C():
		if a.Verb == approval.Resolve {
			// A frozen card stays as it is for everyone (a retry may
			// run for long; its settle updates the card): the clicker
			// alone reads that it is being processed.
			resp := response(nil)
			resp.CardUpdateOptions.UpdatePrivateDataByKey = true
			resp.UserPrivateData = &card.CardDataDto{CardParamMap: map[string]string{"status_text": cards.DingTalkProcessingData(c.cfg.Lang)["status_text"]}}
			return resp, nil
		}
		c.bg.Go(func() {
			if r := <-ch; r.undecided() {
				c.restore(req.OutTrackId, req.UserId, r, question)
			}
		})
		return response(cards.DingTalkProcessingData(c.cfg.Lang)), nil
	}
}

// clickResult is what the router made of a click.
type clickResult struct {
	o   approval.Outcome
	err error
}

// undecided reports whether the click left the approval waiting: the
// store failed, or the clicker may not decide, or the click was
// malformed, or it counted towards a quorum not reached yet. (An
// already_decided click changed nothing either, but another decision is
// under way and will settle the card.)
func (r clickResult) undecided() bool {
	if r.err != nil {
		return true
	}
	switch r.o.Status {
	case approval.StatusUnauthorized, approval.StatusTampered, approval.StatusMissing, approval.StatusAwaitingQuorum:
		return true
	}
	return false
}

// private is the data shown to the clicker alone for r, or nil when r's
// outcome is for everyone (the approval ended, or is ending).
func (c *intake) private(r clickResult) map[string]string {
	var refused *approval.AnswerTextError
	if errors.As(r.err, &refused) {
		// An answer the questions refuse (no such option): nothing was
		// decided; the clicker reads why and may correct it.
		return map[string]string{"status_text": channels.AnswerRefusal(c.cfg.Lang, refused, "")}
	}
	if r.err != nil {
		// Nothing was decided: the buttons stay, so the click can be tried
		// again.
		return map[string]string{"status_text": approval.UserMessageIn(r.err, c.cfg.Lang)}
	}
	text := cards.DingTalkOutcomeData(r.o, c.cfg.Text, c.cfg.Lang)["status_text"]
	switch r.o.Status {
	case approval.StatusUnauthorized, approval.StatusTampered, approval.StatusMissing:
		// Nothing this user can do with these buttons.
		return map[string]string{"status_text": text, "buttons": "false", "answer_buttons": "false"}
	case approval.StatusAlreadyDecided:
		// Another decision is under way (or this user's first click, which
		// may yet fail): it settles the card for everyone.
		return map[string]string{"status_text": text}
	case approval.StatusAwaitingQuorum:
		// Counted towards the quorum (or counted before): the approval
		// still waits, its buttons stay for the other approvers (and for
		// this one's veto); the card's progress line is everyone's.
		return map[string]string{"status_text": text}
	}
	return nil
}

// answer is the card response to a click whose outcome (or failure) is
// known before ClickWait.
func (c *intake) answer(r clickResult) *card.CardResponse {
	if p := c.private(r); p != nil {
		return c.privately(p)
	}
	return response(cards.DingTalkOutcomeData(r.o, c.cfg.Text, c.cfg.Lang))
}

// privately is the card response that changes the clicker's view alone
// (userPrivateData) to data; the card stays as it is for everyone.
func (c *intake) privately(data map[string]string) *card.CardResponse {
	resp := response(nil)
	resp.CardUpdateOptions.UpdatePrivateDataByKey = true
	resp.UserPrivateData = &card.CardDataDto{CardParamMap: data}
	return resp
}

// restore puts a card answered "processing" back to pending (buttons
// shown) after its click decided nothing, and tells the clicker why. A
// decision by someone else that settles the card in the same instant may
// be overwritten by this update; a click on the buttons then shown answers
// with the final outcome. A question's card (question: the click was an
// answer) gets its answer block back, not the approve buttons.
func (c *intake) restore(outTrackID, user string, r clickResult, question bool) {
	pending := cards.DingTalkCardData(cards.View{}, c.cfg.Lang)
	data := map[string]string{}
	for _, k := range []string{"status", "status_text", "decided_by", "result", "final", "buttons", "answer_buttons"} {
		data[k] = pending[k]
	}
	if question {
		data["buttons"], data["answer_buttons"], data["status_text"] = "false", "true", words.In(c.cfg.Lang, words.QuestionCardHow)
	}
	body := map[string]any{
		"outTrackId":        outTrackID,
		"cardData":          map[string]any{"cardParamMap": data},
		"cardUpdateOptions": map[string]bool{"updateCardDataByKey": true, "updatePrivateDataByKey": true},
	}
	if p := c.private(r); p != nil && user != "" {
		body["privateData"] = map[string]any{user: map[string]any{"cardParamMap": p}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.HTTPTimeout)
	defer cancel()
	if err := c.cards.putCard(ctx, outTrackID, body); err != nil {
		c.log.Error("putting back the buttons of a card whose click decided nothing failed", "msg_id", outTrackID, "err", err)
	}
}

func response(data map[string]string) *card.CardResponse {
	r := &card.CardResponse{CardUpdateOptions: &card.CardUpdateOptions{UpdateCardDataByKey: true}}
	if data != nil {
		r.CardData = &card.CardDataDto{CardParamMap: data}
	}
	return r
}
