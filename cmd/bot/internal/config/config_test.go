package config

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/tools/shell"
)

// writeFile writes a config file in a fresh directory and returns its path.
func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func paths(ps Problems) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Path
	}
	return out
}

func TestDefaults(t *testing.T) {
	t.Chdir(t.TempDir()) // no ./config.yaml here
	c, err := Load(Options{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate of the defaults: %v", err)
	}
	checks := []struct {
		what string
		got  any
		want any
	}{
		{"file", c.File(), ""},
		{"listen", c.Server.Listen, "127.0.0.1:8080"},
		{"data_dir", c.Server.DataDir, "./data"},
		{"shutdown_timeout", c.Server.ShutdownTimeout, 30 * time.Second},
		{"backend", c.Store.Backend, "memory"},
		{"retention", c.Store.Retention, 7 * 24 * time.Hour},
		{"prefix", c.Store.Redis.Prefix, "hitl:"},
		{"provider", c.Model.Provider, "rules"},
		{"policy enabled", c.Approval.Policy.Enabled, true},
		{"threshold", c.Approval.Policy.ConfidenceThreshold, 0.85},
		{"grant_window", c.Approval.Policy.GrantWindow, 5 * time.Minute},
		{"high_rows", c.Approval.Policy.HighRows, int64(approval.DefaultHighRows)},
		{"timeout", c.Approval.Timeout, 5 * time.Minute},
		{"scope", c.Approval.SessionScope, "per_chat"},
		{"reply_clock_skew", c.Approval.ReplyClockSkew, 5 * time.Second},
		{"allow", c.Channels.Feishu.Allow.Empty() && c.Channels.DingTalk.Allow.Empty() && c.Channels.Web.Allow.Empty() &&
			c.Channels.API.Allow.Empty() && c.Channels.CLI.Allow.Empty(), true},
		{"audit file", c.Audit.File, filepath.Join("data", "audit.jsonl")},
		{"web", c.Channels.Web.Enabled, true},
		{"api", c.Channels.API.Enabled, true},
		{"max pending", c.Channels.API.MaxPendingPerUser, 10},
		{"tasks", c.Tools.Tasks.Enabled, true},
		{"shell", c.Tools.Shell.Enabled, false},
		{"metrics", c.Metrics.Path, "/metrics"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s: got %v, want %v", ch.what, ch.got, ch.want)
		}
	}
}

func TestDefaultFileIsRead(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile(DefaultFile, []byte("server: {listen: '127.0.0.1:9191'}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Listen != "127.0.0.1:9191" || c.File() != DefaultFile {
		t.Errorf("got listen %q from %q, want 127.0.0.1:9191 from %s", c.Server.Listen, c.File(), DefaultFile)
	}
}

// loadTest is one Load case: a file, environment variables and overrides,
// then either the problems expected (by path, with a word of the message)
// or a check of the result.
type loadTest struct {
	name      string
	file      string // "" for no file
	env       map[string]string
	overrides map[string]any
	problems  map[string]string // path -> a substring of its message
	check     func(t *testing.T, c *Config)
}

var loadTests = []loadTest{
	{
		name: "reminders by default",
		file: "approval: {}\n",
		check: func(t *testing.T, c *Config) {
			if !slices.Equal(c.Approval.Reminders, []float64{0.5, 0.9}) {
				t.Fatalf("reminders = %v", c.Approval.Reminders)
			}
		},
	},
	{
		name: "reminders turned off",
		file: "approval:\n  reminders: []\n",
		check: func(t *testing.T, c *Config) {
			if len(c.Approval.Reminders) != 0 {
				t.Fatalf("reminders = %v, want none", c.Approval.Reminders)
			}
		},
	},
	{
		name: "reminders set",
		file: "approval:\n  reminders: [0.75]\n",
		check: func(t *testing.T, c *Config) {
			if !slices.Equal(c.Approval.Reminders, []float64{0.75}) {
				t.Fatalf("reminders = %v", c.Approval.Reminders)
			}
		},
	},
	{
		name: "allow-lists and the reply clock skew",
		file: `approval:
  reply_clock_skew: 2s
channels:
  feishu:
    allow:
      users: [ou_Alice, ou_bob]
      chats: [oc_ops]
  dingtalk:
    allow: {users: [manager4711]}
  web:
    allow: {users: [alice]}
  api:
    allow:
      users: [acme/alice]
  cli:
    user: alice
    allow: {users: [alice]}
`,
		env: map[string]string{"HITLBOT_CHANNELS_API_ALLOW_CHATS": "acme/alice/c1,acme/alice/c2", "HITLBOT_WEB_ALLOW_USERS": "bob,carol"},
		check: func(t *testing.T, c *Config) {
			ch := c.Channels
			if !slices.Equal(ch.Feishu.Allow.Users, []string{"ou_Alice", "ou_bob"}) || !slices.Equal(ch.Feishu.Allow.Chats, []string{"oc_ops"}) {
				t.Errorf("feishu allow %+v (ids keep their case)", ch.Feishu.Allow)
			}
			if !slices.Equal(ch.DingTalk.Allow.Users, []string{"manager4711"}) || len(ch.DingTalk.Allow.Chats) != 0 {
				t.Errorf("dingtalk allow %+v", ch.DingTalk.Allow)
			}
			if !slices.Equal(ch.Web.Allow.Users, []string{"bob", "carol"}) {
				t.Errorf("web allow %+v, want the environment's", ch.Web.Allow)
			}
			if !slices.Equal(ch.API.Allow.Users, []string{"acme/alice"}) || !slices.Equal(ch.API.Allow.Chats, []string{"acme/alice/c1", "acme/alice/c2"}) {
				t.Errorf("api allow %+v", ch.API.Allow)
			}
			if ch.CLI.User != "alice" || !slices.Equal(ch.CLI.Allow.Users, []string{"alice"}) {
				t.Errorf("cli user %q allow %+v", ch.CLI.User, ch.CLI.Allow)
			}
			if c.Approval.ReplyClockSkew != 2*time.Second {
				t.Errorf("reply_clock_skew %v", c.Approval.ReplyClockSkew)
			}
			names := []string{}
			for name := range ch.Allow() {
				names = append(names, name)
			}
			if !slices.Equal(names, []string{"web", "api", "cli", "dingtalk", "feishu"}) {
				t.Errorf("Channels.Allow names %q", names)
			}
		},
	},
	{
		name: "file overrides defaults",
		file: "server:\n  listen: 127.0.0.1:9999\napproval:\n  lang: zh\n  policy:\n    strict: true\n    timeouts: {HIGH: 10m}\n",
		check: func(t *testing.T, c *Config) {
			if c.Server.Listen != "127.0.0.1:9999" || c.Approval.Lang != "zh" || !c.Approval.Policy.Strict {
				t.Errorf("got listen %q lang %q strict %v", c.Server.Listen, c.Approval.Lang, c.Approval.Policy.Strict)
			}
			if c.Approval.Policy.ConfidenceThreshold != 0.85 {
				t.Errorf("a default next to a file key was lost: threshold %v", c.Approval.Policy.ConfidenceThreshold)
			}
			if got := c.Approval.Policy.Timeouts["high"]; got != 10*time.Minute {
				t.Errorf("timeouts.high = %v, want 10m", got)
			}
		},
	},
	{
		name: "channel keys answer to a short name too",
		env: map[string]string{
			"HITLBOT_FEISHU_APP_SECRET":           "short-name-secret",
			"HITLBOT_FEISHU_APP_ID":               "cli_short",
			"HITLBOT_CHANNELS_DINGTALK_CLIENT_ID": "long-name-wins",
			"HITLBOT_DINGTALK_CLIENT_ID":          "short-name-loses",
		},
		check: func(t *testing.T, c *Config) {
			if c.Channels.Feishu.AppSecret != "short-name-secret" || c.Channels.Feishu.AppID != "cli_short" {
				t.Errorf("feishu app_id %q, app_secret set %v: the short names were not read", c.Channels.Feishu.AppID, c.Channels.Feishu.AppSecret != "")
			}
			if c.Channels.DingTalk.ClientID != "long-name-wins" {
				t.Errorf("dingtalk client_id %q, want the full name's value", c.Channels.DingTalk.ClientID)
			}
		},
	},
	{
		name: "environment overrides nested keys",
		file: "approval:\n  policy:\n    confidence_threshold: 0.7\n",
		env: map[string]string{
			"HITLBOT_APPROVAL_POLICY_CONFIDENCE_THRESHOLD": "0.5",
			"HITLBOT_STORE_REDIS_PASSWORD":                 "hunter2-from-env",
			"HITLBOT_APPROVAL_POLICY_TIMEOUTS_HIGH":        "2m",
			"HITLBOT_APPROVAL_TIMEOUT":                     "2s",
			"HITLBOT_STORE_REDIS_ADDRS":                    "a:1,b:2",
			"HITLBOT_CHANNELS_WEB_ENABLED":                 "false",
			"HITLBOT_APPROVAL_OUTCOME_TEXT_EXECUTED":       "done",
			"HITLBOT_MODEL_OPENAI_TEMPERATURE":             "0.2",
		},
		check: func(t *testing.T, c *Config) {
			if c.Approval.Policy.ConfidenceThreshold != 0.5 {
				t.Errorf("threshold = %v, want 0.5 (the environment beats the file)", c.Approval.Policy.ConfidenceThreshold)
			}
			if c.Store.Redis.Password.Reveal() != "hunter2-from-env" {
				t.Errorf("password = %q", c.Store.Redis.Password.Reveal())
			}
			if c.Approval.Policy.Timeouts["high"] != 2*time.Minute || c.Approval.Timeout != 2*time.Second {
				t.Errorf("timeouts = %v, timeout = %v", c.Approval.Policy.Timeouts, c.Approval.Timeout)
			}
			if !slices.Equal(c.Store.Redis.Addrs, []string{"a:1", "b:2"}) {
				t.Errorf("addrs = %q", c.Store.Redis.Addrs)
			}
			if c.Channels.Web.Enabled {
				t.Error("web still enabled")
			}
			if c.Approval.OutcomeText["executed"] != "done" {
				t.Errorf("outcome_text = %v", c.Approval.OutcomeText)
			}
			if c.Model.OpenAI.Temperature == nil || *c.Model.OpenAI.Temperature != 0.2 {
				t.Errorf("temperature = %v", c.Model.OpenAI.Temperature)
			}
			p := c.Approval.EffectivePolicy()
			if p.Timeouts["high"] != 2*time.Minute || p.Timeouts["low"] != 2*time.Second || p.Timeouts["medium"] != 2*time.Second {
				t.Errorf("effective timeouts = %v", p.Timeouts)
			}
		},
	},
	{
		name:      "overrides beat the environment",
		env:       map[string]string{"HITLBOT_SERVER_LISTEN": "127.0.0.1:1"},
		overrides: map[string]any{"server.listen": "127.0.0.1:2", "server.data_dir": "/tmp/x"},
		check: func(t *testing.T, c *Config) {
			if c.Server.Listen != "127.0.0.1:2" || c.Audit.File != "/tmp/x/audit.jsonl" {
				t.Errorf("listen %q, audit file %q", c.Server.Listen, c.Audit.File)
			}
		},
	},
	{
		name:     "unknown keys name their path",
		file:     "approval:\n  polcy: {}\n  policy:\n    tools:\n      sql_execute: {confrim: always}\nbogus: 1\n",
		problems: map[string]string{"approval.polcy": "did you mean policy?", "approval.policy.tools.sql_execute.confrim": "did you mean confirm?", "bogus": "unknown key"},
	},
	{
		name:     "unknown key in a list entry",
		file:     "tools:\n  http:\n    - name: x\n      ulr: https://example.com\n",
		problems: map[string]string{"tools.http[0].ulr": "unknown key"},
	},
	{
		name:     "an environment variable that names no key",
		env:      map[string]string{"HITLBOT_APPROVAL_POLICY_CONFIDENCE_TRESHOLD": "0.9", "HITLBOT_TEST_ANYTHING": "x"},
		problems: map[string]string{"": "did you mean HITLBOT_APPROVAL_POLICY_CONFIDENCE_THRESHOLD?"},
	},
	{
		name:     "bad durations",
		file:     "approval:\n  policy:\n    grant_window: 5x\nserver:\n  shutdown_timeout: 30\n",
		problems: map[string]string{"approval.policy.grant_window": `"5x" is not a duration`, "server.shutdown_timeout": "has no unit"},
	},
	{
		name:     "bad duration from the environment",
		env:      map[string]string{"HITLBOT_APPROVAL_DEDUP_TTL": "soon"},
		problems: map[string]string{"approval.dedup_ttl": "not a duration"},
	},
	{
		name:     "wrong type",
		file:     "server:\n  public: [1]\n",
		problems: map[string]string{"server.public": "must be true or false, not a list"},
	},
	{
		name:     "a boolean from the environment, in words",
		env:      map[string]string{"HITLBOT_SERVER_PUBLIC": "yes"},
		problems: map[string]string{"server.public": `"yes" is not true or false (write true or false)`},
	},
	{
		name:     "a bad number, in words",
		file:     "approval:\n  policy:\n    high_rows: twenty\n    confidence_threshold: high\n",
		problems: map[string]string{"approval.policy.high_rows": `"twenty" is not a whole number`, "approval.policy.confidence_threshold": `"high" is not a number`},
	},
	{
		name:     "a key under the wrong parent",
		file:     "feishu:\n  enabled: true\nchannels:\n  redis: {}\n",
		problems: map[string]string{"feishu": "did you mean channels.feishu?", "channels.redis": "did you mean store.redis?"},
	},
	{
		name: "secrets in the file are refused",
		file: "store:\n  redis:\n    password: hunter2\n    url: redis://:pw@127.0.0.1:6379\nmodel:\n  openai:\n    api_key: sk-123\nchannels:\n  api:\n    tokens: abc\ntools:\n  sql:\n    databases:\n      - {name: shop, driver: postgres, dsn: 'postgres://u:p@h/db'}\n      - {name: local, driver: sqlite, dsn: 'file:x.db'}\n",
		problems: map[string]string{
			"store.redis.password":       "HITLBOT_STORE_REDIS_PASSWORD",
			"store.redis.url":            "HITLBOT_STORE_REDIS_PASSWORD",
			"model.openai.api_key":       "HITLBOT_MODEL_OPENAI_API_KEY",
			"channels.api.tokens":        "HITLBOT_CHANNELS_API_TOKENS",
			"tools.sql.databases[0].dsn": "dsn_env",
		},
	},
	{
		name: "secret files and dsn_env",
		env:  map[string]string{"SHOP_DSN": "postgres://u:p@h/db"},
		file: "store:\n  redis:\n    password_file: {{dir}}/pw\nchannels:\n  api:\n    tokens_file: {{dir}}/tokens\ntools:\n  sql:\n    databases:\n      - {name: shop, driver: postgres, dsn_env: SHOP_DSN}\n",
		check: func(t *testing.T, c *Config) {
			if c.Store.Redis.Password.Reveal() != "from-a-file" {
				t.Errorf("password = %q", c.Store.Redis.Password.Reveal())
			}
			toks, err := c.Channels.API.Parse()
			if err != nil || len(toks) != 2 || toks[1].User != "bob" || toks[1].Tenant != "acme" {
				t.Errorf("tokens = %+v, %v", toks, err)
			}
			if c.Tools.SQL.Databases[0].DSN != "postgres://u:p@h/db" {
				t.Errorf("dsn not taken from dsn_env")
			}
		},
	},
	{
		name:     "a missing secret file",
		file:     "store:\n  redis:\n    password_file: /nonexistent/pw\n",
		problems: map[string]string{"store.redis.password_file": "no such file"},
	},
	{
		name:     "secret set twice",
		env:      map[string]string{"HITLBOT_STORE_REDIS_PASSWORD": "x"},
		file:     "store:\n  redis:\n    password_file: {{dir}}/pw\n",
		problems: map[string]string{"store.redis.password": "not both"},
	},
	{
		name: "case-sensitive keys survive",
		file: "tools:\n  http:\n    - name: refund\n      method: POST\n      url: https://api.example.com/orders/{{.orderId}}\n      headers: {X-Api-Key: '${KEY}'}\n      parameters: {type: object, properties: {orderId: {type: integer, maxLength: 3}}}\nmodel:\n  rules:\n    patterns:\n      - {name: p, regexp: '(?P<orderId>\\d+)', tool: refund, args: {orderId: '${orderId:int}'}}\n",
		check: func(t *testing.T, c *Config) {
			h := c.Tools.HTTP[0]
			props, _ := h.Parameters["properties"].(map[string]any)
			if _, ok := props["orderId"]; !ok {
				t.Errorf("parameters lost their case: %v", h.Parameters)
			}
			if _, ok := h.Headers["X-Api-Key"]; !ok {
				t.Errorf("headers lost their case: %v", h.Headers)
			}
			if _, ok := c.Model.Rules.Patterns[0].Args["orderId"]; !ok {
				t.Errorf("rule args lost their case: %v", c.Model.Rules.Patterns[0].Args)
			}
		},
	},
	{
		name:     "tracing headers in the file are refused",
		file:     "tracing:\n  endpoint: http://127.0.0.1:4318\n  headers: Authorization=Bearer%20abc\n",
		problems: map[string]string{"tracing.headers": "HITLBOT_TRACING_HEADERS"},
	},
	{
		name: "tracing on, its headers from the environment",
		file: "tracing:\n  endpoint: https://otel.example/v1/traces\n  sample_ratio: 0.25\n",
		env:  map[string]string{"HITLBOT_TRACING_HEADERS": "Authorization=Bearer%20abc, x-tenant = acme"},
		check: func(t *testing.T, c *Config) {
			h, err := c.Tracing.ParseHeaders()
			if err != nil || len(h) != 2 || h["Authorization"] != "Bearer abc" || h["x-tenant"] != "acme" {
				t.Errorf("headers = %v, %v", h, err)
			}
			if c.Tracing.SampleRatio != 0.25 || c.Tracing.ServiceName != "hitlbot" {
				t.Errorf("tracing = %+v", c.Tracing)
			}
		},
	},
	{
		name: "tracing headers from a file",
		file: "tracing:\n  endpoint: http://127.0.0.1:4318\n  headers_file: {{dir}}/pw\n",
		check: func(t *testing.T, c *Config) {
			if c.Tracing.Headers.Reveal() != "from-a-file" {
				t.Errorf("headers = %q", c.Tracing.Headers.Reveal())
			}
		},
	},
	{
		name:     "not YAML",
		file:     "server: [\n",
		problems: map[string]string{"": "not valid YAML"},
	},
}

func TestLoad(t *testing.T) {
	for _, tt := range loadTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "pw"), []byte("from-a-file\n"), 0o600)
			os.WriteFile(filepath.Join(dir, "tokens"), []byte("# who\ntoken-aaaaaaaaaaaaaaaa alice\ntoken-bbbbbbbbbbbbbbbb bob acme\n"), 0o600)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			opts := Options{Overrides: tt.overrides}
			if tt.file != "" {
				opts.File = writeFile(t, strings.ReplaceAll(tt.file, "{{dir}}", dir))
			}
			c, err := Load(opts)
			var ps Problems
			if err != nil {
				var ok bool
				if ps, ok = err.(Problems); !ok {
					t.Fatalf("Load: %v (not Problems)", err)
				}
			}
			if tt.problems == nil {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				tt.check(t, c)
				return
			}
			for path, word := range tt.problems {
				i := slices.IndexFunc(ps, func(p Problem) bool { return p.Path == path })
				if i < 0 {
					t.Errorf("no problem at %q; got:\n%v", path, ps)
					continue
				}
				if !strings.Contains(ps[i].Msg, word) {
					t.Errorf("%s: %q does not say %q", path, ps[i].Msg, word)
				}
			}
			if len(ps) != len(tt.problems) {
				t.Errorf("got %d problems, want %d:\n%v", len(ps), len(tt.problems), ps)
			}
		})
	}
}

