package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hitlbot/hitlbot/channels/dingtalk"
	"github.com/hitlbot/hitlbot/channels/feishu"
	"github.com/hitlbot/hitlbot/cmd/bot/internal/config"
	"github.com/hitlbot/hitlbot/cmd/bot/internal/metrics"
)

// What `bot doctor` says of a platform's refusal: the code in words and
// its fix. The fixes are in the troubleshooting table of
// docs/troubleshooting.md (TestDoctorFixesInREADME).
const (
	fixFeishuNetwork    = "this host does not reach `channels.feishu.base_url`: check its DNS, proxy (`HTTPS_PROXY`) and firewall (outbound 443 to open.feishu.cn or open.larksuite.com) first; then `channels.feishu.app_id` and `HITLBOT_CHANNELS_FEISHU_APP_SECRET` against the console's 凭证与基础信息"
	fixDingTalkNetwork  = "this host does not reach `channels.dingtalk.api_base_url`: check its DNS, proxy (`HTTPS_PROXY`) and firewall (outbound 443 to api.dingtalk.com) first; then `channels.dingtalk.client_id` and `HITLBOT_CHANNELS_DINGTALK_CLIENT_SECRET` against the console's 凭证与基础信息"
	fixFeishuThrottle   = "Feishu rate-limits the app (99991400 / HTTP 429 per app and API, 230020 per chat or per message, 5 a second): the bot retries with a backoff (`channels.feishu.max_retries`, `max_retry_wait`); if it lasts, fewer calls: fewer replicas or other bots posting to the same group"
	fixFeishuScope      = "grant the app's scopes in the console's 权限管理 (`im:message`, `im:message:send_as_bot`, `cardkit:card:write`) and publish a new version"
	fixFeishuNotInChat  = "add the bot to the chat (群设置 → 群机器人), or fix the chat id the config names"
	fixDingTalkThrottle = "DingTalk rate-limits the app (90018 / QpsLimitForAppkeyAndApi: 20 calls a second per API on a standard org; 90002 / QpsLimitForApi: all of DingTalk; HTTP 429): the bot retries with a backoff (`channels.dingtalk.max_retries`, `max_retry_wait`); if it lasts, fewer calls (fewer replicas, a longer `channels.dingtalk.stream_interval`) or a plan with a higher QPS"
	fixDingTalkQuota    = "the organisation spent its metered API calls of the month (90020 / ApiCountLimitForOrg: 5000 a month on a standard org): upgrade the DingTalk plan, or wait for the next month; until then cards and robot messages are refused"
	fixDingTalkScope    = "grant the app's permissions in the console's 权限管理 (企业内机器人发送消息, Card.Instance.Write, Card.Streaming.Write) and publish a new version"
)

// refusal is what a platform's answer code means and what to do.
type refusal struct{ what, fix string }

// feishuRefusals are the Feishu codes doctor explains, by the code the
// platform metrics count (Feishu's code, or http_<status>).
var feishuRefusals = map[string]refusal{
	"99991400": {"a rate limit of the app (99991400)", fixFeishuThrottle},
	"http_429": {"a rate limit of the app (HTTP 429)", fixFeishuThrottle},
	"230020":   {"a rate limit of a chat or a message (230020)", fixFeishuThrottle},
	"99991672": {"a scope the app has not been granted (99991672)", fixFeishuScope},
	"230002":   {"the bot is not in the chat (230002)", fixFeishuNotInChat},
	"10014":    {"the app secret is wrong (10014)", fixFeishu},
	"10003":    {"the app id is wrong (10003)", fixFeishu},
}

// dingtalkRefusals are the DingTalk codes doctor explains besides the
// throttles (dingtalk.Throttle).
var dingtalkRefusals = map[string]refusal{
	"Forbidden.AccessDenied.AccessTokenPermissionDenied": {"a permission the app has not been granted (AccessTokenPermissionDenied)", fixDingTalkScope},
	"invalidClientSecret":                                {"the client secret is wrong (invalidClientSecret)", fixDingTalk},
	"invalidClientId":                                    {"the client id is wrong (invalidClientId)", fixDingTalk},
}

// explainFeishu says code in words, with its fix; ok false when doctor
// does not know it.
func explainFeishu(code string) (refusal, bool) {
	if code == "transport" {
		return refusal{"no answer (network)", fixFeishuNetwork}, true
	}
	r, ok := feishuRefusals[code]
	return r, ok
}

