package sqltool

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The adapter sends a statement without arguments through the extended
// protocol, so PostgreSQL itself refuses a second statement.
func TestPostgresAdapterRefusesSeveralStatements(t *testing.T) {
	b := newBackend(t, "postgres")
	before := b.snapshot(t, b.orders)
	two := "UPDATE " + b.orders + " SET amount_cents = 0 WHERE id = 1; UPDATE " + b.orders + " SET amount_cents = 0 WHERE id = 2"
	if _, err := b.db.ExecContext(context.Background(), two); err == nil || !strings.Contains(err.Error(), "multiple commands") {
		t.Errorf("Exec of two statements: %v", err)
	}
	rows, err := b.db.QueryContext(context.Background(), "SELECT 1; "+two)
	if err == nil {
		rows.Close()
		t.Errorf("Query of three statements succeeded")
	}
	if after := b.snapshot(t, b.orders); after != before {
		t.Errorf("after: %s, before %s", after, before)
	}
}

// pgTypes are PostgreSQL values and how sql_query shows them.
var pgTypes = []struct{ expr, want string }{
	{"'6ba7b810-9dad-11d1-80b4-00c04fd430c8'::uuid", "6ba7b810-9dad-11d1-80b4-00c04fd430c8"},
	{"1.50::numeric", "1.50"},
	{"2::smallint", "2"},
	{"2.5::real", "2.5"},
	{`'{"a": [1, 2]}'::jsonb`, `{"a":[1,2]}`},
	{"ARRAY[1, 2, NULL]", "[1,2,null]"},
	{"DATE '2026-01-02'", "2026-01-02T00:00:00Z"},
	{"TIMESTAMPTZ '2026-01-02 03:04:05+00'", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Local().Format(time.RFC3339Nano)}, // pgx decodes into time.Local
	{"true", "true"},
	{"'\\xff00'::bytea", "0xff00"},
	{"'10.0.0.0/8'::cidr", "10.0.0.0/8"},
	{"NULL::text", "NULL"},
}

func TestPostgresValues(t *testing.T) {
	b := newBackend(t, "postgres")
	for _, tc := range pgTypes {
		out := b.run(t, NewQueryTool(b.dbs), "SELECT "+tc.expr+" AS v")
		lines := strings.Split(out.Content, "\n")
		if out.IsError || len(lines) != 4 || lines[2] != tc.want {
			t.Errorf("SELECT %s = %q, want %q", tc.expr, out.Content, tc.want)
		}
	}
}