// validateTest changes a default config and lists the paths of the
// problems Validate must report (nil: none).
type validateTest struct {
	name   string
	change func(c *Config)
	want   []string
	word   string // a substring of the first problem's message
}

var validateTests = []validateTest{
	{name: "defaults", change: func(c *Config) {}},
	{name: "reminders out of order", change: func(c *Config) { c.Approval.Reminders = []float64{0.9, 0.5} }, want: []string{"approval.reminders"}, word: "ascending"},
	{name: "reminder at the expiry", change: func(c *Config) { c.Approval.Reminders = []float64{1} }, want: []string{"approval.reminders"}, word: "below 1"},
	{
		name:   "tracing: an endpoint that is no URL, a ratio above 1",
		change: func(c *Config) { c.Tracing.Endpoint = "127.0.0.1:4318"; c.Tracing.SampleRatio = 1.5 },
		want:   []string{"tracing.sample_ratio", "tracing.endpoint"},
		word:   "between 0 and 1",
	},
	{
		name: "tracing: a header that is not key=value, said without its value",
		change: func(c *Config) {
			c.Tracing.Endpoint = "http://127.0.0.1:4318"
			c.Tracing.Headers = "Authorization=Bearer%20ok,s3cret-without-a-key"
		},
		want: []string{"tracing.headers"},
		word: "pair 2 is not key=value",
	},
	{
		name:   "non-loopback without public or tokens",
		change: func(c *Config) { c.Server.Listen = "0.0.0.0:8080" },
		want:   []string{"server.listen", "channels.web.tokens", "channels.api.tokens"},
		word:   "server.public: true",
	},
	{
		name:   "public without tokens",
		change: func(c *Config) { c.Server.Listen = ":8080"; c.Server.Public = true },
		want:   []string{"channels.web.tokens", "channels.api.tokens"},
		word:   "anonymous local user",
	},
	{
		name: "public with tokens",
		change: func(c *Config) {
			c.Server.Listen, c.Server.Public = "10.0.0.5:8080", true
			c.Channels.API.Tokens = "tok-aaaaaaaaaaaaaaaa alice acme"
			c.Channels.Web.Enabled = false
		},
	},
	{name: "localhost is loopback", change: func(c *Config) { c.Server.Listen = "localhost:0" }},
	{name: "ipv6 loopback", change: func(c *Config) { c.Server.Listen = "[::1]:8080" }},
	{name: "bad listen", change: func(c *Config) { c.Server.Listen = "8080" }, want: []string{"server.listen"}},
	{name: "public_url https", change: func(c *Config) { c.Server.PublicURL = "https://bot.example.com/hitl/" }},
	{name: "public_url http on loopback", change: func(c *Config) { c.Server.PublicURL = "http://127.0.0.1:8080" }},
	{name: "public_url http", change: func(c *Config) { c.Server.PublicURL = "http://bot.example.com" }, want: []string{"server.public_url"}, word: "https"},
	{name: "public_url no scheme", change: func(c *Config) { c.Server.PublicURL = "bot.example.com" }, want: []string{"server.public_url"}, word: "not a URL"},
	{name: "public_url query", change: func(c *Config) { c.Server.PublicURL = "https://bot.example.com/?x=1" }, want: []string{"server.public_url"}, word: "query"},
	{name: "public_url user", change: func(c *Config) { c.Server.PublicURL = "https://u:p@bot.example.com" }, want: []string{"server.public_url"}, word: "user"},
	{
		name: "policy and replies",
		change: func(c *Config) {
			c.Approval.Policy.ConfidenceThreshold = 1.5
			c.Approval.Policy.HighRows = -1
			c.Approval.Policy.Timeouts = map[string]time.Duration{"high": -time.Second}
			c.Approval.Replies.Confirm = []string{"不行"}
		},
		want: []string{"approval.policy.confidence_threshold", "approval.policy.high_rows", "approval.policy.timeouts.high", "approval.replies.confirm[0]"},
	},
	{
		name: "enums",
		change: func(c *Config) {
			c.Approval.Lang, c.Approval.SessionScope, c.Log.Level = "fr", "per_room", "loud"
			c.Store.Backend, c.Model.Provider = "etcd", "llama"
			c.Approval.OutcomeText = approval.OutcomeText{"exploded": "boom"}
			c.Channels.API.Lang, c.Channels.CLI.Lang = "fr", "xx"
			c.Approval.TimeZone = "Mars/Olympus_Mons"
		},
		want: []string{"log.level", "store.backend", "approval.outcome_text.exploded", "approval.lang", "approval.time_zone", "approval.session_scope", "model.provider", "channels.api.lang", "channels.cli.lang"},
	},
	{
		name: "approve_in",
		change: func(c *Config) {
			c.Channels.Feishu.Enabled = false
			c.Approval.Policy.ApproveIn = map[string]approval.Place{"HIGH": {Channel: "feishu", ChatID: "oc_ops"}, "MEDIUM": {Channel: "web", ChatID: "s1"}}
			c.Approval.Policy.Tools = map[string]approval.ToolPolicy{"drop_table": {ApproveIn: &approval.Place{Channel: "dingtalk"}}}
		},
		want: []string{"approval.policy.tools.drop_table.approve_in.chat_id", "approval.policy.approve_in.MEDIUM.channel",
			"approval.policy.approve_in.HIGH.channel", "approval.policy.tools.drop_table.approve_in.channel"},
	},
	{
		name: "approve_in direct on DingTalk without its card",
		change: func(c *Config) {
			c.Channels.DingTalk.Enabled, c.Channels.DingTalk.CardTemplateID = true, ""
			c.Channels.DingTalk.ClientID, c.Channels.DingTalk.ClientSecret = "app-key", "app-secret"
			c.Approval.Policy.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverUsers, Users: []string{"dba1"}}}
			c.Approval.Policy.ApproveIn = map[string]approval.Place{"HIGH": {Channel: "dingtalk", Direct: true}}
		},
		want: []string{"approval.policy.approve_in.HIGH.direct"},
	},
	{
		name: "escalation to a channel that is not enabled",
		change: func(c *Config) {
			c.Channels.DingTalk.Enabled = false
			step := approval.EscalationConfig{After: time.Minute, To: approval.Place{Channel: "dingtalk", ChatID: "cidoncall"},
				Approvers: approval.ApproverConfig{Mode: approval.ApproverChat}}
			c.Approval.Policy.Escalation = map[string][]approval.EscalationConfig{"HIGH": {step}}
			c.Approval.Policy.Tools = map[string]approval.ToolPolicy{"deploy": {Escalation: []approval.EscalationConfig{step}}}
		},
		want: []string{"approval.policy.tools.deploy.escalation[0].to.channel", "approval.policy.escalation.HIGH[0].to.channel"},
	},
	{
		name: "privacy",
		change: func(c *Config) {
			c.Approval.Policy.Privacy = map[string]approval.Privacy{"HIGH": "secret", "SEVERE": "group", "MEDIUM": "group"}
			c.Approval.Policy.Tools = map[string]approval.ToolPolicy{"drop_table": {Privacy: "hidden"}}
		},
		want: []string{"approval.policy.tools.drop_table.privacy", "approval.policy.privacy.HIGH", "approval.policy.privacy.SEVERE"},
	},
	{
		name:   "redis without an address",
		change: func(c *Config) { c.Store.Backend = "redis" },
		want:   []string{"store.redis"},
	},
	{
		name: "redis with a bad prefix",
		change: func(c *Config) {
			c.Store.Backend, c.Store.Redis.URL, c.Store.Redis.Prefix = "redis", "redis://127.0.0.1:6379", "a{b}"
		},
		want: []string{"store.redis.prefix"},
	},
	{
		name:   "openai without model or key",
		change: func(c *Config) { c.Model.Provider = "openai" },
		want:   []string{"model.openai.model", "model.openai.api_key"},
		word:   "required",
	},
	{
		name: "openai on a local server needs no key",
		change: func(c *Config) {
			c.Model.Provider, c.Model.OpenAI.Model, c.Model.OpenAI.BaseURL = "openai", "qwen", "http://127.0.0.1:8000/v1"
		},
	},
	{
		name:   "non-positive durations",
		change: func(c *Config) { c.Approval.DedupTTL = 0; c.Server.ShutdownTimeout = -1 },
		want:   []string{"server.shutdown_timeout", "approval.dedup_ttl"},
	},
	{
		name: "tools",
		change: func(c *Config) {
			c.Tools.SQL.Databases = []SQLDatabase{{}}
			c.Tools.SQL.Databases[0].Driver = "oracle"
			c.Tools.Shell.Enabled = true
			c.Tools.Shell.Commands = append(c.Tools.Shell.Commands, shellCommand("task_list"))
		},
		want: []string{"tools.sql.databases[0].name", "tools.sql.databases[0].driver", "tools.sql.databases[0].dsn", "tools"},
	},
	{
		name: "shell tools cannot be made to run unasked",
		change: func(c *Config) {
			c.Tools.Shell.Enabled = true
			c.Tools.Shell.Commands = append(c.Tools.Shell.Commands, shellCommand("restart_app"))
			c.Approval.Policy.Enabled = false
			c.Approval.Policy.Tools = map[string]approval.ToolPolicy{"restart_app": {Risk: "low", Confirm: "never"}}
		},
		want: []string{"approval.policy.enabled", "approval.policy.tools.restart_app.risk", "approval.policy.tools.restart_app.confirm"},
	},
	{
		name: "a shell tool may be pinned HIGH explicitly",
		change: func(c *Config) {
			c.Tools.Shell.Enabled = true
			c.Tools.Shell.Commands = append(c.Tools.Shell.Commands, shellCommand("restart_app"))
			c.Approval.Policy.Tools = map[string]approval.ToolPolicy{"restart_app": {Risk: "HIGH", Confirm: "always"}}
		},
		want: nil,
	},
	{
		name: "allow-lists with empty entries",
		change: func(c *Config) {
			c.Channels.Feishu.Allow.Users = []string{"ou_a", ""}
			c.Channels.CLI.Allow.Chats = []string{" cli"}
		},
		want: []string{"channels.cli.allow.chats[0]", "channels.feishu.allow.users[1]"},
		word: "spaces around it",
	},
	{
		name:   "reply clock skew out of bounds",
		change: func(c *Config) { c.Approval.ReplyClockSkew = 2 * time.Minute },
		want:   []string{"approval.reply_clock_skew"},
		word:   "not between 0 and 1m0s",
	},
	{
		name:   "no reply clock skew",
		change: func(c *Config) { c.Approval.ReplyClockSkew = 0 },
		want:   []string{"approval.reply_clock_skew"},
	},
	{
		name:   "one web user in two tenants",
		change: func(c *Config) { c.Channels.Web.Tokens = "aaaaaaaaaaaaaaaa alice acme, bbbbbbbbbbbbbbbb alice globex" },
		want:   []string{"channels.web.tokens"},
		word:   "two tenants",
	},
	{
		name:   "bad tokens",
		change: func(c *Config) { c.Channels.API.Tokens = "short alice" },
		want:   []string{"channels.api.tokens"},
		word:   "shorter than 16",
	},
}

