package tracing

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// Config configures a Provider.
type Config struct {
	// Endpoint is the collector's OTLP/HTTP base URL
	// ("http://127.0.0.1:4318"); spans are POSTed to its /v1/traces (a
	// URL whose path ends in /v1/traces is taken as it is). Required.
	Endpoint string
	// Headers are sent with every export (an Authorization, an API key).
	// Never logged.
	Headers map[string]string
	// SampleRatio is the share of new traces recorded, 0 to 1; a span
	// whose parent came with the trace (a traceparent) follows the
	// parent's decision. 0 records none.
	SampleRatio float64
	// ServiceName is the resource's service.name.
	ServiceName string
	// ServiceVersion is the resource's service.version, when set.
	ServiceVersion string
	// Client sends the exports. Default: an http.Client with Timeout.
	Client *http.Client
	// Timeout bounds one export. Default 10s.
	Timeout time.Duration
	// Interval is how often the spans ended since the last export are
	// sent. Default 5s.
	Interval time.Duration
	// MaxBatch sends the spans at once when this many are waiting.
	// Default 512.
	MaxBatch int
	// MaxQueue is how many ended spans may wait; more are dropped (and
	// counted: Dropped). Default 4096.
	MaxQueue int
	// Logger receives export failures (the collector's status, never the
	// headers). Default slog.Default().
	Logger *slog.Logger
}

// Provider is a trace.TracerProvider that records sampled spans and sends
// them to an OTLP/HTTP collector as JSON, from one goroutine that New
// starts and Shutdown ends.
type Provider struct {
	embedded.TracerProvider
	cfg   Config
	url   string
	bound uint64 // a new trace is sampled when its id's low 63 bits are below

	mu      sync.Mutex
	queue   []*span
	closed  bool
	kick    chan struct{}
	flushes chan chan error
	done    chan struct{}
	dropped atomic.Int64
	failed  atomic.Int64
	sent    atomic.Int64
}

// New returns a Provider for cfg and starts its exporting goroutine.
func New(cfg Config) *Provider {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 5 * time.Second
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 512
	}
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = 4096
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: cfg.Timeout}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ServiceName == "" {
		cfg.ServiceName = "hitlbot"
	}
	p := &Provider{cfg: cfg, url: TracesURL(cfg.Endpoint), kick: make(chan struct{}, 1),
		flushes: make(chan chan error), done: make(chan struct{})}
	switch r := cfg.SampleRatio; {
	case r >= 1:
		p.bound = 1 << 63
	case r > 0:
		p.bound = uint64(r * (1 << 63))
	}
	go p.run()
	return p
}

// Tracer returns a tracer whose spans name name as their scope.
func (p *Provider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	c := trace.NewTracerConfig(opts...)
	return &tracer{p: p, scope: scope{name: name, version: c.InstrumentationVersion()}}
}

// Dropped is how many ended spans were dropped: the queue was full, or
// their export failed.
func (p *Provider) Dropped() int64 { return p.dropped.Load() }

// Sent is how many spans the collector accepted.
func (p *Provider) Sent() int64 { return p.sent.Load() }

// Flush sends every span ended so far and returns the export's error.
func (p *Provider) Flush(ctx context.Context) error {
	ch := make(chan error, 1)
	select {
	case p.flushes <- ch:
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown sends what is left and stops the goroutine; spans ended later
// are dropped.
func (p *Provider) Shutdown(ctx context.Context) error {
	err := p.Flush(ctx)
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.kick)
	}
	p.mu.Unlock()
	select {
	case <-p.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return err
}

func (p *Provider) run() {
	defer close(p.done)
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case _, ok := <-p.kick:
			if !ok {
				p.export()
				return
			}
			p.export()
		case <-t.C:
			p.export()
		case ch := <-p.flushes:
			ch <- p.export()
		}
	}
}

