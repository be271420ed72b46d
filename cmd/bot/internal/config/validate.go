package config

import (
	"errors"
	"fmt"
	"github.com/hitlbot/hitlbot/channels/dingtalk"
	"github.com/hitlbot/hitlbot/internal/tracing"
	"maps"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hitlbot/hitlbot/agent/model"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/gate"
	"github.com/hitlbot/hitlbot/tools/httptool"
	"github.com/hitlbot/hitlbot/tools/mcptool"
	"github.com/hitlbot/hitlbot/tools/shell"
	"github.com/hitlbot/hitlbot/words"
)

// Validate reports every problem of the config, each at its YAML path. It
// does no network I/O; it reads the secret files named in the config and
// looks up the shell tools' programs.
func (c *Config) Validate() error {
	var ps Problems
	c.validateServer(&ps)
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		ps.add("log.level", fmt.Sprintf("%q is not debug, info, warn or error", c.Log.Level))
	}
	c.validateStore(&ps)
	c.validateApproval(&ps)
	if c.Audit.RedisStreamMaxLen < 0 {
		ps.add("audit.redis_stream_maxlen", "must not be negative (0 keeps everything)")
	}
	if c.Audit.File == "" {
		ps.add("audit.file", "is empty (and so is server.data_dir)")
	}
	c.validateModel(&ps)
	c.validateTools(&ps)
	c.validateChannels(&ps)
	c.validatePlaceholders(&ps)
	if c.Metrics.Enabled && !strings.HasPrefix(c.Metrics.Path, "/") {
		ps.add("metrics.path", fmt.Sprintf("%q must start with /", c.Metrics.Path))
	}
	c.validateTracing(&ps)
	return ps.Err()
}

// Loopback reports whether a listen address only accepts connections from
// this machine: localhost, 127.0.0.0/8 or ::1. An empty host (":8080")
// means every interface.
func Loopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (c *Config) validateServer(ps *Problems) {
	s := c.Server
	host, port, err := net.SplitHostPort(s.Listen)
	if err != nil {
		ps.add("server.listen", fmt.Sprintf("%q is not host:port (e.g. 127.0.0.1:8080)", s.Listen))
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		ps.add("server.listen", fmt.Sprintf("port %q is not a number from 0 to 65535", port))
	} else if !Loopback(s.Listen) && !s.Public {
		where := host
		if where == "" {
			where = "every interface"
		}
		ps.add("server.listen", fmt.Sprintf("%s listens on %s, which other machines can reach, and anyone who reaches the bot can run its tools; "+
			"set server.public: true (HITLBOT_SERVER_PUBLIC=true) and bearer tokens for every enabled HTTP channel to allow it, or listen on 127.0.0.1", s.Listen, where))
	}
	if s.DataDir == "" {
		ps.add("server.data_dir", "is empty (the demo database and the audit file live there; default ./data)")
	}
	positive(ps, "server.shutdown_timeout", s.ShutdownTimeout)
	if s.PublicURL != "" {
		if msg := checkPublicURL(s.PublicURL); msg != "" {
			ps.add("server.public_url", msg)
		}
	}
}

// checkPublicURL says what is wrong with a server.public_url, or "".
func checkPublicURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Sprintf("%q is not a URL like https://bot.example.com (the address the platforms reach the bot at)", raw)
	}
	switch {
	case u.User != nil:
		return "must not hold a user or password"
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return fmt.Sprintf("%q has a query or fragment; give the base URL only (the webhooks are <public_url>/webhook/feishu and /webhook/dingtalk)", raw)
	case u.Scheme == "http" && !Loopback(net.JoinHostPort(u.Hostname(), "0")):
		return fmt.Sprintf("%q is http; the platforms reach the bot over https (http is accepted for a loopback host only)", raw)
	}
	return ""
}

