package sqltool

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/tools/demodb"
)

// refusedByQuery are changes sql_query must refuse; %[1]s is the orders table.
var refusedByQuery = []string{
	"DELETE FROM %[1]s WHERE status = 'cancelled'",
	"delete from %[1]s",
	"WITH d AS (DELETE FROM %[1]s WHERE status = 'cancelled' RETURNING id) SELECT COUNT(*) FROM d",
	"UPDATE %[1]s SET status = 'paid'",
	"DROP TABLE %[1]s",
	"SELECT 1; DELETE FROM %[1]s",
	"SELECT * FROM %[1]s FOR UPDATE",
}

func TestQueryRefusesChanges(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		query := NewQueryTool(b.dbs)
		before := b.snapshot(t, b.orders)
		for _, f := range refusedByQuery {
			stmt := fmt.Sprintf(f, b.orders)
			out := b.run(t, query, stmt)
			if !out.IsError || !strings.Contains(out.Content, "sql_execute") {
				t.Errorf("sql_query %q = %+v, want a refusal that points to sql_execute", stmt, out)
			}
			if _, err := b.preview(t, query, stmt); err == nil {
				t.Errorf("sql_query preview of %q: no error", stmt)
			}
			if after := b.snapshot(t, b.orders); after != before {
				t.Fatalf("after sql_query %q: %s, before %s", stmt, after, before)
			}
		}
	})
}

// changesInReadTx are changes the read-only transaction of sql_query must
// stop even when the classifier is bypassed; %[1]s is the orders table,
// %[2]s a table that does not exist yet.
var changesInReadTx = []string{
	"DELETE FROM %[1]s WHERE status = 'cancelled'",
	"UPDATE %[1]s SET amount_cents = 0",
	"INSERT INTO %[1]s (id, customer, amount_cents, status, created_at) VALUES (1000, 'x', 1, 'paid', 't')",
	"DROP TABLE %[1]s",
	"CREATE TABLE %[2]s (id INTEGER)",
	"ALTER TABLE %[1]s ADD COLUMN note VARCHAR(10)",
	"TRUNCATE TABLE %[1]s",
}

// The second guard: whatever the classifier lets through, the database
// refuses to change anything inside sql_query's transaction, and the
// connection is usable for writes afterwards.
func TestReadTransactionIsEnforced(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		before := b.snapshot(t, b.orders)
		created := b.table("created")
		b.dropLater(t, created)
		stmts := changesInReadTx
		if b.driver == "postgres" {
			stmts = append(stmts[:len(stmts):len(stmts)], "WITH d AS (DELETE FROM %[1]s RETURNING id) SELECT COUNT(*) FROM d")
		}
		for _, f := range stmts {
			stmt := fmt.Sprintf(f, b.orders, created)
			ctx := context.Background()
			err := b.e.read(ctx, func(tx *sql.Tx) error {
				rows, err := tx.QueryContext(ctx, stmt)
				if err != nil {
					return err
				}
				for rows.Next() {
				}
				rows.Close()
				return rows.Err()
			})
			if err == nil {
				t.Errorf("%q in the read transaction succeeded", stmt)
			} else {
				t.Logf("%q: %v", stmt, err)
			}
			if after := b.snapshot(t, b.orders); after != before {
				t.Fatalf("after %q: %s, before %s", stmt, after, before)
			}
			if b.exists(created) {
				t.Fatalf("after %q: table %s exists", stmt, created)
			}
		}
		// The one connection was reset: a write through sql_execute works.
		out := b.run(t, NewExecuteTool(b.dbs), "UPDATE "+b.orders+" SET amount_cents = 1 WHERE id = 1")
		if out.IsError || !strings.Contains(out.Content, "1 row affected") {
			t.Errorf("UPDATE after the read transactions: %+v", out)
		}
	})
}

