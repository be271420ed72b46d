package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/agent/model"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/channels/dingtalk"
	"github.com/hitlbot/hitlbot/channels/feishu"
	"github.com/hitlbot/hitlbot/cmd/bot/internal/config"
	"github.com/hitlbot/hitlbot/internal/clip"
	"github.com/hitlbot/hitlbot/tools/mcptool"
	"github.com/hitlbot/hitlbot/words"
)

// The output of `bot doctor` is for the operator who runs it, in English
// like the rest of the command-line output (check, audit, bench); what
// chat users read comes from the words catalogue.

// defaultProbeTimeout bounds each probe of `bot doctor`.
const defaultProbeTimeout = 5 * time.Second

// The fixes `bot doctor` prints after a failure: each is the words of the
// README's troubleshooting table (TestDoctorFixesInREADME holds them to it).
const (
	fixRedis       = "Redis is down or unreachable from this replica: check `store.redis.url` (or `addrs`, `master_name`) and `HITLBOT_STORE_REDIS_PASSWORD`"
	fixAppendOnly  = "persistence off: pending approvals are lost on a Redis restart; set appendonly yes"
	fixModel       = "check `HITLBOT_MODEL_OPENAI_API_KEY`, `model.openai.base_url` and `model.openai.request_timeout`"
	fixModelTools  = "check `model.openai.model` and `model.openai.base_url`: the endpoint must answer chat completions that offer tools"
	fixFeishu      = "check `channels.feishu.app_id` and `HITLBOT_CHANNELS_FEISHU_APP_SECRET` against the console's 凭证与基础信息, and that this host reaches `channels.feishu.base_url`"
	fixDingTalk    = "check `channels.dingtalk.client_id` and `HITLBOT_CHANNELS_DINGTALK_CLIENT_SECRET` against the console's 凭证与基础信息, and that this host reaches `channels.dingtalk.api_base_url`"
	fixMCP         = "run `bot check -probe` for the server's own error; check `tools.mcp.servers[].command` (on PATH, with its args) or `url` (reachable, the headers' variables set), and raise `start_timeout` for a slow start"
	doctorToolName = "doctor_ping"
)

// Verdicts of a probe. WARN does not fail the command.
const (
	verdictOK   = "OK"
	verdictWarn = "WARN"
	verdictFail = "FAIL"
	verdictSkip = "SKIP"
)

// finding is what one probe found: one line of output.
type finding struct {
	part, verdict, detail, fix string
}

// line renders f as one line.
func (f finding) line() string {
	s := fmt.Sprintf("%-9s %-4s  %s", f.part, f.verdict, f.detail)
	if f.fix != "" {
		s += "; fix: " + f.fix
	}
	return s
}

// doctorProbes are the probes in their output order.
var doctorProbes = []struct {
	part  string
	probe func(ctx context.Context, cfg *config.Config, timeout time.Duration) finding
}{
	{"store", probeStore},
	{"model", probeModel},
	{feishu.Name, probeFeishu},
	{dingtalk.Name, probeDingTalk},
	{"webhook", probeWebhook},
	{"mcp", probeMCPServers},
}

// cmdDoctor is `bot doctor`: it loads the config as `bot check` does, then
// probes every configured part in parallel, each within its timeout, and
// prints one line per part in a fixed order. Exit 1 when one FAILs.
func cmdDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, c := newFlags("doctor", stderr)
	timeout := fs.Duration("timeout", defaultProbeTimeout, "how long each probe may take")
	if st := parse(fs, args); st >= 0 {
		return st
	}
	if *timeout <= 0 {
		fmt.Fprintln(stderr, "bot doctor: -timeout must be positive")
		return 2
	}
	opts := c.options()
	cfg := loadConfig(opts, stderr)
	if cfg == nil {
		return 1
	}
	if cfg.Store.Backend == "redis" {
		// go-redis's own lines (a failed dial) as JSON records on stderr;
		// the probe's line on stdout says the same in one sentence.
		routeLibraryLogs(newLogger(stderr, "error"))
	}
	found := doctor(ctx, cfg, *timeout)
	src := cfg.File()
	if src == "" {
		src = "no file; embedded defaults"
	}
	secrets := configSecrets(cfg)
	fmt.Fprintf(stdout, "# hitlbot doctor (%s, environment, flags)\n", src)
	status := 0
	for _, f := range found {
		fmt.Fprintln(stdout, redactAll(f.line(), secrets))
		if f.verdict == verdictFail {
			status = 1
		}
	}
	return status
}

// doctor runs every probe at once and returns their findings in the order
// of doctorProbes.
func doctor(ctx context.Context, cfg *config.Config, timeout time.Duration) []finding {
	found := make([]finding, len(doctorProbes))
	var wg sync.WaitGroup
	for i, p := range doctorProbes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			f := p.probe(pctx, cfg, timeout)
			f.part = p.part
			found[i] = f
		}()
	}
	wg.Wait()
	return found
}

