package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestServeMCPElicitation: a served bot declares elicitation to its MCP
// servers and asks a server's form as a question in the turn whose tool
// call elicits (bot serve's wiring: Options.Elicit is the engine's
// Elicit): a trusted server's read runs at once, the server elicits, and
// the HTTP API's request of the turn gets the question as its pending
// action (the question is asked in the turn's name, so the request that
// waits for the turn finds it); /pending lists it; declined with its
// token, the server's answer to decline reaches the turn and is the
// decision's answer. (Without the wiring the call fails: the SDK refuses
// an elicitation the client did not declare; with no turn behind it, it
// would be a decline.)
func TestServeMCPElicitation(t *testing.T) {
	path := writeConfig(t, mcpConfig(mcpServerYAML("fs", mcpTestURL(t), "        trusted: true\n        call_timeout: 30s\n")))
	s := serve(t, "-config", path, "-data", t.TempDir())
	res := chat(t, s.base, map[string]any{"message": `/call fs__ask {}`, "conversationId": "c1"})
	tok := token(t, res)
	if pending := chat(t, s.base, map[string]any{"message": `/pending`, "conversationId": "c1"}); !strings.Contains(fmt.Sprint(pending["text"]), "MCP server fs asks you") {
		t.Fatalf("/pending: %v", pending)
	}
	res = chat(t, s.base, map[string]any{"confirmationToken": tok, "confirmed": false})
	if !strings.Contains(fmt.Sprint(res["text"]), `"action":"decline"`) {
		t.Fatalf("declined: %v", res)
	}
}