// The preview's row count is the real effect of Run.
func TestPreviewMatchesRun(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		exec := NewExecuteTool(b.dbs)
		stmt := "DELETE FROM " + b.orders + " WHERE status = 'cancelled'"
		p, err := b.preview(t, exec, "  "+stmt+"\n")
		if err != nil {
			t.Fatal(err)
		}
		if want := stmt + " — affects 7 rows in " + b.name; p != want {
			t.Errorf("preview = %q, want %q", p, want)
		}
		// The same preview in Chinese, for the cards in Chinese: the
		// numbers the same, the words from the catalogue.
		w, err := exec.(agent.WordsPreviewer).PreviewWords(context.Background(), b.args(t, stmt))
		if want := stmt + " — 影响 " + b.name + " 中的 7 行"; err != nil || w.ZH != want || w.EN != p {
			t.Errorf("preview words = %+v, %v; want zh %q, en %q", w, err, want, p)
		}
		if n := b.count(t, "SELECT COUNT(*) FROM "+b.orders); n != demodb.OrderCount {
			t.Fatalf("after the preview: %d orders, want %d", n, demodb.OrderCount)
		}
		if k := exec.Effect(b.args(t, stmt)); k != approval.EffectDestructive {
			t.Errorf("Effect = %s, want destructive", k)
		}
		out := b.run(t, exec, stmt)
		if out.IsError || !strings.Contains(out.Content, fmt.Sprintf("%d rows affected", demodb.CancelledCount)) {
			t.Errorf("Run = %+v, want 7 rows affected", out)
		}
		if n, want := b.count(t, "SELECT COUNT(*) FROM "+b.orders), int64(demodb.OrderCount-demodb.CancelledCount); n != want {
			t.Errorf("after Run: %d orders, want %d", n, want)
		}
		if p, err := b.preview(t, exec, stmt); err != nil || !strings.Contains(p, "affects 0 rows") {
			t.Errorf("second preview = %q, %v; want affects 0 rows", p, err)
		}
	})
}

// TestPreviewWordsInChinese: every kind of preview sql_execute and
// sql_query make has its Chinese, and each tool explains itself to its
// approver in both languages (not with the description for the model).
func TestPreviewWordsInChinese(t *testing.T) {
	b := newBackend(t, "sqlite")
	exec, query := NewExecuteTool(b.dbs), NewQueryTool(b.dbs)
	for _, tc := range []struct {
		tool     agent.Tool
		stmt, zh string
	}{
		{exec, "UPDATE " + b.orders + " SET status = 'paid' WHERE id = 1", "UPDATE " + b.orders + " SET status = 'paid' WHERE id = 1 — 影响 " + b.name + " 中的 1 行"},
		{exec, "DROP TABLE " + b.orders, "DROP TABLE " + b.orders + " — 将删除 " + b.name + " 中的表 " + b.orders + "（40 行）"},
		{exec, "CREATE TABLE zz (id INTEGER)", "CREATE TABLE zz (id INTEGER) — 将在 " + b.name + " 中执行 CREATE TABLE（试运行成功，已回滚）"},
		{query, "SELECT 1", "SELECT 1 — 在 " + b.name + " 中只读查询"},
	} {
		w, err := tc.tool.(agent.WordsPreviewer).PreviewWords(context.Background(), b.args(t, tc.stmt))
		if err != nil || w.ZH != tc.zh {
			t.Errorf("%s: zh preview = %q, %v; want %q", tc.stmt, w.ZH, err, tc.zh)
		}
		if en, err := tc.tool.Preview(context.Background(), b.args(t, tc.stmt)); err != nil || en != w.EN {
			t.Errorf("%s: Preview = %q, %v; PreviewWords' English %q", tc.stmt, en, err, w.EN)
		}
	}
	for _, tool := range []agent.Tool{exec, query} {
		a := agent.About(tool)
		if a.EN == "" || a.ZH == "" || strings.Contains(a.EN, "use sql_") || a.EN == tool.Description() {
			t.Errorf("%s explains itself as %+v", tool.Name(), a)
		}
	}
}

