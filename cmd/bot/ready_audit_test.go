package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/cmd/bot/internal/metrics"
)

// brokenSink fails every Write while broken is set, and reports each try.
type brokenSink struct {
	broken atomic.Bool
	tried  chan struct{}
	audit.MemorySink
}

func (s *brokenSink) Write(ctx context.Context, recs []audit.Record) error {
	select {
	case s.tried <- struct{}{}:
	default:
	}
	if s.broken.Load() {
		return errors.New("no space left on device")
	}
	return s.MemorySink.Write(ctx, recs)
}

func (s *brokenSink) String() string { return "file:/var/lib/hitlbot/audit.jsonl" }

// TestReadyAuditSinkFailing: while an audit sink's writes fail, /readyz
// answers 503 and says in words which sink, since when and that no
// approved tool runs, with the sink's state under "audit" for bot doctor;
// once it writes again the replica is ready.
func TestReadyAuditSinkFailing(t *testing.T) {
	sink := &brokenSink{tried: make(chan struct{}, 1)}
	sink.broken.Store(true)
	log := audit.NewLog(audit.LogConfig{Writer: "t", FlushInterval: -1, RetryMin: time.Millisecond, RetryMax: time.Millisecond}, nil, nil, sink)
	defer log.Close(context.Background())
	c := &core{store: memstore.New(memstore.Options{}), channels: channels.NewRegistry(), metrics: metrics.New("v"), audit: log}

	readyz := func() (int, map[string]any) {
		rec := httptest.NewRecorder()
		c.serveReady(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("/readyz %d %q: %v", rec.Code, rec.Body, err)
		}
		return rec.Code, body
	}
	if code, body := readyz(); code != http.StatusOK || body["audit"] != nil {
		t.Fatalf("/readyz before any record = %d %v, want 200 without audit", code, body)
	}

	log.Append(audit.Record{Event: audit.EventConfirm, ApprovalID: "ap_1"})
	<-sink.tried
	<-sink.tried // the first failure is recorded before the second try
	code, body := readyz()
	if code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz with the audit sink failing = %d %v, want 503", code, body)
	}
	problems, _ := body["problems"].([]any)
	if len(problems) != 1 {
		t.Fatalf("problems %v, want one", body["problems"])
	}
	p, _ := problems[0].(string)
	for _, want := range []string{"audit trail:", "file:/var/lib/hitlbot/audit.jsonl", "no space left on device", "since", "no approved tool runs"} {
		if !strings.Contains(p, want) {
			t.Errorf("problem %q does not say %q", p, want)
		}
	}
	var ready struct {
		Audit *auditReady `json:"audit"`
	}
	raw, _ := json.Marshal(body)
	if err := json.Unmarshal(raw, &ready); err != nil || ready.Audit == nil || len(ready.Audit.Failing) != 1 ||
		ready.Audit.Failing[0].Sink != "file:/var/lib/hitlbot/audit.jsonl" || ready.Audit.Queued != 1 {
		t.Fatalf("audit field %s (%v), want the failing sink and 1 queued", raw, err)
	}

	sink.broken.Store(false)
	if err := log.Flush(context.Background()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if code, body := readyz(); code != http.StatusOK || body["audit"] != nil {
		t.Fatalf("/readyz once the sink writes = %d %v, want 200 without audit", code, body)
	}
}
