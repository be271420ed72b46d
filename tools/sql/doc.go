// Package sqltool provides the SQL tools, sql_query and sql_execute, over
// several named databases (SQLite, PostgreSQL, MySQL/MariaDB) configured
// under tools.sql.databases (see DatabaseConfig and Databases):
//
//	tools:
//	  sql:
//	    databases:
//	      - name: shop             # the model's "database" argument
//	        driver: postgres       # sqlite | postgres | mysql
//	        dsn: …                 # secret: from the environment or a file
//	        max_rows: 100
//	        query_timeout: 10s
//	        read_only: true        # sql_query only
//
// The demo database (package demodb) is added with Databases.OpenDB. Add
// every database before registering the tools: their schemas list the
// names, and the first (for sql_execute: the first writable) is the default.
//
// # sql_query
//
// Effect read, so it runs without asking. It accepts only a statement the
// classifier (Classify) calls a read: SELECT, VALUES, TABLE, WITH … SELECT,
// EXPLAIN, SHOW, DESCRIBE and, on SQLite, the PRAGMAs that only report
// (PRAGMA table_info(t), PRAGMA user_version; never PRAGMA x = y or x(y)
// for a setting). It refuses several statements, data-modifying WITH
// clauses, SELECT … INTO, FOR UPDATE, and any read that contains INSERT,
// UPDATE, DELETE, DROP, CREATE, … as a keyword.
//
// The classifier is the first guard; the database is the second. The read
// runs in a transaction that the server itself keeps from changing
// anything, and that is always rolled back:
//
//   - PostgreSQL: BEGIN READ ONLY (any INSERT/UPDATE/DELETE/DDL, nextval,
//     SELECT … FOR UPDATE fails with SQLSTATE 25006).
//   - MySQL/MariaDB: SET SESSION TRANSACTION READ ONLY and START
//     TRANSACTION READ ONLY on a dedicated connection (error 1792), reset
//     afterwards. The session setting matters: DDL commits implicitly, so
//     a READ ONLY transaction alone lets DROP TABLE through.
//   - SQLite: modernc.org/sqlite ignores sql.TxOptions.ReadOnly, so PRAGMA
//     query_only = 1 on a dedicated connection ("attempt to write a
//     readonly database"), reset afterwards.
//
// A connection whose reset fails is closed, never pooled. The result is an
// aligned text table: at most DatabaseConfig.MaxRows rows ("(first N rows;
// more exist)" when there are more), cells cut to MaxCellRunes runes, NULL
// as NULL, bytes as text when they are UTF-8.
//
// # sql_execute
//
// Its effect comes from the statement: DELETE, DROP, TRUNCATE, REPLACE,
// UPDATE without WHERE, ALTER … DROP, CREATE OR REPLACE, CALL/DO are
// destructive; other INSERT, UPDATE, CREATE, ALTER and DDL are writes.
// Reads are refused (use sql_query), and so are several statements,
// transaction control and session settings (BEGIN, SET, USE, ATTACH, …).
//
// It is an agent.Assessor: before the policy decides, Assess dry-runs the
// statement (as Preview does) and reports its blast radius, which can
// raise the call to HIGH with a reason the card shows: more rows than
// approval.policy.high_rows ("affects 29 rows, more than 20"; on MySQL a
// statement that cannot be dry-run counts its table as the upper bound),
// any DDL, GRANT or maintenance statement, every destructive statement
// (UPDATE or DELETE without WHERE: "UPDATE without WHERE changes every
// row"), and a dry run that timed out. The loop shows Assess's preview on
// the card, so the number judged is the number seen.
//
// Preview shows the statement verbatim, the database and the blast radius,
// and never changes anything: "DELETE FROM orders WHERE status =
// 'cancelled' — affects 7 rows in demo". INSERT/UPDATE/DELETE run in a
// transaction that is rolled back and report the rows affected; on SQLite
// and PostgreSQL, DDL is dry-run the same way, and DROP TABLE/TRUNCATE
// also count the rows of each table. On MySQL, DDL is never executed in a
// preview (it commits by itself): only the rows are counted. MySQL DML is
// dry-run only when every table the statement names is an InnoDB base
// table without triggers and no name is a stored routine; otherwise the
// preview says why it was not dry-run. Sequences (PostgreSQL) and
// AUTO_INCREMENT counters (MySQL) are not transactional: a dry-run INSERT
// may advance them, which changes no row.
//
// Run executes the statement in a transaction and commits it ("DELETE done
// on demo: 7 rows affected"). A statement the database rejects is an
// Output with IsError and nothing committed; a failed COMMIT is a Go
// error, because its effect is unknown. Every statement, preview and run
// is bounded by DatabaseConfig.QueryTimeout.
//
// On MySQL a statement still running when the timeout ends is stopped with
// KILL QUERY from a separate connection: go-sql-driver only closes its
// socket, and the server would go on running it and holding its locks. A
// preview whose dry run times out says "blast radius unknown" instead of
// failing.
//
// Messages carry the database's own error text (it is the model's SQL),
// never the DSN or the password.
//
// PostgreSQL is reached through a small database/sql adapter over a pgx
// connection (pgdriver.go), because github.com/jackc/pgx/v5/stdlib needs
// github.com/jackc/puddle/v2, which go.sum does not list. The adapter runs
// statements without arguments through the extended protocol, so the
// server also refuses a second statement.
package sqltool
