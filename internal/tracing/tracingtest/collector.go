// Package tracingtest is a fake OTLP/HTTP collector for tests: it decodes
// each export with the OpenTelemetry Collector's own OTLP/JSON decoder
// (pdata, strict: a field OTLP does not define is an error), as the
// Collector's otlp receiver does with a JSON body. Tests only: pdata is no
// dependency of the binary.
package tracingtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Collector receives exports at URL + "/v1/traces".
type Collector struct {
	URL string

	t      testing.TB
	mu     sync.Mutex
	spans  []ptrace.Span
	scopes []string
	res    []pcommon.Map
	heads  []http.Header
	status int
}

// New starts a Collector, closed when t ends.
func New(t testing.TB) *Collector {
	c := &Collector{t: t, status: http.StatusOK}
	srv := httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

// Refuse makes the collector answer every export with status.
func (c *Collector) Refuse(status int) {
	c.mu.Lock()
	c.status = status
	c.mu.Unlock()
}

func (c *Collector) serve(w http.ResponseWriter, r *http.Request) {
	t := c.t
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		t.Errorf("export: %s %s, want POST /v1/traces", r.Method, r.URL.Path)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	body, _ := io.ReadAll(r.Body)
	u := ptrace.JSONUnmarshaler{DisallowUnknownFields: true}
	td, err := u.UnmarshalTraces(body)
	if err != nil {
		t.Errorf("the collector's OTLP/JSON decoder refuses the export: %v\n%s", err, body)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.heads = append(c.heads, r.Header.Clone())
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		c.res = append(c.res, rs.Resource().Attributes())
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			for k := 0; k < ss.Spans().Len(); k++ {
				c.spans = append(c.spans, ss.Spans().At(k))
				c.scopes = append(c.scopes, ss.Scope().Name())
			}
		}
	}
	w.WriteHeader(c.status)
	_, _ = w.Write([]byte("{}"))
}

// Spans returns the spans received so far.
func (c *Collector) Spans() []ptrace.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]ptrace.Span(nil), c.spans...)
}

// Scopes returns each span's scope name, in the order of Spans.
func (c *Collector) Scopes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.scopes...)
}

// Resources returns each export's resource attributes.
func (c *Collector) Resources() []pcommon.Map {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]pcommon.Map(nil), c.res...)
}

// Headers returns each export's HTTP headers.
func (c *Collector) Headers() []http.Header {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]http.Header(nil), c.heads...)
}

// Span returns the one span named name, failing t when there is none or
// more than one.
func (c *Collector) Span(t testing.TB, name string) ptrace.Span {
	t.Helper()
	var found []ptrace.Span
	for _, s := range c.Spans() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		var names []string
		for _, s := range c.Spans() {
			names = append(names, s.Name())
		}
		t.Fatalf("%d spans named %q among %v, want one", len(found), name, names)
	}
	return found[0]
}

// Str is the string form of attribute key of s, failing t when s has
// none.
func Str(t testing.TB, s ptrace.Span, key string) string {
	t.Helper()
	v, ok := s.Attributes().Get(key)
	if !ok {
		t.Fatalf("span %q has no %s", s.Name(), key)
	}
	return v.AsString()
}
