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
//	mcp_server_up{server,transport}                MCP: 1 while the session is live
//	mcp_server_tools{server}                       MCP: tools offered now
//	mcp_server_tools_refused{server}               MCP: tools listed but not offered
//	mcp_calls_total{server}, mcp_call_errors_total{server}
//	model_request_duration_seconds{provider}       model requests (histogram)
//	model_errors_total{provider}
//	config_reloads_total{result}                   ok | failed | unchanged
//	platform_requests_total{platform,api,code}     chat platforms' API answers (code 0: success)
//	platform_throttled_total{platform,api}         refused for a rate limit
//	platform_retries_total{platform,api}           retries after a failure or a throttle
//	platform_delivery_failures_total{platform,api} messages and card updates given up on
//	audit_queued_records                           audit records not yet written by every sink
//	audit_queue_size                               the most that may wait; then records are refused
//	audit_refused_records_total                    audit records refused (queue full): not in the trail
//	audit_sinks_failing                            audit sinks whose last write failed
//	build_info{version,go_version}
//
// The other packages know nothing of Prometheus. The router calls the small
// methods Inbound, Deduplicated, Refused and Decision through an interface
// of its own; cmd/bot wraps the rest: the engine's notifier (Notifier: requests,
// ends, latency; a quorum's progress and escalation steps pass through
// uncounted), each tool (Tool: duration, errors, on both the immediate
// and the approved path) and the model (Model). A nil *Metrics records
// nothing.
//
// The chat channels count their platforms' answers through
// channels.PlatformMetrics, which Metrics implements; PlatformWarnings
// says which platform keeps refusing (/readyz, bot doctor).
//
// A tool label is the tool's name, except that one MCP server's tools get
// at most MaxToolLabels labels of their own; the rest share
// "<server>__(other)" (a server names its tools and can rename them at
// will, so its names must not make series without bound). Another agent's
// approvals (tool "<agent>/<tool>", the agent naming the tool) are bounded
// the same way per agent: the rest share "<agent>/(other)".
package metrics
