package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/agent/model"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/channels/dingtalk"
	"github.com/hitlbot/hitlbot/channels/feishu"
	"github.com/hitlbot/hitlbot/channels/feishu/feishuwire"
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
// troubleshooting table, docs/troubleshooting.md (TestDoctorFixesInREADME holds them to it).
const (
	fixRedis         = "Redis is down or unreachable from this replica: check `store.redis.url` (or `addrs`, `master_name`) and `HITLBOT_STORE_REDIS_PASSWORD`"
	fixAppendOnly    = "persistence off: pending approvals are lost on a Redis restart; set appendonly yes"
	fixAudit         = "the audit trail cannot be written, so no approved tool runs: give `audit.file` (default `<server.data_dir>/audit.jsonl`) a directory the bot's user can write, on a disk with free space"
	fixAuditServer   = "the running bot's audit trail does not write, so every approval fails \"not run: the audit trail is unavailable\": for a `file:` sink free the disk or fix the permissions of `audit.file`; for a `redis:` sink make Redis answer (the `store` line); the bot retries by itself, and `/readyz` answers 200 once the sink writes again"
	fixModel         = "check `HITLBOT_MODEL_OPENAI_API_KEY`, `model.openai.base_url` and `model.openai.request_timeout`"
	fixModelTools    = "check `model.openai.model` and `model.openai.base_url`: the endpoint must answer chat completions that offer tools"
	fixFeishu        = "check `channels.feishu.app_id` and `HITLBOT_CHANNELS_FEISHU_APP_SECRET` against the console's 凭证与基础信息, and that this host reaches `channels.feishu.base_url`"
	fixDingTalk      = "check `channels.dingtalk.client_id` and `HITLBOT_CHANNELS_DINGTALK_CLIENT_SECRET` against the console's 凭证与基础信息, and that this host reaches `channels.dingtalk.api_base_url`"
	fixMCP           = "run `bot check -probe` for the server's own error; check `tools.mcp.servers[].command` (on PATH, with its args) or `url` (reachable, the headers' variables set), and raise `start_timeout` for a slow start"
	fixWebhookReach  = "check that `server.public_url` reaches this bot from outside (the reverse proxy or tunnel forwards /webhook/feishu and /webhook/dingtalk to `server.listen`) and that `bot serve` runs there with Feishu in webhook mode or DingTalk in HTTP mode"
	fixFeishuWebhook = "the bot at `server.public_url` has another `HITLBOT_CHANNELS_FEISHU_ENCRYPT_KEY` or `HITLBOT_CHANNELS_FEISHU_VERIFICATION_TOKEN` than this config (or another clock): run `bot doctor` with the server's config and environment, and give both to the console's 事件与回调 → 加密策略"
	fixDingTalkHTTP  = "the bot at `server.public_url` refused a request signed with `HITLBOT_CHANNELS_DINGTALK_CLIENT_SECRET` (another secret, or another clock): run `bot doctor` with the server's config and environment, and check the secret against the console's 凭证与基础信息"
	doctorToolName   = "doctor_ping"
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
	{"audit", probeAudit},
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
	if err := redisstore.CheckVersion(ctx, rc); err != nil {
		return fail(what+": "+oneLine(err.Error()), fixRedis)
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

// probeAudit checks that the audit file can be written as `bot serve`
// writes it: without its record no approved tool runs
// (docs/failure-modes.md). It writes nothing to the trail: an existing
// file is opened for appending and closed; for one not made yet, a trial
// file is made and removed in its nearest existing directory.
//
// It then asks the `bot serve` of this config for its /readyz: an audit
// sink failing there, or its audit queue full, is a FAIL (fixAuditServer).
func probeAudit(ctx context.Context, cfg *config.Config, timeout time.Duration) finding {
	f := probeAuditFile(cfg)
	ready, addr := serverReadyz(ctx, cfg, timeout)
	return withServerAudit(f, ready.Audit, addr)
}

// probeAuditFile is probeAudit's check of the file.
func probeAuditFile(cfg *config.Config) finding {
	path := cfg.Audit.File
	cannot := func(err error) finding { return fail(path+" cannot be written: "+oneLine(err.Error()), fixAudit) }
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		f.Close()
		return ok(path + " can be written")
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return cannot(err)
	}
	dir := filepath.Dir(path)
	for {
		if _, err := os.Stat(dir); err == nil || !errors.Is(err, fs.ErrNotExist) || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	trial, err := os.CreateTemp(dir, ".hitlbot-doctor-*")
	if err != nil {
		return cannot(err)
	}
	trial.Close()
	os.Remove(trial.Name())
	return ok(path + " does not exist yet; it can be written")
}

// probeModel asks the OpenAI-compatible endpoint for a tiny chat
// completion that offers one tool, answered whole; then, with
// model.openai.stream on, for a streamed one: a server that answers it
// whole (the bot then stops streaming) is a WARN.
func probeModel(ctx context.Context, cfg *config.Config, timeout time.Duration) finding {
	if cfg.Model.Provider != "openai" {
		return ok("rules model (no LLM): nothing to reach")
	}
	oc := cfg.Model.OpenAI
	oc.MaxRetries = -1 // one attempt: the answer is what doctor reports
	oc.RequestTimeout = capped(oc.RequestTimeout, timeout)
	oc.MaxTokens = 64
	stream := oc.Stream
	oc.Stream = false
	f := probeModelTools(ctx, oc)
	if f.verdict != verdictOK || !stream {
		return f
	}
	oc.Stream = true
	m, err := model.NewOpenAI(oc, nil)
	if err != nil {
		return fail(oneLine(err.Error()), fixModel)
	}
	pieces := 0
	_, err = m.Complete(ctx, agent.Request{
		Messages: []agent.Message{{Role: agent.RoleUser, Content: "This is a connectivity check. Answer: pong."}},
		Delta:    func(string) { pieces++ },
	})
	switch {
	case err != nil:
		return finding{verdict: verdictWarn, detail: f.detail + "; a streamed answer failed (" + oneLine(err.Error()) + "): " + warnModelStream}
	case pieces == 0:
		return finding{verdict: verdictWarn, detail: f.detail + ", but answered a streamed request whole: " + warnModelStream}
	}
	f.detail += ", and streams its answers"
	return f
}

// warnModelStream says what a server that does not stream means for the
// bot, and what to do.
const warnModelStream = "the bot shows its answers whole (model.openai.stream is on: set it false to stop trying)"

// probeModelTools is probeModel's first request: one tool offered, the
// answer whole.
func probeModelTools(ctx context.Context, oc model.OpenAIConfig) finding {
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

// probeFeishu gets a tenant access token with the configured app, and
// adds what the `bot serve` on server.listen says of Feishu: a code it
// keeps answering, in words, with its fix. A call that got no answer
// names the network first in its fix, a refusal the code's fix.
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
		return refusedFinding("no tenant access token for app "+fc.AppID+": "+oneLine(err.Error()), feishuCode(err), explainFeishu, fixFeishu)
	}
	refusing, addr := serverRefusals(ctx, cfg, timeout)
	return withServer(ok("app "+fc.AppID+" gets a tenant access token"), feishu.Name, refusing, addr, explainFeishu)
}

// probeDingTalk gets an app access token with the configured app, and
// adds what the `bot serve` on server.listen says of DingTalk, as
// probeFeishu does.
func probeDingTalk(ctx context.Context, cfg *config.Config, timeout time.Duration) finding {
	d := cfg.Channels.DingTalk
	if !d.Enabled {
		return skip("not enabled")
	}
	dc := d.Config
	dc.HTTPTimeout = capped(dc.HTTPTimeout, timeout)
	dc.MaxRetries = -1 // one attempt: the answer is what doctor reports
	ch, err := dingtalk.New(dc, quiet)
	if err != nil {
		return fail(oneLine(err.Error()), fixDingTalk)
	}
	if err := ch.CheckCredentials(ctx); err != nil {
		code := dingtalk.AnswerCode(err)
		if code == "transport" && !noAnswer(err) {
			code = "" // no answer code, yet not the network
		}
		return refusedFinding("no access token for client "+dc.ClientID+": "+oneLine(err.Error()), code, explainDingTalk, fixDingTalk)
	}
	refusing, addr := serverRefusals(ctx, cfg, timeout)
	return withServer(ok("client "+dc.ClientID+" gets an access token"), dingtalk.Name, refusing, addr, explainDingTalk)
}

// probeWebhook checks the URLs the platforms are given in webhook (or
// HTTP) mode. Without server.public_url it only names them (only the
// platform reaches them from outside). With it, it posts to each as the
// platform does, through whatever stands between (proxy, tunnel), to the
// `bot serve` that answers there: Feishu's url_verification challenge,
// encrypted and signed with this config's keys, must come back; DingTalk's
// handler must accept a request signed with this config's client secret
// (its empty body is then refused as a bad body, so nothing is delivered).
func probeWebhook(ctx context.Context, cfg *config.Config, _ time.Duration) finding {
	f, d := cfg.Channels.Feishu, cfg.Channels.DingTalk
	feishuOn := f.Enabled && f.Mode == feishu.ModeWebhook
	dingOn := d.Enabled && d.Mode == dingtalk.ModeHTTP
	if !feishuOn && !dingOn {
		return skip("no channel in webhook mode (the long connection and the stream need no public URL)")
	}
	base := strings.TrimRight(cfg.Server.PublicURL, "/")
	if base == "" {
		var urls []string
		if feishuOn {
			urls = append(urls, "Feishu 事件与回调 and 回调配置: https://<public host>/webhook/feishu")
		}
		if dingOn {
			urls = append(urls, "DingTalk robot message URL: https://<public host>/webhook/dingtalk")
		}
		return skip("not probed (no server.public_url); give " + strings.Join(urls, "; ") + " (bot serve answers it on " + cfg.Server.Listen + ")")
	}
	var checks []func() finding
	if feishuOn {
		checks = append(checks, func() finding {
			return checkFeishuWebhook(ctx, base+"/webhook/feishu", f.EncryptKey, f.VerificationToken)
		})
	}
	if dingOn {
		checks = append(checks, func() finding {
			return checkDingTalkHTTP(ctx, base+"/webhook/dingtalk", d.ClientSecret)
		})
	}
	found := make([]finding, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() { found[i] = c() })
	}
	wg.Wait()
	out := finding{verdict: verdictOK}
	var details, fixes []string
	for _, x := range found {
		details = append(details, x.detail)
		if x.verdict == verdictFail {
			out.verdict = verdictFail
			if !slices.Contains(fixes, x.fix) {
				fixes = append(fixes, x.fix)
			}
		}
	}
	out.detail, out.fix = strings.Join(details, "; "), strings.Join(fixes, "; ")
	return out
}