func TestValidate(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tt := range validateTests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(Options{})
			if err != nil {
				t.Fatal(err)
			}
			tt.change(c)
			err = c.Validate()
			var ps Problems
			if err != nil {
				ps = err.(Problems)
			}
			if !slices.Equal(paths(ps), tt.want) {
				t.Errorf("problems at %q, want %q:\n%v", paths(ps), tt.want, ps)
			}
			if tt.word != "" && len(ps) > 0 && !strings.Contains(ps[0].Msg, tt.word) {
				t.Errorf("%q does not say %q", ps[0].Msg, tt.word)
			}
		})
	}
}

func TestCheckDoesNotRepeat(t *testing.T) {
	t.Chdir(t.TempDir())
	_, ps := Check(Options{File: writeFile(t, "server:\n  shutdown_timeout: soon\n")})
	if got := paths(ps); !slices.Equal(got, []string{"server.shutdown_timeout"}) {
		t.Errorf("Check problems at %q, want one at server.shutdown_timeout:\n%v", got, ps)
	}
}

func TestDumpRedacts(t *testing.T) {
	t.Chdir(t.TempDir())
	secrets := map[string]string{
		"HITLBOT_STORE_REDIS_PASSWORD":  "redis-pw-123456",
		"HITLBOT_MODEL_OPENAI_API_KEY":  "sk-openai-123456",
		"HITLBOT_CHANNELS_API_TOKENS":   "api-token-1234567890 alice",
		"HITLBOT_STORE_REDIS_URL":       "redis://:url-pw-123456@127.0.0.1:6379/0",
		"HITLBOT_CHANNELS_WEB_TOKENS":   "web-token-1234567890 bob",
		"HITLBOT_STORE_BACKEND":         "redis",
		"SHOP_DSN_FOR_TEST":             "postgres://u:dsn-pw-123456@h/db",
		"HITLBOT_MODEL_OPENAI_BASE_URL": "http://127.0.0.1:1/v1",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	file := writeFile(t, "model:\n  openai:\n    headers: {X-Gateway-Key: hdr-secret-123456}\ntools:\n  sql:\n    databases:\n      - {name: shop, driver: postgres, dsn_env: SHOP_DSN_FOR_TEST}\n")
	c, err := Load(Options{File: file})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Dump()
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	for _, leak := range []string{"redis-pw", "sk-openai", "api-token", "web-token", "url-pw", "dsn-pw", "hdr-secret"} {
		if strings.Contains(out, leak) {
			t.Errorf("the dump shows %q:\n%s", leak, out)
		}
	}
	for _, want := range []string{"password: <secret>", "api_key: <secret>", "tokens: <secret>", "url: redis://:<secret>@127.0.0.1:6379/0", "dsn: <secret>", "X-Gateway-Key: <secret>", "backend: redis"} {
		if !strings.Contains(out, want) {
			t.Errorf("the dump lacks %q:\n%s", want, out)
		}
	}

	// Printing the config or a secret any other way redacts too.
	s := c.Store.Redis.Password
	jb, _ := json.Marshal(struct{ P Secret }{s})
	var lb strings.Builder
	slog.New(slog.NewTextHandler(&lb, nil)).Info("x", "pw", s)
	for _, shown := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s", s, c.Store.Redis, s, s), string(jb), lb.String()} {
		if strings.Contains(shown, "redis-pw") || !strings.Contains(shown, "secret") {
			t.Errorf("a secret printed as %q", shown)
		}
	}
}

