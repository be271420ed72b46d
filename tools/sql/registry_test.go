package sqltool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/tools/demodb"
)

// demoDatabases returns Databases holding a fresh demo database as "demo".
func demoDatabases(t *testing.T) *Databases {
	t.Helper()
	db, err := demodb.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	dbs := &Databases{}
	if err := dbs.OpenDB("demo", "sqlite", db); err != nil {
		t.Fatal(err)
	}
	return dbs
}

func registry(t *testing.T, dbs *Databases) *agent.Registry {
	t.Helper()
	r := agent.NewRegistry()
	if err := r.Register(NewQueryTool(dbs), NewExecuteTool(dbs)); err != nil {
		t.Fatal(err)
	}
	return r
}

// invalidArgs never reach the tool: Dispatch reports approval.ErrNotRun.
var invalidArgs = []string{
	`{}`,
	`{"database": "demo"}`,
	`{"statement": ""}`,
	`{"statement": 42}`,
	`{"statement": "SELECT 1", "extra": true}`,
	`{"statement": "SELECT 1", "database": "nope"}`,
	`[]`,
}

func TestRegistryValidation(t *testing.T) {
	r := registry(t, demoDatabases(t))
	for _, name := range []string{"sql_query", "sql_execute"} {
		for _, args := range invalidArgs {
			_, err := r.Dispatch(context.Background(), approval.Call{Tool: name, Args: json.RawMessage(args)})
			if !errors.Is(err, approval.ErrNotRun) {
				t.Errorf("Dispatch(%s, %s) = %v, want ErrNotRun", name, args, err)
			}
		}
	}
	res, err := r.Dispatch(context.Background(), approval.Call{Tool: "sql_query",
		Args: json.RawMessage(`{"statement": "SELECT COUNT(*) AS n FROM orders WHERE status = 'cancelled'"}`)})
	if err != nil || res.Status != approval.StatusExecuted || res.Content != "n\n-\n7\n(1 row)" {
		t.Errorf("Dispatch(sql_query) = %+v, %v", res, err)
	}
	res, err = r.Dispatch(context.Background(), approval.Call{Tool: "sql_execute",
		Args: json.RawMessage(`{"statement": "DELETE FROM orders WHERE status = 'cancelled'", "database": "demo"}`)})
	if err != nil || res.Status != approval.StatusExecuted || !strings.Contains(res.Content, "7 rows affected") {
		t.Errorf("Dispatch(sql_execute) = %+v, %v", res, err)
	}
	res, err = r.Dispatch(context.Background(), approval.Call{Tool: "sql_execute",
		Args: json.RawMessage(`{"statement": "SELECT 1"}`)})
	if err != nil || res.Status != approval.StatusFailed || !strings.Contains(res.Content, "use sql_query") {
		t.Errorf("Dispatch(sql_execute, SELECT) = %+v, %v", res, err)
	}
}

// Run called directly (without the registry) with arguments it cannot
// decode also reports ErrNotRun.
func TestRunWithUndecodableArgs(t *testing.T) {
	dbs := demoDatabases(t)
	for _, tool := range []agent.Tool{NewQueryTool(dbs), NewExecuteTool(dbs)} {
		if _, err := tool.Run(context.Background(), json.RawMessage(`{"statement": 1}`)); !errors.Is(err, approval.ErrNotRun) {
			t.Errorf("%s.Run: %v, want ErrNotRun", tool.Name(), err)
		}
		if k := tool.Effect(json.RawMessage(`nonsense`)); tool.Name() == "sql_execute" && k != approval.EffectDestructive {
			t.Errorf("%s.Effect(nonsense) = %s, want destructive", tool.Name(), k)
		}
	}
}

// kindCases are the kinds sql_execute reports for the approval policy.
var kindCases = []struct {
	args string
	want approval.Effect
}{
	{`{"statement": "INSERT INTO tasks (title, created_at) VALUES ('x', 'now')"}`, approval.EffectWrite},
	{`{"statement": "UPDATE tasks SET done = 1 WHERE id = 1"}`, approval.EffectWrite},
	{`{"statement": "UPDATE tasks SET done = 1"}`, approval.EffectDestructive},
	{`{"statement": "DELETE FROM tasks WHERE id = 1"}`, approval.EffectDestructive},
	{`{"statement": "DROP TABLE tasks"}`, approval.EffectDestructive},
	{`{"statement": "SELECT 1"}`, approval.EffectDestructive}, // refused: never without a person
	{`{"statement": "DELETE FROM tasks", "database": "nope"}`, approval.EffectDestructive},
}

func TestEffects(t *testing.T) {
	dbs := demoDatabases(t)
	exec, query := NewExecuteTool(dbs), NewQueryTool(dbs)
	for _, tc := range kindCases {
		if got := exec.Effect(json.RawMessage(tc.args)); got != tc.want {
			t.Errorf("sql_execute.Effect(%s) = %s, want %s", tc.args, got, tc.want)
		}
		if got := query.Effect(json.RawMessage(tc.args)); got != approval.EffectRead {
			t.Errorf("sql_query.Effect(%s) = %s, want read", tc.args, got)
		}
	}
}

func TestSchemaAndDescription(t *testing.T) {
	dbs := demoDatabases(t)
	exec := NewExecuteTool(dbs)
	s := exec.Schema()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"required":["statement"]`, `"enum":["demo"]`, `"minLength":1`, `demo (sqlite)`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("schema %s lacks %s", b, want)
		}
	}
	if d := exec.Description(); !strings.Contains(d, "demo (sqlite)") || !strings.Contains(d, "sql_query") {
		t.Errorf("description: %s", d)
	}
}

// Registry.Check asks the tools without running anything: sql_query takes
// only reads, sql_execute only changes.
func TestRegistryCheck(t *testing.T) {
	r := registry(t, demoDatabases(t))
	for _, test := range []struct {
		tool, stmt string
		ok         bool
		kind       approval.Effect
	}{
		{"sql_query", "PRAGMA table_info(orders)", true, approval.EffectRead},
		{"sql_query", "DELETE FROM orders", false, ""},
		{"sql_query", "SELECT 1; DROP TABLE orders", false, ""},
		{"sql_execute", "SELECT 1", false, ""},
		{"sql_execute", "DELETE FROM orders", true, approval.EffectDestructive},
		{"sql_execute", "INSERT INTO orders (customer) VALUES ('x')", true, approval.EffectWrite},
	} {
		args, _ := json.Marshal(map[string]string{"statement": test.stmt})
		k, err := r.Check(test.tool, args)
		if (err == nil) != test.ok || k != test.kind {
			t.Errorf("Check(%s, %q) = %q, %v; want ok %v, kind %q", test.tool, test.stmt, k, err, test.ok, test.kind)
		}
	}
	if _, err := r.Check("sql_query", json.RawMessage(`{"statement": "SELECT 1", "extra": true}`)); err == nil {
		t.Error("Check took arguments its schema refuses")
	}
}
