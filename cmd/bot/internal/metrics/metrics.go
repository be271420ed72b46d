package metrics

import (
	"errors"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hitlbot/hitlbot/approval"
)

// Namespace starts every metric name.
const Namespace = "hitlbot"

// Metrics holds the process's metrics in a registry of its own (nothing is
// registered globally). Every method is safe for concurrent use; a nil
// *Metrics records nothing, so tests and tools may pass nil.
type Metrics struct {
	reg *prometheus.Registry
	now func() time.Time

	requested   *prometheus.CounterVec   // tool, risk
	decided     *prometheus.CounterVec   // tool, risk, status
	pending     prometheus.Gauge         //
	latency     *prometheus.HistogramVec // risk, status
	inbound     *prometheus.CounterVec   // channel
	deduped     *prometheus.CounterVec   // channel
	refused     *prometheus.CounterVec   // channel
	decisions   *prometheus.CounterVec   // channel, status
	toolSeconds *prometheus.HistogramVec // tool
	toolErrors  *prometheus.CounterVec   // tool, kind
	modelSecs   *prometheus.HistogramVec // provider
	modelErrors *prometheus.CounterVec   // provider
	reloads     *prometheus.CounterVec   // result
	platform    *platformMetrics         // chat platforms' API calls (platform.go)

	labelMu    sync.Mutex
	mcpServers []string        // the configured MCP servers' names
	labelled   map[string]bool // MCP tools with a label of their own
	perServer  map[string]int  // MCP server, or "<agent>/" (labelOwner) -> tool labels given
}

// MaxToolLabels is how many of one MCP server's tools get a tool label of
// their own (hitlbot_tool_duration_seconds{tool}, hitlbot_tool_errors_total,
// hitlbot_approvals_*_total), first come first served over the process's
// life; the server's other tools share the label "<server>__(other)",
// which no tool can be named. An MCP server chooses its tools' names and
// may change them at will (tools/list_changed): without a bound an
// untrusted server could make series without end. Built-in tools, whose
// names the config gives, are labelled by name.
const MaxToolLabels = 64

// OtherTools is the suffix of the label an MCP server's tools share
// beyond MaxToolLabels: "<server>" + OtherTools.
const OtherTools = "__(other)"

// toolLabel is the tool label of the tool (or approval's tool) name.
func (m *Metrics) toolLabel(name string) string {
	m.labelMu.Lock()
	defer m.labelMu.Unlock()
	if m.labelled[name] {
		return name
	}
	owner, other := m.labelOwner(name)
	if owner == "" {
		return name
	}
	if m.perServer[owner] >= MaxToolLabels {
		// Not remembered: the names beyond the bound take no memory.
		return other
	}
	m.perServer[owner]++
	m.labelled[name] = true
	return name
}

