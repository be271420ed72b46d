package approval_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/words"
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

func auditedEngine(t *testing.T, log approval.Auditor, d approval.Dispatcher) *approval.Engine {
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

// heldSink holds every write until release is closed, as a sink that is
// down and comes back.
type heldSink struct {
	release chan struct{}
	audit.MemorySink
}

func (h *heldSink) Write(ctx context.Context, recs []audit.Record) error {
	select {
	case <-h.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return h.MemorySink.Write(ctx, recs)
}

// recoveringAudit is the engine's audit trail: a Log whose queue is full
// while its sink is held; the sink comes back (and the queue drains)
// right after the confirm record was refused, before the engine flushes.
type recoveringAudit struct {
	*audit.Log
	sink    *heldSink
	refused int
}

func (r *recoveringAudit) Append(rec audit.Record) { _ = r.TryAppend(rec) }

func (r *recoveringAudit) TryAppend(rec audit.Record) error {
	err := r.Log.TryAppend(rec)
	if err != nil && rec.Event == audit.EventConfirm {
		r.refused++
		close(r.sink.release)
		if ferr := r.Log.Flush(context.Background()); ferr != nil {
			panic(ferr)
		}
	}
	return err
}

// TestRefusedConfirmRunsNothing: a confirm record the audit queue refused
// (full, its sink down) is never written, so its tool is not run, even
// when the sink is back by the time the engine flushes; the approval fails
// "not run: the audit trail is unavailable". Nothing waits for room.
func TestRefusedConfirmRunsNothing(t *testing.T) {
	sink := &heldSink{release: make(chan struct{})}
	log := audit.NewLog(audit.LogConfig{QueueSize: 1, FlushInterval: -1}, nil, quiet, sink)
	t.Cleanup(func() { log.Close(context.Background()) })
	trail := &recoveringAudit{Log: log, sink: sink}
	tool := &checkingTool{t: t, sink: &sink.MemorySink}
	e := auditedEngine(t, trail, tool)
	a := request(t, e) // its request record fills the queue
	o := decide(t, e, a.ID, decision(a, approval.Approve, "bob"))
	if trail.refused != 1 {
		t.Fatalf("%d confirm records refused, want 1", trail.refused)
	}
	if o.Status != approval.StatusFailed || tool.runs != 0 {
		t.Fatalf("outcome %+v, runs %d; want failed, not run", o, tool.runs)
	}
	if len(o.Results) != 1 || !strings.Contains(o.Results[0].Content, words.In("en", words.NotRunNoAudit)) {
		t.Fatalf("results %+v, want the audit trail's sentence", o.Results)
	}
}
