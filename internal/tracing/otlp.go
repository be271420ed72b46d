package tracing

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// TracesURL is the URL spans are POSTed to for endpoint: endpoint itself
// when its path ends in /v1/traces, else endpoint with /v1/traces added
// (the OTLP/HTTP exporter's rule for OTEL_EXPORTER_OTLP_ENDPOINT).
func TracesURL(endpoint string) string {
	if strings.HasSuffix(strings.TrimRight(endpoint, "/"), "/v1/traces") {
		return endpoint
	}
	return strings.TrimRight(endpoint, "/") + "/v1/traces"
}

// CheckEndpoint says what is wrong with an endpoint, or nil.
func CheckEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("%q is not an http or https URL with a host", endpoint)
	}
	if u.User != nil {
		return fmt.Errorf("the endpoint holds a user or password: put it in headers")
	}
	return nil
}

// send POSTs batch as one ExportTraceServiceRequest.
func (p *Provider) send(batch []*span) error {
	body, err := encode(p.resource(), batch)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range p.cfg.Headers {
		req.Header.Set(k, v)
	}
	resp, err := p.cfg.Client.Do(req)
	if err != nil {
		// The error names the URL and the cause, never a header.
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("the collector answered %s", resp.Status)
	}
	return nil
}

func (p *Provider) resource() []attribute.KeyValue {
	r := []attribute.KeyValue{attribute.String("service.name", p.cfg.ServiceName),
		attribute.String("telemetry.sdk.name", "hitlbot"), attribute.String("telemetry.sdk.language", "go")}
	if p.cfg.ServiceVersion != "" {
		r = append(r, attribute.String("service.version", p.cfg.ServiceVersion))
	}
	return r
}

// The protobuf JSON mapping of opentelemetry/proto/collector/trace/v1's
// ExportTraceServiceRequest: lowerCamelCase field names, trace and span
// ids in hex (OTLP's exception to base64), enums as integers, 64-bit
// integers (the times in unix nanoseconds, intValue) as decimal strings.
type (
	exportRequest struct {
		ResourceSpans []resourceSpans `json:"resourceSpans"`
	}
	resourceSpans struct {
		Resource   resource     `json:"resource"`
		ScopeSpans []scopeSpans `json:"scopeSpans"`
	}
	resource struct {
		Attributes []keyValue `json:"attributes"`
	}
	scopeSpans struct {
		Scope scopeJSON  `json:"scope"`
		Spans []spanJSON `json:"spans"`
	}
	scopeJSON struct {
		Name    string `json:"name"`
		Version string `json:"version,omitempty"`
	}
	spanJSON struct {
		TraceID           string      `json:"traceId"`
		SpanID            string      `json:"spanId"`
		TraceState        string      `json:"traceState,omitempty"`
		ParentSpanID      string      `json:"parentSpanId,omitempty"`
		Flags             uint32      `json:"flags,omitempty"`
		Name              string      `json:"name"`
		Kind              int         `json:"kind"`
		StartTimeUnixNano string      `json:"startTimeUnixNano"`
		EndTimeUnixNano   string      `json:"endTimeUnixNano"`
		Attributes        []keyValue  `json:"attributes,omitempty"`
		Events            []eventJSON `json:"events,omitempty"`
		Links             []linkJSON  `json:"links,omitempty"`
		Status            *statusJSON `json:"status,omitempty"`
	}
	eventJSON struct {
		TimeUnixNano string     `json:"timeUnixNano"`
		Name         string     `json:"name"`
		Attributes   []keyValue `json:"attributes,omitempty"`
	}
	linkJSON struct {
		TraceID    string     `json:"traceId"`
		SpanID     string     `json:"spanId"`
		Attributes []keyValue `json:"attributes,omitempty"`
		Flags      uint32     `json:"flags,omitempty"`
	}
	statusJSON struct {
		Message string `json:"message,omitempty"`
		Code    int    `json:"code"`
	}
	keyValue struct {
		Key   string   `json:"key"`
		Value anyValue `json:"value"`
	}
	anyValue struct {
		StringValue *string     `json:"stringValue,omitempty"`
		BoolValue   *bool       `json:"boolValue,omitempty"`
		IntValue    *string     `json:"intValue,omitempty"`
		DoubleValue *float64    `json:"doubleValue,omitempty"`
		ArrayValue  *arrayValue `json:"arrayValue,omitempty"`
	}
	arrayValue struct {
		Values []anyValue `json:"values"`
	}
)

// OTLP's span flags: bits 0-7 the W3C trace flags, bit 8 "has the
// remote-parent bit", bit 9 "the parent is remote".
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

