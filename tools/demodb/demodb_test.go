package demodb

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"
)

func open(t *testing.T, dir string) *sql.DB {
	t.Helper()
	db, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func count(t *testing.T, db *sql.DB, query string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// counts are the row counts a freshly seeded database has.
var counts = []struct {
	query string
	want  int
}{
	{"SELECT COUNT(*) FROM orders", OrderCount},
	{"SELECT COUNT(*) FROM orders WHERE status = 'cancelled'", CancelledCount},
	{"SELECT COUNT(*) FROM tasks", TaskCount},
	{"SELECT COUNT(*) FROM tasks WHERE due IS NULL", 1},
	{"SELECT COUNT(*) FROM tasks WHERE done = 1", 1},
	{"PRAGMA user_version", SchemaVersion},
}

func checkCounts(t *testing.T, db *sql.DB) {
	t.Helper()
	for _, c := range counts {
		if got := count(t, db, c.query); got != c.want {
			t.Errorf("%s = %d, want %d", c.query, got, c.want)
		}
	}
}

func TestSampleData(t *testing.T) {
	orders := Orders()
	if len(orders) != OrderCount {
		t.Fatalf("len(Orders()) = %d, want %d", len(orders), OrderCount)
	}
	cancelled := 0
	for _, o := range orders {
		if o.Status == "cancelled" {
			cancelled++
		}
	}
	if cancelled != CancelledCount {
		t.Errorf("cancelled orders = %d, want %d", cancelled, CancelledCount)
	}
	if len(Tasks()) != TaskCount {
		t.Errorf("len(Tasks()) = %d, want %d", len(Tasks()), TaskCount)
	}
}

func TestOpenCreatesAndSeeds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "data")
	db := open(t, dir)
	checkCounts(t, db)

	rows, err := db.Query("SELECT id, customer, amount_cents, status, created_at FROM orders ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	want := Orders()
	i := 0
	for rows.Next() {
		var o Order
		if err := rows.Scan(&o.ID, &o.Customer, &o.AmountCents, &o.Status, &o.CreatedAt); err != nil {
			t.Fatal(err)
		}
		if i >= len(want) || o != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, o, want[min(i, len(want)-1)])
		}
		i++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	for _, tk := range Tasks() {
		var title string
		var due sql.NullString
		var done int
		if err := db.QueryRow("SELECT title, due, done FROM tasks WHERE id = ?", tk.ID).Scan(&title, &due, &done); err != nil {
			t.Fatalf("task %d: %v", tk.ID, err)
		}
		if title != tk.Title || due.Valid != (tk.Due != nil) || (tk.Due != nil && due.String != *tk.Due) || (done == 1) != tk.Done {
			t.Errorf("task %d = %q %v %d, want %+v", tk.ID, title, due, done, tk)
		}
	}
}

func TestOpenIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	db1 := open(t, dir)
	db2 := open(t, dir) // a second Open while the first is still open
	checkCounts(t, db2)
	db2.Close()
	db3 := open(t, dir)
	checkCounts(t, db3)
	checkCounts(t, db1)
}

func TestOpenConcurrently(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	dbs := make([]*sql.DB, 4)
	errs := make([]error, len(dbs))
	for i := range dbs {
		wg.Go(func() { dbs[i], errs[i] = Open(context.Background(), dir) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open #%d: %v", i, err)
		}
		defer dbs[i].Close()
	}
	checkCounts(t, dbs[0])
}

// A user's changes to the demo data survive a restart: deleted rows are not
// seeded again, and a dropped table comes back empty.
func TestOpenKeepsUserChanges(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	if _, err := db.Exec("DELETE FROM orders WHERE status = 'cancelled'"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("DROP TABLE tasks"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db = open(t, dir)
	if got, want := count(t, db, "SELECT COUNT(*) FROM orders"), OrderCount-CancelledCount; got != want {
		t.Errorf("orders after reopen = %d, want %d", got, want)
	}
	if got := count(t, db, "SELECT COUNT(*) FROM tasks"); got != 0 {
		t.Errorf("tasks after reopen = %d, want 0 (re-created empty)", got)
	}
}

// settings are the connection settings the DSN must produce.
var settings = []struct {
	pragma string
	want   string
}{
	{"journal_mode", "wal"},
	{"busy_timeout", "5000"},
	{"foreign_keys", "1"},
}

func TestConnectionSettings(t *testing.T) {
	db := open(t, t.TempDir())
	db.SetMaxOpenConns(3)
	for _, s := range settings {
		var got string
		if err := db.QueryRow("PRAGMA " + s.pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != s.want {
			t.Errorf("PRAGMA %s = %q, want %q", s.pragma, got, s.want)
		}
	}
}

func TestStatusCheckConstraint(t *testing.T) {
	db := open(t, t.TempDir())
	_, err := db.Exec(`INSERT INTO orders (customer, amount_cents, status, created_at) VALUES ('x', 1, 'lost', '2026-01-01T00:00:00Z')`)
	if err == nil {
		t.Fatal("insert with status 'lost' succeeded; want a CHECK constraint failure")
	}
}

func TestDSNEscapesPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "odd ?#% name")
	db := open(t, dir)
	checkCounts(t, db)
	var file string
	if err := db.QueryRow("SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&file); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, FileName); file != want {
		t.Errorf("database file = %q, want %q", file, want)
	}
}
