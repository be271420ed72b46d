package sqltool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const secretPassword = "s3cret-Passw0rd"

// badConfigs are rejected by Open; none of the errors may show a DSN.
var badConfigs = []struct {
	cfgs []DatabaseConfig
	want string
}{
	{[]DatabaseConfig{{Name: "", Driver: "sqlite", DSN: "x.db"}}, "name is empty"},
	{[]DatabaseConfig{{Name: "a b", Driver: "sqlite", DSN: "x.db"}}, "white space"},
	{[]DatabaseConfig{{Name: "a", Driver: "oracle", DSN: "x.db"}}, "unknown driver"},
	{[]DatabaseConfig{{Name: "a", Driver: "sqlite", DSN: " "}}, "DSN is empty"},
	{[]DatabaseConfig{{Name: "a", Driver: "sqlite", DSN: "x.db"}, {Name: "a", Driver: "sqlite", DSN: "y.db"}}, "twice"},
	{[]DatabaseConfig{{Name: "a", Driver: "sqlite", DSN: "x.db", MaxRows: -1}}, "negative"},
	{[]DatabaseConfig{{Name: "pg", Driver: "postgres", DSN: "postgres://bob:" + secretPassword + "@127.0.0.1:1/x?sslmode=disable&connect_timeout=1"}}, "cannot connect"},
	{[]DatabaseConfig{{Name: "my", Driver: "mysql", DSN: "bob:" + secretPassword + "@tcp(127.0.0.1:1)/x?timeout=1s"}}, "cannot connect"},
	{[]DatabaseConfig{{Name: "my", Driver: "mysql", DSN: "bob:" + secretPassword + "@nonsense"}}, "sql database \"my\""},
	{[]DatabaseConfig{{Name: "pg", Driver: "postgres", DSN: "postgres://bob:" + secretPassword + "@127.0.0.1:99999999/x"}}, "sql database \"pg\""},
}

func TestOpenRejects(t *testing.T) {
	for _, tc := range badConfigs {
		var dbs Databases
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := dbs.Open(ctx, tc.cfgs)
		cancel()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%v) = %v, want %q", tc.cfgs, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), secretPassword) {
			t.Errorf("Open(%v) error shows the password: %v", tc.cfgs, err)
		}
		if len(dbs.Names()) != 0 {
			t.Errorf("Open(%v) failed but added %v", tc.cfgs, dbs.Names())
		}
	}
}

func TestConfigNeverShowsDSN(t *testing.T) {
	c := DatabaseConfig{Name: "shop", Driver: "postgres", DSN: "postgres://bob:" + secretPassword + "@db/shop"}
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "db", c)
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprintf("%s", []DatabaseConfig{c}), logged.String()} {
		if strings.Contains(s, secretPassword) || !strings.Contains(s, "shop") {
			t.Errorf("printed config: %s", s)
		}
	}
}

func TestOpenSQLiteConfig(t *testing.T) {
	dir := t.TempDir()
	var dbs Databases
	err := dbs.Open(context.Background(), []DatabaseConfig{
		{Name: "scratch", Driver: "sqlite", DSN: filepath.Join(dir, "a.db"), MaxRows: 2},
		{Name: "archive", Driver: "sqlite3", DSN: filepath.Join(dir, "b.db"), ReadOnly: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer dbs.Close()
	if got := strings.Join(dbs.Names(), ","); got != "scratch,archive" || dbs.Default() != "scratch" {
		t.Fatalf("Names %s, Default %s", got, dbs.Default())
	}
	if _, drv, ok := dbs.DB("archive"); !ok || drv != "sqlite" {
		t.Errorf("DB(archive) = %s, %v", drv, ok)
	}
	exec, query := NewExecuteTool(&dbs), NewQueryTool(&dbs)
	call := func(db, stmt string) json.RawMessage {
		b, _ := json.Marshal(callArgs{Statement: stmt, Database: db})
		return b
	}
	ctx := context.Background()
	if out, err := exec.Run(ctx, call("", "CREATE TABLE t (v TEXT)")); err != nil || out.IsError {
		t.Fatalf("CREATE TABLE: %+v %v", out, err)
	}
	if out, _ := exec.Run(ctx, call("", "INSERT INTO t VALUES ('a'), ('b'), ('c')")); !strings.Contains(out.Content, "3 rows affected") {
		t.Errorf("INSERT: %+v", out)
	}
	if out, _ := query.Run(ctx, call("scratch", "SELECT v FROM t ORDER BY v")); !strings.HasSuffix(out.Content, "(first 2 rows; more exist)") {
		t.Errorf("row cap 2: %+v", out)
	}
	if out, _ := exec.Run(ctx, call("archive", "CREATE TABLE t (v TEXT)")); !out.IsError || !strings.Contains(out.Content, "read-only") {
		t.Errorf("sql_execute on a read-only database: %+v", out)
	}
	if _, err := exec.Preview(ctx, call("archive", "CREATE TABLE t (v TEXT)")); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("preview on a read-only database: %v", err)
	}
	if out, _ := query.Run(ctx, call("archive", "SELECT 1 AS one")); out.IsError {
		t.Errorf("sql_query on a read-only database: %+v", out)
	}
	if out, _ := query.Run(ctx, call("nope", "SELECT 1")); !out.IsError || !strings.Contains(out.Content, "scratch (sqlite), archive (sqlite, read-only)") {
		t.Errorf("unknown database: %+v", out)
	}
	if err := dbs.OpenDB("scratch", "sqlite", nil); err == nil {
		t.Error("OpenDB with a taken name succeeded")
	}
}

// With every database read-only, sql_execute has no default.
func TestExecuteWithOnlyReadOnlyDatabases(t *testing.T) {
	var dbs Databases
	if err := dbs.Open(context.Background(), []DatabaseConfig{{Name: "ro", Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "ro.db"), ReadOnly: true}}); err != nil {
		t.Fatal(err)
	}
	defer dbs.Close()
	out, err := NewExecuteTool(&dbs).Run(context.Background(), json.RawMessage(`{"statement": "CREATE TABLE t (v TEXT)"}`))
	if err != nil || !out.IsError || !strings.Contains(out.Content, "no writable database") {
		t.Errorf("Run = %+v, %v", out, err)
	}
}
