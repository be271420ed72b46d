package feishu

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/words"
)

// Modes of receiving events.
const (
	// ModeLongConnection receives events and card callbacks over the SDK's
	// websocket long connection: no public address needed (the default).
	ModeLongConnection = "long_connection"
	// ModeWebhook receives them as HTTP POSTs on WebhookHandler
	// (/webhook/feishu). It requires an EncryptKey.
	ModeWebhook = "webhook"
)

// Config configures the Feishu channel.
type Config struct {
	// AppID is the app's id (cli_…), from 开发者后台 → 凭证与基础信息.
	AppID string `mapstructure:"app_id"`
	// AppSecret is the app's secret. A SECRET: give it through the
	// environment or a *_file key, never in the config file.
	AppSecret string `mapstructure:"app_secret"`
	// Mode is "long_connection" (default) or "webhook".
	Mode string `mapstructure:"mode"`
	// EncryptKey is the event encryption key (事件与回调 → 加密策略). A
	// SECRET. Required in webhook mode: without it the SDK neither decrypts
	// nor authenticates events, so anyone who knows the URL could post
	// forged ones. Not used over the long connection.
	EncryptKey string `mapstructure:"encrypt_key"`
	// VerificationToken answers the webhook's url_verification challenge.
	// A SECRET. Webhook mode only.
	VerificationToken string `mapstructure:"verification_token"`
	// BaseURL is the OpenAPI and long-connection bootstrap host. Default
	// https://open.feishu.cn (https://open.larksuite.com for Lark).
	BaseURL string `mapstructure:"base_url"`
	// BotOpenID is the bot's own open_id, used to tell whether a group
	// message mentions the bot. Empty: read from /open-apis/bot/v3/info at
	// Start (if that fails, any mention counts).
	BotOpenID string `mapstructure:"bot_open_id"`
	// Lang is the language of the channel's own words (toasts, the
	// processing card): "zh" or "en". Default "zh".
	Lang string `mapstructure:"lang"`
	// Text overrides the words of each outcome status on the cards the
	// channel answers a click with. Not a YAML key of its own: the server
	// sets it from approval.outcome_text, so it equals the router's.
	Text approval.OutcomeText `mapstructure:"-"`
	// Marks, when set, is where webhook mode remembers every request it
	// accepted: the store the replicas share (approval.Store), so a
	// captured request is refused by every replica, not only by the one
	// that saw it first. Not a YAML key: the server sets its approval
	// store. Default: this process only.
	Marks Marks `mapstructure:"-"`
	// Metrics counts the API's answers, throttles, retries and messages
	// given up on (hitlbot_platform_*). Not a YAML key: the server sets
	// its metrics. Default: nothing is counted.
	Metrics channels.PlatformMetrics `mapstructure:"-"`
	// Views, when set, are the pending cards the channel redraws a click
	// with when it did not send or update the clicked card itself (another
	// replica did, or this process before a restart): the answer then
	// carries the processing or final card, and a refused clicker is told
	// who may approve. Not a YAML key: the server gives the Presenter
	// (channels.Assembly.Presenter). Nil (`bot doctor`, which only checks
	// the credentials): such a click is still decided, and answered with
	// a toast only.
	Views channels.Views `mapstructure:"-"`
	// RequestTimeout bounds every HTTP request to Feishu (API calls and the
	// long connection's bootstrap). Default 10s.
	RequestTimeout time.Duration `mapstructure:"request_timeout"`
	// CallbackWait is how long a card click waits for its decision before
	// answering with a "processing" card (Feishu allows 3 s in all).
	// Default 2.5s; at most 2.8s.
	CallbackWait time.Duration `mapstructure:"callback_wait"`
	// MaxRetries bounds the retries of a throttled (HTTP 429 / code
	// 99991400, or HTTP 400 / code 230020: the per-chat and per-message
	// rates) or failed API call, each after a backoff. 0 means 4 (the
	// bot's embedded defaults set 3); negative disables retries. A call still refused after them is
	// logged (WARN) and counted (hitlbot_platform_delivery_failures_total).
	MaxRetries int `mapstructure:"max_retries"`
	// MaxRetryWait bounds one wait between retries, whatever
	// x-ogw-ratelimit-reset says. Default 10s.
	MaxRetryWait time.Duration `mapstructure:"max_retry_wait"`
	// StartTimeout bounds how long Start waits for the long connection's
	// first connect. Default 30s.
	StartTimeout time.Duration `mapstructure:"start_timeout"`
	// MaxRequestAge bounds, in webhook mode, how far a request's signed
	// X-Lark-Request-Timestamp may be from now, in the past or the future:
	// an older (or later) request is refused with 401, and so is a
	// (timestamp, nonce, signature) seen before within the bound, so a
	// captured request cannot be posted again. Default 1h (as DingTalk's
	// max_sign_age); must be positive.
	MaxRequestAge time.Duration `mapstructure:"max_request_age"`
	// StreamInterval is the least time between two updates of a streamed
	// answer's card (a CardKit card entity whose text element streams;
	// the app needs the scope cardkit:card:write). CardKit takes at most
	// 10 updates per second per card; pieces of text that come between
	// two updates are sent together. Default 300ms, at least 100ms. A
	// negative value turns streaming off: answers come whole, as text.
	StreamInterval time.Duration `mapstructure:"stream_interval"`
}

