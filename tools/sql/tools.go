package sqltool

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/words"
)

// callArgs are the arguments of both tools.
type callArgs struct {
	Statement string `json:"statement" jsonschema:"Exactly one SQL statement, written as it should run."`
	Database  string `json:"database,omitempty" jsonschema:"The database to use; default the first."`
}

// NewQueryTool returns sql_query: it runs one read-only statement and shows
// the result as a table. Its kind is always read: a statement that is not a
// read is refused, and the read runs in a transaction the database itself
// keeps from changing anything (see the package documentation).
func NewQueryTool(dbs *Databases) agent.Tool { return &queryTool{tool{dbs: dbs}} }

// NewExecuteTool returns sql_execute: it runs one statement that changes
// data or schema, in a transaction, after a person approved it. Its kind
// depends on the statement (see Classify); its preview shows the statement,
// the database and the rows affected, found by a dry run that is rolled back.
func NewExecuteTool(dbs *Databases) agent.Tool { return &executeTool{tool{dbs: dbs, write: true}} }

// tool is what both tools share.
type tool struct {
	dbs   *Databases
	write bool // sql_execute: only writable databases
}

func (t tool) defaultDB() string {
	if t.write {
		return t.dbs.defaultWritable()
	}
	return t.dbs.Default()
}

func (t tool) schema() *jsonschema.Schema {
	s, err := jsonschema.For[callArgs](nil)
	if err != nil {
		panic("sqltool: schema of callArgs: " + err.Error()) // a static type: cannot happen
	}
	s.Properties["statement"].MinLength = jsonschema.Ptr(1)
	db := s.Properties["database"]
	names := t.dbs.names(t.write)
	for _, n := range names {
		db.Enum = append(db.Enum, n)
	}
	if len(names) > 0 {
		db.Description = fmt.Sprintf("The database to use: %s. Default %s.", t.dbs.describe(t.write), t.defaultDB())
	}
	return s
}

// errArgs marks arguments that could not be decoded.
var errArgs = errors.New("arguments")

// call is one decoded call.
type call struct {
	db *database
	c  Classification
}

// parse decodes the arguments, finds the database and classifies the
// statement. A refusal comes back as a *refusal error; undecodable
// arguments as an error wrapping errArgs.
func (t tool) parse(raw json.RawMessage) (call, error) {
	var a callArgs
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if len(raw) == 0 {
		dec = json.NewDecoder(strings.NewReader("{}"))
	}
	if err := dec.Decode(&a); err != nil {
		return call{}, fmt.Errorf("%w: %v", errArgs, err)
	}
	name := a.Database
	if name == "" {
		name = t.defaultDB()
	}
	e, ok := t.dbs.get(name)
	if !ok {
		switch {
		case name == "" && t.write:
			return call{}, refusing(say(words.SQLNoWritableDB))
		case name == "":
			return call{}, refusing(say(words.SQLNoDB))
		}
		return call{}, refusing(say(words.SQLUnknownDB, name, t.dbs.describe(t.write)))
	}
	if t.write && e.readOnly {
		return call{}, refusing(say(words.SQLReadOnlyDB, name))
	}
	if strings.TrimSpace(a.Statement) == "" {
		return call{}, refusing(say(words.SQLEmpty))
	}
	return call{db: e, c: Classify(e.driver, a.Statement)}, nil
}

// refusal is a call the tool will not run, with the reason in words the
// model (and the person it works for) can act on, in each language; its
// Error is the English.
type refusal struct{ why phrase }

func (r *refusal) Error() string { return r.why(words.EN) }

func refusing(why phrase) error { return &refusal{why} }

// plain is text that is the same in every language (a classifier's
// reason, which names the statement's parts).
func plain(s string) phrase { return func(words.Lang) string { return s } }

// outcome turns a parse error into what Run returns: undecodable arguments
// are a Go error wrapping approval.ErrNotRun, a refusal is an Output with
// IsError, in the call's language (words.LangOf).
func outcome(ctx context.Context, err error) (agent.Output, error) {
	if errors.Is(err, errArgs) {
		return agent.Output{}, fmt.Errorf("%w: %v", approval.ErrNotRun, err)
	}
	var r *refusal
	if errors.As(err, &r) {
		return agent.Output{Content: r.why(words.LangOf(ctx)), IsError: true}, nil
	}
	return agent.Output{Content: err.Error(), IsError: true}, nil
}