func ok(detail string) finding   { return finding{verdict: verdictOK, detail: detail} }
func skip(detail string) finding { return finding{verdict: verdictSkip, detail: detail} }
func fail(detail, fix string) finding {
	return finding{verdict: verdictFail, detail: detail, fix: fix}
}

// oneLine makes an error message fit on the line: no line breaks, and at
// most 300 characters.
func oneLine(s string) string {
	return clip.Runes(strings.Join(strings.Fields(s), " "), 300)
}

// capped is d, or max when d is unset or longer.
func capped(d, max time.Duration) time.Duration {
	if d <= 0 || d > max {
		return max
	}
	return d
}

// probeStore pings the configured Redis and reads its appendonly setting.
func probeStore(ctx context.Context, cfg *config.Config, timeout time.Duration) finding {
	if cfg.Store.Backend != "redis" {
		return ok("memory store: one replica only; approvals are lost on restart")
	}
	r := cfg.Store.Redis
	what := "Redis (one server)"
	switch {
	case r.MasterName != "":
		what = fmt.Sprintf("Redis (Sentinel, master %q)", r.MasterName)
	case len(r.Addrs) > 0:
		what = fmt.Sprintf("Redis (Cluster, %d seeds)", len(r.Addrs))
	}
	cc := r.ClientConfig()
	cc.DialTimeout = capped(cc.DialTimeout, timeout)
	cc.ReadTimeout = capped(cc.ReadTimeout, timeout)
	cc.WriteTimeout = capped(cc.WriteTimeout, timeout)
	rc, err := redisstore.NewClient(cc)
	if err != nil {
		return fail(oneLine(err.Error()), fixRedis)
	}
	defer rc.Close()
	if err := rc.Ping(ctx).Err(); err != nil {
		return fail(what+" does not answer PING: "+oneLine(err.Error()), fixRedis)
	}
	vals, err := rc.ConfigGet(ctx, "appendonly").Result()
	if err != nil {
		return ok(what + " answers PING; persistence could not be checked (CONFIG GET is not allowed: " + oneLine(err.Error()) + ")")
	}
	if v := vals["appendonly"]; v != "yes" {
		return finding{verdict: verdictWarn, detail: what + " answers PING; " + fixAppendOnly}
	}
	return ok(what + " answers PING; appendonly yes")
}

// probeModel asks the OpenAI-compatible endpoint for a tiny chat
// completion that offers one tool.
func probeModel(ctx context.Context, cfg *config.Config, timeout time.Duration) finding {
	if cfg.Model.Provider != "openai" {
		return ok("rules model (no LLM): nothing to reach")
	}
	oc := cfg.Model.OpenAI
	oc.MaxRetries = -1 // one attempt: the answer is what doctor reports
	oc.RequestTimeout = capped(oc.RequestTimeout, timeout)
	oc.MaxTokens = 64
	m, err := model.NewOpenAI(oc, nil)
	if err != nil {
		return fail(oneLine(err.Error()), fixModel)
	}
	resp, err := m.Complete(ctx, agent.Request{
		Messages: []agent.Message{{Role: agent.RoleUser, Content: "This is a connectivity check. Call the tool " + doctorToolName + "."}},
		Tools:    []agent.ToolSpec{{Name: doctorToolName, Description: "Answers pong. Call it when asked to."}},
	})
	var me *agent.ModelError
	switch {
	case err == nil:
	case errors.As(err, &me) && me.Key == words.ModelAuth:
		return fail("the endpoint refused the API key: "+oneLine(me.Err.Error()), fixModel)
	case errors.As(err, &me) && me.Key == words.ModelTimeout:
		return fail(fmt.Sprintf("the endpoint did not answer within %s", oc.RequestTimeout), fixModel)
	case errors.As(err, &me) && strings.Contains(me.Err.Error(), "HTTP 4"):
		return fail("the endpoint refused a chat completion that offers a tool: "+oneLine(me.Err.Error()), fixModelTools)
	case errors.As(err, &me):
		return fail(oneLine(me.Err.Error()), fixModel)
	default:
		return fail(oneLine(err.Error()), fixModel)
	}
	what := fmt.Sprintf("%q at %s", oc.Model, endpointHost(oc.BaseURL))
	for _, tc := range resp.Message.ToolCalls {
		if tc.Name == doctorToolName {
			return ok(what + " answers and calls the offered tool")
		}
	}
	if len(resp.Message.ToolCalls) > 0 {
		return fail(what+" called a tool it was not offered", fixModelTools)
	}
	return ok(what + " answers and accepts tools (it answered in text rather than calling the tool)")
}

// endpointHost is the scheme and host of a base URL (the default's when
// empty), never its path or query, which may carry a key.
func endpointHost(base string) string {
	if base == "" {
		base = model.DefaultOpenAIBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return "model.openai.base_url"
	}
	return u.Scheme + "://" + u.Host
}

// quiet is the logger of the channels doctor builds: their lines would
// only repeat the finding.
var quiet = slog.New(slog.DiscardHandler)