func TestBindingsAreUnique(t *testing.T) {
	seen := map[string]string{}
	for _, b := range Bindings() {
		for _, env := range []string{b.Env, b.Alias} {
			if env == "" {
				continue
			}
			if p, dup := seen[env]; dup {
				t.Errorf("%s binds both %s and %s", env, p, b.Path)
			}
			seen[env] = b.Path
		}
	}
	for _, want := range []string{"HITLBOT_FEISHU_APP_SECRET", "HITLBOT_APPROVAL_TIMEOUT", "HITLBOT_MODEL_OPENAI_API_KEY", "HITLBOT_APPROVAL_POLICY_TIMEOUTS_HIGH", "HITLBOT_APPROVAL_POLICY_APPROVERS_HIGH_USERS", "HITLBOT_STORE_REDIS_PASSWORD"} {
		if _, ok := seen[want]; !ok {
			t.Errorf("%s is not bound", want)
		}
	}
}

type tokenTest struct {
	in    string
	users []string
	err   string
}

var tokenTests = []tokenTest{
	{in: "", users: nil},
	{in: "aaaaaaaaaaaaaaaa alice, bbbbbbbbbbbbbbbb bob acme", users: []string{"alice", "bob"}},
	{in: "# comment\naaaaaaaaaaaaaaaa alice\n\nbbbbbbbbbbbbbbbb bob", users: []string{"alice", "bob"}},
	{in: "aaaaaaaaaaaaaaaa", err: "want \"TOKEN USER [TENANT]\""},
	{in: "aaaaaaaaaaaaaaaa alice, aaaaaaaaaaaaaaaa bob", err: "twice"},
	{in: "short alice", err: "shorter than 16"},
}