// encode is the JSON of one ExportTraceServiceRequest holding batch, the
// spans grouped by their tracer's scope.
func encode(res []attribute.KeyValue, batch []*span) ([]byte, error) {
	rs := resourceSpans{Resource: resource{Attributes: keyValues(res)}}
	index := map[scope]int{}
	for _, s := range batch {
		i, ok := index[s.t.scope]
		if !ok {
			i = len(rs.ScopeSpans)
			index[s.t.scope] = i
			rs.ScopeSpans = append(rs.ScopeSpans, scopeSpans{Scope: scopeJSON{Name: s.t.scope.name, Version: s.t.scope.version}})
		}
		rs.ScopeSpans[i].Spans = append(rs.ScopeSpans[i].Spans, s.json())
	}
	return json.Marshal(exportRequest{ResourceSpans: []resourceSpans{rs}})
}

func (s *span) json() spanJSON {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := spanJSON{
		TraceID: s.sc.TraceID().String(), SpanID: s.sc.SpanID().String(),
		TraceState: s.parent.TraceState().String(),
		Flags:      uint32(s.sc.TraceFlags()) | flagHasIsRemote,
		Name:       s.name, Kind: otlpKind(s.kind),
		StartTimeUnixNano: unixNano(s.start), EndTimeUnixNano: unixNano(s.end),
		Attributes: keyValues(s.attrs),
	}
	if s.parent.IsValid() {
		j.ParentSpanID = s.parent.SpanID().String()
		if s.parent.IsRemote() {
			j.Flags |= flagIsRemote
		}
	}
	for _, e := range s.events {
		at := e.at
		if at.IsZero() {
			at = s.end
		}
		j.Events = append(j.Events, eventJSON{TimeUnixNano: unixNano(at), Name: e.name, Attributes: keyValues(e.attrs)})
	}
	for _, l := range s.links {
		j.Links = append(j.Links, linkJSON{TraceID: l.SpanContext.TraceID().String(), SpanID: l.SpanContext.SpanID().String(),
			Attributes: keyValues(l.Attributes), Flags: uint32(l.SpanContext.TraceFlags()) | flagHasIsRemote | remoteBit(l.SpanContext)})
	}
	switch s.status {
	case codes.Ok:
		j.Status = &statusJSON{Code: 1} // STATUS_CODE_OK
	case codes.Error:
		j.Status = &statusJSON{Code: 2, Message: s.desc} // STATUS_CODE_ERROR
	}
	return j
}

func remoteBit(sc trace.SpanContext) uint32 {
	if sc.IsRemote() {
		return flagIsRemote
	}
	return 0
}

// otlpKind is OTLP's SpanKind for k: the API's numbers are OTLP's
// (INTERNAL 1 … CONSUMER 5); an unspecified kind is INTERNAL, as the SDK
// makes it.
func otlpKind(k trace.SpanKind) int {
	if k < trace.SpanKindInternal || k > trace.SpanKindConsumer {
		return int(trace.SpanKindInternal)
	}
	return int(k)
}

func unixNano(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return strconv.FormatInt(t.UnixNano(), 10)
}

func keyValues(kvs []attribute.KeyValue) []keyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]keyValue, 0, len(kvs))
	for _, kv := range kvs {
		if !kv.Valid() {
			continue
		}
		out = append(out, keyValue{Key: string(kv.Key), Value: anyOf(kv.Value)})
	}
	return out
}

func anyOf(v attribute.Value) anyValue {
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		return anyValue{BoolValue: &b}
	case attribute.INT64:
		i := strconv.FormatInt(v.AsInt64(), 10)
		return anyValue{IntValue: &i}
	case attribute.FLOAT64:
		return floatValue(v.AsFloat64())
	case attribute.BOOLSLICE:
		var a arrayValue
		for _, b := range v.AsBoolSlice() {
			a.Values = append(a.Values, anyValue{BoolValue: &b})
		}
		return anyValue{ArrayValue: &a}
	case attribute.INT64SLICE:
		var a arrayValue
		for _, n := range v.AsInt64Slice() {
			i := strconv.FormatInt(n, 10)
			a.Values = append(a.Values, anyValue{IntValue: &i})
		}
		return anyValue{ArrayValue: &a}
	case attribute.FLOAT64SLICE:
		var a arrayValue
		for _, f := range v.AsFloat64Slice() {
			a.Values = append(a.Values, floatValue(f))
		}
		return anyValue{ArrayValue: &a}
	case attribute.STRINGSLICE:
		var a arrayValue
		for _, s := range v.AsStringSlice() {
			a.Values = append(a.Values, anyValue{StringValue: &s})
		}
		return anyValue{ArrayValue: &a}
	default:
		s := v.Emit()
		return anyValue{StringValue: &s}
	}
}

// floatValue: JSON has no NaN or infinities; the protobuf JSON mapping
// writes them as strings, which encoding/json cannot put in a float
// field, so they are sent as the string value instead.
func floatValue(f float64) anyValue {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		s := strconv.FormatFloat(f, 'g', -1, 64)
		return anyValue{StringValue: &s}
	}
	return anyValue{DoubleValue: &f}
}

// errorType is what a span says of an error: its Go type, never its text.
func errorType(err error) string { return fmt.Sprintf("%T", err) }
