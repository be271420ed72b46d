package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/internal/clip"
	catalogue "github.com/hitlbot/hitlbot/words"
)

// The sentences of the model errors, in the catalogue (package words);
// they are shown to chat users.
const (
	publicTimeout     = catalogue.ModelTimeout
	publicAuth        = catalogue.ModelAuth
	publicRateLimited = catalogue.ModelRateLimited
	publicFailed      = catalogue.ModelFailed
)

// Defaults of OpenAIConfig.
const (
	DefaultOpenAIBaseURL        = "https://api.openai.com/v1"
	DefaultOpenAIRequestTimeout = 60 * time.Second
	DefaultOpenAIMaxRetries     = 3
)

// OpenAIConfig is the YAML section model.openai: an OpenAI-compatible
// chat-completions endpoint (OpenAI, DeepSeek, Qwen, vLLM, Ollama, …).
//
// Nothing here is read from OPENAI_* environment variables: the client is
// configured from this struct only (see NewOpenAI).
type OpenAIConfig struct {
	// BaseURL is the API root that "/chat/completions" is appended to,
	// e.g. "https://api.deepseek.com/v1" or "http://vllm:8000/v1".
	// Default "https://api.openai.com/v1".
	BaseURL string `json:"base_url" mapstructure:"base_url"`
	// Model is the model name sent with every request, e.g. "gpt-4o-mini".
	// Required.
	Model string `json:"model" mapstructure:"model"`
	// APIKey is the secret bearer key. Keep it out of the YAML file: set the
	// environment variable HITLBOT_MODEL_OPENAI_API_KEY (bound by cmd/bot)
	// or use APIKeyFile. It is never logged. Empty sends no Authorization
	// header (local servers that need none).
	APIKey string `json:"api_key" mapstructure:"api_key"`
	// APIKeyFile is a file holding the key (e.g. a mounted Kubernetes
	// secret); surrounding whitespace is trimmed. Used when APIKey is empty.
	APIKeyFile string `json:"api_key_file" mapstructure:"api_key_file"`
	// Temperature is the sampling temperature, 0..2. Unset (nil) leaves the
	// provider's default; 0 asks for the most deterministic answers.
	Temperature *float64 `json:"temperature" mapstructure:"temperature"`
	// RequestTimeout bounds one HTTP attempt (each retry gets its own).
	// Default 60s. An attempt that times out is not retried. The caller's
	// context bounds the whole call, retries and back-off included.
	RequestTimeout time.Duration `json:"request_timeout" mapstructure:"request_timeout"`
	// MaxRetries is how many times a failed attempt (connection error, 408,
	// 409, 429, 5xx) is retried with exponential back-off (0.5s, 1s, 2s, …
	// capped at 8s, jittered) or after the server's Retry-After /
	// Retry-After-Ms (a server asking for more than 2 minutes ends the
	// retries at once). 0 means the default, 3; a negative value disables
	// retries.
	MaxRetries int `json:"max_retries" mapstructure:"max_retries"`
	// MaxTokens caps the length of an answer (sent as max_tokens, which
	// OpenAI-compatible servers understand). 0 sends no limit.
	MaxTokens int `json:"max_tokens" mapstructure:"max_tokens"`
	// Stream asks for the answer as server-sent events (stream: true) and
	// hands each piece of its text to the turn as it comes, so the chats
	// that can show a growing message (web, Feishu, DingTalk, bot chat)
	// do; tool calls are assembled from their deltas. On by default
	// (OpenAI, DeepSeek, Qwen, vLLM and Ollama stream them). A server that
	// refuses a streamed request before its first event (an HTTP 400,
	// 404, 405, 415, 422 or 501, or an answer that is no event stream) is
	// asked again at once without streaming, and this model streams no
	// more until the process restarts (logged once, with the fix: set it
	// false). RequestTimeout bounds the whole stream.
	Stream bool `json:"stream" mapstructure:"stream"`
	// Headers are extra HTTP headers sent with every request, e.g. a
	// gateway's routing header or "OpenAI-Organization". Values are
	// treated as secrets and never logged.
	Headers map[string]string `json:"headers" mapstructure:"headers"`
}