func TestTokens(t *testing.T) {
	for _, tt := range tokenTests {
		toks, err := Auth{Tokens: Secret(tt.in)}.Parse()
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: got error %v, want %q", tt.in, err, tt.err)
			}
			if err != nil && strings.Contains(err.Error(), "aaaa") {
				t.Errorf("%q: the error shows the token: %v", tt.in, err)
			}
			continue
		}
		var users []string
		for _, tok := range toks {
			users = append(users, tok.User)
		}
		if err != nil || !slices.Equal(users, tt.users) {
			t.Errorf("%q: got %q, %v; want %q", tt.in, users, err, tt.users)
		}
	}
}

func shellCommand(name string) shell.CommandConfig {
	return shell.CommandConfig{Name: name, Argv: []string{"/bin/true"}, Parameters: map[string]any{"type": "object"}}
}

// TestAgentPatternsKeepTheirCase: agents[].policy keys are tool patterns:
// Bash(rm *) and Read(*.go) must come through as written, not folded to
// lower case or split at the dot as viper does with keys.
func TestAgentPatternsKeepTheirCase(t *testing.T) {
	t.Setenv("AGENT_CI_TOKEN", "ci-token-0123456789abcdef")
	file := writeFile(t, `agents:
  - name: ci
    token_env: AGENT_CI_TOKEN
    approve_in: {channel: feishu, chat_id: oc_1}
    policy:
      "Read(*.go)|Grep": {risk: LOW}
      "Bash(rm *)": {risk: HIGH}
      "*": {risk: MEDIUM}
`)
	c, err := Load(Options{File: file})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Agents) != 1 {
		t.Fatalf("agents: %+v", c.Agents)
	}
	p := c.Agents[0].Policy
	if p["Read(*.go)|Grep"].Risk != "LOW" || p["Bash(rm *)"].Risk != "HIGH" || p["*"].Risk != "MEDIUM" || len(p) != 3 {
		t.Fatalf("policy as loaded: %+v", p)
	}
}