// dbError words an error from the database for the model: the database's
// own message (it is the model's SQL), a timeout said as such, secrets
// redacted.
func (e *database) dbError(ctx context.Context, err error) string {
	if timedOut(ctx, err) {
		return words.Text(words.LangOf(ctx), words.SQLTimedOut, e.timeout)
	}
	return e.redact(err.Error())
}

// timedOut reports whether err comes from the query timeout.
func timedOut(ctx context.Context, err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded)
}

// ---- sql_query

type queryTool struct{ tool }

func (t *queryTool) Name() string { return "sql_query" }

func (t *queryTool) Description() string {
	return "Run one read-only SQL statement (SELECT, WITH … SELECT, VALUES, EXPLAIN, SHOW; on SQLite also " +
		"PRAGMAs that only report) and show the result as a table of at most the database's row cap. " +
		"Anything that changes data or schema is refused: use sql_execute for that. Databases: " +
		t.dbs.describe(false) + "."
}

func (t *queryTool) Schema() *jsonschema.Schema { return t.schema() }

func (t *queryTool) Effect(json.RawMessage) approval.Effect { return approval.EffectRead }

func (t *queryTool) check(raw json.RawMessage) (call, error) {
	k, err := t.parse(raw)
	if err != nil {
		return k, err
	}
	if k.c.Class != ClassRead {
		why := say(words.SQLNotRead)
		if k.c.Class == ClassRefused {
			why = plain(k.c.Reason)
		}
		return k, refusing(say(words.SQLQueryRefused, why))
	}
	return k, nil
}

// Check says why Run would refuse the call, or nil (agent.Checker): it
// only reads the statement, never the database.
func (t *queryTool) Check(raw json.RawMessage) error {
	_, err := t.check(raw)
	return err
}

// Preview says what will run; it does not touch the database.
func (t *queryTool) Preview(ctx context.Context, raw json.RawMessage) (string, error) {
	w, err := t.PreviewWords(ctx, raw)
	return w.EN, err
}

// PreviewWords is Preview in both languages (agent.WordsPreviewer):
// "SELECT … — read-only query in demo", "SELECT … — 在 demo 中只读查询".
func (t *queryTool) PreviewWords(_ context.Context, raw json.RawMessage) (approval.Words, error) {
	k, err := t.check(raw)
	if err != nil {
		return approval.Words{}, err
	}
	return approval.Say(words.SQLReadOnly, k.c.Statement, k.db.name), nil
}

// Explain says what a call does, for its approver (agent.Explainer).
func (t *queryTool) Explain() approval.Words { return approval.Say(words.AboutSQLQuery) }

func (t *queryTool) Run(ctx context.Context, raw json.RawMessage) (agent.Output, error) {
	k, err := t.check(raw)
	if err != nil {
		return outcome(ctx, err)
	}
	e := k.db
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	var cols []string
	var rows [][]string
	more := false
	err = e.read(ctx, func(tx *sql.Tx) error {
		r, err := tx.QueryContext(ctx, k.c.Statement)
		if err != nil {
			return err
		}
		defer r.Close()
		if cols, err = r.Columns(); err != nil {
			return err
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for r.Next() {
			if len(rows) == e.maxRows {
				more = true
				break
			}
			if err := r.Scan(ptrs...); err != nil {
				return err
			}
			row := make([]string, len(cols))
			for i, v := range vals {
				row[i] = formatValue(v)
			}
			rows = append(rows, row)
		}
		if err := r.Err(); err != nil {
			return err
		}
		return r.Close()
	})
	if err != nil {
		return agent.Output{Content: words.Text(words.LangOf(ctx), words.SQLQueryFailed, e.name, e.dbError(ctx, err)), IsError: true}, nil
	}
	return agent.Output{Content: renderTable(words.LangOf(ctx), cols, rows, more)}, nil
}

// read runs fn in a transaction that the database refuses to change
// anything in, and rolls it back:
//
//   - PostgreSQL: BEGIN … READ ONLY.
//   - MySQL/MariaDB: SET SESSION TRANSACTION READ ONLY, then START
//     TRANSACTION READ ONLY, on a dedicated connection, reset to READ WRITE
//     afterwards. The session setting is needed because DDL is not
//     transactional: START TRANSACTION READ ONLY alone lets a DROP TABLE
//     through (it commits the transaction implicitly and then runs).
//   - SQLite: modernc.org/sqlite ignores TxOptions.ReadOnly (it sends a
//     plain BEGIN), so PRAGMA query_only = 1 on a dedicated connection,
//     reset to 0 afterwards.
//
// A connection whose reset fails is closed instead of going back to the
// pool.
func (e *database) read(ctx context.Context, fn func(*sql.Tx) error) error {
	conn, release, err := e.conn(ctx)
	if err != nil {
		return err
	}
	defer release()
	var on, off string
	switch e.dialect {
	case dialectSQLite:
		on, off = "PRAGMA query_only = 1", "PRAGMA query_only = 0"
	case dialectMySQL:
		on, off = "SET SESSION TRANSACTION READ ONLY", "SET SESSION TRANSACTION READ WRITE"
	}
	if on != "" {
		if _, err := conn.ExecContext(ctx, on); err != nil {
			discard(conn)
			return err
		}
		defer func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if _, err := conn.ExecContext(rctx, off); err != nil {
				discard(conn)
			}
		}()
	}
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return fn(tx)
}