// previewCases are changes whose preview must change nothing; %[1]s is the
// orders table, %[2]s a new table. want is a part of the preview, per
// driver; "error" means the preview fails (the statement would too).
var previewCases = []struct {
	stmt string
	want map[string]string
}{
	{"UPDATE %[1]s SET amount_cents = 0", map[string]string{"": "affects 40 rows"}},
	{"UPDATE %[1]s SET status = 'paid' WHERE id <= 3", map[string]string{"sqlite": "affects 3 rows", "postgres": "affects 3 rows", "mysql": "affects 2 rows"}}, // MySQL counts changed rows; order 1 is paid already
	{"INSERT INTO %[1]s (id, customer, amount_cents, status, created_at) VALUES (100, 'x', 1, 'paid', 't'), (101, 'y', 2, 'paid', 't')", map[string]string{"": "affects 2 rows"}},
	{"DELETE FROM %[1]s", map[string]string{"": "affects 40 rows"}},
	{"DROP TABLE %[1]s", map[string]string{"": "would drop table %[1]s (40 rows)", "mysql": "would drop table %[1]s (40 rows) in maria (not dry-run: MySQL commits DDL at once)"}},
	{"TRUNCATE TABLE %[1]s", map[string]string{"": "would empty table %[1]s (40 rows)", "sqlite": "error"}},
	{"ALTER TABLE %[1]s ADD COLUMN note VARCHAR(10)", map[string]string{"": "would run ALTER TABLE", "mysql": "not dry-run"}},
	{"CREATE TABLE %[2]s (id INTEGER)", map[string]string{"": "would run CREATE TABLE", "mysql": "not dry-run"}},
	{"DELETE FROM %[2]s", map[string]string{"": "error"}},
}

func TestPreviewChangesNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		exec := NewExecuteTool(b.dbs)
		created := b.table("created")
		b.dropLater(t, created)
		before := b.snapshot(t, b.orders)
		for _, tc := range previewCases {
			stmt := fmt.Sprintf(tc.stmt, b.orders, created)
			want, ok := tc.want[b.driver]
			if !ok {
				want = tc.want[""]
			}
			want = strings.ReplaceAll(want, "%[1]s", b.orders)
			p, err := b.preview(t, exec, stmt)
			switch {
			case want == "error":
				if err == nil {
					t.Errorf("preview of %q = %q, want an error", stmt, p)
				}
			case err != nil:
				t.Errorf("preview of %q: %v", stmt, err)
			case !strings.HasPrefix(p, stmt+" — ") || !strings.Contains(p, want) || !strings.Contains(p, " in "+b.name):
				t.Errorf("preview of %q = %q, want the statement, %q and the database", stmt, p, want)
			}
			if after := b.snapshot(t, b.orders); after != before {
				t.Fatalf("after the preview of %q: %s, before %s", stmt, after, before)
			}
			if b.exists(created) {
				t.Fatalf("after the preview of %q: %s exists", stmt, created)
			}
		}
	})
}