const maxCallbackWait = 2800 * time.Millisecond

// withDefaults fills the defaults and validates.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	c.AppID = strings.TrimSpace(c.AppID)
	if c.AppID == "" {
		errs = append(errs, errors.New("app_id is required"))
	}
	if c.AppSecret == "" {
		errs = append(errs, errors.New("app_secret is required"))
	}
	switch c.Mode {
	case "":
		c.Mode = ModeLongConnection
	case ModeLongConnection:
	case ModeWebhook:
		if c.EncryptKey == "" {
			errs = append(errs, errors.New("webhook mode needs encrypt_key: without it events are not authenticated"))
		}
	default:
		errs = append(errs, fmt.Errorf("mode %q: want long_connection or webhook", c.Mode))
	}
	if c.BaseURL == "" {
		c.BaseURL = "https://open.feishu.cn"
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.Lang == "" {
		c.Lang = string(words.ZH)
	}
	if l, err := words.Parse(c.Lang); err != nil {
		errs = append(errs, fmt.Errorf("lang: %w", err))
	} else {
		c.Lang = string(l)
	}
	if err := c.Text.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 10 * time.Second
	}
	if c.CallbackWait <= 0 {
		c.CallbackWait = 2500 * time.Millisecond
	}
	if c.CallbackWait > maxCallbackWait {
		errs = append(errs, fmt.Errorf("callback_wait %v: at most %v (Feishu allows 3 s)", c.CallbackWait, maxCallbackWait))
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = 4
	}
	if c.MaxRetries < 0 {
		c.MaxRetries = 0
	}
	if c.MaxRetryWait <= 0 {
		c.MaxRetryWait = 10 * time.Second
	}
	switch {
	case c.StreamInterval == 0:
		c.StreamInterval = DefaultStreamInterval
	case c.StreamInterval > 0 && c.StreamInterval < minStreamInterval:
		errs = append(errs, fmt.Errorf("stream_interval %v: at least %v (CardKit takes 10 updates per second per card)", c.StreamInterval, minStreamInterval))
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 30 * time.Second
	}
	switch {
	case c.MaxRequestAge == 0:
		c.MaxRequestAge = time.Hour
	case c.MaxRequestAge < 0:
		errs = append(errs, fmt.Errorf("max_request_age %v: must be positive", c.MaxRequestAge))
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("feishu: %w", errors.Join(errs...))
	}
	return c, nil
}
