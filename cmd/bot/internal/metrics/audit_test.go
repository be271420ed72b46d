package metrics

import (
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval/audit"
)

// TestAuditMetrics: the audit trail's health is read at each scrape: the
// queue's depth and size, the records refused since start and the sinks
// failing now.
func TestAuditMetrics(t *testing.T) {
	m := New("v")
	h := audit.Health{Queued: 7, QueueSize: 4096, Refused: 3,
		Failing: []audit.SinkFailure{{Sink: "file:/x", Since: time.Unix(0, 0), Attempts: 2, Err: "disk full"}}}
	m.Audit(func() audit.Health { return h })
	wantLines(t, scrape(t, m),
		"hitlbot_audit_queued_records 7",
		"hitlbot_audit_queue_size 4096",
		"hitlbot_audit_refused_records_total 3",
		"hitlbot_audit_sinks_failing 1",
	)
	h = audit.Health{QueueSize: 4096, Refused: 3}
	wantLines(t, scrape(t, m), "hitlbot_audit_queued_records 0", "hitlbot_audit_sinks_failing 0")

	var nilM *Metrics
	nilM.Audit(func() audit.Health { return h }) // records nothing, does not panic
}
