package hitltest

import (
	"context"
	"sync"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
)

// NopAudit is an approval.Auditor that drops every record.
type NopAudit struct{}

func (NopAudit) Append(audit.Record) {}

// Trail is an approval.Auditor that keeps every record.
type Trail struct {
	mu   sync.Mutex
	recs []audit.Record
}

func (a *Trail) Append(r audit.Record) {
	a.mu.Lock()
	a.recs = append(a.recs, r)
	a.mu.Unlock()
}

// All returns every record, in order.
func (a *Trail) All() []audit.Record {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]audit.Record(nil), a.recs...)
}

// Records returns the records of approval id.
func (a *Trail) Records(_ context.Context, id string) ([]audit.Record, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []audit.Record
	for _, r := range a.recs {
		if r.ApprovalID == id {
			out = append(out, r)
		}
	}
	return out, nil
}

// Requested returns the ids of the approvals requested so far.
func (a *Trail) Requested() []approval.ID {
	a.mu.Lock()
	defer a.mu.Unlock()
	var ids []approval.ID
	for _, r := range a.recs {
		if r.Event == audit.EventWriteRequest {
			ids = append(ids, approval.ID(r.ApprovalID))
		}
	}
	return ids
}