// On MySQL a rollback does not undo what a MyISAM table stored, nor what a
// trigger wrote there: such statements are not dry-run.
func TestMySQLPreviewOfNonTransactionalTables(t *testing.T) {
	b := newBackend(t, "mysql")
	exec := NewExecuteTool(b.dbs)
	log := b.table("log")
	b.exec(t, "CREATE TABLE "+log+" (id INTEGER PRIMARY KEY AUTO_INCREMENT, what VARCHAR(50)) ENGINE=MyISAM")
	b.dropLater(t, log)
	b.exec(t, "INSERT INTO "+log+" (what) VALUES ('a'), ('b'), ('c')")

	p, err := b.preview(t, exec, "DELETE FROM "+log+" WHERE what <> 'a'")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p, "not dry-run") || !strings.Contains(p, "MyISAM") || !strings.Contains(p, "at most 3 rows") {
		t.Errorf("preview = %q, want not dry-run because of MyISAM, at most 3 rows", p)
	}
	if n := b.count(t, "SELECT COUNT(*) FROM "+log); n != 3 {
		t.Fatalf("after the preview: %d log rows, want 3", n)
	}

	trg := b.table("trg")
	b.exec(t, "CREATE TRIGGER "+trg+" AFTER DELETE ON "+b.orders+" FOR EACH ROW INSERT INTO "+log+" (what) VALUES ('deleted')")
	p, err = b.preview(t, exec, "DELETE FROM "+b.orders+" WHERE status = 'cancelled'")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p, "not dry-run") || !strings.Contains(p, "triggers") {
		t.Errorf("preview = %q, want not dry-run because of the trigger", p)
	}
	if n := b.count(t, "SELECT COUNT(*) FROM "+log); n != 3 {
		t.Fatalf("after the preview: %d log rows, want 3", n)
	}
	if n := b.count(t, "SELECT COUNT(*) FROM "+b.orders); n != demodb.OrderCount {
		t.Fatalf("after the preview: %d orders", n)
	}
}

func TestRowCap(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		query := NewQueryTool(b.dbs)
		series := "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d) SELECT i FROM n"
		for _, tc := range []struct {
			maxRows, rows int
			footer        string
		}{
			{0, 150, "(first 100 rows; more exist)"},
			{0, 100, "(100 rows)"},
			{5, 6, "(first 5 rows; more exist)"},
			{5, 5, "(5 rows)"},
			{5, 1, "(1 row)"},
		} {
			b.e.maxRows = cmpOr(tc.maxRows, DefaultMaxRows)
			out := b.run(t, query, fmt.Sprintf(series, tc.rows))
			lines := strings.Split(out.Content, "\n")
			shown := min(tc.rows, b.e.maxRows)
			if out.IsError || len(lines) != shown+3 || lines[len(lines)-1] != tc.footer ||
				lines[0] != "i" || lines[2] != "1" || lines[len(lines)-2] != fmt.Sprint(shown) {
				t.Errorf("max %d, %d rows: %q", b.e.maxRows, tc.rows, out.Content)
			}
		}
	})
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func TestRendering(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		long := strings.Repeat("长", 70)
		b.exec(t, "INSERT INTO "+b.notes+" (id, body, data) VALUES ("+b.params(3)+")", 1, nil, nil)
		b.exec(t, "INSERT INTO "+b.notes+" (id, body, data) VALUES ("+b.params(3)+")", 2, "héllo\nworld", []byte{0xff, 0x00})
		b.exec(t, "INSERT INTO "+b.notes+" (id, body, data) VALUES ("+b.params(3)+")", 3, long, []byte("plain"))
		out := b.run(t, NewQueryTool(b.dbs), "SELECT id, body, data FROM "+b.notes+" ORDER BY id")
		cut := strings.Repeat("长", MaxCellRunes) + "…"
		want := strings.Join([]string{
			"id | body" + strings.Repeat(" ", 2*MaxCellRunes+1-4) + " | data",
			"---+-" + strings.Repeat("-", 2*MaxCellRunes+1) + "-+-------",
			"1  | NULL" + strings.Repeat(" ", 2*MaxCellRunes+1-4) + " | NULL",
			"2  | héllo\\nworld" + strings.Repeat(" ", 2*MaxCellRunes+1-12) + " | 0xff00",
			"3  | " + cut + " | plain",
			"(3 rows)",
		}, "\n")
		if out.IsError || out.Content != want {
			t.Errorf("got\n%s\nwant\n%s", out.Content, want)
		}
	})
}