// webhookClient posts the webhook probes. It follows no redirect: the
// platforms post to the URL they are given, and a redirect is an answer
// to report.
var webhookClient = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// postProbe sends req and returns the status, the first KiB of the
// answer on one line, and how to say the status: with the Location of a
// redirect, which is not followed.
func postProbe(req *http.Request) (int, string, string, error) {
	resp, err := webhookClient.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	said := strconv.Itoa(resp.StatusCode)
	if loc := resp.Header.Get("Location"); loc != "" && resp.StatusCode/100 == 3 {
		said += " (a redirect to " + clip.Runes(oneLine(loc), 120) + ", not followed)"
	}
	return resp.StatusCode, oneLine(string(b)), said, nil
}

// probeError is the detail of a post that got no answer.
func probeError(u string, err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Sprintf("POST %s got no answer: %s", u, oneLine(err.Error()))
}

// checkFeishuWebhook posts Feishu's url_verification challenge to u as
// Feishu does (encrypted and signed with encryptKey, timestamped now) and
// expects the challenge back.
func checkFeishuWebhook(ctx context.Context, u, encryptKey, token string) finding {
	var r [12]byte
	_, _ = rand.Read(r[:])
	challenge := "doctor-" + hex.EncodeToString(r[:])
	payload, _ := json.Marshal(map[string]string{"challenge": challenge, "token": token, "type": "url_verification"})
	req, err := feishuwire.Sign(payload, encryptKey, encryptKey, time.Now()).HTTPRequest(ctx, u)
	if err != nil {
		return fail("Feishu "+oneLine(err.Error()), fixWebhookReach)
	}
	status, body, said, err := postProbe(req)
	if err != nil {
		return fail("Feishu: "+probeError(u, err), fixWebhookReach)
	}
	var answer struct {
		Challenge string `json:"challenge"`
		Msg       string `json:"msg"`
	}
	_ = json.Unmarshal([]byte(body), &answer)
	switch {
	case status == http.StatusOK && answer.Challenge == challenge:
		return ok("Feishu: " + u + " answers the url_verification challenge (encrypted and signed with encrypt_key)")
	case status == http.StatusOK:
		return fail(fmt.Sprintf("Feishu: %s answered 200 without the challenge: %s", u, clip.Runes(body, 120)), fixWebhookReach)
	}
	what := fmt.Sprintf("Feishu: %s answered %s to the url_verification challenge", u, said)
	if answer.Msg != "" {
		what += fmt.Sprintf(" (%q)", answer.Msg)
	}
	switch {
	case answer.Msg == "store unavailable":
		return fail(what, fixRedis)
	case (status == http.StatusUnauthorized || status == http.StatusBadRequest) && answer.Msg != "":
		return fail(what, fixFeishuWebhook)
	}
	return fail(what, fixWebhookReach)
}

