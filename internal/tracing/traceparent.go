package tracing

import (
	"context"
	"encoding/hex"

	"go.opentelemetry.io/otel/trace"
)

// MetaKey is the key of the W3C traceparent in an MCP request's _meta (the
// MCP specification's convention for trace context, SEP-414: the W3C key
// names, without a prefix).
const MetaKey = "traceparent"

// Traceparent is sc as a W3C traceparent header value
// ("00-<trace id>-<span id>-<flags>"), or "" when sc is not valid.
func Traceparent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	b := make([]byte, 0, 55)
	b = append(b, "00-"...)
	b = hex.AppendEncode(b, tid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, sid[:])
	b = append(b, '-')
	return string(hex.AppendEncode(b, []byte{byte(sc.TraceFlags())}))
}

// FromContext is the traceparent of the span in ctx, or "".
func FromContext(ctx context.Context) string {
	return Traceparent(trace.SpanContextFromContext(ctx))
}

// Parse reads a W3C traceparent (version 00, or a later version read as
// 00 demands: its first four fields). ok is false for anything else,
// an all-zero trace or span id included.
func Parse(s string) (sc trace.SpanContext, ok bool) {
	if len(s) < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return trace.SpanContext{}, false
	}
	ver, okv := hexByte(s[0:2])
	if !okv || ver == 0xff || (ver == 0 && len(s) != 55) || (ver > 0 && len(s) > 55 && s[55] != '-') {
		return trace.SpanContext{}, false
	}
	var tid trace.TraceID
	var sid trace.SpanID
	if !lowerHex(s[3:35]) || !lowerHex(s[36:52]) {
		return trace.SpanContext{}, false
	}
	if _, err := hex.Decode(tid[:], []byte(s[3:35])); err != nil {
		return trace.SpanContext{}, false
	}
	if _, err := hex.Decode(sid[:], []byte(s[36:52])); err != nil {
		return trace.SpanContext{}, false
	}
	flags, okf := hexByte(s[53:55])
	if !okf {
		return trace.SpanContext{}, false
	}
	sc = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags) & trace.FlagsSampled, Remote: true})
	return sc, sc.IsValid()
}

// TraceID is the trace id (32 hex digits) of a traceparent, or "" when it
// is not one.
func TraceID(traceparent string) string {
	sc, ok := Parse(traceparent)
	if !ok {
		return ""
	}
	return sc.TraceID().String()
}

// WithRemote is ctx with the span context of traceparent as its remote
// parent, or ctx itself when traceparent is not one.
func WithRemote(ctx context.Context, traceparent string) context.Context {
	sc, ok := Parse(traceparent)
	if !ok {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

func hexByte(s string) (byte, bool) {
	if !lowerHex(s) {
		return 0, false
	}
	var b [1]byte
	if _, err := hex.Decode(b[:], []byte(s)); err != nil {
		return 0, false
	}
	return b[0], true
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