// conn returns a dedicated connection and the function that gives it back.
// On MySQL the connection's statement is killed on the server when ctx ends
// before release: go-sql-driver only closes its socket, and the server
// would go on running the statement (and holding its locks) for as long as
// it takes. PostgreSQL (pgx sends a cancel request) and SQLite (interrupted
// in process) stop by themselves.
func (e *database) conn(ctx context.Context) (*sql.Conn, func(), error) {
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	if e.dialect != dialectMySQL {
		return conn, func() { conn.Close() }, nil
	}
	var id uint64
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		discard(conn)
		conn.Close()
		return nil, nil, err
	}
	stop := context.AfterFunc(ctx, func() { e.killQuery(id) })
	return conn, func() {
		stop()
		conn.Close()
	}, nil
}

// killQuery stops whatever MySQL connection id is running, through a
// connection of its own (the pool may be exhausted, or limited to the very
// connection that is busy).
func (e *database) killQuery(id uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stmt := fmt.Sprintf("KILL QUERY %d", id)
	if e.killer == nil {
		_, _ = e.db.ExecContext(ctx, stmt)
		return
	}
	c, err := e.killer.Connect(ctx)
	if err != nil {
		return
	}
	defer c.Close()
	if x, ok := c.(driver.ExecerContext); ok {
		_, _ = x.ExecContext(ctx, stmt, nil)
	}
}

// discard makes conn.Close close the connection instead of pooling it.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
}

// count returns the number of rows of a table named as written in a
// statement (an identifier, possibly qualified and quoted: never a value).
func (e *database) count(ctx context.Context, table string) (int64, error) {
	var n int64
	err := e.read(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&n)
	})
	return n, err
}

// ---- sql_execute

type executeTool struct{ tool }

func (t *executeTool) Name() string { return "sql_execute" }

func (t *executeTool) Description() string {
	return "Run one SQL statement that changes data or schema (INSERT, UPDATE, DELETE, CREATE, ALTER, DROP, " +
		"TRUNCATE, …) in a transaction and commit it. A person approves it first, seeing the statement and " +
		"how many rows it affects. Not for reading: use sql_query. Databases: " + t.dbs.describe(true) + "."
}

func (t *executeTool) Schema() *jsonschema.Schema { return t.schema() }

// Effect is the statement's class; arguments that cannot be read, and
// statements Run would refuse (reads included), are destructive so that
// nothing runs without a person by mistake.
func (t *executeTool) Effect(raw json.RawMessage) approval.Effect {
	k, err := t.check(raw)
	if err != nil {
		return approval.EffectDestructive
	}
	return k.c.Effect()
}

func (t *executeTool) check(raw json.RawMessage) (call, error) {
	k, err := t.parse(raw)
	if err != nil {
		return k, err
	}
	switch k.c.Class {
	case ClassRead:
		return k, refusing(say(words.SQLExecuteRead))
	case ClassRefused:
		return k, refusing(say(words.SQLExecuteRefused, k.c.Reason))
	}
	return k, nil
}

// Check says why Run would refuse the call, or nil (agent.Checker): it
// only reads the statement, never the database.
func (t *executeTool) Check(raw json.RawMessage) error {
	_, err := t.check(raw)
	return err
}

