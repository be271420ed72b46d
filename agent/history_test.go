package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

func TestMain(m *testing.M) { testredis.Main(m) }

// histories are the History implementations every test runs against.
func histories(t *testing.T) map[string]agent.History {
	c, prefix := testredis.Start(t)
	return map[string]agent.History{
		"memory": agent.NewMemoryHistory(),
		"redis":  agent.NewRedisHistory(c, prefix, time.Hour),
	}
}

func TestHistoryRoundTrip(t *testing.T) {
	for name, h := range histories(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			empty, err := h.Load(ctx, "web:nobody")
			if err != nil || len(empty.Messages) != 0 || len(empty.Suspended) != 0 {
				t.Fatalf("Load(unknown) = %+v, %v", empty, err)
			}
			want := agent.Conversation{
				Messages: []agent.Message{
					{Role: agent.RoleUser, Content: "删除已取消的订单"},
					{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c1", Name: "sql_execute", Args: json.RawMessage(`{"statement":"DELETE FROM orders WHERE status = 'cancelled'"}`), Confidence: 1}}},
					{Role: agent.RoleTool, ToolCallID: "c1", Name: "sql_execute", Content: "7 rows affected"},
				},
				Suspended: []agent.Suspension{{Approval: approval.NewID("web:s1"), Until: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC),
					Origin: agent.Origin{Channel: "web", ChatID: "s1", User: "alice", MessageID: "m1"},
					Calls:  []agent.SuspendedCall{{ID: "c1", Tool: "sql_execute", Hash: strings.Repeat("ab", 32)}}}},
			}
			if err := h.Save(ctx, "web:s1", want); err != nil {
				t.Fatal(err)
			}
			got, err := h.Load(ctx, "web:s1")
			if err != nil {
				t.Fatal(err)
			}
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(want)
			if string(gb) != string(wb) {
				t.Fatalf("round trip:\n got %s\nwant %s", gb, wb)
			}
			if other, _ := h.Load(ctx, "web:s2"); len(other.Messages) != 0 {
				t.Fatal("sessions share a history")
			}
		})
	}
}

// A turn longer than the history cap keeps itself whole.
func TestLongTurnSurvivesTrim(t *testing.T) {
	var rounds atomic.Int64
	model := scripted(func(req agent.Request) (agent.Response, error) {
		if n := rounds.Add(1); n <= 3 {
			return agent.Response{Message: agent.Message{ToolCalls: []agent.ToolCall{call(fmt.Sprint("c", n), "look", "x")}}}, nil
		}
		return agent.Response{Message: agent.Message{Content: "done"}}, nil
	})
	h := newHarness(t, model, func(c *agent.LoopConfig) { c.MaxHistory = 4 })
	if r := result(t, h.submit(t, "s1", "look three times")); r.Text != "done" {
		t.Fatalf("result = %+v", r)
	}
	conv, _ := h.history.Load(context.Background(), "s1")
	if len(conv.Messages) != 8 || conv.Messages[0].Role != agent.RoleUser || conv.Messages[0].Content != "look three times" || conv.Messages[7].Content != "done" {
		t.Fatalf("history after a long turn = %+v", conv.Messages)
	}
}

func TestHistoryTrimKeepsCurrentTurn(t *testing.T) {
	turn := []agent.Message{
		{Role: agent.RoleUser, Content: "2"},
		{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "a"}}}, {Role: agent.RoleTool, ToolCallID: "a"},
		{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "b"}}}, {Role: agent.RoleTool, ToolCallID: "b"},
		{Role: agent.RoleAssistant, Content: "y"},
	}
	c := agent.Conversation{Messages: append([]agent.Message{{Role: agent.RoleUser, Content: "1"}, {Role: agent.RoleAssistant, Content: "x"}}, turn...)}
	c.Trim(3)
	if len(c.Messages) != len(turn) || c.Messages[0].Content != "2" || c.Messages[5].Content != "y" {
		t.Fatalf("trimmed = %+v", c.Messages)
	}

	// An update on an earlier approval, recorded at the start of the turn,
	// belongs to it.
	c = agent.Conversation{Messages: append([]agent.Message{{Role: agent.RoleUser, Content: "1"}, {Role: agent.RoleAssistant, Content: "x"},
		{Role: agent.RoleSystem, Content: "update"}}, turn...)}
	c.Trim(3)
	if len(c.Messages) != len(turn)+1 || c.Messages[0].Content != "update" || c.Messages[1].Content != "2" {
		t.Fatalf("trimmed = %+v", c.Messages)
	}
}
