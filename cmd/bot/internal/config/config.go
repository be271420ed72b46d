package config

import (
	"fmt"
	"iter"
	"net/url"
	"strings"
	"time"

	"github.com/hitlbot/hitlbot/agent/model"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/cli"
	"github.com/hitlbot/hitlbot/channels/dingtalk"
	"github.com/hitlbot/hitlbot/channels/feishu"
	"github.com/hitlbot/hitlbot/gate"
	"github.com/hitlbot/hitlbot/tools/httptool"
	"github.com/hitlbot/hitlbot/tools/mcptool"
	"github.com/hitlbot/hitlbot/tools/shell"
	sqltool "github.com/hitlbot/hitlbot/tools/sql"
)

// Config is the whole YAML file. Every section is a struct whose fields
// carry a comment each: the structs are the reference of the file, and
// config.yaml.example repeats them with sample values.
type Config struct {
	// Server is the HTTP server: where it listens and where local files live.
	Server Server `mapstructure:"server"`
	// Log is the process log (JSON lines on stderr).
	Log Log `mapstructure:"log"`
	// Store says where approvals, de-duplication marks and conversations
	// live: in this process (memory) or in Redis (several replicas).
	Store Store `mapstructure:"store"`
	// Approval is when a tool call waits for a person and how people answer.
	Approval Approval `mapstructure:"approval"`
	// Audit is the hash-chained audit trail.
	Audit Audit `mapstructure:"audit"`
	// Model is what turns messages into answers and tool calls.
	Model Model `mapstructure:"model"`
	// Tools are the tools the agent may call.
	Tools Tools `mapstructure:"tools"`
	// Agents are the other agents (Claude Code, Codex, any program) that
	// may ask hitlbot's people for approval, at /mcp and
	// POST /api/approvals. Changes need a restart.
	Agents []gate.AgentConfig `mapstructure:"agents"`
	// Channels are the chat surfaces.
	Channels Channels `mapstructure:"channels"`
	// Metrics is the Prometheus endpoint.
	Metrics Metrics `mapstructure:"metrics"`
	// Tracing sends OpenTelemetry spans of turns and approvals to an
	// OTLP/HTTP collector. Off unless an endpoint is set. Changes need a
	// restart.
	Tracing Tracing `mapstructure:"tracing"`

	// file is the config file that was read ("" for none).
	file string
}

// File returns the path of the config file that was read, or "" when the
// embedded defaults and the environment alone made the config.
func (c *Config) File() string { return c.file }

// Server is the YAML section server.
type Server struct {
	// Listen is the HTTP address, host:port. Default 127.0.0.1:8080. A
	// non-loopback address needs Public and tokens on every enabled HTTP
	// channel (see Validate). Port 0 picks a free port.
	Listen string `mapstructure:"listen"`
	// DataDir holds local files: the demo database and the audit file.
	// Default ./data. Created when missing.
	DataDir string `mapstructure:"data_dir"`
	// ShutdownTimeout bounds a graceful stop (SIGINT, SIGTERM): in-flight
	// requests and decisions get this long. Default 30s.
	ShutdownTimeout time.Duration `mapstructure:"shutdown_timeout"`
	// Public allows listening on a non-loopback address. It is an explicit
	// opt-in: with it, every enabled HTTP channel (web, api) must also have
	// bearer tokens, because the anonymous local user would otherwise be
	// anyone on the network. Default false.
	Public bool `mapstructure:"public"`
	// PublicURL is the base URL at which the platforms reach the bot from
	// outside (a reverse proxy or tunnel in front of Listen), e.g.
	// https://bot.example.com: Feishu's webhook is PublicURL +
	// "/webhook/feishu", DingTalk's HTTP mode PublicURL +
	// "/webhook/dingtalk". https (http only for a loopback host), no query.
	// Optional: only `bot doctor` reads it, to post to those URLs as the
	// platforms do; without it doctor only names them. Default empty.
	PublicURL string `mapstructure:"public_url"`
}

// Log is the YAML section log.
type Log struct {
	// Level is debug, info, warn or error. Default info.
	Level string `mapstructure:"level"`
}

