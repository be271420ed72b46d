package metrics

import (
	"fmt"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hitlbot/hitlbot/channels"
)

// platformMetrics are the chat platforms' API calls (channels.PlatformMetrics):
//
//	platform_requests_total{platform,api,code}      every answer; code "0" is success
//	platform_throttled_total{platform,api}          refused for a rate limit (Feishu 429 / 99991400, 230020; DingTalk: dingtalk.Throttle)
//	platform_retries_total{platform,api}            retries after a failure or a throttle
//	platform_delivery_failures_total{platform,api}  messages and card updates given up on
//
// and, for /readyz and bot doctor, each platform's run of failed calls.
type platformMetrics struct {
	requests, throttled, retries, failures *prometheus.CounterVec

	mu      sync.Mutex
	streaks map[string]*refusals // platform → its current run of failures
}

// refusals is a platform's run of failed calls since its last success.
type refusals struct {
	n         int
	api, code string // the last failed call
}

// PlatformRefusing is how many calls in a row a platform must fail, with
// no success between, for /readyz and bot doctor to say it keeps refusing.
const PlatformRefusing = 5

func newPlatformMetrics() *platformMetrics {
	return &platformMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "platform_requests_total",
			Help: "Calls of a chat platform's API, by platform, API and the platform's answer code (0 success; http_<status> without a code; transport when no answer came).",
		}, []string{"platform", "api", "code"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "platform_throttled_total",
			Help: "Calls a chat platform refused for a rate limit (Feishu 429/99991400 and 230020; DingTalk 429, 90018/90002/90019/90020 and their OpenAPI codes, flowControlledStaffIdList), by platform and API.",
		}, []string{"platform", "api"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "platform_retries_total",
			Help: "Retries of a chat platform's API call after a failure or a throttle, by platform and API.",
		}, []string{"platform", "api"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "platform_delivery_failures_total",
			Help: "Messages and card updates given up on after the platform kept refusing them, by platform and API.",
		}, []string{"platform", "api"}),
		streaks: map[string]*refusals{},
	}
}

func (p *platformMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{p.requests, p.throttled, p.retries, p.failures}
}

var _ channels.PlatformMetrics = (*Metrics)(nil)

// Request implements channels.PlatformMetrics.
func (m *Metrics) Request(platform, api, code string) {
	if m == nil {
		return
	}
	m.platform.requests.WithLabelValues(platform, api, code).Inc()
	p := m.platform
	p.mu.Lock()
	defer p.mu.Unlock()
	if code == "0" {
		delete(p.streaks, platform)
		return
	}
	r := p.streaks[platform]
	if r == nil {
		r = &refusals{}
		p.streaks[platform] = r
	}
	r.n++
	r.api, r.code = api, code
}

// Throttled implements channels.PlatformMetrics.
func (m *Metrics) Throttled(platform, api string) {
	if m != nil {
		m.platform.throttled.WithLabelValues(platform, api).Inc()
	}
}

// Retried implements channels.PlatformMetrics.
func (m *Metrics) Retried(platform, api string) {
	if m != nil {
		m.platform.retries.WithLabelValues(platform, api).Inc()
	}
}

// DeliveryFailed implements channels.PlatformMetrics.
func (m *Metrics) DeliveryFailed(platform, api string) {
	if m != nil {
		m.platform.failures.WithLabelValues(platform, api).Inc()
	}
}

// Refusal is a platform's run of failed calls, as /readyz reports it
// (under "refusing") for bot doctor to explain.
type Refusal struct {
	// Calls is how many calls in a row failed.
	Calls int `json:"calls"`
	// API is the last failed call's API, Code what the platform answered
	// it (its code, http_<status> or transport).
	API  string `json:"api"`
	Code string `json:"code"`
}

// PlatformRefusals returns, per platform whose last PlatformRefusing
// calls or more all failed, that run; nil when none did.
func (m *Metrics) PlatformRefusals() map[string]Refusal {
	if m == nil {
		return nil
	}
	p := m.platform
	p.mu.Lock()
	defer p.mu.Unlock()
	var out map[string]Refusal
	for platform, r := range p.streaks {
		if r.n >= PlatformRefusing {
			if out == nil {
				out = map[string]Refusal{}
			}
			out[platform] = Refusal{Calls: r.n, API: r.api, Code: r.code}
		}
	}
	return out
}

// PlatformWarnings says, per platform whose last PlatformRefusing calls
// or more all failed, that it keeps refusing and what it answered last,
// sorted by platform; nil when none does. /readyz lists them as warnings
// (a platform refusing is not this replica's fault: it stays ready), and
// bot doctor shows them.
func (m *Metrics) PlatformWarnings() []string {
	var out []string
	for platform, r := range m.PlatformRefusals() {
		out = append(out, fmt.Sprintf("%s keeps refusing: the last %d API calls failed (last: %s, code %s)", platform, r.Calls, r.API, r.Code))
	}
	sort.Strings(out)
	return out
}
