package sqltool

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// This file is a small database/sql driver over a pgx connection, used for
// PostgreSQL instead of github.com/jackc/pgx/v5/stdlib: that package imports
// pgxpool and so github.com/jackc/puddle/v2, which this module's go.sum does
// not list. It does only what the SQL tools need, and one thing on purpose
// differently from stdlib: a statement without arguments runs through the
// extended protocol (pgx switches Exec to the simple protocol, which accepts
// several statements separated by ';'), so the server itself refuses a
// second statement.

// openPostgres returns a *sql.DB for the pgx connection string dsn.
func openPostgres(dsn string) (*sql.DB, *pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, nil, err
	}
	// Describe every statement, prepare none: the SQL comes from a model,
	// and caching a prepared statement per distinct text only grows the
	// server's memory.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeDescribeExec
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "hitlbot"
	}
	return sql.OpenDB(&pgConnector{cfg: cfg}), cfg, nil
}

type pgConnector struct{ cfg *pgx.ConnConfig }

func (c *pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, c.cfg.Copy())
	if err != nil {
		return nil, err
	}
	return &pgConn{conn: conn}, nil
}

func (c *pgConnector) Driver() driver.Driver { return pgDriver{} }

// pgDriver opens connections from a DSN; database/sql calls it only through
// a connector, so Open is here to satisfy the interface.
type pgDriver struct{}

func (pgDriver) Open(dsn string) (driver.Conn, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	return (&pgConnector{cfg: cfg}).Connect(context.Background())
}

type pgConn struct {
	conn *pgx.Conn
}

var (
	_ driver.ConnBeginTx                    = (*pgConn)(nil)
	_ driver.QueryerContext                 = (*pgConn)(nil)
	_ driver.ExecerContext                  = (*pgConn)(nil)
	_ driver.Pinger                         = (*pgConn)(nil)
	_ driver.SessionResetter                = (*pgConn)(nil)
	_ driver.Validator                      = (*pgConn)(nil)
	_ driver.NamedValueChecker              = (*pgConn)(nil)
	_ driver.StmtQueryContext               = (*pgStmt)(nil)
	_ driver.StmtExecContext                = (*pgStmt)(nil)
	_ driver.RowsColumnTypeDatabaseTypeName = (*pgRows)(nil)
)

func (c *pgConn) Prepare(query string) (driver.Stmt, error) { return &pgStmt{c: c, query: query}, nil }

func (c *pgConn) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.conn.Close(ctx)
}

func (c *pgConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *pgConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	var o pgx.TxOptions
	switch sql.IsolationLevel(opts.Isolation) {
	case sql.LevelDefault:
	case sql.LevelReadUncommitted:
		o.IsoLevel = pgx.ReadUncommitted
	case sql.LevelReadCommitted:
		o.IsoLevel = pgx.ReadCommitted
	case sql.LevelRepeatableRead, sql.LevelSnapshot:
		o.IsoLevel = pgx.RepeatableRead
	case sql.LevelSerializable:
		o.IsoLevel = pgx.Serializable
	default:
		return nil, fmt.Errorf("isolation level %v is not supported", sql.IsolationLevel(opts.Isolation))
	}
	if opts.ReadOnly {
		o.AccessMode = pgx.ReadOnly // BEGIN … READ ONLY: the server refuses every change
	}
	tx, err := c.conn.BeginTx(ctx, o)
	if err != nil {
		return nil, err
	}
	return pgTx{tx}, nil
}

type pgTx struct{ tx pgx.Tx }

// Commit reports pgx.ErrTxCommitRollback when the server answered COMMIT
// with ROLLBACK (the transaction had failed).
func (t pgTx) Commit() error   { return t.tx.Commit(context.Background()) }
func (t pgTx) Rollback() error { return t.tx.Rollback(context.Background()) }

func values(args []driver.NamedValue) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a.Value
	}
	return out
}

func (c *pgConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := c.conn.Query(ctx, query, values(args)...)
	if err != nil {
		return nil, err
	}
	return &pgRows{rows: rows, conn: c.conn}, nil
}

func (c *pgConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	var tag pgconn.CommandTag
	var err error
	if len(args) == 0 {
		tag, err = c.conn.PgConn().ExecParams(ctx, query, nil, nil, nil, nil).Close()
	} else {
		tag, err = c.conn.Exec(ctx, query, values(args)...)
	}
	if err != nil {
		return nil, err
	}
	return driver.RowsAffected(tag.RowsAffected()), nil
}

func (c *pgConn) Ping(ctx context.Context) error {
	if err := c.conn.Ping(ctx); err != nil {
		return driver.ErrBadConn
	}
	return nil
}

// ResetSession drops a connection that is closed or still in a transaction.
func (c *pgConn) ResetSession(context.Context) error {
	if !c.IsValid() {
		return driver.ErrBadConn
	}
	return nil
}

func (c *pgConn) IsValid() bool {
	return !c.conn.IsClosed() && c.conn.PgConn().TxStatus() == 'I'
}

// CheckNamedValue passes every argument to pgx, which knows more types than
// database/sql's defaults.
func (c *pgConn) CheckNamedValue(*driver.NamedValue) error { return nil }

type pgStmt struct {
	c     *pgConn
	query string
}

func (s *pgStmt) Close() error  { return nil }
func (s *pgStmt) NumInput() int { return -1 }

func (s *pgStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

func (s *pgStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

func (s *pgStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.c.ExecContext(ctx, s.query, args)
}

func (s *pgStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.c.QueryContext(ctx, s.query, args)
}

func named(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, a := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return out
}

type pgRows struct {
	rows pgx.Rows
	conn *pgx.Conn
	cols []string
}

func (r *pgRows) Columns() []string {
	if r.cols == nil {
		fds := r.rows.FieldDescriptions()
		r.cols = make([]string, len(fds))
		for i, fd := range fds {
			r.cols[i] = fd.Name
		}
	}
	return r.cols
}

func (r *pgRows) ColumnTypeDatabaseTypeName(i int) string {
	fds := r.rows.FieldDescriptions()
	if i < 0 || i >= len(fds) {
		return ""
	}
	if t, ok := r.conn.TypeMap().TypeForOID(fds[i].DataTypeOID); ok {
		return t.Name
	}
	return ""
}

func (r *pgRows) Close() error {
	r.rows.Close()
	return nil
}

func (r *pgRows) Next(dest []driver.Value) error {
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return io.EOF
	}
	vals, err := r.rows.Values()
	if err != nil {
		return err
	}
	for i := range dest {
		if i < len(vals) {
			dest[i] = pgValue(vals[i])
		}
	}
	return nil
}

// pgValue turns what pgx decoded into a database/sql driver value: int64,
// float64, bool, []byte, string, time.Time or nil.
func pgValue(v any) driver.Value {
	switch x := v.(type) {
	case nil, int64, float64, bool, []byte, string, time.Time:
		return x
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int:
		return int64(x)
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case float32:
		return float64(x)
	case [16]byte: // uuid
		h := hex.EncodeToString(x[:])
		return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	case driver.Valuer:
		dv, err := x.Value()
		if _, again := dv.(driver.Valuer); err != nil || again {
			return fmt.Sprint(v)
		}
		return pgValue(dv)
	case fmt.Stringer:
		return x.String()
	case map[string]any, []any:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
	}
	return fmt.Sprint(v)
}