// String describes the config with the key and header values redacted, so
// that printing or logging a config never leaks the secret.
func (c OpenAIConfig) String() string {
	key := "unset"
	if c.APIKey != "" {
		key = "<secret>"
	}
	names := make([]string, 0, len(c.Headers))
	for k := range c.Headers {
		names = append(names, k)
	}
	return fmt.Sprintf("OpenAIConfig{BaseURL:%q Model:%q APIKey:%s APIKeyFile:%q Temperature:%s RequestTimeout:%s MaxRetries:%d MaxTokens:%d Stream:%t Headers:%v}",
		c.BaseURL, c.Model, key, c.APIKeyFile, fmtTemperature(c.Temperature), c.RequestTimeout, c.MaxRetries, c.MaxTokens, c.Stream, names)
}

// GoString is String, so that %#v redacts too.
func (c OpenAIConfig) GoString() string { return c.String() }

// LogValue is String, so that slog redacts too.
func (c OpenAIConfig) LogValue() slog.Value { return slog.StringValue(c.String()) }

func fmtTemperature(t *float64) string {
	if t == nil {
		return "default"
	}
	return fmt.Sprint(*t)
}

// OpenAI is a Model backed by an OpenAI-compatible chat-completions API,
// through github.com/openai/openai-go/v3. It is safe for concurrent use.
//
// Tool calls come back with Confidence 1. Arguments that are not valid JSON
// are kept verbatim in ToolCall.Args (not dropped, not a crash): the
// registry's Validate then reports "arguments of X are not valid JSON",
// which the loop feeds back to the model as the tool result so that it can
// correct itself. Code that marshals a Message with encoding/json must
// therefore be ready for such Args (json.RawMessage refuses to marshal
// invalid JSON).
//
// Every error returned by Complete is a *ModelError whose Public text is one
// of four fixed sentences (timeout, key refused, rate limited, failed) and
// whose Err never contains the API key.
type OpenAI struct {
	cfg    OpenAIConfig
	svc    openai.ChatCompletionService
	logger *slog.Logger
	// noStream is set once the server refused a streamed request: every
	// later one is sent whole (see OpenAIConfig.Stream).
	noStream atomic.Bool
}

// NewOpenAI validates cfg, applies defaults and returns the model. It does
// no I/O except reading APIKeyFile.
//
// The client is built with openai.NewChatCompletionService and explicit
// options rather than openai.NewClient, because NewClient first applies
// defaults from the environment (OPENAI_BASE_URL, OPENAI_API_KEY,
// OPENAI_ORG_ID, OPENAI_PROJECT_ID, OPENAI_CUSTOM_HEADERS, …) that would
// otherwise silently change where requests go or what they carry. Proxy
// variables (HTTPS_PROXY, NO_PROXY) are still honoured, as by any Go
// HTTP client.
func NewOpenAI(cfg OpenAIConfig, logger *slog.Logger) (*OpenAI, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("model.openai.model is required")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultOpenAIBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("model.openai.base_url must be an http(s) URL such as https://api.openai.com/v1")
	}
	if u.User != nil {
		return nil, errors.New("model.openai.base_url must not contain credentials; use api_key")
	}
	if cfg.APIKey == "" && cfg.APIKeyFile != "" {
		b, err := os.ReadFile(cfg.APIKeyFile)
		if err != nil {
			return nil, fmt.Errorf("model.openai.api_key_file: %w", err)
		}
		cfg.APIKey = strings.TrimSpace(string(b))
		if cfg.APIKey == "" {
			return nil, fmt.Errorf("model.openai.api_key_file %s is empty", cfg.APIKeyFile)
		}
	}
	if strings.ContainsAny(cfg.APIKey, "\r\n") {
		return nil, errors.New("model.openai.api_key contains a line break")
	}
	if t := cfg.Temperature; t != nil && (*t < 0 || *t > 2) {
		return nil, fmt.Errorf("model.openai.temperature %v is outside 0..2", *t)
	}
	switch {
	case cfg.RequestTimeout < 0:
		return nil, errors.New("model.openai.request_timeout must not be negative")
	case cfg.RequestTimeout == 0:
		cfg.RequestTimeout = DefaultOpenAIRequestTimeout
	}
	switch {
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = DefaultOpenAIMaxRetries
	}
	if cfg.MaxTokens < 0 {
		return nil, errors.New("model.openai.max_tokens must not be negative")
	}

	m := &OpenAI{cfg: cfg, logger: logger}
	var transport http.RoundTripper = http.DefaultTransport
	if t, ok := transport.(*http.Transport); ok {
		transport = t.Clone() // own connection pool; proxies from HTTPS_PROXY etc.
	}
	opts := []option.RequestOption{
		option.WithHTTPClient(&http.Client{Transport: transport}),
		option.WithBaseURL(cfg.BaseURL),
		option.WithAPIKey(cfg.APIKey),
		option.WithMaxRetries(cfg.MaxRetries),
		option.WithRequestTimeout(cfg.RequestTimeout),
		option.WithMiddleware(m.logAttempt),
	}
	for k, v := range cfg.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	m.svc = openai.NewChatCompletionService(opts...)
	return m, nil
}

