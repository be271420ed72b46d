package cli_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/hitltest"
	"github.com/hitlbot/hitlbot/words"
)

// TestElicitationAnsweredInTheChat: an MCP server's form (mcptest's
// "ask", from a trusted server: the read runs at once) asked in `bot
// chat` through the stack it builds: a prompt per field; a wrong-typed
// answer is refused with which field and why, and the form is asked
// again; the answer then reaches the server as typed content, and the
// tool's result the chat.
func TestElicitationAnsweredInTheChat(t *testing.T) {
	var h *harness
	srv, m := hitltest.MCPServer(t, func(ctx context.Context, server, message string, schema any) (approval.ElicitAnswer, error) {
		return h.engine.Elicit(ctx, server, message, schema)
	})
	in, w := io.Pipe()
	h = startTools(t, in, approval.EffectDestructive, m.Tools(), &hitltest.Model{Tools: []string{"t__ask"}}, nil, nil)
	fmt.Fprintln(w, "t__ask web")
	ask := func(n int, lines ...string) {
		for i, line := range lines {
			h.out.waitFor(t, words.In("en", words.QuestionCLIPrompt, i+1), n)
			fmt.Fprintln(w, line)
		}
	}
	ask(1, "2", "1", "", "11")
	h.out.waitFor(t, "replicas: the answer must be at most 10.", 1)
	if srv.Calls("ask") != 0 {
		t.Fatalf("the tool ran on a refused answer:\n%s", h.out.String())
	}
	ask(2, "2", "yes", "", "3")
	h.out.waitFor(t, `"content":{"env":"prod","notify":true,"replicas":3}`, 1)
	if out := h.out.String(); !strings.Contains(out, "Environment") || !strings.Contains(out, "Production (prod)") || srv.Calls("ask") != 1 {
		t.Fatalf("the tool ran %d times:\n%s", srv.Calls("ask"), out)
	}
	w.Close()
	_ = h.ended(t)
}
