package hitltest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/hitlbot/hitlbot/agent"
)

// Model is a scripted agent.Model. For the last message of a request:
//   - Hook, when set, answers first if it says so;
//   - a tool result is summarised: "summary: " + the result (with
//     JoinResults, every trailing tool result, joined by " | ");
//   - "VERB X" for a VERB in Tools (default "erase") calls that tool on X;
//     "VERB-both X Y" calls it on X and on Y in one answer (a batch);
//   - anything else is echoed: "echo: " + the text.
//
// The calls are named c1, c2, … unless NoIDs (then the loop names them).
// It records the user texts it saw.
type Model struct {
	Tools       []string
	JoinResults bool
	NoIDs       bool
	Hook        func(ctx context.Context, req agent.Request) (agent.Response, bool, error)

	mu  sync.Mutex
	saw []string
}

func answer(text string) agent.Response {
	return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: text}}
}

func (m *Model) Complete(ctx context.Context, req agent.Request) (agent.Response, error) {
	if m.Hook != nil {
		if r, ok, err := m.Hook(ctx, req); ok || err != nil {
			return r, err
		}
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role == agent.RoleTool {
		if !m.JoinResults {
			return answer("summary: " + last.Content), nil
		}
		var parts []string
		for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role == agent.RoleTool; i-- {
			parts = append([]string{req.Messages[i].Content}, parts...)
		}
		return answer("summary: " + strings.Join(parts, " | ")), nil
	}
	m.mu.Lock()
	m.saw = append(m.saw, last.Content)
	m.mu.Unlock()
	tools := m.Tools
	if len(tools) == 0 {
		tools = []string{"erase"}
	}
	for _, tool := range tools {
		if targets, ok := strings.CutPrefix(last.Content, tool+"-both "); ok {
			return m.calls(tool, strings.Fields(targets)...), nil
		}
		if target, ok := strings.CutPrefix(last.Content, tool+" "); ok {
			return m.calls(tool, target), nil
		}
	}
	return answer("echo: " + last.Content), nil
}

func (m *Model) calls(tool string, targets ...string) agent.Response {
	var calls []agent.ToolCall
	for i, target := range targets {
		c := agent.ToolCall{Name: tool, Args: json.RawMessage(`{"target":"` + target + `"}`), Confidence: 1}
		if !m.NoIDs {
			c.ID = fmt.Sprintf("c%d", i+1)
		}
		calls = append(calls, c)
	}
	return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, ToolCalls: calls}}
}

// Seen says how many times the model was asked text by a user.
func (m *Model) Seen(text string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, s := range m.saw {
		if s == text {
			n++
		}
	}
	return n
}

// Saw returns the user texts the model was asked, in the order it was
// asked them.
func (m *Model) Saw() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.saw)
}
