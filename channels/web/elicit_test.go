package web_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/channels/web"
	"github.com/hitlbot/hitlbot/internal/hitltest"
)

// TestElicitationAnsweredOnThePage: an MCP server's form (mcptest's
// "ask", from a trusted server: the read runs at once) asked in a web
// chat through the stack `bot serve` builds: the question card carries
// the fields; a wrong-typed answer is refused with which field and why
// (INVALID_MESSAGE) and leaves the step open; the page's answer reaches
// the server as typed content, and the tool's result the chat.
func TestElicitationAnsweredOnThePage(t *testing.T) {
	var s *server
	srv, m := hitltest.MCPServer(t, func(ctx context.Context, server, message string, schema any) (approval.ElicitAnswer, error) {
		return s.engine.Elicit(ctx, server, message, schema)
	})
	s = newServerTools(t, memstore.New(memstore.Options{}), hitltest.NewTool("erase", approval.EffectDestructive), m.Tools(),
		&hitltest.Model{Tools: []string{"t__ask"}}, nil, nil)
	c := s.connect(t, "", "s1")
	c.message("s1", "t__ask web")
	conf := c.expect("agent.user_confirm", nil)
	card, _ := json.Marshal(conf["card"])
	if !strings.Contains(string(card), `"header":"env"`) || !strings.Contains(string(card), "Production (prod)") ||
		!strings.Contains(string(card), `"answer":{"approval_id"`) {
		t.Fatalf("the card %s", card)
	}
	step := conf.str("step_id")
	answer := func(picks any) {
		c.send(map[string]any{"type": "user.response", "session_id": "s1", "step_id": step,
			"content": map[string]any{"confirmed": true, "edits": map[string]any{"#1": map[string]any{"answers": picks}}}})
	}
	answer(map[string]any{"#1": map[string]any{"options": []int{2}}, "#2": map[string]any{"options": []int{1}}, "#4": "11"})
	if e := c.expect("error", withCode(web.CodeInvalidMessage)); !strings.Contains(e.str("message"), "replicas: the answer must be at most 10.") {
		t.Fatalf("a wrong-typed answer: %v", e)
	}
	if srv.Calls("ask") != 0 {
		t.Fatal("the tool ran on a refused answer")
	}
	answer(map[string]any{"#1": map[string]any{"options": []int{2}}, "#2": map[string]any{"options": []int{1}}, "#4": "3"})
	if done := c.expect("agent.confirm_resolved", withStep(step)); done.str("status") != string(approval.StatusExecuted) {
		t.Fatalf("resolved %v", done)
	}
	c.expect("agent.message", withContent(`"content":{"env":"prod","notify":true,"replicas":3}`))
	if srv.Calls("ask") != 1 {
		t.Fatalf("the server's tool ran %d times", srv.Calls("ask"))
	}
}