func (c *Config) validateStore(ps *Problems) {
	s := c.Store
	positive(ps, "store.retention", s.Retention)
	switch s.Backend {
	case "memory":
	case "redis":
		r := s.Redis
		switch {
		case r.URL == "" && len(r.Addrs) == 0:
			ps.add("store.redis", "store.backend is redis but neither url nor addrs is set (e.g. url: redis://127.0.0.1:6379/0, or HITLBOT_STORE_REDIS_URL)")
		case r.URL != "" && len(r.Addrs) > 0:
			ps.add("store.redis", "set either url or addrs, not both")
		case r.URL != "":
			if _, err := redisstore.ParseURL(r.URL); err != nil {
				ps.add("store.redis.url", strings.TrimPrefix(err.Error(), "redisstore: "))
			}
			if r.MasterName != "" {
				ps.add("store.redis.master_name", "needs addrs (the Sentinel addresses), not url")
			}
		default:
			for i, a := range r.Addrs {
				if _, _, err := net.SplitHostPort(a); err != nil {
					ps.add(fmt.Sprintf("store.redis.addrs[%d]", i), fmt.Sprintf("%q is not host:port", a))
				}
			}
			if r.MasterName == "" && r.DB != 0 {
				ps.add("store.redis.db", "a Redis Cluster has only db 0")
			}
		}
		if strings.ContainsAny(r.Prefix, "{}") {
			ps.add("store.redis.prefix", fmt.Sprintf("%q must not contain '{' or '}' (they would change the keys' hash slots)", r.Prefix))
		}
		notNegative(ps, "store.redis.dial_timeout", r.DialTimeout)
		notNegative(ps, "store.redis.read_timeout", r.ReadTimeout)
		notNegative(ps, "store.redis.write_timeout", r.WriteTimeout)
		notNegative(ps, "store.redis.pool_size", r.PoolSize)
		notNegative(ps, "store.redis.replica_acks", r.ReplicaAcks)
		if r.SessionLockTTL != 0 && r.SessionLockTTL < time.Second {
			ps.add("store.redis.session_lock_ttl", fmt.Sprintf("%s is shorter than 1s: a lock renewed every third of it would be lost to any pause", r.SessionLockTTL))
		}
	default:
		ps.add("store.backend", fmt.Sprintf("%q is not memory or redis", s.Backend))
	}
}

// validateApproveIn refuses an approvers' chat (approval.policy.approve_in,
// approval.policy.tools.<name>.approve_in), or the chat of an escalation
// step (approval.policy.escalation.<risk>[i].to, and a tool's), on a
// channel that is not enabled: its cards could never be shown, so every
// such request would fail, or every such step. (The channel and chat_id
// themselves are checked by the policy.)
func (c *Config) validateApproveIn(ps *Problems) {
	enabled := map[string]bool{"feishu": c.Channels.Feishu.Enabled, "dingtalk": c.Channels.DingTalk.Enabled}
	check := func(path string, p approval.Place) {
		if on, known := enabled[p.Channel]; known && !on {
			ps.add(path+".channel", fmt.Sprintf("%q is not enabled (channels.%s.enabled): that chat could never be reached", p.Channel, p.Channel))
		}
		if d := c.Channels.DingTalk; p.Direct && p.Channel == "dingtalk" && (d.CardTemplateID == "" || d.Mode == dingtalk.ModeHTTP) {
			ps.add(path+".direct", "cards go 1:1 on DingTalk only as interactive cards: set channels.dingtalk.card_template_id and keep the stream mode")
		}
	}
	p := c.Approval.Policy
	for _, risk := range slices.Sorted(maps.Keys(p.ApproveIn)) {
		check("approval.policy.approve_in."+risk, p.ApproveIn[risk])
	}
	for _, name := range slices.Sorted(maps.Keys(p.Tools)) {
		if in := p.Tools[name].ApproveIn; in != nil {
			check("approval.policy.tools."+name+".approve_in", *in)
		}
		for i, st := range p.Tools[name].Escalation {
			check(fmt.Sprintf("approval.policy.tools.%s.escalation[%d].to", name, i), st.To)
		}
	}
	for _, risk := range slices.Sorted(maps.Keys(p.Escalation)) {
		for i, st := range p.Escalation[risk] {
			check(fmt.Sprintf("approval.policy.escalation.%s[%d].to", risk, i), st.To)
		}
	}
}

