package dingtalk

import (
	"errors"
	"net/http"
)

// DingTalk's throttles, each a refusal of a call DingTalk did not carry
// out (nothing was sent), as doc development/
// how-to-process-api-throttling-on-the-dingtalk-server (调用频次与限流)
// names them; old-style APIs answer the errcode, the new OpenAPI
// (api.dingtalk.com) the code:
//
//   - per app and API (20 calls a second on a standard org): 90018,
//     Forbidden.AccessDenied.QpsLimitForAppkeyAndApi ("应用维度QPS限流");
//   - per API over every app of DingTalk: 90002,
//     Forbidden.AccessDenied.QpsLimitForApi ("全局维度QPS限流");
//     for both the doc says the limit holds for one second ("sleep 1
//     秒，然后继续执行");
//   - the organisation's metered calls of the month (5000 a month on a
//     standard org): 90020, Forbidden.AccessDenied.ApiCountLimitForOrg
//     ("每月调用次数限制"): a throttle that does not pass before the
//     month ends, so it is counted, never retried;
//   - per IP (10,000 calls in 20 s, then 5 minutes banned): answered with
//     an HTML page and no code, so it is not recognised (HTTP status not
//     documented);
//   - an ISV app per organisation and API (40 a second): 90019 (not on
//     the official page: a community answer, developer.aliyun.com/ask/
//     491711, and help.dingtalk.io call-frequency-limit as the shared
//     reference cites it);
//   - HTTP 429 (Too Many Requests), which no DingTalk page documents for
//     these APIs but every gateway may answer.
//
// The new OpenAPI answers its codes with HTTP 403 (field reports:
// DingTalk-Real-AI/dingtalk-openclaw-connector #410, #444); the code, not
// the status, says it is a throttle.
var (
	// passingThrottles are retried after a backoff.
	passingThrottles = map[string]bool{
		"90018": true, "Forbidden.AccessDenied.QpsLimitForAppkeyAndApi": true,
		"90002": true, "Forbidden.AccessDenied.QpsLimitForApi": true,
		"90019": true,
	}
	// quotaThrottles last until the month ends: counted, not retried.
	quotaThrottles = map[string]bool{"90020": true, "Forbidden.AccessDenied.ApiCountLimitForOrg": true}
)

// Throttle reports whether code, as the platform metrics count it
// (DingTalk's code, or "http_429"), is one of DingTalk's throttles, and
// whether it passes within seconds (the channel retries it) rather than
// when the month's call quota renews.
func Throttle(code string) (throttled, passes bool) {
	switch {
	case code == "http_429" || passingThrottles[code]:
		return true, true
	case quotaThrottles[code]:
		return true, false
	}
	return false, false
}

// throttled reports whether err is an answer refusing the call for a
// rate limit (a refusal before the call was carried out) and whether
// that limit passes within seconds.
func throttled(err error) (throttled, passes bool) {
	ae := (*apiError)(nil)
	if !errors.As(err, &ae) {
		return false, false
	}
	if ae.Status == http.StatusTooManyRequests {
		return true, true
	}
	return Throttle(ae.Code)
}

// AnswerCode is the code the platform metrics count for the outcome of
// a DingTalk call that returned err: "0" for nil, DingTalk's code,
// "http_<status>" when the answer had none, "bad_answer", or "transport"
// when no answer came. bot doctor explains it.
func AnswerCode(err error) string { return answerCode(err) }