// Store is the YAML section store.
type Store struct {
	// Backend is memory (one process; everything is lost on restart) or
	// redis (survives restarts; shared by replicas). Default memory.
	Backend string `mapstructure:"backend"`
	// Redis says how to reach Redis when store.backend is redis.
	Redis Redis `mapstructure:"redis"`
	// Retention is how long records of ended approvals (and conversations
	// in Redis) are kept, so a late click gets "already decided" rather
	// than "missing". Default 168h (7 days).
	Retention time.Duration `mapstructure:"retention"`
}

// Redis is the YAML section store.redis: the fields of
// redisstore.ClientConfig, the key prefix, and the password as a secret.
type Redis struct {
	// URL is one server: redis://[user@]host[:port][/db], or rediss:// for
	// TLS. Put the password in Password (HITLBOT_STORE_REDIS_PASSWORD), not
	// in the URL; a URL with a password is refused in the file (from the
	// environment it is accepted). Mutually exclusive with Addrs.
	URL string `mapstructure:"url"`
	// Addrs are host:port seeds of a Redis Cluster, or the Sentinels when
	// MasterName is set. From the environment: comma-separated.
	Addrs []string `mapstructure:"addrs"`
	// MasterName is the master the Sentinels watch; it makes Addrs Sentinels.
	MasterName string `mapstructure:"master_name"`
	// Username is the ACL user (Redis 6+).
	Username string `mapstructure:"username"`
	// Password authenticates to Redis. Secret: set
	// HITLBOT_STORE_REDIS_PASSWORD or PasswordFile, never the file itself.
	Password Secret `mapstructure:"password"`
	// PasswordFile is a file holding the password (a mounted secret);
	// surrounding white space is trimmed.
	PasswordFile string `mapstructure:"password_file"`
	// DB is the logical database of a single server or Sentinel master.
	DB int `mapstructure:"db"`
	// TLS enables TLS for Addrs (for URL use rediss://).
	TLS bool `mapstructure:"tls"`
	// DialTimeout bounds connecting. 0: go-redis's default (5s).
	DialTimeout time.Duration `mapstructure:"dial_timeout"`
	// ReadTimeout bounds waiting for a reply. 0: go-redis's default (3s).
	ReadTimeout time.Duration `mapstructure:"read_timeout"`
	// WriteTimeout bounds sending a command. 0: ReadTimeout.
	WriteTimeout time.Duration `mapstructure:"write_timeout"`
	// PoolSize is the connections per server. 0: go-redis's default.
	PoolSize int `mapstructure:"pool_size"`
	// ReplicaAcks, when positive, runs a tool only once this many replicas
	// have acknowledged the claim that allows it (Redis WAIT in the claim's
	// round trip). Replication is asynchronous: a claim lost in a Sentinel
	// failover leaves the approval pending on the new master, where a
	// second click could run the tool again. A claim acknowledged by fewer
	// replicas in time runs nothing and the approval fails. 0: no wait.
	ReplicaAcks int `mapstructure:"replica_acks"`
	// ReplicaAckTimeout bounds that wait. 0: 1s.
	ReplicaAckTimeout time.Duration `mapstructure:"replica_ack_timeout"`
	// AutoPipeline sends the approval store's commands through go-redis's
	// auto-pipeliner on a single server or a Sentinel master: commands
	// that conversations send at the same moment share one write and one
	// read on one connection, which costs this process and Redis less
	// (measured: docs/measured.md). Each command still waits for its own
	// reply. false sends each in a round trip of its own; a Cluster is
	// never batched.
	AutoPipeline bool `mapstructure:"auto_pipeline"`
	// SessionLockTTL is how long a conversation's turn lock outlives the
	// last renewal by its holder: a replica that dies mid-turn (or while a
	// turn waits for an approval) blocks that conversation's other
	// replicas, and the resumption of its turn, at most this long. It is
	// renewed every third of it. 0: 30s.
	SessionLockTTL time.Duration `mapstructure:"session_lock_ttl"`
	// Prefix is put before every key and pub/sub channel, so several
	// deployments can share one Redis. No '{' or '}'. Default "hitl:".
	Prefix string `mapstructure:"prefix"`
}

