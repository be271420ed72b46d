package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestServeMCPElicitation: a served bot declares elicitation to its MCP
// servers and asks a server's form as a question in the turn whose tool
// call elicits (bot serve's wiring: Options.Elicit is the engine's
// Elicit): a trusted server's read runs at once, the server elicits, the
// question nobody answers expires within the call's call_timeout, and
// the server's answer to cancel reaches the turn. (Without the wiring the
// call fails: the SDK refuses an elicitation the client did not declare;
// with no turn behind it, it would be a decline.)
func TestServeMCPElicitation(t *testing.T) {
	path := writeConfig(t, mcpConfig(mcpServerYAML("fs", mcpTestURL(t), "        trusted: true\n        call_timeout: 3s\n")))
	s := serve(t, "-config", path, "-data", t.TempDir())
	res := chat(t, s.base, map[string]any{"message": `/call fs__ask {}`})
	if !strings.Contains(fmt.Sprint(res["text"]), `{"action":"cancel","content":null}`) {
		t.Fatalf("the turn: %v", res)
	}
}