// checkDingTalkHTTP posts a request signed with secret (timestamped now)
// and an empty body to u. The bot's HTTPHandler checks the sign before
// the body: a bot that accepts the sign refuses the body (400 "bad body")
// and delivers nothing; one with another secret answers 401 "bad sign".
func checkDingTalkHTTP(ctx context.Context, u, secret string) finding {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, http.NoBody)
	if err != nil {
		return fail("DingTalk "+oneLine(err.Error()), fixWebhookReach)
	}
	ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("timestamp", ts)
	req.Header.Set("sign", dingtalk.Sign(ts, secret))
	status, body, said, err := postProbe(req)
	if err != nil {
		return fail("DingTalk: "+probeError(u, err), fixWebhookReach)
	}
	what := fmt.Sprintf("DingTalk: %s answered %s", u, said)
	if body != "" {
		what += fmt.Sprintf(" %q", clip.Runes(body, 120))
	}
	what += " to a signed request"
	switch {
	case status == http.StatusBadRequest && body == "bad body":
		return ok("DingTalk: " + u + " accepts a request signed with the client secret (its empty body delivers nothing)")
	case status == http.StatusUnauthorized && strings.HasPrefix(body, "bad sign"):
		return fail(what, fixDingTalkHTTP)
	case status == http.StatusServiceUnavailable && body == "temporarily unavailable":
		return fail(what, fixRedis)
	}
	return fail(what, fixWebhookReach)
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