func (c *Config) validateApproval(ps *Problems) {
	a := c.Approval
	ps.addErr("approval.policy", a.Policy.Validate())
	c.validateApproveIn(ps)
	if _, err := approval.NewReplyParser(a.Replies); err != nil {
		ps.addErr("approval", err)
	}
	for st := range a.OutcomeText {
		if !slices.Contains(approval.AllStatuses, st) {
			ps.add("approval.outcome_text."+string(st), fmt.Sprintf("unknown status (known: %s)", statusList()))
		}
	}
	if _, err := words.Parse(a.Lang); err != nil && a.Lang != "" {
		ps.add("approval.lang", fmt.Sprintf("%q is not zh or en (empty: each channel's own)", a.Lang))
	}
	if _, err := a.Zone(); err != nil {
		ps.add("approval.time_zone", fmt.Sprintf("%q is not an IANA time zone name such as Asia/Shanghai or UTC", a.TimeZone))
	}
	switch a.SessionScope {
	case "per_chat", "per_user", "per_thread":
	default:
		ps.add("approval.session_scope", fmt.Sprintf("%q is not per_chat, per_user or per_thread", a.SessionScope))
	}
	positive(ps, "approval.timeout", a.Timeout)
	positive(ps, "approval.dedup_ttl", a.DedupTTL)
	if a.ReplyClockSkew <= 0 || a.ReplyClockSkew > maxReplyClockSkew {
		ps.add("approval.reply_clock_skew", fmt.Sprintf("%v is not between 0 and %v (a larger allowance would let an older typed reply decide a newer approval)", a.ReplyClockSkew, maxReplyClockSkew))
	}
	positive(ps, "approval.result_ttl", a.ResultTTL)
	positive(ps, "approval.exec_timeout", a.ExecTimeout)
	positive(ps, "approval.sweep_interval", a.SweepInterval)
	if !approval.ValidReminders(a.Reminders) {
		ps.add("approval.reminders", fmt.Sprintf("%v: at most %d fractions of the window, each above 0 and below 1, in ascending order (e.g. [0.5, 0.9]; [] turns reminders off)", a.Reminders, approval.MaxReminders))
	}
}

// maxReplyClockSkew bounds approval.reply_clock_skew.
const maxReplyClockSkew = time.Minute