// New returns metrics registered in a new registry, with the Go runtime and
// process collectors and a build-info gauge (hitlbot_build_info{version}).
func New(version string) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg:       reg,
		now:       time.Now,
		labelled:  map[string]bool{},
		perServer: map[string]int{},
		requested: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "approvals_requested_total",
			Help: "Approvals requested (cards shown), by tool and risk.",
		}, []string{"tool", "risk"}),
		decided: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "approvals_decided_total",
			Help: "Approvals that ended, by tool, risk and final status (executed, failed, frozen, rejected, expired, superseded, cancelled, replayed).",
		}, []string{"tool", "risk", "status"}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "approvals_pending",
			Help: "Approvals requested by this process minus those ended on it; sum over replicas for the total (a replica may go negative when another one requested what it ended).",
		}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "approval_decision_seconds",
			Help:    "Time from an approval's request to its end, by risk and final status.",
			Buckets: []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600},
		}, []string{"risk", "status"}),
		inbound: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "messages_inbound_total",
			Help: "Inbound messages and card actions, by channel, before de-duplication.",
		}, []string{"channel"}),
		deduped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "messages_deduplicated_total",
			Help: "Inbound events dropped as redeliveries, by channel.",
		}, []string{"channel"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "inbound_refused_total",
			Help: "Inbound messages and card actions refused because the sender or chat is not in the channel's allow-list (channels.<name>.allow), by channel.",
		}, []string{"channel"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "decisions_total",
			Help: "Decisions taken through a channel (a click, a typed reply, an API call), by channel and the status they got (including unauthorized, tampered, already_decided).",
		}, []string{"channel", "status"}),
		toolSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "tool_duration_seconds",
			Help:    "Duration of tool runs, by tool.",
			Buckets: prometheus.ExponentialBuckets(0.005, 4, 9), // 5ms .. ~5.5min
		}, []string{"tool"}),
		toolErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "tool_errors_total",
			Help: "Tool runs that did not succeed, by tool and kind: failed (the tool reported it), not_run (it never started) or unknown (its effect is unknown).",
		}, []string{"tool", "kind"}),
		modelSecs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "model_request_duration_seconds",
			Help:    "Duration of model requests (retries included), by provider.",
			Buckets: prometheus.ExponentialBuckets(0.01, 3, 9), // 10ms .. ~65s
		}, []string{"provider"}),
		modelErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "model_errors_total",
			Help: "Model requests that failed, by provider.",
		}, []string{"provider"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "config_reloads_total",
			Help: "Config reloads, by result (ok, failed, unchanged).",
		}, []string{"result"}),
	}
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "build_info",
		Help: "Always 1; the labels say which build runs.",
	}, []string{"version", "go_version"})
	build.WithLabelValues(version, runtime.Version()).Set(1)
	reg.MustRegister(
		// prometheus's own constructors, which collectors.NewGoCollector and
		// NewProcessCollector call with these same arguments: that package
		// would be in the binary only for these two calls
		// (cmd/bot/deps_test.go).
		prometheus.NewGoCollector(),                                       //nolint:staticcheck // see above
		prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}), //nolint:staticcheck // see above
		build,
		m.requested, m.decided, m.pending, m.latency, m.inbound, m.deduped, m.refused, m.decisions,
		m.toolSeconds, m.toolErrors, m.modelSecs, m.modelErrors, m.reloads,
	)
	m.platform = newPlatformMetrics()
	reg.MustRegister(m.platform.collectors()...)
	return m
}

// Registry returns the registry, for tests and extra collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Inbound counts one inbound message or card action of a channel.
func (m *Metrics) Inbound(channel string) {
	if m != nil {
		m.inbound.WithLabelValues(channel).Inc()
	}
}

// Deduplicated counts one redelivered event a channel's router dropped.
func (m *Metrics) Deduplicated(channel string) {
	if m != nil {
		m.deduped.WithLabelValues(channel).Inc()
	}
}

// Refused counts one message or card action refused by a channel's
// allow-list.
func (m *Metrics) Refused(channel string) {
	if m != nil {
		m.refused.WithLabelValues(channel).Inc()
	}
}

// Decision counts one decision taken through a channel and its status.
func (m *Metrics) Decision(channel string, st approval.Status) {
	if m != nil {
		m.decisions.WithLabelValues(channel, string(st)).Inc()
	}
}

// Reload counts one config reload: "ok", "failed" or "unchanged".
func (m *Metrics) Reload(result string) {
	if m != nil {
		m.reloads.WithLabelValues(result).Inc()
	}
}

// requestedApproval counts an approval shown by this process.
func (m *Metrics) requestedApproval(a *approval.Approval) {
	m.requested.WithLabelValues(m.toolLabel(a.Tool()), a.Risk.String()).Inc()
	m.pending.Inc()
}

// endedApproval counts an approval that ended with status st.
func (m *Metrics) endedApproval(a *approval.Approval, st approval.Status) {
	m.decided.WithLabelValues(m.toolLabel(a.Tool()), a.Risk.String(), string(st)).Inc()
	m.pending.Dec()
	end := a.DecidedAt
	if end.IsZero() {
		end = m.now()
	}
	if !a.CreatedAt.IsZero() {
		m.latency.WithLabelValues(a.Risk.String(), string(st)).Observe(max(end.Sub(a.CreatedAt).Seconds(), 0))
	}
}

// toolRun records one tool run.
func (m *Metrics) toolRun(name string, d time.Duration, isError bool, err error) {
	tool := m.toolLabel(name)
	m.toolSeconds.WithLabelValues(tool).Observe(d.Seconds())
	switch {
	case err != nil && errors.Is(err, approval.ErrNotRun):
		m.toolErrors.WithLabelValues(tool, "not_run").Inc()
	case err != nil:
		m.toolErrors.WithLabelValues(tool, "unknown").Inc()
	case isError:
		m.toolErrors.WithLabelValues(tool, "failed").Inc()
	}
}