// Preview returns the statement verbatim, the database and the blast radius:
// "DELETE FROM orders WHERE status = 'cancelled' — affects 7 rows in demo".
// It never changes anything: INSERT, UPDATE and DELETE (and, on SQLite and
// PostgreSQL, DDL) run in a transaction that is rolled back; on MySQL, DDL
// is never run (it commits by itself) and DML only when every table it
// names is InnoDB without triggers. A statement that fails its dry run, or
// is refused, is an error.
func (t *executeTool) Preview(ctx context.Context, raw json.RawMessage) (string, error) {
	p, _, err := t.measure(ctx, raw)
	return p.EN, err
}

// PreviewWords is Preview in both languages (agent.WordsPreviewer): "… —
// affects 7 rows in demo", "… — 影响 demo 中的 7 行".
func (t *executeTool) PreviewWords(ctx context.Context, raw json.RawMessage) (approval.Words, error) {
	p, _, err := t.measure(ctx, raw)
	return p, err
}

// Explain says what a call does, for its approver (agent.Explainer).
func (t *executeTool) Explain() approval.Words { return approval.Say(words.AboutSQLExecute) }

// Assess is Preview together with what the policy needs of the same dry
// run (agent.Assessor): the rows the statement affects, and why it is HIGH
// whatever its rows (any DDL, UPDATE or DELETE without WHERE, see
// Classification.High; a dry run that timed out). It never fails: what it
// cannot measure stays unmeasured, and the preview says why.
func (t *executeTool) Assess(ctx context.Context, raw json.RawMessage) (approval.Blast, approval.Words) {
	p, b, err := t.measure(ctx, raw)
	var r *refusal
	switch {
	case errors.As(err, &r):
		return b, each(say(words.AgentNoPreview, r.why))
	case err != nil:
		return b, approval.Say(words.AgentNoPreview, err.Error())
	}
	return b, p
}

// measure dry-runs the call: its preview, and its blast radius for the
// policy. The Blast holds what the statement's text says even when err is
// not nil.
func (t *executeTool) measure(ctx context.Context, raw json.RawMessage) (approval.Words, approval.Blast, error) {
	k, err := t.check(raw)
	if err != nil {
		return approval.Words{}, approval.Blast{}, err
	}
	b := approval.Blast{High: k.c.High}
	e := k.db
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	r, err := e.blastRadius(ctx, k.c)
	switch {
	case err != nil && timedOut(ctx, err):
		// Say so rather than fail: a person may still approve a change
		// too big to dry-run in time, knowing its size is unknown; it is
		// HIGH, as a change that size may well be.
		r = radius{effect: say(words.SQLRadiusUnknown, e.name), note: say(words.SQLNoteTimeout, e.timeout.String())}
		if b.High.IsZero() {
			b.High = approval.Say(words.SQLDryRunTimeout, e.timeout.String())
		}
	case err != nil:
		return approval.Words{}, b, refusing(say(words.SQLDryRunFailed, e.name, e.dbError(ctx, err)))
	}
	b.Rows, b.Measured, b.AtMost = r.rows, r.measured, r.atMost
	p := each(func(l words.Lang) string {
		if r.note == nil {
			return words.Text(l, words.SQLPreview, k.c.Statement, r.effect(l))
		}
		return words.Text(l, words.SQLPreviewNote, k.c.Statement, r.effect(l), r.note(l))
	})
	return p, b, nil
}

// phrase is a part of a preview said in one language.
type phrase func(words.Lang) string

// say is the catalogue's sentence k, in the language asked for, with args
// formatted in; an argument that is itself a phrase is said in that
// language too.
func say(k words.Key, args ...any) phrase {
	return func(l words.Lang) string {
		as := make([]any, len(args))
		for i, a := range args {
			if p, ok := a.(phrase); ok {
				a = p(l)
			}
			as[i] = a
		}
		return words.Text(l, k, as...)
	}
}

// each says p in every language of the catalogue a card can show.
func each(p phrase) approval.Words {
	return approval.Words{EN: p(words.EN), ZH: p(words.ZH)}
}

// rowsOf is "1 row" or "n rows", in each language.
func rowsOf(n int64) phrase {
	if n == 1 {
		return say(words.SQLRow)
	}
	return say(words.SQLRows, n)
}

// list joins phrases with each language's list separator.
func list(ps []phrase) phrase {
	return func(l words.Lang) string {
		parts := make([]string, len(ps))
		for i, p := range ps {
			parts[i] = p(l)
		}
		return strings.Join(parts, words.Text(l, words.SQLListSep))
	}
}

var _ agent.Assessor = (*executeTool)(nil)

