package demodb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"modernc.org/sqlite" // also registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"
)

// FileName is the name of the demo database file inside the directory given to Open.
const FileName = "demo.db"

// SchemaVersion is the PRAGMA user_version of a seeded demo database.
const SchemaVersion = 1

// Sizes of the sample data.
const (
	OrderCount     = 40 // rows in orders
	CancelledCount = 7  // orders with status 'cancelled'
	TaskCount      = 3  // rows in tasks
)

// schema is the DDL of the demo tables, one statement per entry.
var schema = [...]string{
	`CREATE TABLE IF NOT EXISTS orders (
	id INTEGER PRIMARY KEY,
	customer TEXT NOT NULL,
	amount_cents INTEGER NOT NULL,
	status TEXT NOT NULL CHECK (status IN ('pending','paid','shipped','cancelled')),
	created_at TEXT NOT NULL
)`,
	`CREATE TABLE IF NOT EXISTS tasks (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	title TEXT NOT NULL,
	due TEXT,
	done INTEGER NOT NULL DEFAULT 0,
	created_at TEXT NOT NULL
)`,
}

// Order is one sample row of the orders table.
type Order struct {
	ID          int64
	Customer    string
	AmountCents int64
	Status      string // pending, paid, shipped or cancelled
	CreatedAt   string // RFC 3339, UTC
}

// Task is one sample row of the tasks table.
type Task struct {
	ID        int64
	Title     string
	Due       *string // nil is NULL
	Done      bool
	CreatedAt string // RFC 3339, UTC
}

var customers = [...]string{
	"Alice Chen", "Bob Martin", "Carol Díaz", "王芳",
	"David Kim", "李娜", "Eve Novak", "Frank Osei",
}

// cancelledIDs are the ids of the cancelled sample orders.
var cancelledIDs = [...]int64{4, 9, 15, 21, 27, 33, 38}

// Orders returns the sample orders, the same on every call.
func Orders() []Order {
	statuses := [...]string{"pending", "paid", "shipped"}
	start := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	out := make([]Order, 0, OrderCount)
	for i := int64(1); i <= OrderCount; i++ {
		o := Order{
			ID:          i,
			Customer:    customers[(i*3)%int64(len(customers))],
			AmountCents: 500 + (i*7919)%45000,
			Status:      statuses[i%3],
			CreatedAt:   start.Add(time.Duration(i-1) * 29 * time.Hour).Format(time.RFC3339),
		}
		for _, c := range cancelledIDs {
			if c == i {
				o.Status = "cancelled"
			}
		}
		out = append(out, o)
	}
	return out
}

// Tasks returns the sample tasks, the same on every call.
func Tasks() []Task {
	due := func(s string) *string { return &s }
	return []Task{
		{1, "Renew the TLS certificate of the shop", due("2026-12-01"), false, "2026-11-02T08:30:00Z"},
		{2, "Review the refunds of last month", nil, false, "2026-11-03T10:15:00Z"},
		{3, "Order printer paper", due("2026-11-20"), true, "2026-11-04T16:45:00Z"},
	}
}

// DSN returns the modernc.org/sqlite data source name Open uses for the file
// at path: a file: URI with busy_timeout(5000), journal_mode(WAL) and
// foreign_keys(1).
func DSN(path string) string {
	u := url.URL{Path: filepath.ToSlash(path)}
	return "file:" + u.EscapedPath() +
		"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)"
}

// Open opens dir/demo.db, creating the directory, the file, the tables and
// the sample rows when they are missing. It is safe to call again, and from
// several processes at once: the sample rows are inserted once.
func Open(ctx context.Context, dir string) (*sql.DB, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("demodb: %w", err)
	}
	db, err := sql.Open("sqlite", DSN(filepath.Join(dir, FileName)))
	if err != nil {
		return nil, fmt.Errorf("demodb: %w", err)
	}
	if err := initialiseRetrying(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("demodb: %s: %w", filepath.Join(dir, FileName), err)
	}
	return db, nil
}

// busyRetries bounds how often Open tries again after SQLITE_BUSY.
const busyRetries = 20

// initialiseRetrying runs initialise, again after a short pause when
// SQLite answers SQLITE_BUSY at once. busy_timeout makes most lock waits
// block, but not all: SQLite returns BUSY without calling the busy
// handler where waiting could deadlock, and while another connection is
// switching a new file to WAL (several Opens of a new file at once, from
// this process or others). Each try is one transaction, so a retry is safe.
func initialiseRetrying(ctx context.Context, db *sql.DB) error {
	for try := 1; ; try++ {
		err := initialise(ctx, db)
		if err == nil || !isBusy(err) || try == busyRetries {
			return err
		}
		t := time.NewTimer(time.Duration(try) * 10 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// isBusy reports whether err is SQLITE_BUSY (or one of its extended codes).
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// initialise creates the tables and, on a database that was never seeded,
// the sample rows, in one IMMEDIATE transaction on a dedicated connection
// (an IMMEDIATE transaction takes the write lock at once, so two processes
// opening a new file one after the other wait for each other instead of both
// seeding or failing with SQLITE_BUSY_SNAPSHOT).
func initialise(ctx context.Context, db *sql.DB) (err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			// The caller closes the whole *sql.DB on error, so a failed
			// ROLLBACK cannot leave a connection in a transaction in a pool.
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	for _, ddl := range schema {
		if _, err := conn.ExecContext(ctx, ddl); err != nil {
			return err
		}
	}
	var version int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return err
	}
	if version < SchemaVersion {
		if err := seed(ctx, conn); err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion)); err != nil {
			return err
		}
	}
	_, err = conn.ExecContext(ctx, "COMMIT")
	return err
}

// seed inserts the sample rows into each table that is empty (a table that
// already has rows, from a file made before versioning, is left alone).
func seed(ctx context.Context, conn *sql.Conn) error {
	empty := func(table string) (bool, error) {
		var n int
		err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n)
		return n == 0, err
	}
	if ok, err := empty("orders"); err != nil {
		return err
	} else if ok {
		for _, o := range Orders() {
			if _, err := conn.ExecContext(ctx,
				`INSERT INTO orders (id, customer, amount_cents, status, created_at) VALUES (?, ?, ?, ?, ?)`,
				o.ID, o.Customer, o.AmountCents, o.Status, o.CreatedAt); err != nil {
				return err
			}
		}
	}
	if ok, err := empty("tasks"); err != nil {
		return err
	} else if ok {
		for _, t := range Tasks() {
			var due any
			if t.Due != nil {
				due = *t.Due
			}
			done := 0
			if t.Done {
				done = 1
			}
			if _, err := conn.ExecContext(ctx,
				`INSERT INTO tasks (id, title, due, done, created_at) VALUES (?, ?, ?, ?, ?)`,
				t.ID, t.Title, due, done, t.CreatedAt); err != nil {
				return err
			}
		}
	}
	return nil
}
