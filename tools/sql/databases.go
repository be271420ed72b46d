package sqltool

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/go-sql-driver/mysql"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Defaults of DatabaseConfig.
const (
	DefaultMaxRows      = 100
	DefaultQueryTimeout = 10 * time.Second
)

// DatabaseConfig describes one database the SQL tools may use (YAML:
// tools.sql.databases[]).
type DatabaseConfig struct {
	// Name is how the model and the approval cards name the database (the
	// tools' "database" argument). Required, unique, no white space.
	Name string `json:"name" mapstructure:"name"`
	// Driver is "sqlite" (modernc.org/sqlite), "postgres" (pgx) or "mysql"
	// (go-sql-driver/mysql, also for MariaDB). "sqlite3", "postgresql" and
	// "mariadb" are accepted as aliases.
	Driver string `json:"driver" mapstructure:"driver"`
	// DSN is the driver's connection string: a file name or file: URI for
	// SQLite, postgres://user:pass@host:5432/db?sslmode=… for PostgreSQL,
	// user:pass@tcp(host:3306)/db for MySQL. It is a secret: in production
	// take it from the environment or a file, not the YAML. It is never
	// logged, printed or shown to the model; errors that quote it or its
	// password are redacted.
	DSN string `json:"dsn" mapstructure:"dsn"`
	// MaxRows is the most rows sql_query shows; it says when there are
	// more. 0 means DefaultMaxRows (100).
	MaxRows int `json:"max_rows" mapstructure:"max_rows"`
	// QueryTimeout bounds each statement, each preview (dry run) and each
	// run. 0 means DefaultQueryTimeout (10s).
	QueryTimeout time.Duration `json:"query_timeout" mapstructure:"query_timeout"`
	// ReadOnly offers the database to sql_query only: sql_execute refuses it.
	ReadOnly bool `json:"read_only" mapstructure:"read_only"`
}

// String describes the configuration without the DSN.
func (c DatabaseConfig) String() string {
	return fmt.Sprintf("{Name:%s Driver:%s DSN:[redacted] MaxRows:%d QueryTimeout:%s ReadOnly:%t}",
		c.Name, c.Driver, c.MaxRows, c.QueryTimeout, c.ReadOnly)
}

// GoString is String, so that %#v does not print the DSN either.
func (c DatabaseConfig) GoString() string { return "sqltool.DatabaseConfig" + c.String() }

// LogValue logs the configuration without the DSN.
func (c DatabaseConfig) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", c.Name), slog.String("driver", c.Driver),
		slog.Int("max_rows", c.MaxRows), slog.Duration("query_timeout", c.QueryTimeout),
		slog.Bool("read_only", c.ReadOnly))
}

// Databases holds the open databases by name. The zero value is empty and
// ready to use; it is safe for concurrent use. Add every database before
// building the tools' schemas (agent.Registry.Register), which list the names.
type Databases struct {
	mu  sync.RWMutex
	dbs []*database
}

// database is one named database.
type database struct {
	name     string
	driver   string // normalised: sqlite, postgres, mysql
	dialect  dialect
	db       *sql.DB
	maxRows  int
	timeout  time.Duration
	readOnly bool
	owned    bool     // opened by Open, closed by Close
	secrets  []string // redacted from every message
	// killer opens a connection outside the pool to send KILL QUERY
	// (MySQL databases opened by Open; nil otherwise).
	killer driver.Connector
}

// Open opens and pings every configured database (without holding the lock
// that tool calls need). On an error nothing is added and what was opened
// is closed again; the error names the database, never its DSN.
func (d *Databases) Open(ctx context.Context, cfgs []DatabaseConfig) error {
	seen := map[string]bool{}
	for _, n := range d.Names() {
		seen[n] = true
	}
	for i, c := range cfgs {
		if err := checkName(c.Name); err != nil {
			return fmt.Errorf("sql database #%d: %w", i+1, err)
		}
		if seen[c.Name] {
			return fmt.Errorf("sql database %q is configured twice", c.Name)
		}
		seen[c.Name] = true
		if _, ok := dialectOf(c.Driver); !ok {
			return fmt.Errorf("sql database %q: unknown driver %q (want sqlite, postgres or mysql)", c.Name, c.Driver)
		}
		if strings.TrimSpace(c.DSN) == "" {
			return fmt.Errorf("sql database %q: the DSN is empty", c.Name)
		}
		if c.MaxRows < 0 || c.QueryTimeout < 0 {
			return fmt.Errorf("sql database %q: max_rows and query_timeout must not be negative", c.Name)
		}
	}
	var opened []*database
	for _, c := range cfgs {
		e, err := open(ctx, c)
		if err != nil {
			for _, o := range opened {
				o.db.Close()
			}
			return err
		}
		opened = append(opened, e)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range d.dbs {
		if slices.ContainsFunc(opened, func(o *database) bool { return o.name == e.name }) {
			// added by a concurrent Open or OpenDB since the check above
			for _, o := range opened {
				o.db.Close()
			}
			return fmt.Errorf("sql database %q is configured twice", e.name)
		}
	}
	d.dbs = append(d.dbs, opened...)
	return nil
}

func checkName(name string) error {
	if name == "" {
		return errors.New("the name is empty")
	}
	if strings.ContainsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return fmt.Errorf("the name %q contains white space or control characters", name)
	}
	return nil
}