var (
	_ agent.Checker = (*queryTool)(nil)
	_ agent.Checker = (*executeTool)(nil)
)

var dmlVerbs = set("INSERT", "UPDATE", "DELETE", "REPLACE", "MERGE")

// radius is what blastRadius found: the effect in words ("affects 7
// rows in demo"), a note on how it was found (nil: none), and the rows
// affected when measured (atMost: an upper bound, counted because the
// statement could not be dry-run).
type radius struct {
	effect, note     phrase
	rows             int64
	measured, atMost bool
}

// blastRadius finds what the statement would do without changing anything.
func (e *database) blastRadius(ctx context.Context, c Classification) (radius, error) {
	mysql := e.dialect == dialectMySQL
	mysqlDDL := say(words.SQLNoteMySQLDDL)
	switch {
	case dmlVerbs[c.Verb]:
		if mysql {
			why, err := e.mysqlNoDryRun(ctx, c)
			if err != nil {
				return radius{}, err
			}
			if why != "" {
				r := radius{effect: say(words.SQLWouldRun, c.Verb, e.name), note: say(words.SQLNoteNotDryRun, why)}
				if (c.Verb == "DELETE" || c.Verb == "UPDATE") && len(c.targets) == 1 {
					if n, err := e.count(ctx, c.targets[0]); err == nil {
						r.effect = say(words.SQLAffectsAtMost, rowsOf(n), c.targets[0], e.name)
						r.rows, r.measured, r.atMost = n, true, true
					}
				}
				return r, nil
			}
		}
		n, err := e.dryRun(ctx, c.Statement)
		if err != nil {
			return radius{}, err
		}
		return radius{effect: say(words.SQLAffects, rowsOf(n), e.name), rows: n, measured: true}, nil
	case c.Verb == "DROP TABLE" || c.Verb == "TRUNCATE":
		parts := make([]phrase, 0, len(c.targets))
		for _, tb := range c.targets {
			n, err := e.count(ctx, tb)
			switch {
			case err == nil:
				parts = append(parts, say(words.SQLTableRows, tb, rowsOf(n)))
			case c.ifExists:
				parts = append(parts, say(words.SQLTableUncounted, tb, e.dbError(ctx, err)))
			default:
				return radius{}, err
			}
		}
		what := words.SQLWouldDrop
		switch {
		case c.Verb == "TRUNCATE" && len(parts) == 1:
			what = words.SQLWouldEmpty
		case c.Verb == "TRUNCATE":
			what = words.SQLWouldEmptyMany
		case len(parts) != 1:
			what = words.SQLWouldDropMany
		}
		effect := say(what, list(parts), e.name)
		if mysql {
			return radius{effect: effect, note: mysqlDDL}, nil
		}
		if _, err := e.dryRun(ctx, c.Statement); err != nil {
			return radius{}, err
		}
		return radius{effect: effect}, nil
	case c.Verb == "CALL" || c.Verb == "DO":
		return radius{effect: say(words.SQLWouldRun, c.Verb, e.name), note: say(words.SQLNoteProcedure)}, nil
	case mysql:
		return radius{effect: say(words.SQLWouldRun, c.Verb, e.name), note: mysqlDDL}, nil
	}
	if _, err := e.dryRun(ctx, c.Statement); err != nil {
		return radius{}, err
	}
	return radius{effect: say(words.SQLWouldRun, c.Verb, e.name), note: say(words.SQLNoteRolledBack)}, nil
}

// dryRun executes the statement in a transaction and rolls it back,
// returning the rows it affected.
func (e *database) dryRun(ctx context.Context, stmt string) (int64, error) {
	conn, release, err := e.conn(ctx)
	if err != nil {
		return 0, err
	}
	defer release()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, stmt)
	if rerr := tx.Rollback(); err == nil && rerr != nil {
		return 0, fmt.Errorf("rolling back the dry run: %w", rerr)
	}
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// maxCheckedNames bounds the identifiers mysqlNoDryRun looks up.
const maxCheckedNames = 200

