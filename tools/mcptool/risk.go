package mcptool

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/words"
)

// effectOf derives a tool's effect and says where it came from. Only a
// trusted server's annotations count:
//
//	trusted, readOnlyHint: true         read         (LOW)
//	trusted, destructiveHint: false     write        (MEDIUM)
//	trusted, otherwise                  destructive  (HIGH)
//	untrusted, whatever it says         destructive  (HIGH)
//
// destructiveHint counts only when the server sent it (its default is
// true); ops can still override any tool with approval.policy.tools.
func effectOf(server string, trusted bool, a *mcp.ToolAnnotations) (approval.Effect, approval.Words) {
	switch {
	case !trusted:
		return approval.EffectDestructive, approval.Say(words.MCPRiskUntrusted, server)
	case a != nil && a.ReadOnlyHint:
		return approval.EffectRead, approval.Say(words.MCPRiskReadOnly, server)
	case a != nil && a.DestructiveHint != nil && !*a.DestructiveHint:
		return approval.EffectWrite, approval.Say(words.MCPRiskNotDestructive, server)
	default:
		return approval.EffectDestructive, approval.Say(words.MCPRiskDestructive, server)
	}
}