// probeMCPServers starts each MCP server once, in parallel, and counts
// the tools it lists.
func probeMCPServers(ctx context.Context, cfg *config.Config, timeout time.Duration) finding {
	servers := cfg.Tools.MCP.Servers
	if len(servers) == 0 {
		return skip("no servers configured")
	}
	lines := make([]string, len(servers))
	failed := make([]bool, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		s.StartTimeout = capped(startTimeout(s), timeout)
		wg.Go(func() {
			infos, err := mcptool.Probe(ctx, s, mcptool.Options{Getenv: os.Getenv, Version: Version()})
			if err != nil {
				lines[i], failed[i] = oneLine(err.Error()), true
				return
			}
			lines[i] = fmt.Sprintf("%s lists %d tools", s.Name, len(infos))
		})
	}
	wg.Wait()
	if slices.Contains(failed, true) {
		return fail(strings.Join(lines, "; "), fixMCP)
	}
	return ok(strings.Join(lines, "; "))
}

// probeFeishu gets a tenant access token with the configured app.
func probeFeishu(ctx context.Context, cfg *config.Config, timeout time.Duration) finding {
	f := cfg.Channels.Feishu
	if !f.Enabled {
		return skip("not enabled")
	}
	fc := f.Config
	fc.RequestTimeout = capped(fc.RequestTimeout, timeout)
	ch, err := feishu.New(fc, quiet)
	if err != nil {
		return fail(oneLine(err.Error()), fixFeishu)
	}
	if err := ch.CheckCredentials(ctx); err != nil {
		return fail("no tenant access token for app "+fc.AppID+": "+oneLine(err.Error()), fixFeishu)
	}
	return ok("app " + fc.AppID + " gets a tenant access token")
}

// probeDingTalk gets an app access token with the configured app.
func probeDingTalk(ctx context.Context, cfg *config.Config, timeout time.Duration) finding {
	d := cfg.Channels.DingTalk
	if !d.Enabled {
		return skip("not enabled")
	}
	dc := d.Config
	dc.HTTPTimeout = capped(dc.HTTPTimeout, timeout)
	ch, err := dingtalk.New(dc, quiet)
	if err != nil {
		return fail(oneLine(err.Error()), fixDingTalk)
	}
	if err := ch.CheckCredentials(ctx); err != nil {
		return fail("no access token for client "+dc.ClientID+": "+oneLine(err.Error()), fixDingTalk)
	}
	return ok("client " + dc.ClientID + " gets an access token")
}

// probeWebhook names the URLs the platforms must be given in webhook (or
// HTTP) mode. They are served by `bot serve`, which doctor does not run,
// and only the platform can reach them from outside: not probed.
func probeWebhook(_ context.Context, cfg *config.Config, _ time.Duration) finding {
	var urls []string
	if f := cfg.Channels.Feishu; f.Enabled && f.Mode == feishu.ModeWebhook {
		urls = append(urls, "Feishu 事件与回调 and 回调配置: https://<public host>/webhook/feishu")
	}
	if d := cfg.Channels.DingTalk; d.Enabled && d.Mode == dingtalk.ModeHTTP {
		urls = append(urls, "DingTalk robot message URL: https://<public host>/webhook/dingtalk")
	}
	if len(urls) == 0 {
		return skip("no channel in webhook mode (the long connection and the stream need no public URL)")
	}
	return skip("not probed; give " + strings.Join(urls, "; ") + " (bot serve answers it on " + cfg.Server.Listen + ")")
}

// configSecrets lists the secret values of cfg, longest first, so that no
// line of doctor's output shows one even when an error quotes it.
func configSecrets(cfg *config.Config) []string {
	s := []string{
		cfg.Store.Redis.Password.Reveal(),
		cfg.Model.OpenAI.APIKey,
		cfg.Channels.Feishu.AppSecret,
		cfg.Channels.Feishu.EncryptKey,
		cfg.Channels.Feishu.VerificationToken,
		cfg.Channels.DingTalk.ClientSecret,
		cfg.Channels.Web.Tokens.Reveal(),
		cfg.Channels.API.Tokens.Reveal(),
	}
	if u, err := url.Parse(cfg.Store.Redis.URL); err == nil && u.User != nil {
		p, _ := u.User.Password()
		s = append(s, u.User.String(), p)
	}
	for _, v := range cfg.Model.OpenAI.Headers {
		s = append(s, v)
	}
	for _, a := range []config.Auth{cfg.Channels.Web.Auth, cfg.Channels.API.Auth} {
		if toks, err := a.Parse(); err == nil {
			for _, t := range toks {
				s = append(s, t.Token.Reveal())
			}
		}
	}
	out := s[:0]
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			out = append(out, v)
		}
	}
	// Longest first: a token inside a longer token list goes with it.
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// redactAll replaces every secret in s.
func redactAll(s string, secrets []string) string {
	for _, v := range secrets {
		s = strings.ReplaceAll(s, v, config.Redacted)
	}
	return s
}