// mysqlNoDryRun says why a MySQL DML statement must not be dry-run, or "".
// A rollback undoes only what InnoDB stored: a MyISAM or Aria table, a
// sequence, or whatever a trigger or stored routine touches may keep the
// change. So every name in the statement that is a table in the current
// schema (or a schema the statement names) must be an InnoDB base table
// without triggers, and none may be a stored routine.
func (e *database) mysqlNoDryRun(ctx context.Context, c Classification) (string, error) {
	names := c.names
	if len(names) > maxCheckedNames {
		return "the statement names too many objects to check", nil
	}
	ph := strings.TrimSuffix(strings.Repeat("?,", len(names)), ",")
	args := make([]any, 0, 2*len(names))
	for range 2 {
		for _, n := range names {
			args = append(args, n)
		}
	}
	in := func(schemaCol, nameCol string) string {
		return "(" + schemaCol + " = DATABASE() OR LOWER(" + schemaCol + ") IN (" + ph + ")) AND LOWER(" + nameCol + ") IN (" + ph + ")"
	}
	rows, err := e.db.QueryContext(ctx, "SELECT TABLE_NAME, TABLE_TYPE, COALESCE(ENGINE, '') FROM information_schema.TABLES WHERE "+
		in("TABLE_SCHEMA", "TABLE_NAME"), args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	why := ""
	for rows.Next() {
		var name, typ, engine string
		if err := rows.Scan(&name, &typ, &engine); err != nil {
			return "", err
		}
		switch {
		case why != "":
		case !strings.EqualFold(typ, "BASE TABLE"):
			why = fmt.Sprintf("%s is a %s", name, strings.ToLower(typ))
		case !strings.EqualFold(engine, "InnoDB"):
			why = fmt.Sprintf("table %s uses the %s engine, which cannot roll back", name, engine)
		}
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	if why != "" {
		return why, nil
	}
	var name string
	err = e.db.QueryRowContext(ctx, "SELECT EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS WHERE "+
		in("EVENT_OBJECT_SCHEMA", "EVENT_OBJECT_TABLE")+" LIMIT 1", args...).Scan(&name)
	switch {
	case err == nil:
		return fmt.Sprintf("table %s has triggers", name), nil
	case !errors.Is(err, sql.ErrNoRows):
		return "", err
	}
	err = e.db.QueryRowContext(ctx, "SELECT ROUTINE_NAME FROM information_schema.ROUTINES WHERE "+
		in("ROUTINE_SCHEMA", "ROUTINE_NAME")+" LIMIT 1", args...).Scan(&name)
	switch {
	case err == nil:
		return fmt.Sprintf("it may call the stored routine %s", name), nil
	case !errors.Is(err, sql.ErrNoRows):
		return "", err
	}
	return "", nil
}

// Run executes the statement in a transaction and commits it. A statement
// the database rejects is an Output with IsError (nothing was committed);
// a failed COMMIT is a Go error, because then nobody knows whether the
// change took effect.
func (t *executeTool) Run(ctx context.Context, raw json.RawMessage) (agent.Output, error) {
	k, err := t.check(raw)
	if err != nil {
		return outcome(ctx, err)
	}
	e := k.db
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	conn, release, err := e.conn(ctx)
	if err != nil {
		return agent.Output{Content: words.Text(words.LangOf(ctx), words.SQLNoConnect, e.name, e.dbError(ctx, err)), IsError: true}, nil
	}
	defer release()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return agent.Output{Content: words.Text(words.LangOf(ctx), words.SQLNoTransaction, e.name, e.dbError(ctx, err)), IsError: true}, nil
	}
	res, err := tx.ExecContext(ctx, k.c.Statement)
	if err != nil {
		_ = tx.Rollback()
		msg := words.Text(words.LangOf(ctx), words.SQLFailed, k.c.Verb, e.name, e.dbError(ctx, err))
		if e.dialect == dialectMySQL {
			// DDL is not transactional, and a MyISAM table keeps what a
			// failed statement wrote before the failure.
			msg = words.Text(words.LangOf(ctx), words.SQLFailedRollback, k.c.Verb, e.name, e.dbError(ctx, err))
		}
		return agent.Output{Content: msg, IsError: true}, nil
	}
	n, rerr := res.RowsAffected()
	if err := tx.Commit(); err != nil {
		return agent.Output{}, fmt.Errorf("sql_execute on %s: COMMIT failed, the effect of %s is unknown: %s", e.name, k.c.Verb, e.dbError(ctx, err))
	}
	if rerr != nil || !dmlVerbs[k.c.Verb] && n == 0 {
		return agent.Output{Content: words.Text(words.LangOf(ctx), words.SQLDone, k.c.Verb, e.name)}, nil
	}
	return agent.Output{Content: say(words.SQLDoneRows, k.c.Verb, e.name, rowsOf(n))(words.LangOf(ctx))}, nil
}
