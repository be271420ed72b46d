package approval_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/internal/clock"
)

// downSink fails every write: the audit trail is unavailable.
type downSink struct{}

func (downSink) Write(context.Context, []audit.Record) error { return errors.New("disk full") }
func (downSink) Close() error                                { return nil }

// checkingTool fails the test if its approval's confirm record is not in
// sink when it runs.
type checkingTool struct {
	t    *testing.T
	sink *audit.MemorySink
	runs int
}

func (c *checkingTool) Dispatch(ctx context.Context, call approval.Call) (approval.Result, error) {
	c.runs++
	recs, err := c.sink.Read(ctx)
	if err != nil {
		return approval.Result{}, err
	}
	for _, r := range recs {
		if r.Event == audit.EventConfirm {
			return approval.Result{Content: "ok"}, nil
		}
	}
	c.t.Error("the tool ran before its confirm record was written")
	return approval.Result{Content: "ok"}, nil
}

func auditedEngine(t *testing.T, log *audit.Log, d approval.Dispatcher) *approval.Engine {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC))
	e, err := approval.NewEngine(approval.EngineConfig{Store: memstore.New(memstore.Options{Clock: clk}), Dispatcher: d, Audit: log,
		Clock: clk, Logger: quiet, PollInterval: time.Hour, AuditTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestToolRunsAfterItsRecordIsWritten: the log would hold records for an
// hour before writing a batch; the engine flushes it before the tool runs.
func TestToolRunsAfterItsRecordIsWritten(t *testing.T) {
	sink := audit.NewMemorySink()
	log := audit.NewLog(audit.LogConfig{FlushInterval: time.Hour}, nil, quiet, sink)
	t.Cleanup(func() { log.Close(context.Background()) })
	tool := &checkingTool{t: t, sink: sink}
	e := auditedEngine(t, log, tool)
	a := request(t, e)
	if o := decide(t, e, a.ID, decision(a, approval.Approve, "bob")); o.Status != approval.StatusExecuted || tool.runs != 1 {
		t.Fatalf("outcome %+v, runs %d", o, tool.runs)
	}
}

// TestAuditDownRunsNothing: when the audit trail cannot write the confirm
// record, the approved tool is not run and the approval fails.
func TestAuditDownRunsNothing(t *testing.T) {
	log := audit.NewLog(audit.LogConfig{RetryMin: time.Millisecond, RetryMax: time.Millisecond}, nil, quiet, downSink{})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		log.Close(ctx)
	})
	tool := &counterTool{}
	e := auditedEngine(t, log, tool)
	a := request(t, e)
	o := decide(t, e, a.ID, decision(a, approval.Approve, "bob"))
	if o.Status != approval.StatusFailed || !o.IsError || tool.runs.Load() != 0 {
		t.Fatalf("outcome %+v, runs %d", o, tool.runs.Load())
	}
	if got, _ := e.Get(context.Background(), a.ID); got.State != approval.StateFailed {
		t.Fatalf("state %s, want failed", got.State)
	}
	if len(o.Results) != 1 || o.Results[0].Status != approval.StatusFailed {
		t.Fatalf("results %+v", o.Results)
	}
}