// ClientConfig returns the redisstore client configuration.
func (r Redis) ClientConfig() redisstore.ClientConfig {
	return redisstore.ClientConfig{
		URL:          r.URL,
		Addrs:        r.Addrs,
		MasterName:   r.MasterName,
		Username:     r.Username,
		Password:     r.Password.Reveal(),
		DB:           r.DB,
		TLS:          r.TLS,
		DialTimeout:  r.DialTimeout,
		ReadTimeout:  r.ReadTimeout,
		WriteTimeout: r.WriteTimeout,
		PoolSize:     r.PoolSize,
	}
}

// AuditStreamKey is the Redis stream of the audit trail, by the
// convention of audit.RedisSink: "<prefix>{audit}:stream".
func (r Redis) AuditStreamKey() string { return r.Prefix + "{audit}:stream" }

// Approval is the YAML section approval.
type Approval struct {
	// Policy says when a tool call must wait for a person, who may decide
	// and for how long. It reloads on SIGHUP and when the file changes; a
	// pending approval keeps the rules it was created under.
	Policy approval.PolicyConfig `mapstructure:"policy"`
	// Replies are the keywords of typed answers (确认 / 取消 and friends).
	Replies approval.ReplyConfig `mapstructure:"replies"`
	// OutcomeText overrides the words shown for an outcome status
	// (executed, rejected, expired, …); missing ones use the defaults of Lang.
	OutcomeText approval.OutcomeText `mapstructure:"outcome_text"`
	// Timeout is how long an approval waits when policy.timeouts names no
	// timeout for its risk. Default 5m.
	Timeout time.Duration `mapstructure:"timeout"`
	// Lang is the language of every surface: zh or en. Empty (the
	// default): each surface's own (zh on Feishu and DingTalk, the
	// browser's on the web page, the locale for the API and `bot chat`;
	// see lang.go).
	Lang string `mapstructure:"lang"`
	// TimeZone is the IANA name of the zone Feishu and DingTalk cards (and
	// the terminal's) show times in ("Asia/Shanghai"); empty, the server's
	// local zone. See Zone.
	TimeZone string `mapstructure:"time_zone"`
	// SessionScope is how conversations (and their approvals) are keyed in
	// a chat: per_chat (one per chat, default), per_user (one per person in
	// a group) or per_thread (one per topic/thread).
	SessionScope string `mapstructure:"session_scope"`
	// DedupTTL is how long a platform event or message id is remembered to
	// drop redeliveries. Default 24h (Feishu redelivers for about 7 hours).
	DedupTTL time.Duration `mapstructure:"dedup_ttl"`
	// ResultTTL is how long an executed result is kept so a repeated
	// approval of the same call replays it instead of running twice.
	// Default 24h.
	ResultTTL time.Duration `mapstructure:"result_ttl"`
	// ReplyClockSkew is the allowance between the platform's clock and
	// this server's when a typed 确认 / 取消 is matched with the pending
	// approval: a reply written (by the platform's create time of the
	// message) more than this before the approval was created is not a
	// decision for it and goes to the agent as text, so that a replayed or
	// long-delayed old reply never decides a newer approval. Default 5s.
	ReplyClockSkew time.Duration `mapstructure:"reply_clock_skew"`
	// ExecTimeout bounds one approved tool run. Default 2m.
	ExecTimeout time.Duration `mapstructure:"exec_timeout"`
	// SweepInterval is how often one replica expires approvals that passed
	// their expiry with nobody waiting, and settles their cards, and takes
	// the escalation steps that are due (a step is taken at the first
	// sweep after its time). Default 10s.
	SweepInterval time.Duration `mapstructure:"sweep_interval"`
	// Reminders are the moments of a pending approval's window (from its
	// request to its expiry), as fractions of it, at which the people who
	// may decide it are reminded in the chat where they decide it,
	// mentioned by name (Feishu, DingTalk; a notice on the web page and in
	// bot chat): at most 4, each above 0 and below 1, ascending; once each
	// per approval, whichever replica sweeps, at the first sweep after its
	// time. A private approval's reminder says its code and who asked, not
	// the call. Empty ([]) turns reminders off. Default [0.5, 0.9].
	Reminders []float64 `mapstructure:"reminders"`
}

