package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hitlbot/hitlbot/tools/mcptool"
)

// MCP registers the MCP servers' state, read from status at each scrape:
// hitlbot_mcp_server_up{server} (1 while its session is live),
// hitlbot_mcp_server_tools{server} (the tools it offers now),
// hitlbot_mcp_calls_total{server} and hitlbot_mcp_call_errors_total{server}
// (calls sent to it; those that failed: a transport error, a timeout or
// an isError result), hitlbot_mcp_server_tools_refused{server} (the tools
// it lists that are not offered: mcptool.Refusal). Duration and errors per
// tool are the tools' own metrics
// (hitlbot_tool_duration_seconds{tool="fs__read_file"}), with at most
// MaxToolLabels tool labels per server: status names the servers.
func (m *Metrics) MCP(status func() []mcptool.ServerStatus) {
	if m == nil || status == nil {
		return
	}
	m.labelMu.Lock()
	for _, s := range status() {
		m.mcpServers = append(m.mcpServers, s.Name)
	}
	m.labelMu.Unlock()
	m.reg.MustRegister(&mcpCollector{status: status})
}

var (
	mcpUp = prometheus.NewDesc(Namespace+"_mcp_server_up",
		"1 while the MCP server's session is live and its tools are offered, 0 while it is down.", []string{"server", "transport"}, nil)
	mcpTools = prometheus.NewDesc(Namespace+"_mcp_server_tools",
		"Tools the MCP server offers now.", []string{"server"}, nil)
	mcpCalls = prometheus.NewDesc(Namespace+"_mcp_calls_total",
		"Tool calls sent to the MCP server since start.", []string{"server"}, nil)
	mcpErrors = prometheus.NewDesc(Namespace+"_mcp_call_errors_total",
		"Tool calls to the MCP server that failed: a transport error, a timeout or an isError result.", []string{"server"}, nil)
	mcpRefused = prometheus.NewDesc(Namespace+"_mcp_server_tools_refused",
		"Tools the MCP server lists that are not offered: their name is another server's or a built-in tool's, or holds a secret.", []string{"server"}, nil)
)

type mcpCollector struct {
	status func() []mcptool.ServerStatus
}

func (c *mcpCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- mcpUp
	ch <- mcpTools
	ch <- mcpCalls
	ch <- mcpErrors
	ch <- mcpRefused
}

func (c *mcpCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.status() {
		up := 0.0
		if s.Up {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(mcpUp, prometheus.GaugeValue, up, s.Name, s.Transport)
		ch <- prometheus.MustNewConstMetric(mcpTools, prometheus.GaugeValue, float64(s.Tools), s.Name)
		ch <- prometheus.MustNewConstMetric(mcpCalls, prometheus.CounterValue, float64(s.Calls), s.Name)
		ch <- prometheus.MustNewConstMetric(mcpErrors, prometheus.CounterValue, float64(s.Errors), s.Name)
		ch <- prometheus.MustNewConstMetric(mcpRefused, prometheus.GaugeValue, float64(len(s.Refused)), s.Name)
	}
}

var _ prometheus.Collector = (*mcpCollector)(nil)
