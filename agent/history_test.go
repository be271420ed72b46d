package agent_test

import (
	"context"
	"encoding/json"
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
			if err != nil || len(empty.Messages) != 0 || empty.Awaiting != "" {
				t.Fatalf("Load(unknown) = %+v, %v", empty, err)
			}
			want := agent.Conversation{
				Messages: []agent.Message{
					{Role: agent.RoleUser, Content: "删除已取消的订单"},
					{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c1", Name: "sql_execute", Args: json.RawMessage(`{"statement":"DELETE FROM orders WHERE status = 'cancelled'"}`), Confidence: 1}}},
					{Role: agent.RoleTool, ToolCallID: "c1", Name: "sql_execute", Content: "7 rows affected"},
				},
				Awaiting: approval.NewID("web:s1"),
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