// EffectivePolicy returns Policy with Timeout filled in for every risk
// that policy.timeouts leaves out.
func (a Approval) EffectivePolicy() approval.PolicyConfig {
	p := a.Policy
	t := make(map[string]time.Duration, 3)
	for k, v := range p.Timeouts {
		t[k] = v
	}
	for _, r := range []approval.Risk{approval.RiskLow, approval.RiskMedium, approval.RiskHigh} {
		found := false
		for k := range t {
			found = found || strings.EqualFold(k, r.String())
		}
		if !found && a.Timeout > 0 {
			t[strings.ToLower(r.String())] = a.Timeout
		}
	}
	p.Timeouts = t
	return p
}

// Audit is the YAML section audit.
type Audit struct {
	// File is the JSON-lines audit file. Default <server.data_dir>/audit.jsonl.
	File string `mapstructure:"file"`
	// FSync syncs the file after every batch (slower, survives a power
	// cut). Default false.
	FSync bool `mapstructure:"fsync"`
	// RedisStreamMaxLen bounds the Redis stream the trail is also written
	// to when store.backend is redis (approximately; the oldest records go
	// first). 0 keeps everything. Default 1000000.
	RedisStreamMaxLen int64 `mapstructure:"redis_stream_maxlen"`
}

// Model is the YAML section model.
type Model struct {
	// Provider is rules (deterministic commands, no LLM; the default) or
	// openai (any OpenAI-compatible chat-completions API).
	Provider string `mapstructure:"provider"`
	// OpenAI configures the openai provider. The key is a secret: set
	// HITLBOT_MODEL_OPENAI_API_KEY or model.openai.api_key_file.
	OpenAI model.OpenAIConfig `mapstructure:"openai"`
	// Rules configures the rules provider: extra command patterns.
	Rules model.RulesConfig `mapstructure:"rules"`
	// SystemPrompt is sent first in every model request.
	SystemPrompt string `mapstructure:"system_prompt"`
	// MaxToolRounds caps the model calls of one turn that ask for tools.
	// Default 8.
	MaxToolRounds int `mapstructure:"max_tool_rounds"`
	// MaxHistory caps the messages remembered per conversation. Default 60.
	MaxHistory int `mapstructure:"max_history"`
	// TurnTimeout bounds one turn, approval waits included. Default 15m.
	TurnTimeout time.Duration `mapstructure:"turn_timeout"`
}

// Tools is the YAML section tools.
type Tools struct {
	// SQL are the sql_query and sql_execute tools. With no databases
	// configured, they work on the demo SQLite database in the data
	// directory.
	SQL SQL `mapstructure:"sql"`
	// HTTP are tools that call HTTP endpoints, one per entry.
	HTTP []httptool.ToolConfig `mapstructure:"http"`
	// Shell are allow-listed commands; off by default.
	Shell shell.Config `mapstructure:"shell"`
	// Tasks are the demo to-do tools (task_create, task_list,
	// task_complete, task_delete) on the demo database.
	Tasks Tasks `mapstructure:"tasks"`
	// MCP are the MCP servers whose tools the agent may use.
	MCP MCP `mapstructure:"mcp"`
}

// MCP is the YAML section tools.mcp.
type MCP struct {
	// Servers are the MCP servers, each offering its tools as
	// <name>__<tool>. Changes need a restart.
	Servers []mcptool.ServerConfig `mapstructure:"servers"`
}

// SQL is the YAML section tools.sql.
type SQL struct {
	// Databases are the databases the SQL tools may use. Empty: the demo
	// database, named "demo".
	Databases []SQLDatabase `mapstructure:"databases"`
}

// SQLDatabase is one entry of tools.sql.databases: sqltool.DatabaseConfig
// plus two ways to keep its DSN out of the file.
type SQLDatabase struct {
	sqltool.DatabaseConfig `mapstructure:",squash"`
	// DSNEnv names an environment variable holding the DSN. A DSN with a
	// password must come from here or DSNFile: in the file, dsn is
	// accepted for sqlite only.
	DSNEnv string `mapstructure:"dsn_env"`
	// DSNFile is a file holding the DSN; surrounding white space is trimmed.
	DSNFile string `mapstructure:"dsn_file"`
}

// Tasks is the YAML section tools.tasks.
type Tasks struct {
	// Enabled offers the demo to-do tools. Default true.
	Enabled bool `mapstructure:"enabled"`
}