func statusList() string {
	names := make([]string, len(approval.AllStatuses))
	for i, s := range approval.AllStatuses {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

func (c *Config) validateModel(ps *Problems) {
	m := c.Model
	switch m.Provider {
	case "rules":
	case "openai":
		o := m.OpenAI
		if strings.TrimSpace(o.Model) == "" {
			ps.add("model.openai.model", "required when model.provider is openai (e.g. gpt-4o-mini)")
		}
		base := o.BaseURL
		if base == "" {
			base = model.DefaultOpenAIBaseURL
		}
		if u, err := url.Parse(base); err == nil && strings.EqualFold(u.Hostname(), "api.openai.com") && o.APIKey == "" && o.APIKeyFile == "" {
			ps.add("model.openai.api_key", "the OpenAI API needs a key: set the environment variable HITLBOT_MODEL_OPENAI_API_KEY, or model.openai.api_key_file to a file that holds it")
		}
		if o.APIKey != "" && o.APIKeyFile != "" {
			ps.add("model.openai.api_key", "set either model.openai.api_key (from the environment) or model.openai.api_key_file, not both")
		}
		if o.Model != "" {
			if _, err := model.NewOpenAI(o, nil); err != nil {
				ps.addErr("", err)
			}
		}
	default:
		ps.add("model.provider", fmt.Sprintf("%q is not rules or openai", m.Provider))
	}
	if _, err := model.NewRules(m.Rules, model.RulesDeps{}); err != nil {
		ps.addErr("model.rules", err)
	}
	if m.MaxToolRounds < 0 {
		ps.add("model.max_tool_rounds", "must not be negative")
	}
	if m.MaxHistory < 0 {
		ps.add("model.max_history", "must not be negative")
	}
	if m.TurnTimeout < 0 {
		ps.add("model.turn_timeout", "must not be negative")
	}
}

// trimPrefix removes a package's "name: " from every joined error.
func trimPrefix(err error, prefix string) error {
	if err == nil {
		return nil
	}
	var out []error
	for _, e := range leaves(err) {
		out = append(out, errors.New(strings.TrimPrefix(e.Error(), prefix)))
	}
	return errors.Join(out...)
}

// ToolNames returns the names of the tools the config builds, in order,
// without building them: sql_query, sql_execute, the task tools, the HTTP
// tools and the shell commands.
func (c *Config) ToolNames() []string {
	names := []string{"sql_query", "sql_execute"}
	if c.Tools.Tasks.Enabled {
		names = append(names, "task_create", "task_list", "task_complete", "task_delete")
	}
	for _, h := range c.Tools.HTTP {
		names = append(names, h.Name)
	}
	if c.Tools.Shell.Enabled {
		for _, s := range c.Tools.Shell.Commands {
			names = append(names, s.Name)
		}
	}
	return names
}

func (c *Config) validateTools(ps *Problems) {
	t := c.Tools
	seenDB := map[string]bool{}
	for i, d := range t.SQL.Databases {
		path := fmt.Sprintf("tools.sql.databases[%d]", i)
		switch {
		case d.Name == "":
			ps.add(path+".name", "is required")
		case strings.ContainsAny(d.Name, " \t\r\n"):
			ps.add(path+".name", fmt.Sprintf("%q contains white space", d.Name))
		case seenDB[d.Name]:
			ps.add(path+".name", fmt.Sprintf("%q is configured twice", d.Name))
		}
		seenDB[d.Name] = true
		switch strings.ToLower(d.Driver) {
		case "sqlite", "sqlite3", "postgres", "postgresql", "mysql", "mariadb":
		default:
			ps.add(path+".driver", fmt.Sprintf("%q is not sqlite, postgres or mysql", d.Driver))
		}
		if d.DSN == "" && d.DSNEnv == "" && d.DSNFile == "" {
			ps.add(path+".dsn", "is required (for a DSN with a password: dsn_env or dsn_file)")
		}
		if d.MaxRows < 0 {
			ps.add(path+".max_rows", "must not be negative")
		}
		if d.QueryTimeout < 0 {
			ps.add(path+".query_timeout", "must not be negative")
		}
	}
	if len(t.HTTP) > 0 {
		_, err := httptool.New(t.HTTP, nil, os.Getenv)
		ps.addErr("tools.http", trimPrefix(err, "httptool: "))
	}
	_, err := shell.New(t.Shell)
	ps.addErr("tools.shell", trimPrefix(err, "shell: "))
	// Its errors name their full path: tools.mcp.servers[fs].url.
	ps.addErr("", mcptool.ValidateServers(t.MCP.Servers, os.Getenv))
	// So do these: agents[ci].token_env.
	ps.addErr("", gate.Validate(c.Agents, os.Getenv, os.ReadFile))
	c.validateShellPolicy(ps)

	seen := map[string]bool{}
	for _, n := range c.ToolNames() {
		if n != "" && seen[n] {
			ps.add("tools", fmt.Sprintf("two tools are named %q", n))
		}
		seen[n] = true
	}
}

// validateShellPolicy keeps the shell tools at HIGH risk, asking every
// time: a command can do anything its program can, so no policy setting
// may let one run without a person's approval.
func (c *Config) validateShellPolicy(ps *Problems) {
	if !c.Tools.Shell.Enabled || len(c.Tools.Shell.Commands) == 0 {
		return
	}
	p := c.Approval.Policy
	if !p.Enabled {
		ps.add("approval.policy.enabled", "must be true while tools.shell is enabled: shell commands always wait for approval")
	}
	for _, s := range c.Tools.Shell.Commands {
		tp, ok := p.Tools[s.Name]
		if !ok {
			continue
		}
		path := "approval.policy.tools." + s.Name
		if tp.Risk != "" && !strings.EqualFold(tp.Risk, "high") {
			ps.add(path+".risk", fmt.Sprintf("%q: a shell tool is always HIGH risk", tp.Risk))
		}
		if tp.Confirm == "never" {
			ps.add(path+".confirm", "a shell tool always asks for confirmation")
		}
	}
}

func (c *Config) validateChannels(ps *Problems) {
	_, _, err := net.SplitHostPort(c.Server.Listen)
	public := err == nil && !Loopback(c.Server.Listen)
	check := func(name string, enabled bool, a Auth) {
		toks, err := a.Parse()
		if err != nil {
			ps.add("channels."+name+".tokens", err.Error())
			return
		}
		if name == "web" {
			// The web chat keys sessions and approvers by the bare user
			// id: one name in two tenants would share chats and approvals.
			tenant := map[string]string{}
			for _, tk := range toks {
				if t, ok := tenant[tk.User]; ok && t != tk.Tenant {
					ps.add("channels.web.tokens", fmt.Sprintf("user %q has tokens in two tenants (%q and %q); the web chat identifies people by user id alone, so give them distinct user ids", tk.User, t, tk.Tenant))
					return
				}
				tenant[tk.User] = tk.Tenant
			}
		}
		if enabled && public && len(toks) == 0 {
			ps.add("channels."+name+".tokens", fmt.Sprintf(
				"server.listen %s is not a loopback address, and with no tokens the %s channel would let anyone who can reach it act as the anonymous local user and run tools; "+
					"set HITLBOT_CHANNELS_%s_TOKENS (entries \"TOKEN USER [TENANT]\") or channels.%s.tokens_file, disable the channel, or listen on 127.0.0.1",
				c.Server.Listen, name, strings.ToUpper(name), name))
		}
	}
	check("web", c.Channels.Web.Enabled, c.Channels.Web.Auth)
	check("api", c.Channels.API.Enabled, c.Channels.API.Auth)
	if c.Channels.API.MaxPendingPerUser < 0 {
		ps.add("channels.api.max_pending_per_user", "must not be negative")
	}
	positive(ps, "channels.api.turn_timeout", c.Channels.API.TurnTimeout)
	if _, err := words.Parse(c.Channels.API.Lang); err != nil && c.Channels.API.Lang != "" {
		ps.add("channels.api.lang", fmt.Sprintf("%q is not zh or en (empty: approval.lang)", c.Channels.API.Lang))
	}
	if _, err := words.Parse(c.Channels.CLI.Lang); err != nil && c.Channels.CLI.Lang != "" {
		ps.add("channels.cli.lang", fmt.Sprintf("%q is not zh or en (empty: approval.lang)", c.Channels.CLI.Lang))
	}
	notNegative(ps, "channels.cli.turn_timeout", c.Channels.CLI.TurnTimeout)
	for name, a := range c.Channels.Allow() {
		ps.addErr("channels."+name, a.Validate())
	}
	if d := c.Channels.DingTalk; d.Enabled {
		if d.ClientID == "" {
			ps.add("channels.dingtalk.client_id", "the DingTalk channel needs the app's AppKey (Client ID)")
		}
		if d.ClientSecret == "" {
			ps.add("channels.dingtalk.client_secret", "the DingTalk channel needs the app's AppSecret: set HITLBOT_CHANNELS_DINGTALK_CLIENT_SECRET, or channels.dingtalk.client_secret_file")
		}
		switch d.Mode {
		case "", "stream", "http":
		default:
			ps.add("channels.dingtalk.mode", fmt.Sprintf("%q is not stream or http", d.Mode))
		}
	}
	if f := c.Channels.Feishu; f.Enabled {
		if f.AppID == "" {
			ps.add("channels.feishu.app_id", "the Feishu channel needs the app's id (cli_…)")
		}
		if f.AppSecret == "" {
			ps.add("channels.feishu.app_secret", "the Feishu channel needs the app's secret: set HITLBOT_CHANNELS_FEISHU_APP_SECRET, or channels.feishu.app_secret_file")
		}
		switch f.Mode {
		case "", "long_connection":
		case "webhook":
			if f.EncryptKey == "" {
				ps.add("channels.feishu.encrypt_key", "webhook mode needs the Encrypt Key: without it the SDK does not authenticate events, so anyone who knows the URL could post forged ones; set HITLBOT_CHANNELS_FEISHU_ENCRYPT_KEY (or encrypt_key_file), or use mode long_connection")
			}
		default:
			ps.add("channels.feishu.mode", fmt.Sprintf("%q is not long_connection or webhook", f.Mode))
		}
		positive(ps, "channels.feishu.max_request_age", f.MaxRequestAge)
	}
}

// PlaceholderPrefix starts the example values of secrets and tokens in
// deploy/hitlbot.env.example ("change-me-web-token-0001"). They are public,
// so a config that would use one is refused (case and surrounding white
// space do not matter).
const PlaceholderPrefix = "change-me"

// isPlaceholder reports whether v is an example value.
func isPlaceholder(v string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(v)), PlaceholderPrefix)
}