// enqueue hands an ended span to the exporter.
func (p *Provider) enqueue(s *span) {
	p.mu.Lock()
	if p.closed || len(p.queue) >= p.cfg.MaxQueue {
		p.mu.Unlock()
		p.dropped.Add(1)
		return
	}
	p.queue = append(p.queue, s)
	full := len(p.queue) >= p.cfg.MaxBatch
	p.mu.Unlock()
	if full {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
}

// export sends the queued spans, MaxBatch at a time.
func (p *Provider) export() error {
	var first error
	for {
		p.mu.Lock()
		n := min(len(p.queue), p.cfg.MaxBatch)
		batch := p.queue[:n:n]
		p.queue = p.queue[n:]
		if len(p.queue) == 0 {
			p.queue = nil
		}
		p.mu.Unlock()
		if n == 0 {
			return first
		}
		if err := p.send(batch); err != nil {
			p.dropped.Add(int64(n))
			p.failed.Add(1)
			p.cfg.Logger.Warn("tracing: the collector did not take the spans", "spans", n, "url", p.url, "err", err)
			if first == nil {
				first = err
			}
			continue
		}
		p.sent.Add(int64(n))
	}
}

// tracer is a Provider's trace.Tracer.
type tracer struct {
	embedded.Tracer
	p     *Provider
	scope scope
}

type scope struct{ name, version string }

// Start starts a span: a child of the span in ctx (or of its remote span
// context, a traceparent that came in), else the root of a new trace.
func (t *tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	c := trace.NewSpanStartConfig(opts...)
	parent := trace.SpanContextFromContext(ctx)
	if c.NewRoot() {
		parent = trace.SpanContext{}
	}
	var tid trace.TraceID
	sampled := false
	if parent.IsValid() {
		tid = parent.TraceID()
		sampled = parent.IsSampled()
	} else {
		tid = newTraceID()
		sampled = binary.BigEndian.Uint64(tid[8:])>>1 < t.p.bound
	}
	var flags trace.TraceFlags
	if sampled {
		flags = trace.FlagsSampled
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: newSpanID(), TraceFlags: flags})
	if !sampled {
		// Not recorded, but its context goes on (a traceparent says
		// "not sampled" downstream).
		return trace.ContextWithSpan(ctx, unsampled{sc: sc, p: t.p}), unsampled{sc: sc, p: t.p}
	}
	start := c.Timestamp()
	if start.IsZero() {
		start = time.Now()
	}
	s := &span{t: t, sc: sc, parent: parent, name: name, kind: c.SpanKind(), start: start,
		attrs: append([]attribute.KeyValue(nil), c.Attributes()...), links: c.Links()}
	return trace.ContextWithSpan(ctx, s), s
}

// span is a recorded span.
type span struct {
	embedded.Span
	t      *tracer
	sc     trace.SpanContext
	parent trace.SpanContext
	kind   trace.SpanKind
	start  time.Time

	mu     sync.Mutex
	name   string
	end    time.Time
	attrs  []attribute.KeyValue
	events []event
	links  []trace.Link
	status codes.Code
	desc   string
	ended  bool
}

type event struct {
	name  string
	at    time.Time
	attrs []attribute.KeyValue
}

func (s *span) End(opts ...trace.SpanEndOption) {
	c := trace.NewSpanEndConfig(opts...)
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	s.end = c.Timestamp()
	if s.end.IsZero() {
		s.end = time.Now()
	}
	s.mu.Unlock()
	s.t.p.enqueue(s)
}

func (s *span) AddEvent(name string, opts ...trace.EventOption) {
	c := trace.NewEventConfig(opts...)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.events = append(s.events, event{name: name, at: c.Timestamp(), attrs: c.Attributes()})
	}
}

func (s *span) AddLink(l trace.Link) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended && l.SpanContext.IsValid() {
		s.links = append(s.links, l)
	}
}

func (s *span) IsRecording() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.ended
}

// RecordError records err's type as the span's error.type and an
// "exception" event with its type alone: an error's text may hold what a
// span must not (a tool's output, a secret a tool echoed).
func (s *span) RecordError(err error, opts ...trace.EventOption) {
	if err == nil {
		return
	}
	typ := errorType(err)
	s.AddEvent("exception", append(opts, trace.WithAttributes(attribute.String("exception.type", typ)))...)
}

func (s *span) SpanContext() trace.SpanContext { return s.sc }

func (s *span) SetStatus(code codes.Code, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || code == codes.Unset || s.status == codes.Ok {
		return // Unset changes nothing; Ok is final
	}
	s.status = code
	s.desc = ""
	if code == codes.Error {
		s.desc = description
	}
}

func (s *span) SetName(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.name = name
	}
}

func (s *span) SetAttributes(kv ...attribute.KeyValue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	for _, a := range kv {
		if !a.Valid() {
			continue
		}
		replaced := false
		for i := range s.attrs {
			if s.attrs[i].Key == a.Key {
				s.attrs[i], replaced = a, true
				break
			}
		}
		if !replaced {
			s.attrs = append(s.attrs, a)
		}
	}
}

func (s *span) TracerProvider() trace.TracerProvider { return s.t.p }

// unsampled is a span that was not sampled: its context only.
type unsampled struct {
	embedded.Span
	sc trace.SpanContext
	p  trace.TracerProvider
}

func (unsampled) End(...trace.SpanEndOption)              {}
func (unsampled) AddEvent(string, ...trace.EventOption)   {}
func (unsampled) AddLink(trace.Link)                      {}
func (unsampled) IsRecording() bool                       { return false }
func (unsampled) RecordError(error, ...trace.EventOption) {}
func (u unsampled) SpanContext() trace.SpanContext        { return u.sc }
func (unsampled) SetStatus(codes.Code, string)            {}
func (unsampled) SetName(string)                          {}
func (unsampled) SetAttributes(...attribute.KeyValue)     {}
func (u unsampled) TracerProvider() trace.TracerProvider  { return u.p }

func newTraceID() (id trace.TraceID) {
	for !id.IsValid() {
		_, _ = rand.Read(id[:])
	}
	return id
}

func newSpanID() (id trace.SpanID) {
	for !id.IsValid() {
		_, _ = rand.Read(id[:])
	}
	return id
}