// Channels is the YAML section channels. Feishu and DingTalk come with
// their own sections once those channels exist.
type Channels struct {
	// Web is the browser chat: the page at / and its WebSocket at /ws.
	Web Web `mapstructure:"web"`
	// API is the HTTP API: POST /agent/chat and /api/approvals.
	API API `mapstructure:"api"`
	// CLI is the terminal chat of `bot chat`. Its lang, when empty, is
	// approval.lang.
	CLI CLI `mapstructure:"cli"`
	// DingTalk is the DingTalk robot (stream mode by default).
	DingTalk DingTalk `mapstructure:"dingtalk"`
	// Feishu is the Feishu (Lark) bot (long connection by default).
	Feishu Feishu `mapstructure:"feishu"`
}

// Allow returns the allow-list of each channel, by the channel's name, in
// the order web, api, cli, dingtalk, feishu.
func (c Channels) Allow() iter.Seq2[string, channels.Allow] {
	return func(yield func(string, channels.Allow) bool) {
		for _, e := range []struct {
			name  string
			allow channels.Allow
		}{{"web", c.Web.Allow}, {"api", c.API.Allow}, {cli.Name, c.CLI.Allow}, {dingtalk.Name, c.DingTalk.Allow}, {feishu.Name, c.Feishu.Allow}} {
			if !yield(e.name, e.allow) {
				return
			}
		}
	}
}

// Feishu is the YAML section channels.feishu: the channel's own config (see
// channels/feishu), whether it is on, and where its secrets come from.
type Feishu struct {
	// Enabled turns the Feishu channel on.
	Enabled bool `mapstructure:"enabled"`
	// Config is the channel's configuration. app_secret, encrypt_key and
	// verification_token are secrets: set HITLBOT_CHANNELS_FEISHU_APP_SECRET
	// (…_ENCRYPT_KEY, …_VERIFICATION_TOKEN) or the *_file keys.
	feishu.Config `mapstructure:",squash"`
	// AppSecretFile is a file holding app_secret.
	AppSecretFile string `mapstructure:"app_secret_file"`
	// EncryptKeyFile is a file holding encrypt_key.
	EncryptKeyFile string `mapstructure:"encrypt_key_file"`
	// VerificationTokenFile is a file holding verification_token.
	VerificationTokenFile string `mapstructure:"verification_token_file"`
	// Allow is who may use the bot on Feishu (users: open_ids ou_…;
	// chats: chat_ids oc_…). Empty: everyone who can reach the app.
	Allow channels.Allow `mapstructure:"allow"`
}

// DingTalk is the YAML section channels.dingtalk: the channel's own config
// (see channels/dingtalk), whether it is on, and where its secret comes from.
type DingTalk struct {
	// Enabled turns the DingTalk channel on.
	Enabled bool `mapstructure:"enabled"`
	// Config is the channel's configuration. client_secret is a secret: set
	// HITLBOT_CHANNELS_DINGTALK_CLIENT_SECRET or client_secret_file.
	dingtalk.Config `mapstructure:",squash"`
	// ClientSecretFile is a file holding client_secret (a mounted secret).
	ClientSecretFile string `mapstructure:"client_secret_file"`
	// Allow is who may use the robot (users: staff ids, or the sender id
	// of external members; chats: conversationIds cid…). Empty: everyone
	// who can reach the robot.
	Allow channels.Allow `mapstructure:"allow"`
}

// CLI is the YAML section channels.cli: the channel's own config (see
// channels/cli) and its allow-list.
type CLI struct {
	// Config is the channel's configuration.
	cli.Config `mapstructure:",squash"`
	// Allow is who may use `bot chat` (users: channels.cli.user, or the OS
	// user name when that is empty). Empty: everyone.
	Allow channels.Allow `mapstructure:"allow"`
}

// Auth holds the bearer tokens of an HTTP channel.
type Auth struct {
	// Tokens lists who may use the channel: entries "TOKEN USER [TENANT]"
	// separated by commas or new lines (tokens of at least 16 characters;
	// the API puts a user without a tenant in the tenant "default"). Secret: set it from the
	// environment (HITLBOT_CHANNELS_<NAME>_TOKENS) or TokensFile. Empty, on
	// a loopback address: one anonymous local user.
	Tokens Secret `mapstructure:"tokens"`
	// TokensFile is a file in the same format, one entry per line; lines
	// starting with # are comments.
	TokensFile string `mapstructure:"tokens_file"`
}

