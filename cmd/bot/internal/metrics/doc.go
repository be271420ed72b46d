// Package metrics is hitlbot's Prometheus instrumentation: one private
// registry (prometheus.NewRegistry, with the Go runtime and process
// collectors registered explicitly), served by Handler at /metrics.
//
// Every name starts with hitlbot_:
//
//	approvals_requested_total{tool,risk}           cards shown
//	approvals_decided_total{tool,risk,status}      approvals that ended, by final status
//	approvals_pending                              requested minus ended on this replica
//	approval_decision_seconds{risk,status}         request to end (histogram)
//	messages_inbound_total{channel}                inbound events, before de-duplication
//	messages_deduplicated_total{channel}           redeliveries dropped
//	inbound_refused_total{channel}                 refused by channels.<name>.allow
//	decisions_total{channel,status}                decisions taken through a channel
//	tool_duration_seconds{tool}                    tool runs (histogram)
//	tool_errors_total{tool,kind}                   kind: failed | not_run | unknown
//	model_request_duration_seconds{provider}       model requests (histogram)
//	model_errors_total{provider}
//	config_reloads_total{result}                   ok | failed | unchanged
//	build_info{version,go_version}
//
// The other packages know nothing of Prometheus. The router calls the small
// methods Inbound, Deduplicated, Refused and Decision through an interface
// of its own; cmd/bot wraps the rest: the engine's notifier (Notifier: requests,
// ends, latency), each tool (Tool: duration, errors, on both the immediate
// and the approved path) and the model (Model). A nil *Metrics records
// nothing.
package metrics
