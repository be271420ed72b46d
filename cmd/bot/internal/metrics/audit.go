package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hitlbot/hitlbot/approval/audit"
)

// Audit registers the audit trail's health, read from health
// (audit.Log.Health) at each scrape: hitlbot_audit_queued_records (records
// not yet written by every sink), hitlbot_audit_queue_size (the most that
// may wait; at it, each new record is refused),
// hitlbot_audit_refused_records_total (records refused for want of room
// since start: they are not in the trail) and hitlbot_audit_sinks_failing
// (sinks whose last write failed; while one does, no approved tool runs).
func (m *Metrics) Audit(health func() audit.Health) {
	if m == nil || health == nil {
		return
	}
	m.reg.MustRegister(&auditCollector{health: health})
}

var (
	auditQueued = prometheus.NewDesc(Namespace+"_audit_queued_records",
		"Audit records not yet written by every sink.", nil, nil)
	auditQueueSize = prometheus.NewDesc(Namespace+"_audit_queue_size",
		"The most audit records that may wait for a sink; while that many wait, each new record is refused and its approval runs nothing.", nil, nil)
	auditRefused = prometheus.NewDesc(Namespace+"_audit_refused_records_total",
		"Audit records refused because the queue was full, since start: they are not in the trail.", nil, nil)
	auditFailing = prometheus.NewDesc(Namespace+"_audit_sinks_failing",
		"Audit sinks whose last write failed; while one does, no approved tool runs (not run: the audit trail is unavailable).", nil, nil)
)

type auditCollector struct {
	health func() audit.Health
}

func (c *auditCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- auditQueued
	ch <- auditQueueSize
	ch <- auditRefused
	ch <- auditFailing
}

func (c *auditCollector) Collect(ch chan<- prometheus.Metric) {
	h := c.health()
	ch <- prometheus.MustNewConstMetric(auditQueued, prometheus.GaugeValue, float64(h.Queued))
	ch <- prometheus.MustNewConstMetric(auditQueueSize, prometheus.GaugeValue, float64(h.QueueSize))
	ch <- prometheus.MustNewConstMetric(auditRefused, prometheus.CounterValue, float64(h.Refused))
	ch <- prometheus.MustNewConstMetric(auditFailing, prometheus.GaugeValue, float64(len(h.Failing)))
}

var _ prometheus.Collector = (*auditCollector)(nil)