// validatePlaceholders refuses the example values of deploy/hitlbot.env.example
// in every secret and token the config would use: the Redis password with
// store.backend redis, the model's key with the openai provider, the tokens
// of an enabled web or API channel, the secrets of an enabled DingTalk or
// Feishu channel. The problem names the key and how to set a real value,
// never the value.
func (c *Config) validatePlaceholders(ps *Problems) {
	refuse := func(path, what string) {
		ps.add(path, fmt.Sprintf("%s is the example placeholder (it starts with %q, as in deploy/hitlbot.env.example), which anyone can read: "+
			"set a real one in the environment variable %s, or in the file %s_file names", what, PlaceholderPrefix, EnvName(path), path))
	}
	if c.Store.Backend == "redis" && isPlaceholder(c.Store.Redis.Password.Reveal()) {
		refuse("store.redis.password", "the Redis password")
	}
	if c.Model.Provider == "openai" && isPlaceholder(c.Model.OpenAI.APIKey) {
		refuse("model.openai.api_key", "the model's API key")
	}
	tokens := func(name string, enabled bool, a Auth) {
		if !enabled {
			return
		}
		toks, err := a.Parse()
		if err != nil {
			return // validateChannels reports it
		}
		for _, tk := range toks {
			if isPlaceholder(tk.Token.Reveal()) {
				path := "channels." + name + ".tokens"
				ps.add(path, fmt.Sprintf("the token of user %q is the example placeholder (it starts with %q, as in deploy/hitlbot.env.example), which anyone can read: "+
					"make a real one (openssl rand -hex 32) and set it in the environment variable %s (entries \"TOKEN USER [TENANT]\"), or in the file %s_file names",
					tk.User, PlaceholderPrefix, EnvName(path), path))
			}
		}
	}
	tokens("web", c.Channels.Web.Enabled, c.Channels.Web.Auth)
	tokens("api", c.Channels.API.Enabled, c.Channels.API.Auth)
	if d := c.Channels.DingTalk; d.Enabled && isPlaceholder(d.ClientSecret) {
		refuse("channels.dingtalk.client_secret", "the DingTalk AppSecret")
	}
	if f := c.Channels.Feishu; f.Enabled {
		if isPlaceholder(f.AppSecret) {
			refuse("channels.feishu.app_secret", "the Feishu app secret")
		}
		if isPlaceholder(f.EncryptKey) {
			refuse("channels.feishu.encrypt_key", "the Feishu Encrypt Key")
		}
		if isPlaceholder(f.VerificationToken) {
			refuse("channels.feishu.verification_token", "the Feishu Verification Token")
		}
	}
}

func positive(ps *Problems, path string, d time.Duration) {
	if d <= 0 {
		ps.add(path, fmt.Sprintf("%v is not positive", d))
	}
}

func notNegative[T int | int64 | time.Duration](ps *Problems, path string, v T) {
	if v < 0 {
		ps.add(path, "must not be negative")
	}
}

// validateTracing checks the tracing section; with no endpoint it is off
// and only the ratio is checked.
func (c *Config) validateTracing(ps *Problems) {
	t := c.Tracing
	if t.SampleRatio < 0 || t.SampleRatio > 1 || t.SampleRatio != t.SampleRatio {
		ps.add("tracing.sample_ratio", fmt.Sprintf("%v is not between 0 and 1", t.SampleRatio))
	}
	if t.Endpoint == "" {
		return
	}
	if err := tracing.CheckEndpoint(t.Endpoint); err != nil {
		ps.add("tracing.endpoint", err.Error())
	}
	if _, err := t.ParseHeaders(); err != nil {
		ps.add("tracing.headers", err.Error())
	}
}