func TestRunErrors(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		exec := NewExecuteTool(b.dbs)
		before := b.snapshot(t, b.orders)
		for _, stmt := range []string{
			"INSERT INTO " + b.orders + " (id, customer, amount_cents, status, created_at) VALUES (41, 'x', 1, 'paid', 't'), (1, 'dup', 1, 'paid', 't')",
			"UPDATE " + b.orders + " SET status = 'lost' WHERE id > 20",
			"DELETE FROM " + b.table("missing"),
		} {
			out := b.run(t, exec, stmt)
			if !out.IsError || !strings.Contains(out.Content, "failed on "+b.name) {
				t.Errorf("Run(%q) = %+v, want a failure", stmt, out)
			}
			if after := b.snapshot(t, b.orders); after != before {
				t.Fatalf("after Run(%q): %s, before %s", stmt, after, before)
			}
		}
		for _, stmt := range []string{"SELECT * FROM " + b.orders, "BEGIN", "DELETE FROM a; DELETE FROM b"} {
			out := b.run(t, exec, stmt)
			if !out.IsError || !strings.Contains(out.Content, "refused") {
				t.Errorf("Run(%q) = %+v, want a refusal", stmt, out)
			}
		}
		out := b.run(t, exec, "INSERT INTO "+b.orders+" (id, customer, amount_cents, status, created_at) VALUES (41, 'x', 1, 'paid', 't')")
		if out.IsError || !strings.Contains(out.Content, "1 row affected") {
			t.Errorf("INSERT = %+v", out)
		}
	})
}

// A COMMIT that fails (here: a deferred foreign key) is a Go error: the
// effect of a failed commit is unknown in general.
func TestCommitFailureIsAnError(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		if b.driver == "mysql" {
			t.Skip("MySQL has no deferred constraints")
		}
		parent, child := b.table("parent"), b.table("child")
		b.exec(t, "CREATE TABLE "+parent+" (id INTEGER PRIMARY KEY)")
		b.dropLater(t, parent)
		b.exec(t, "CREATE TABLE "+child+" (pid INTEGER REFERENCES "+parent+" (id) DEFERRABLE INITIALLY DEFERRED)")
		b.dropLater(t, child)
		exec := NewExecuteTool(b.dbs)
		stmt := "INSERT INTO " + child + " (pid) VALUES (42)"
		if p, err := b.preview(t, exec, stmt); err != nil || !strings.Contains(p, "affects 1 row") {
			t.Errorf("preview = %q, %v", p, err)
		}
		out, err := exec.Run(context.Background(), b.args(t, stmt))
		if err == nil || !strings.Contains(err.Error(), "unknown") {
			t.Fatalf("Run = %+v, %v; want a Go error saying the effect is unknown", out, err)
		}
		if n := b.count(t, "SELECT COUNT(*) FROM "+child); n != 0 {
			t.Errorf("%d child rows after the failed commit", n)
		}
	})
}

// slowQuery runs for much longer than the test's timeout; %[1]s is a marker
// to find it in MySQL's process list.
var slowQuery = map[string]string{
	"sqlite":   "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT COUNT(*) AS %[1]s FROM n",
	"postgres": "SELECT pg_sleep(5) AS %[1]s",
	"mysql":    "SELECT SLEEP(5) AS %[1]s",
}

// slowUpdate changes order 1 after a long time; %[1]s is the orders table.
var slowUpdate = map[string]string{
	"sqlite":   "UPDATE %[1]s SET amount_cents = (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT COUNT(*) FROM n) WHERE id = 1",
	"postgres": "UPDATE %[1]s SET amount_cents = (SELECT 1 FROM pg_sleep(5)) WHERE id = 1",
	"mysql":    "UPDATE %[1]s SET amount_cents = SLEEP(5) WHERE id = 1",
}

