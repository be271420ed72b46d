package sqltool

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/tools/demodb"
)

// Servers the tests use when the environment names none.
const (
	defaultTestPostgres = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	defaultTestMySQL    = "root@tcp(127.0.0.1:3306)/test"
)

// backend is one database under test, holding an orders table with the
// demo rows and an empty notes table, both named uniquely for the test.
type backend struct {
	driver string
	name   string // the database's name in dbs
	dbs    *Databases
	db     *sql.DB
	e      *database
	suffix string
	orders string
	notes  string
}

// binaryType is each driver's column type for bytes.
var binaryType = map[string]string{"sqlite": "BLOB", "postgres": "BYTEA", "mysql": "VARBINARY(64)"}

// forEachBackend runs fn as a sub-test on SQLite (the demo database), on
// PostgreSQL and on MySQL/MariaDB; a server that cannot be reached is
// skipped with the reason.
func forEachBackend(t *testing.T, fn func(t *testing.T, b *backend)) {
	t.Helper()
	for _, d := range drivers {
		t.Run(d, func(t *testing.T) {
			fn(t, newBackend(t, d))
		})
	}
}

func randomSuffix(t *testing.T) string {
	t.Helper()
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

func newBackend(t *testing.T, driver string) *backend {
	t.Helper()
	b := &backend{driver: driver, dbs: &Databases{}, suffix: randomSuffix(t)}
	switch driver {
	case "sqlite":
		db, err := demodb.Open(context.Background(), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		b.name, b.orders = "demo", "orders"
		if err := b.dbs.OpenDB(b.name, "sqlite", db); err != nil {
			t.Fatal(err)
		}
	case "postgres", "mysql":
		env, dsn := "HITLBOT_TEST_POSTGRES", defaultTestPostgres
		if driver == "mysql" {
			env, dsn = "HITLBOT_TEST_MYSQL", defaultTestMySQL
		}
		if v := os.Getenv(env); v != "" {
			dsn = v
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		b.name = map[string]string{"postgres": "pg", "mysql": "maria"}[driver]
		if err := b.dbs.Open(ctx, []DatabaseConfig{{Name: b.name, Driver: driver, DSN: dsn}}); err != nil {
			t.Skipf("%s is not reachable (%v); set %s to a test server", driver, err, env)
		}
		t.Cleanup(func() { b.dbs.Close() })
		b.orders = "orders_" + b.suffix
	}
	b.e, _ = b.dbs.get(b.name)
	b.db = b.e.db
	// One connection: a connection left read-only, in a transaction or
	// checked out would make the next step fail or hang.
	b.db.SetMaxOpenConns(1)
	engine := ""
	if driver == "mysql" {
		engine = " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
	}
	if driver != "sqlite" {
		b.exec(t, `CREATE TABLE `+b.orders+` (id INTEGER PRIMARY KEY, customer VARCHAR(100) NOT NULL,
			amount_cents INTEGER NOT NULL,
			status VARCHAR(20) NOT NULL CHECK (status IN ('pending','paid','shipped','cancelled')),
			created_at VARCHAR(40) NOT NULL)`+engine)
		b.dropLater(t, b.orders)
		for _, o := range demodb.Orders() {
			b.exec(t, "INSERT INTO "+b.orders+" (id, customer, amount_cents, status, created_at) VALUES ("+b.params(5)+")",
				o.ID, o.Customer, o.AmountCents, o.Status, o.CreatedAt)
		}
	}
	b.notes = "notes_" + b.suffix
	b.exec(t, "CREATE TABLE "+b.notes+" (id INTEGER PRIMARY KEY, body VARCHAR(200), data "+binaryType[driver]+")"+engine)
	b.dropLater(t, b.notes)
	return b
}

// params returns n bind parameters in the driver's syntax.
func (b *backend) params(n int) string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = "?"
		if b.driver == "postgres" {
			ps[i] = fmt.Sprintf("$%d", i+1)
		}
	}
	return strings.Join(ps, ", ")
}

// table returns a name unique to this test for a table made up by it.
func (b *backend) table(base string) string { return base + "_" + b.suffix }

func (b *backend) exec(t *testing.T, stmt string, args ...any) {
	t.Helper()
	if _, err := b.db.Exec(stmt, args...); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// dropLater drops the table when the test ends (the SQLite file goes with
// its directory).
func (b *backend) dropLater(t *testing.T, table string) {
	t.Helper()
	if b.driver == "sqlite" {
		return
	}
	t.Cleanup(func() {
		if _, err := b.db.Exec("DROP TABLE IF EXISTS " + table); err != nil {
			t.Errorf("dropping %s: %v", table, err)
		}
	})
}

func (b *backend) count(t *testing.T, query string) int64 {
	t.Helper()
	var n int64
	if err := b.db.QueryRow(query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// exists reports whether a table exists (a SELECT from it succeeds).
func (b *backend) exists(table string) bool {
	rows, err := b.db.Query("SELECT * FROM " + table + " WHERE 1 = 0")
	if err != nil {
		return false
	}
	rows.Close()
	return true
}

// snapshot summarises a table's rows and columns, to compare before and after.
func (b *backend) snapshot(t *testing.T, table string) string {
	t.Helper()
	var n, amount, ids int64
	if err := b.db.QueryRow("SELECT COUNT(*), COALESCE(SUM(amount_cents), 0), COALESCE(SUM(id), 0) FROM "+table).
		Scan(&n, &amount, &ids); err != nil {
		t.Fatalf("snapshot of %s: %v", table, err)
	}
	rows, err := b.db.Query("SELECT * FROM " + table + " WHERE 1 = 0")
	if err != nil {
		t.Fatal(err)
	}
	cols, err := rows.Columns()
	rows.Close()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("rows=%d amount=%d ids=%d columns=%s", n, amount, ids, strings.Join(cols, ","))
}

func (b *backend) args(t *testing.T, stmt string) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(callArgs{Statement: stmt, Database: b.name})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// run calls the tool's Run and fails the test on a Go error.
func (b *backend) run(t *testing.T, tool agent.Tool, stmt string) agent.Output {
	t.Helper()
	out, err := tool.Run(context.Background(), b.args(t, stmt))
	if err != nil {
		t.Fatalf("%s.Run(%q): %v", tool.Name(), stmt, err)
	}
	return out
}

func (b *backend) preview(t *testing.T, tool agent.Tool, stmt string) (string, error) {
	t.Helper()
	return tool.Preview(context.Background(), b.args(t, stmt))
}
