package metrics

import "strings"

// OtherAgentTools is the suffix of the label another agent's tools share
// beyond MaxToolLabels: "<agent>" + OtherAgentTools. An agent behind the
// gate names the tools it asks for (its approvals' tool is
// "<agent>/<tool>"), as an MCP server does, so its names are bounded the
// same way.
const OtherAgentTools = "/(other)"

// labelOwner returns whose labels the tool label of name counts against,
// and the label it gets beyond MaxToolLabels: another agent's (a name
// "<agent>/<tool>", as the gate names its calls; agent names hold no
// "/"), keyed "<agent>/", or the MCP server's whose prefix
// "<server>__" it has (the longest); "" for a built-in tool, whose name
// the config gives. MCP server names hold no "/", so the keys never
// meet. Called with labelMu held.
func (m *Metrics) labelOwner(name string) (owner, other string) {
	if agent, _, ok := strings.Cut(name, "/"); ok {
		return agent + "/", agent + OtherAgentTools
	}
	server := ""
	for _, s := range m.mcpServers {
		if strings.HasPrefix(name, s+"__") && len(s) > len(server) {
			server = s
		}
	}
	if server == "" {
		return "", ""
	}
	return server, server + OtherTools
}
