// Package tracing is hitlbot's OpenTelemetry tracing: spans of a turn
// (invoke_agent), of a tool call (execute_tool {tool}, the GenAI semantic
// conventions) and of an approval (request, card shown, decision, claim),
// exported to an OTLP/HTTP collector as JSON.
//
// Code that makes spans uses the OpenTelemetry trace API
// (go.opentelemetry.io/otel/trace) and nothing of this package but its
// names: a trace.Tracer, given in its Config, or Nop. This package is the
// API's implementation: Provider records the spans it samples and sends
// them, in batches, from one goroutine, as OTLP/HTTP with the JSON
// encoding (POST {endpoint}/v1/traces, Content-Type application/json,
// the protobuf JSON mapping of ExportTraceServiceRequest). It is not the
// OpenTelemetry SDK, whose packages (and its exporters': gRPC, protobuf)
// would more than double what the binary builds (cmd/bot/deps_test.go);
// what it leaves out: span limits, span processors other than its one
// batch, metrics and logs, and any encoding but JSON.
//
// Off (no endpoint), nothing is made: components are given Nop, whose
// spans are one shared value that records nothing, and no goroutine runs.
//
// What a span may carry: identifiers (approval id, tool name, call id,
// session key), risk, status and payload hashes; never a tool's
// arguments or result, a comment, a preview or a secret.
package tracing