// explainDingTalk is explainFeishu for DingTalk.
func explainDingTalk(code string) (refusal, bool) {
	if code == "transport" {
		return refusal{"no answer (network)", fixDingTalkNetwork}, true
	}
	switch t, passes := dingtalk.Throttle(code); {
	case t && passes:
		return refusal{"a rate limit (" + code + ")", fixDingTalkThrottle}, true
	case t:
		return refusal{"the month's API call quota is spent (" + code + ")", fixDingTalkQuota}, true
	}
	r, ok := dingtalkRefusals[code]
	return r, ok
}

// noAnswer reports whether err is a call that got no HTTP answer: DNS,
// connection, TLS or a timeout. Its fix names the network first.
func noAnswer(err error) bool {
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne)
}

// feishuCode is the code the platform metrics count for err of a Feishu
// call ("" when it carries none).
func feishuCode(err error) string {
	var ae *feishu.APIError
	switch {
	case noAnswer(err):
		return "transport"
	case errors.As(err, &ae) && ae.Code != 0:
		return strconv.Itoa(ae.Code)
	case errors.As(err, &ae) && ae.Status != 0:
		return "http_" + strconv.Itoa(ae.Status)
	}
	return ""
}

// refusedFinding is the FAIL of a probe whose call was refused with
// code: in words when doctor knows the code, with its fix, else with
// fallback.
func refusedFinding(detail, code string, explain func(string) (refusal, bool), fallback string) finding {
	if r, ok := explain(code); ok {
		return fail(detail+": "+r.what, r.fix)
	}
	return fail(detail, fallback)
}

// serverReady is what doctor reads of a `bot serve`'s /readyz.
type serverReady struct {
	Refusing map[string]metrics.Refusal `json:"refusing"`
	Audit    *auditReady                `json:"audit"` // ready_audit.go
}

// serverReadyz asks the `bot serve` of this config, on server.listen
// (a wildcard host is asked on loopback), for its /readyz and returns
// what it says, with the address asked; "" when no server answers there
// (doctor runs beside the server or not).
func serverReadyz(ctx context.Context, cfg *config.Config, timeout time.Duration) (serverReady, string) {
	host, port, err := net.SplitHostPort(cfg.Server.Listen)
	if err != nil || port == "0" {
		return serverReady{}, ""
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	addr := net.JoinHostPort(host, port)
	ctx, cancel := context.WithTimeout(ctx, min(timeout, 2*time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
	if err != nil {
		return serverReady{}, ""
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return serverReady{}, ""
	}
	defer resp.Body.Close()
	var body serverReady
	if json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&body) != nil {
		return serverReady{}, ""
	}
	return body, addr
}

// serverRefusals is serverReadyz's platforms that keep refusing; nil
// when no server answers.
func serverRefusals(ctx context.Context, cfg *config.Config, timeout time.Duration) (map[string]metrics.Refusal, string) {
	r, addr := serverReadyz(ctx, cfg, timeout)
	return r.Refusing, addr
}

// withServerAudit adds to f, the audit probe's finding, what the server
// on addr says of its audit trail: a sink failing or a full queue makes
// it a FAIL, in words and with what to do (no approved tool runs there).
func withServerAudit(f finding, a *auditReady, addr string) finding {
	if a == nil {
		return f
	}
	var said []string
	for _, s := range a.Failing {
		said = append(said, fmt.Sprintf("sink %s failing since %s (%d failed writes; last: %s)",
			s.Sink, s.Since.UTC().Format(time.RFC3339), s.Attempts, oneLine(s.Error)))
	}
	if a.QueueSize > 0 && a.Queued >= a.QueueSize {
		said = append(said, fmt.Sprintf("queue full (%d records wait; %d refused since start)", a.Queued, a.Refused))
	}
	if len(said) == 0 {
		return f
	}
	detail := f.detail + "; bot serve on " + addr + ": audit trail " + strings.Join(said, "; ")
	if f.verdict == verdictFail {
		return fail(detail, f.fix) // the file's own fix comes first
	}
	return fail(detail, fixAuditServer)
}

// withServer adds to f, a probe's finding of platform, what the server
// on addr says of it: a platform it says keeps refusing makes an OK a
// WARN, in words and with what to do.
func withServer(f finding, platform string, refusing map[string]metrics.Refusal, addr string, explain func(string) (refusal, bool)) finding {
	r, ok := refusing[platform]
	if !ok || f.verdict == verdictSkip {
		return f
	}
	said := fmt.Sprintf("bot serve on %s: %s keeps refusing (the last %d API calls failed; last: %s, code %s)", addr, platform, r.Calls, r.API, r.Code)
	if e, ok := explain(r.Code); ok {
		said += ": " + e.what + "; what to do: " + e.fix
	}
	if f.verdict == verdictOK {
		f.verdict = verdictWarn
	}
	f.detail += "; " + said
	return f
}