// logAttempt logs each failed HTTP attempt (the SDK retries under it).
func (m *OpenAI) logAttempt(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	attempt := req.Header.Get("X-Stainless-Retry-Count")
	switch {
	case err != nil:
		m.logger.Warn("model attempt failed", "model", m.cfg.Model, "attempt", attempt, "err", m.redact(err.Error()))
	case res.StatusCode >= 400:
		m.logger.Warn("model attempt failed", "model", m.cfg.Model, "attempt", attempt, "http_status", res.StatusCode)
	}
	return res, err
}

// Complete sends the conversation and the tools to the chat-completions
// endpoint and returns the assistant message. Parallel tool calls are
// returned in the order the model gave them; a call without an id gets
// "call-<n>".
func (m *OpenAI) Complete(ctx context.Context, req agent.Request) (agent.Response, error) {
	params, err := m.params(req)
	if err != nil {
		return agent.Response{}, agent.NewModelError(publicFailed, err)
	}
	start := time.Now()
	if m.cfg.Stream && !m.noStream.Load() {
		resp, err := m.completeStream(ctx, params, req.Delta, start)
		if !errors.Is(err, errStreamRefused) {
			return resp, err
		}
		if !m.noStream.Swap(true) {
			m.logger.Warn("the model server refused a streamed answer; answers are no longer streamed (set model.openai.stream: false to stop trying)",
				"model", m.cfg.Model, "err", err)
		}
		start = time.Now()
	}
	cc, err := m.svc.New(ctx, params)
	if err != nil {
		merr := m.modelError(ctx, err)
		m.logger.Warn("model completion failed", "model", m.cfg.Model, "duration", time.Since(start), "err", merr.Err)
		return agent.Response{}, merr
	}
	if len(cc.Choices) == 0 {
		return agent.Response{}, agent.NewModelError(publicFailed, errors.New("openai: the response has no choices"))
	}
	out := assistantMessage(cc.Choices[0].Message)
	m.logger.Debug("model completion", "model", m.cfg.Model, "duration", time.Since(start),
		"finish_reason", cc.Choices[0].FinishReason, "tool_calls", len(out.ToolCalls))
	return agent.Response{Message: out}, nil
}

// assistantMessage is the agent's message of a completion's message.
func assistantMessage(msg openai.ChatCompletionMessage) agent.Message {
	out := agent.Message{Role: agent.RoleAssistant, Content: msg.Content}
	if out.Content == "" && msg.Refusal != "" {
		out.Content = msg.Refusal
	}
	for i, tc := range msg.ToolCalls {
		call := agent.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: toolArgs(tc), Confidence: 1}
		if call.ID == "" {
			call.ID = fmt.Sprintf("call-%d", i+1)
		}
		if tc.Type == "custom" {
			call.Name, call.Args = tc.Custom.Name, rawArgs(tc.Custom.Input)
		}
		out.ToolCalls = append(out.ToolCalls, call)
	}
	return out
}

// toolArgs returns the arguments of a function tool call. The wire format
// is a string holding JSON; a few OpenAI-compatible servers send a JSON
// object instead, which is taken as is.
func toolArgs(tc openai.ChatCompletionMessageToolCallUnion) json.RawMessage {
	if raw := strings.TrimSpace(tc.Function.JSON.Arguments.Raw()); strings.HasPrefix(raw, "{") {
		return json.RawMessage(raw)
	}
	return rawArgs(tc.Function.Arguments)
}