func TestTimeouts(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		b.e.timeout = 300 * time.Millisecond
		marker := "marker_" + b.suffix
		start := time.Now()
		out := b.run(t, NewQueryTool(b.dbs), fmt.Sprintf(slowQuery[b.driver], marker))
		if !out.IsError || !strings.Contains(out.Content, "timed out after 300ms") {
			t.Errorf("slow query = %+v, want timed out", out)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("the slow query returned after %s", d)
		}
		if b.driver == "mysql" {
			b.waitGone(t, marker)
		}

		before := b.snapshot(t, b.orders)
		stmt := fmt.Sprintf(slowUpdate[b.driver], b.orders)
		p, err := b.preview(t, NewExecuteTool(b.dbs), stmt)
		if err != nil || !strings.Contains(p, "blast radius unknown") || !strings.Contains(p, "timed out after 300ms") {
			t.Errorf("preview of a slow UPDATE = %q, %v", p, err)
		}
		if after := b.snapshot(t, b.orders); after != before {
			t.Fatalf("after the preview: %s, before %s", after, before)
		}

		b.e.timeout = 2 * time.Second
		// The connection was reset or replaced, and (MySQL) the killed
		// UPDATE holds no lock: reads and writes work at once.
		start = time.Now()
		if out := b.run(t, NewQueryTool(b.dbs), "SELECT COUNT(*) AS n FROM "+b.orders); out.IsError || !strings.Contains(out.Content, "40") {
			t.Errorf("query after the timeout = %+v", out)
		}
		if out := b.run(t, NewExecuteTool(b.dbs), "UPDATE "+b.orders+" SET amount_cents = 2 WHERE id = 1"); out.IsError {
			t.Errorf("update after the timeout = %+v", out)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("read and write after the timeouts took %s", d)
		}
	})
}

// waitGone waits until no MySQL connection runs a statement containing
// marker, and fails the test if one still does after two seconds.
func (b *backend) waitGone(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		n := b.count(t, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND INFO LIKE '%AS "+marker+"'")
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the statement with %s still runs on the server", marker)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The rows a preview counts before a MySQL DROP TABLE are all a person
// sees; the table is still there, and Run drops it.
func TestDropTableRun(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		exec := NewExecuteTool(b.dbs)
		stmt := "DROP TABLE " + b.notes
		if p, err := b.preview(t, exec, stmt); err != nil || !strings.Contains(p, "would drop table "+b.notes+" (0 rows)") {
			t.Errorf("preview = %q, %v", p, err)
		}
		if !b.exists(b.notes) {
			t.Fatal("the preview dropped the table")
		}
		if out := b.run(t, exec, stmt); out.IsError || !strings.Contains(out.Content, "DROP TABLE done on "+b.name) {
			t.Errorf("Run = %+v", out)
		}
		if b.exists(b.notes) {
			t.Error("the table still exists")
		}
		if p, err := b.preview(t, exec, "DROP TABLE IF EXISTS "+b.notes); err != nil || !strings.Contains(p, "cannot count") {
			t.Errorf("preview with IF EXISTS = %q, %v", p, err)
		}
	})
}

// The driver facts that read works around, checked so that a change in a
// driver shows up here: modernc.org/sqlite ignores TxOptions.ReadOnly, and
// on MySQL/MariaDB a READ ONLY transaction alone does not stop DDL (which
// commits the transaction implicitly and then runs).
func TestReadOnlyTxOptionAloneIsNotEnough(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		if b.driver == "postgres" {
			t.Skip("PostgreSQL enforces READ ONLY for DDL too; TestReadTransactionIsEnforced covers it")
		}
		victim := b.table("victim")
		b.exec(t, "CREATE TABLE "+victim+" (id INTEGER)")
		b.dropLater(t, victim)
		ctx := context.Background()
		tx, err := b.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = tx.ExecContext(ctx, "DROP TABLE "+victim)
		tx.Rollback()
		if err != nil {
			t.Fatalf("DROP TABLE in a plain ReadOnly transaction failed (%v): the driver now enforces it; read's extra guard may be simplified", err)
		}
		t.Logf("%s: DROP TABLE in BeginTx(ReadOnly: true) succeeded; table gone after rollback: %v", b.driver, !b.exists(victim))
	})
}
