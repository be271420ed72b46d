package model_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/agent/model"
	"github.com/hitlbot/hitlbot/tools/demodb"
	sqltool "github.com/hitlbot/hitlbot/tools/sql"
)

// sqlRegistry holds the real sql_query and sql_execute on a demo SQLite
// database.
func sqlRegistry(t *testing.T) *agent.Registry {
	t.Helper()
	db, err := demodb.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	dbs := &sqltool.Databases{}
	if err := dbs.OpenDB("demo", "sqlite", db); err != nil {
		t.Fatal(err)
	}
	r := agent.NewRegistry()
	if err := r.Register(sqltool.NewQueryTool(dbs), sqltool.NewExecuteTool(dbs)); err != nil {
		t.Fatal(err)
	}
	return r
}

// "/sql X" calls sql_query when tools/sql takes X as a read, sql_execute
// otherwise: the rules model asks the tools and holds no SQL of its own.
func TestRulesSQLAsksTheTools(t *testing.T) {
	reg := sqlRegistry(t)
	m, err := model.NewRules(model.RulesConfig{}, model.RulesDeps{Tools: reg})
	if err != nil {
		t.Fatal(err)
	}
	specs := []agent.ToolSpec{{Name: "sql_query"}, {Name: "sql_execute"}}
	for _, test := range []struct{ in, tool, stmt string }{
		{"/sql SELECT * FROM orders", "sql_query", "SELECT * FROM orders"},
		{"/sql select count(*) from t", "sql_query", "select count(*) from t"},
		{"/SQL  with x as (select 1) select * from x", "sql_query", "with x as (select 1) select * from x"},
		{"/sql EXPLAIN SELECT 1", "sql_query", "EXPLAIN SELECT 1"},
		{"/sql show tables", "sql_query", "show tables"},
		{"/sql VALUES (1), (2)", "sql_query", "VALUES (1), (2)"},
		{"/sql (SELECT 1)", "sql_query", "(SELECT 1)"},
		{"/sql select 1;", "sql_query", "select 1;"},
		{"/sql SELECT * FROM notes WHERE body = 'please delete me'", "sql_query", "SELECT * FROM notes WHERE body = 'please delete me'"},
		{"/sql SELECT updated_at FROM t", "sql_query", "SELECT updated_at FROM t"},
		{"/sql\nSELECT 1\nFROM t", "sql_query", "SELECT 1\nFROM t"},
		{"/sql DELETE FROM orders WHERE id = 3", "sql_execute", "DELETE FROM orders WHERE id = 3"},
		{"/sql update t set a=1", "sql_execute", "update t set a=1"},
		{"/sql SELECT 1; DROP TABLE t", "sql_execute", "SELECT 1; DROP TABLE t"},
		{"/sql WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "sql_execute", "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d"},
		{"/sql EXPLAIN ANALYZE DELETE FROM t", "sql_execute", "EXPLAIN ANALYZE DELETE FROM t"},
		{"/sql SELECT * INTO backup FROM t", "sql_execute", "SELECT * INTO backup FROM t"},
		// Reads that tools/sql knows and a list of first words did not
		// (a leading comment went to sql_execute before).
		{"/sql -- comment\nSELECT 1", "sql_query", "-- comment\nSELECT 1"},
		{"/sql PRAGMA table_info(orders)", "sql_query", "PRAGMA table_info(orders)"},
		{"/sql TABLE orders", "sql_query", "TABLE orders"},
		// A PRAGMA that sets is not a read.
		{"/sql PRAGMA user_version = 7", "sql_execute", "PRAGMA user_version = 7"},
	} {
		resp, err := m.Complete(context.Background(), agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: test.in}}, Tools: specs})
		if err != nil {
			t.Fatal(err)
		}
		calls := resp.Message.ToolCalls
		if len(calls) != 1 {
			t.Errorf("%q: got %+v, want a call of %s", test.in, resp.Message, test.tool)
			continue
		}
		var args map[string]any
		if err := json.Unmarshal(calls[0].Args, &args); err != nil {
			t.Fatal(err)
		}
		if c := calls[0]; c.Name != test.tool || !reflect.DeepEqual(args, map[string]any{"statement": test.stmt}) || c.Confidence != 1 {
			t.Errorf("%q: got %s %s (confidence %v), want %s with statement %q", test.in, c.Name, c.Args, c.Confidence, test.tool, test.stmt)
		}
	}
}

// With no tools to ask, every statement goes to sql_execute, which asks
// a person first.
func TestRulesSQLWithNothingToAsk(t *testing.T) {
	m, err := model.NewRules(model.RulesConfig{}, model.RulesDeps{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Complete(context.Background(), agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "/sql SELECT 1"}},
		Tools: []agent.ToolSpec{{Name: "sql_query"}, {Name: "sql_execute"}}})
	if err != nil {
		t.Fatal(err)
	}
	if c := resp.Message.ToolCalls; len(c) != 1 || c[0].Name != "sql_execute" {
		t.Errorf("got %+v, want a call of sql_execute", resp.Message)
	}
}