// rawArgs keeps the model's text as is, even when it is not JSON (see the
// OpenAI doc comment); empty becomes {}.
func rawArgs(s string) json.RawMessage {
	if strings.TrimSpace(s) == "" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(s)
}

// params maps a Request to chat-completions parameters.
func (m *OpenAI) params(req agent.Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: m.cfg.Model}
	if m.cfg.Temperature != nil {
		p.Temperature = openai.Float(*m.cfg.Temperature)
	}
	if m.cfg.MaxTokens > 0 {
		p.MaxTokens = openai.Int(int64(m.cfg.MaxTokens))
	}
	for i, msg := range req.Messages {
		switch msg.Role {
		case agent.RoleSystem:
			p.Messages = append(p.Messages, openai.SystemMessage(msg.Content))
		case agent.RoleUser:
			p.Messages = append(p.Messages, openai.UserMessage(msg.Content))
		case agent.RoleAssistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				a.Content.OfString = openai.String(msg.Content)
			}
			for _, tc := range msg.ToolCalls {
				args := string(tc.Args)
				if strings.TrimSpace(args) == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args},
					},
				})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case agent.RoleTool:
			p.Messages = append(p.Messages, openai.ToolMessage(msg.Content, msg.ToolCallID))
		default:
			return p, fmt.Errorf("message %d has unknown role %q", i, msg.Role)
		}
	}
	for _, t := range req.Tools {
		params := shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
		if t.Schema != nil {
			b, err := json.Marshal(t.Schema)
			if err != nil {
				return p, fmt.Errorf("tool %s: schema: %w", t.Name, err)
			}
			params = shared.FunctionParameters{}
			if err := json.Unmarshal(b, &params); err != nil {
				return p, fmt.Errorf("tool %s: schema: %w", t.Name, err)
			}
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: params}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	return p, nil
}

// modelError classifies err into one of the public sentences. The detail
// is rebuilt from safe parts (status, error type and code, the provider's
// message) and scrubbed of the API key.
func (m *OpenAI) modelError(ctx context.Context, err error) *agent.ModelError {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		public := publicFailed
		switch apiErr.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			public = publicAuth
		case http.StatusTooManyRequests:
			public = publicRateLimited
		case http.StatusRequestTimeout, http.StatusGatewayTimeout:
			public = publicTimeout
		}
		detail := fmt.Sprintf("openai: chat completion (model %q): HTTP %d", m.cfg.Model, apiErr.StatusCode)
		if apiErr.Type != "" || apiErr.Code != "" {
			detail += fmt.Sprintf(" (type %q, code %q)", apiErr.Type, apiErr.Code)
		}
		if msg := apiErr.Message; msg != "" {
			detail += ": " + clip.Runes(msg, 500)
		}
		return agent.NewModelError(public, &safeError{msg: m.redact(detail)})
	}

	detail := fmt.Sprintf("openai: chat completion (model %q): %s", m.cfg.Model, clip.Runes(err.Error(), 500))
	se := &safeError{msg: m.redact(detail)}
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		se.cause = context.DeadlineExceeded
		return agent.NewModelError(publicTimeout, se)
	case errors.Is(err, context.Canceled), ctx.Err() != nil:
		se.cause = context.Canceled
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			se.cause = context.DeadlineExceeded
			return agent.NewModelError(publicTimeout, se)
		}
		return agent.NewModelError(publicFailed, se)
	}
	return agent.NewModelError(publicFailed, se)
}

// redact removes the API key from s.
func (m *OpenAI) redact(s string) string {
	if m.cfg.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, m.cfg.APIKey, "[redacted]")
}

// safeError is the Err of an OpenAI ModelError: a message already scrubbed
// of secrets and, for errors.Is, context.DeadlineExceeded or
// context.Canceled. It does not keep the SDK's error, whose fields hold the
// request (and so the key).
type safeError struct {
	msg   string
	cause error
}

func (e *safeError) Error() string { return e.msg }
func (e *safeError) Unwrap() error { return e.cause }

// Interface guard.
var _ agent.Model = (*OpenAI)(nil)
