package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/hitlbot/hitlbot/approval/audit"
)

// auditReady is the audit trail's state as /readyz reports it (under
// "audit", only while it is not ready), for bot doctor to explain.
type auditReady struct {
	// Failing are the sinks whose last write failed.
	Failing []auditSinkFailing `json:"failing,omitempty"`
	// Queued records wait for a sink; at QueueSize new ones are refused.
	Queued    int `json:"queued"`
	QueueSize int `json:"queue_size"`
	// Refused is how many records were refused since start.
	Refused uint64 `json:"refused"`
}

// auditSinkFailing is one sink's run of failed writes.
type auditSinkFailing struct {
	Sink     string    `json:"sink"`
	Since    time.Time `json:"since"`
	Attempts int       `json:"attempts"`
	Error    string    `json:"error"`
}

// auditNotReady says why the audit trail keeps approved tools from
// running, in words, with its state: a sink whose last write failed (the
// engine waits 10 s for every sink before a tool runs, then runs nothing),
// or a full queue (each new record is refused, and its approval runs
// nothing). "" and nil while the trail writes.
func auditNotReady(l *audit.Log) (string, *auditReady) {
	if l == nil {
		return "", nil
	}
	h := l.Health()
	full := h.QueueSize > 0 && h.Queued >= h.QueueSize
	if len(h.Failing) == 0 && !full {
		return "", nil
	}
	r := &auditReady{Queued: h.Queued, QueueSize: h.QueueSize, Refused: h.Refused}
	var said []string
	for _, f := range h.Failing {
		r.Failing = append(r.Failing, auditSinkFailing{Sink: f.Sink, Since: f.Since.UTC(), Attempts: f.Attempts, Error: f.Err})
		said = append(said, fmt.Sprintf("sink %s failing since %s (%d failed writes; last: %s)",
			f.Sink, f.Since.UTC().Format(time.RFC3339), f.Attempts, f.Err))
	}
	if full {
		said = append(said, fmt.Sprintf("the queue is full (%d records wait; %d refused since start)", h.Queued, h.Refused))
	}
	return "audit trail: " + strings.Join(said, "; ") + ": no approved tool runs until it writes again", r
}