// Web is the YAML section channels.web.
type Web struct {
	// Enabled serves the chat page at / and the WebSocket at /ws. Default true.
	Enabled bool `mapstructure:"enabled"`
	Auth    `mapstructure:",squash"`
	// Allow is who may use the chat page (users: the users the tokens map
	// to; "local" for the anonymous local user). Empty: every token.
	Allow channels.Allow `mapstructure:"allow"`
}

// API is the YAML section channels.api.
type API struct {
	// Enabled serves POST /agent/chat and /api/approvals. Default true.
	Enabled bool `mapstructure:"enabled"`
	Auth    `mapstructure:",squash"`
	// MaxPendingPerUser caps the pending actions of one user; a message
	// that could open one more gets 429 rate_limited. Default 10.
	MaxPendingPerUser int `mapstructure:"max_pending_per_user"`
	// TurnTimeout is how long POST /agent/chat waits for the agent's turn
	// before it answers with what it has ("incomplete": true); the turn
	// itself goes on. Default 60s.
	TurnTimeout time.Duration `mapstructure:"turn_timeout"`
	// Lang is the language of the API's own words (error messages, the
	// text of an answer that waits) for a request whose Accept-Language
	// names neither zh nor en: zh or en. Empty: approval.lang.
	Lang string `mapstructure:"lang"`
	// Allow is who may use the API (users: "tenant/user" as the tokens map
	// them; "local/local" for the anonymous local user). Empty: every
	// token.
	Allow channels.Allow `mapstructure:"allow"`
}

// Metrics is the YAML section metrics.
type Metrics struct {
	// Enabled serves Prometheus metrics. Default true.
	Enabled bool `mapstructure:"enabled"`
	// Path is the URL path the metrics are served at. Default /metrics.
	Path string `mapstructure:"path"`
}

// Tracing is the YAML section tracing.
type Tracing struct {
	// Endpoint is the collector's OTLP/HTTP base URL
	// (http://127.0.0.1:4318); spans are POSTed to its /v1/traces as
	// OTLP JSON (a URL whose path ends in /v1/traces is used as it is).
	// Empty (the default): tracing off, nothing is recorded or sent.
	Endpoint string `mapstructure:"endpoint"`
	// Headers are HTTP headers sent with every export, as
	// OTEL_EXPORTER_OTLP_HEADERS writes them: key=value pairs separated
	// by commas (Authorization=Bearer%20xyz, values URL-encoded). A
	// secret: set HITLBOT_TRACING_HEADERS or headers_file, never the
	// config file.
	Headers Secret `mapstructure:"headers"`
	// HeadersFile is a file holding headers (a mounted secret).
	HeadersFile string `mapstructure:"headers_file"`
	// SampleRatio is the share of new traces recorded, from 0 to 1; a
	// turn or an approval whose caller sent a traceparent follows the
	// caller's choice. Default 1 (all).
	SampleRatio float64 `mapstructure:"sample_ratio"`
	// ServiceName is the service.name the spans are sent under. Default
	// hitlbot.
	ServiceName string `mapstructure:"service_name"`
}

// ParseHeaders reads Headers: "k=v,k2=v2", keys and values trimmed and
// URL-decoded. Errors name the pair by its number, never its value.
func (t Tracing) ParseHeaders() (map[string]string, error) {
	out := map[string]string{}
	for i, pair := range strings.Split(t.Headers.Reveal(), ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, fmt.Errorf("pair %d is not key=value", i+1)
		}
		dk, err1 := url.QueryUnescape(k)
		dv, err2 := url.PathUnescape(v)
		if err1 != nil || err2 != nil || strings.ContainsAny(dk, " \t\r\n:") || strings.ContainsAny(dv, "\r\n") {
			return nil, fmt.Errorf("pair %d is not a valid header (key %q)", i+1, dk)
		}
		out[dk] = dv
	}
	return out, nil
}

// Zone is approval.time_zone as a location: the named zone, or the
// server's local zone when none is named.
func (a Approval) Zone() (*time.Location, error) {
	if a.TimeZone == "" {
		return time.Local, nil
	}
	return time.LoadLocation(a.TimeZone)
}