// open opens and pings one database.
func open(ctx context.Context, c DatabaseConfig) (*database, error) {
	dia, _ := dialectOf(c.Driver)
	e := &database{name: c.Name, dialect: dia, maxRows: c.MaxRows, timeout: c.QueryTimeout,
		readOnly: c.ReadOnly, owned: true, secrets: []string{c.DSN}}
	e.defaults()
	var err error
	switch dia {
	case dialectSQLite:
		e.db, err = sql.Open("sqlite", c.DSN)
	case dialectPostgres:
		db, cfg, perr := openPostgres(c.DSN)
		if cfg != nil {
			e.secret(cfg.Password)
		}
		e.db, err = db, perr
	case dialectMySQL:
		cfg, perr := mysql.ParseDSN(c.DSN)
		if perr != nil {
			err = perr
			break
		}
		e.secret(cfg.Passwd)
		// One statement per call, whatever the DSN says: a second one
		// would run outside the classifier's verdict.
		cfg.MultiStatements = false
		if cfg.Timeout == 0 {
			cfg.Timeout = 10 * time.Second
		}
		var conn driver.Connector
		if conn, err = mysql.NewConnector(cfg); err == nil {
			e.db, e.killer = sql.OpenDB(conn), conn
		}
	}
	if err != nil {
		return nil, fmt.Errorf("sql database %q: %s", c.Name, e.redact(err.Error()))
	}
	pctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	if err := e.db.PingContext(pctx); err != nil {
		e.db.Close()
		return nil, fmt.Errorf("sql database %q: cannot connect: %s", c.Name, e.redact(err.Error()))
	}
	return e, nil
}

func (e *database) defaults() {
	e.driver = [...]string{dialectSQLite: "sqlite", dialectPostgres: "postgres", dialectMySQL: "mysql"}[e.dialect]
	if e.maxRows == 0 {
		e.maxRows = DefaultMaxRows
	}
	if e.timeout == 0 {
		e.timeout = DefaultQueryTimeout
	}
}

// secret adds s to what redact hides, unless it is too short to matter
// (and replacing it would garble messages).
func (e *database) secret(s string) {
	if len(s) >= 4 {
		e.secrets = append(e.secrets, s)
	}
}

// redact hides the DSN and the password in a message.
func (e *database) redact(msg string) string {
	for _, s := range e.secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "[redacted]")
		}
	}
	return msg
}

// OpenDB adds a database opened elsewhere (the demo database) under name,
// with the default row cap and timeout. Close leaves it open: it belongs to
// the caller.
func (d *Databases) OpenDB(name, driver string, db *sql.DB) error {
	if err := checkName(name); err != nil {
		return fmt.Errorf("sql database: %w", err)
	}
	dia, ok := dialectOf(driver)
	if !ok {
		return fmt.Errorf("sql database %q: unknown driver %q (want sqlite, postgres or mysql)", name, driver)
	}
	if db == nil {
		return fmt.Errorf("sql database %q: no *sql.DB", name)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range d.dbs {
		if e.name == name {
			return fmt.Errorf("sql database %q is configured twice", name)
		}
	}
	e := &database{name: name, dialect: dia, db: db}
	e.defaults()
	d.dbs = append(d.dbs, e)
	return nil
}

// Close closes the databases Open opened and forgets all of them.
func (d *Databases) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, e := range d.dbs {
		if e.owned {
			if err := e.db.Close(); err != nil {
				errs = append(errs, fmt.Errorf("sql database %q: %s", e.name, e.redact(err.Error())))
			}
		}
	}
	d.dbs = nil
	return errors.Join(errs...)
}

// Names returns the database names in the order they were added.
func (d *Databases) Names() []string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	out := make([]string, len(d.dbs))
	for i, e := range d.dbs {
		out[i] = e.name
	}
	return out
}

// Default returns the name of the first database, or "" when there is none.
func (d *Databases) Default() string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if len(d.dbs) == 0 {
		return ""
	}
	return d.dbs[0].name
}

// defaultWritable returns the first database that is not read-only.
func (d *Databases) defaultWritable() string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	for _, e := range d.dbs {
		if !e.readOnly {
			return e.name
		}
	}
	return ""
}

// DB returns the named database's *sql.DB and driver name (sqlite, postgres
// or mysql).
func (d *Databases) DB(name string) (db *sql.DB, driver string, ok bool) {
	e, ok := d.get(name)
	if !ok {
		return nil, "", false
	}
	return e.db, e.driver, true
}

func (d *Databases) get(name string) (*database, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	for _, e := range d.dbs {
		if e.name == name {
			return e, true
		}
	}
	return nil, false
}

// describe lists the databases for a tool description: "demo (sqlite),
// shop (postgres, read-only)".
func (d *Databases) describe(writableOnly bool) string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	var parts []string
	for _, e := range d.dbs {
		if writableOnly && e.readOnly {
			continue
		}
		s := e.name + " (" + e.driver
		if e.readOnly {
			s += ", read-only"
		}
		parts = append(parts, s+")")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// names returns the names, optionally only the writable ones.
func (d *Databases) names(writableOnly bool) []string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	var out []string
	for _, e := range d.dbs {
		if !writableOnly || !e.readOnly {
			out = append(out, e.name)
		}
	}
	return out
}
