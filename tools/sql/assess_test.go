package sqltool

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
)

// highCases: what makes a statement HIGH whatever rows it touches (High's
// English text holds want; "" means a row change whose risk depends on its
// dry run).
var highCases = []struct{ stmt, want, wantZH string }{
	{"INSERT INTO orders (id) VALUES (1)", "", ""},
	{"UPDATE orders SET status = 'cancelled' WHERE id < 30", "", ""},
	{"update orders set status = 'x' where (id < 3)", "", ""},
	{"MERGE INTO orders USING t ON orders.id = t.id WHEN MATCHED THEN UPDATE SET status = t.status", "", ""},
	{"UPDATE orders SET status = 'x'", "UPDATE without WHERE changes every row", "没有 WHERE 的 UPDATE 会修改所有行"},
	{"UPDATE orders SET amount_cents = (SELECT 1 FROM t WHERE t.id = 1)", "UPDATE without WHERE", "没有 WHERE 的 UPDATE"},
	{"DELETE FROM orders", "DELETE without WHERE removes every row", "没有 WHERE 的 DELETE 会删除所有行"},
	{"delete from orders where id in (select id from t)", "DELETE removes rows", "DELETE 会删除数据行"},
	{"CREATE TABLE t (id INTEGER)", "CREATE TABLE changes the schema (DDL)", "CREATE TABLE 会修改数据库结构（DDL）"},
	{"CREATE INDEX i ON orders (status)", "CREATE INDEX changes the schema (DDL)", "CREATE INDEX 会修改数据库结构（DDL）"},
	{"ALTER TABLE orders ADD COLUMN note TEXT", "ALTER TABLE changes the schema (DDL)", "（DDL）"},
	{"ALTER TABLE orders DROP COLUMN note", "ALTER … DROP removes part of the schema", "ALTER … DROP 会删除部分表结构"},
	{"DROP TABLE orders", "DROP TABLE removes it for good", "DROP TABLE 会永久删除它"},
	{"TRUNCATE orders", "TRUNCATE removes every row", "TRUNCATE 会删除所有行"},
	{"GRANT SELECT ON orders TO bob", "GRANT changes privileges", "GRANT 会修改权限"},
	{"ANALYZE orders", "ANALYZE works on whole tables or the schema", "ANALYZE 作用于整张表"},
}

func TestClassifyHigh(t *testing.T) {
	for _, tc := range highCases {
		for _, d := range drivers {
			c := Classify(d, tc.stmt)
			if c.Class == ClassRefused {
				if tc.want != "" {
					t.Errorf("Classify(%s, %q) refused: %s", d, tc.stmt, c.Reason)
				}
				continue // e.g. MERGE where the lexer says no
			}
			if !strings.Contains(c.High.EN, tc.want) || !strings.Contains(c.High.ZH, tc.wantZH) || (tc.want == "") != c.High.IsZero() {
				t.Errorf("Classify(%s, %q).High = %+v, want %q / %q", d, tc.stmt, c.High, tc.want, tc.wantZH)
			}
		}
	}
}

// assess runs the tool's Assess and the default policy on one statement,
// as the agent loop does.
func (b *backend) assess(t *testing.T, stmt string, granted bool) (approval.Blast, string, approval.Verdict) {
	t.Helper()
	exec := NewExecuteTool(b.dbs)
	as, ok := exec.(agent.Assessor)
	if !ok {
		t.Fatal("sql_execute is not an agent.Assessor")
	}
	args := b.args(t, stmt)
	blast, words := as.Assess(context.Background(), args)
	preview := words.EN
	pol, err := approval.NewPolicy(approval.DefaultPolicyConfig())
	if err != nil {
		t.Fatal(err)
	}
	v, err := pol.Evaluate(approval.CallInfo{Session: "s", User: "u", Tool: exec.Name(), Effect: exec.Effect(args), Hash: "h", Confidence: 1, Blast: blast},
		func() (bool, error) { return granted, nil })
	if err != nil {
		t.Fatal(err)
	}
	return blast, preview, v
}

