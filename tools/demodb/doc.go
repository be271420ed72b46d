// Package demodb opens the demo database: a SQLite file, demo.db, that a
// fresh install can play with without touching anything real.
//
// The first Open creates it with two tables and deterministic sample rows:
//
//	orders(id INTEGER PRIMARY KEY, customer TEXT NOT NULL,
//	       amount_cents INTEGER NOT NULL,
//	       status TEXT NOT NULL CHECK (status IN ('pending','paid','shipped','cancelled')),
//	       created_at TEXT NOT NULL)
//	tasks(id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, due TEXT,
//	      done INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL)
//
// orders holds [OrderCount] rows, [CancelledCount] of them cancelled, so a
// demo "DELETE FROM orders WHERE status = 'cancelled'" has a known blast
// radius; tasks holds [TaskCount] rows for the tasks tools. [Orders] and
// [Tasks] return the same rows, for tests that need them elsewhere.
//
// Seeding happens once, in one IMMEDIATE transaction that also sets
// PRAGMA user_version to [SchemaVersion]: a later Open (or a second process
// opening the file at the same time) adds nothing, and rows a user deleted
// stay deleted. Missing tables are re-created empty on every Open, so the
// tools that rely on them keep working after a demo DROP TABLE.
//
// Connections use WAL, a 5 s busy timeout and foreign keys, set through the
// modernc.org/sqlite DSN (driver name "sqlite").
package demodb
