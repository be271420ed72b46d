// Package tasks is the demo to-do list the bot can manage in the demo
// database: create a task, list tasks, mark one done, delete one.
//
// It exists so that a fresh install has something harmless but realistic to
// approve. Creating and completing a task are writes (MEDIUM risk by
// default), deleting one is destructive (HIGH), listing is a read (LOW, runs
// without asking).
//
// The tools work on one table, created by whoever owns the database (the
// demo database package in production, the tests here):
//
//	tasks(id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, due TEXT,
//	      done INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL)
//
// What a person sees before approving is built by Preview, which only reads:
// "Create task “buy milk” (due 2026-11-30)", "Delete task 3 “buy milk”". A
// preview of a call on an id that does not exist says so, so nobody approves
// a call that cannot do anything; running it anyway reports
// "task 9 does not exist" as a failure the tool knows about.
//
// Titles are normalised the same way in Preview and Run (runs of white space,
// including newlines, become one space, so a title cannot fake extra lines on
// a card) and limited to MaxTitleRunes runes by the schema. A due date is
// free text ("next week") or a date: YYYY-MM-DD is checked and kept,
// "today" / "tomorrow" (and 今天 / 明天) become a date from the injected
// clock.
//
// Errors follow the agent.Tool contract: arguments that cannot be decoded
// wrap approval.ErrNotRun; a statement SQLite refused is an Output with
// IsError (SQLite statements are atomic, so nothing happened); only a call
// whose context ended while the statement ran returns a Go error, because
// then nobody can say for sure whether it committed.
package tasks