// TestAssessRaisesRisk: with the default policy, the dry run's row count
// and the statement decide the risk, and the reason says why in numbers
// the database gave, on every backend.
func TestAssessRaisesRisk(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		before := b.snapshot(t, b.orders)
		created := b.table("created")
		b.dropLater(t, created)

		// The mass update: more than 20 rows is HIGH. MySQL counts
		// the rows a statement changes, the others those it matches.
		stmt := "UPDATE " + b.orders + " SET status = 'cancelled' WHERE id < 30"
		count := "SELECT COUNT(*) FROM " + b.orders + " WHERE id < 30"
		if b.driver == "mysql" {
			count += " AND status <> 'cancelled'"
		}
		n := b.count(t, count)
		if n <= 20 {
			t.Fatalf("the demo data has %d rows to update, want more than 20", n)
		}
		blast, p, v := b.assess(t, stmt, true)
		if !blast.Measured || blast.AtMost || blast.Rows != n || !blast.High.IsZero() {
			t.Errorf("blast of %q = %+v, want %d rows measured", stmt, blast, n)
		}
		if !strings.Contains(p, fmt.Sprintf("affects %d rows in %s", n, b.name)) {
			t.Errorf("preview = %q", p)
		}
		if !v.NeedsApproval || v.Risk != approval.RiskHigh || v.Grantable ||
			v.Reason != fmt.Sprintf("affects %d rows, more than 20", n) || v.ReasonZH != fmt.Sprintf("影响 %d 行，超过 20 行", n) {
			t.Errorf("verdict for %q = %+v, want HIGH: affects %d rows, more than 20", stmt, v, n)
		}

		// A small write is MEDIUM: it asks the first time; a live grant
		// skips the question.
		insert := "INSERT INTO " + b.notes + " (id, body) VALUES (1, 'x')"
		for _, granted := range []bool{false, true} {
			blast, _, v = b.assess(t, insert, granted)
			if blast.Rows != 1 || !blast.Measured || v.Risk != approval.RiskMedium || v.NeedsApproval == granted {
				t.Errorf("INSERT (granted %v): blast %+v, verdict %+v; want MEDIUM, asking unless granted", granted, blast, v)
			}
		}

		// HIGH whatever the rows: DDL, UPDATE and DELETE without WHERE.
		for _, tc := range []struct{ stmt, reason string }{
			{"CREATE TABLE " + created + " (id INTEGER)", "CREATE TABLE changes the schema (DDL)"},
			{"ALTER TABLE " + b.notes + " ADD COLUMN note VARCHAR(10)", "ALTER TABLE changes the schema (DDL)"},
			{"UPDATE " + b.orders + " SET amount_cents = 0", "UPDATE without WHERE changes every row; affects 40 rows, more than 20"},
			{"DELETE FROM " + b.notes, "DELETE without WHERE removes every row"},
			{"DELETE FROM " + b.orders + " WHERE id <= 2", "DELETE removes rows"},
		} {
			_, _, v := b.assess(t, tc.stmt, true)
			if !v.NeedsApproval || v.Risk != approval.RiskHigh || v.Reason != tc.reason || v.ReasonZH == "" {
				t.Errorf("verdict for %q = %+v, want HIGH: %s", tc.stmt, v, tc.reason)
			}
		}
		if after := b.snapshot(t, b.orders); after != before {
			t.Fatalf("assessing changed the orders: %s, before %s", after, before)
		}
		if b.exists(created) {
			t.Fatalf("assessing created %s", created)
		}
	})
}

// TestAssessTimeoutIsHigh: a dry run that times out measures nothing, and
// a change of unknown size is HIGH.
func TestAssessTimeoutIsHigh(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		b.e.timeout = 300 * time.Millisecond
		stmt := fmt.Sprintf(slowUpdate[b.driver], b.orders)
		blast, p, v := b.assess(t, stmt, true)
		if blast.Measured || !strings.Contains(blast.High.EN, "timed out after 300ms") || !strings.Contains(p, "blast radius unknown") {
			t.Errorf("blast of a slow UPDATE = %+v, preview %q", blast, p)
		}
		if !v.NeedsApproval || v.Risk != approval.RiskHigh || !strings.Contains(v.ReasonZH, "试运行超时") {
			t.Errorf("verdict for a slow UPDATE = %+v, want HIGH", v)
		}
	})
}

// TestAssessUpperBound: on MySQL a statement on a MyISAM table is not
// dry-run; its table's size bounds the rows, and that bound counts.
func TestAssessUpperBound(t *testing.T) {
	b := newBackend(t, "mysql")
	big := b.table("big")
	b.exec(t, "CREATE TABLE "+big+" (id INTEGER PRIMARY KEY AUTO_INCREMENT, what VARCHAR(50)) ENGINE=MyISAM")
	b.dropLater(t, big)
	for range 25 {
		b.exec(t, "INSERT INTO "+big+" (what) VALUES ('a')")
	}
	blast, p, v := b.assess(t, "UPDATE "+big+" SET what = 'b' WHERE id > 0", false)
	if !blast.Measured || !blast.AtMost || blast.Rows != 25 || !strings.Contains(p, "at most 25 rows") {
		t.Errorf("blast = %+v, preview %q; want at most 25 rows", blast, p)
	}
	if v.Risk != approval.RiskHigh || v.Reason != "may affect up to 25 rows, more than 20" || v.ReasonZH != "最多影响 25 行，超过 20 行" {
		t.Errorf("verdict = %+v", v)
	}
	if n := b.count(t, "SELECT COUNT(*) FROM "+big+" WHERE what = 'b'"); n != 0 {
		t.Fatalf("assessing changed %d rows", n)
	}
}

// TestAssessRefusedIsHigh: a statement sql_execute refuses is never
// measured, stays destructive (HIGH), and the preview says why.
func TestAssessRefusedIsHigh(t *testing.T) {
	b := newBackend(t, "sqlite")
	blast, p, v := b.assess(t, "SELECT 1", false)
	if blast != (approval.Blast{}) || !strings.HasPrefix(p, "(no preview: sql_execute refused") || v.Risk != approval.RiskHigh || !v.NeedsApproval {
		t.Errorf("refused statement: blast %+v, preview %q, verdict %+v", blast, p, v)
	}
}
