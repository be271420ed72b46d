package tasks

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
)

var testNow = time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)

const schemaSQL = `CREATE TABLE tasks(id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL, due TEXT,
	done INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL)`

// openDB opens a fresh SQLite database in a temp dir with the tasks table
// and the given rows (title, due, done).
func openDB(t *testing.T, rows ...task) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "x.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(schemaSQL); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		var due any
		if r.Due != "" {
			due = r.Due
		}
		done := 0
		if r.Done {
			done = 1
		}
		if _, err := db.Exec(`INSERT INTO tasks(title, due, done, created_at) VALUES (?,?,?,?)`,
			r.Title, due, done, "2026-01-01T00:00:00Z"); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// newRegistry registers the task tools over db.
func newRegistry(t *testing.T, db *sql.DB) *agent.Registry {
	t.Helper()
	reg := agent.NewRegistry()
	if err := reg.Register(New(db, func() time.Time { return testNow })...); err != nil {
		t.Fatal(err)
	}
	return reg
}

// dispatch runs one call through the registry, as the approval engine does.
func dispatch(t *testing.T, reg *agent.Registry, tool, args string) (approval.Result, error) {
	t.Helper()
	return reg.Dispatch(context.Background(), approval.Call{Tool: tool, Args: json.RawMessage(args)})
}

// preview calls the tool's Preview.
func preview(t *testing.T, reg *agent.Registry, tool, args string) (string, error) {
	t.Helper()
	tl, ok := reg.Get(tool)
	if !ok {
		t.Fatalf("no tool %s", tool)
	}
	return tl.Preview(context.Background(), json.RawMessage(args))
}

// seed is the table every case starts from.
var seed = []task{
	{Title: "buy milk", Due: "2026-11-30"},
	{Title: "call the bank"},
	{Title: "file taxes", Done: true},
}

var kindCases = []struct {
	tool string
	want approval.Effect
}{
	{"task_create", approval.EffectWrite},
	{"task_list", approval.EffectRead},
	{"task_complete", approval.EffectWrite},
	{"task_delete", approval.EffectDestructive},
}

func TestKinds(t *testing.T) {
	reg := newRegistry(t, openDB(t))
	if n := len(reg.Tools()); n != 4 {
		t.Fatalf("%d tools, want 4", n)
	}
	for _, c := range kindCases {
		tl, ok := reg.Get(c.tool)
		if !ok {
			t.Fatalf("missing %s", c.tool)
		}
		if got := tl.Effect(nil); got != c.want {
			t.Errorf("%s: kind %s, want %s", c.tool, got, c.want)
		}
	}
}

var previewCases = []struct {
	name, tool, args, want string
}{
	{"create with date", "task_create", `{"title":"buy milk","due":"2026-11-30"}`, "Create task “buy milk” (due 2026-11-30)"},
	{"create no due", "task_create", `{"title":"  walk\n the   dog "}`, "Create task “walk the dog”"},
	{"create tomorrow", "task_create", `{"title":"x","due":"tomorrow"}`, "Create task “x” (due 2026-11-21)"},
	{"create free text due", "task_create", `{"title":"x","due":"next week"}`, "Create task “x” (due next week)"},
	{"list open", "task_list", `{}`, "List open tasks"},
	{"list all", "task_list", `{"include_done":true}`, "List all tasks"},
	{"complete", "task_complete", `{"id":2}`, "Mark task 2 “call the bank” done"},
	{"complete already done", "task_complete", `{"id":3}`, "Mark task 3 “file taxes” done (it is already done)"},
	{"complete missing", "task_complete", `{"id":9}`, "Mark task 9 done: task 9 does not exist"},
	{"delete", "task_delete", `{"id":1}`, "Delete task 1 “buy milk”"},
	{"delete missing", "task_delete", `{"id":9}`, "Delete task 9: task 9 does not exist"},
}

func TestPreview(t *testing.T) {
	db := openDB(t, seed...)
	reg := newRegistry(t, db)
	for _, c := range previewCases {
		t.Run(c.name, func(t *testing.T) {
			got, err := preview(t, reg, c.tool, c.args)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("preview %q, want %q", got, c.want)
			}
		})
	}
	// Previews changed nothing.
	var n, done int
	if err := db.QueryRow(`SELECT count(*), sum(done) FROM tasks`).Scan(&n, &done); err != nil {
		t.Fatal(err)
	}
	if n != 3 || done != 1 {
		t.Errorf("after previews: %d rows, %d done; want 3, 1", n, done)
	}
}

var previewErrorCases = []struct {
	name, tool, args string
}{
	{"bad json", "task_delete", `{"id":`},
	{"unknown field", "task_create", `{"title":"x","priority":1}`},
	{"empty title", "task_create", `{"title":"   "}`},
	{"bad date", "task_create", `{"title":"x","due":"2026-02-30"}`},
	{"id not a number", "task_delete", `{"id":"3"}`},
	{"id fraction", "task_complete", `{"id":2.5}`},
}

func TestPreviewErrors(t *testing.T) {
	reg := newRegistry(t, openDB(t, seed...))
	for _, c := range previewErrorCases {
		t.Run(c.name, func(t *testing.T) {
			if got, err := preview(t, reg, c.tool, c.args); err == nil {
				t.Errorf("preview %q, want an error", got)
			}
		})
	}
}

var runCases = []struct {
	name, tool, args string
	want             string // substring of the content
	isError          bool
}{
	{"create", "task_create", `{"title":"buy bread","due":"2026-12-01"}`, "Created task 4 “buy bread” (due 2026-12-01)", false},
	{"create today", "task_create", `{"title":"buy bread","due":"今天"}`, "(due 2026-11-20)", false},
	{"create invalid date", "task_create", `{"title":"x","due":"2026-13-01"}`, "not a valid date", true},
	{"create blank title", "task_create", `{"title":" \n "}`, "title is empty", true},
	{"list open", "task_list", `{}`, "2 open tasks:\n[ ] 1 buy milk (due 2026-11-30)\n[ ] 2 call the bank", false},
	{"list all", "task_list", `{"include_done":true}`, "3 tasks:\n[ ] 1 buy milk (due 2026-11-30)\n[ ] 2 call the bank\n[x] 3 file taxes", false},
	{"complete", "task_complete", `{"id":2}`, "Task 2 “call the bank” is done.", false},
	{"complete float id", "task_complete", `{"id":2.0}`, "Task 2 “call the bank” is done.", false},
	{"complete again", "task_complete", `{"id":3}`, "was already done", false},
	{"complete missing", "task_complete", `{"id":9}`, "task 9 does not exist", true},
	{"delete", "task_delete", `{"id":1}`, "Deleted task 1 “buy milk”.", false},
	{"delete missing", "task_delete", `{"id":9}`, "task 9 does not exist", true},
}

func TestRun(t *testing.T) {
	for _, c := range runCases {
		t.Run(c.name, func(t *testing.T) {
			reg := newRegistry(t, openDB(t, seed...))
			res, err := dispatch(t, reg, c.tool, c.args)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(res.Content, c.want) {
				t.Errorf("content %q, want it to contain %q", res.Content, c.want)
			}
			if res.IsError != c.isError {
				t.Errorf("IsError %v, want %v (content %q)", res.IsError, c.isError, res.Content)
			}
			wantStatus := approval.StatusExecuted
			if c.isError {
				wantStatus = approval.StatusFailed
			}
			if res.Status != wantStatus {
				t.Errorf("status %s, want %s", res.Status, wantStatus)
			}
		})
	}
}

// Arguments the schema refuses never reach the tool: the registry's error
// wraps approval.ErrNotRun.
var invalidArgCases = []struct {
	name, tool, args string
}{
	{"missing title", "task_create", `{}`},
	{"title too long", "task_create", `{"title":"` + strings.Repeat("é", MaxTitleRunes+1) + `"}`},
	{"due too long", "task_create", `{"title":"x","due":"` + strings.Repeat("d", MaxDueRunes+1) + `"}`},
	{"extra field", "task_create", `{"title":"x","owner":"bob"}`},
	{"title not a string", "task_create", `{"title":3}`},
	{"include_done not bool", "task_list", `{"include_done":"yes"}`},
	{"missing id", "task_delete", `{}`},
	{"id zero", "task_delete", `{"id":0}`},
	{"id string", "task_complete", `{"id":"1"}`},
	{"id fraction", "task_complete", `{"id":1.5}`},
	{"not an object", "task_list", `[]`},
}

func TestDispatchInvalidArgs(t *testing.T) {
	db := openDB(t, seed...)
	reg := newRegistry(t, db)
	for _, c := range invalidArgCases {
		t.Run(c.name, func(t *testing.T) {
			_, err := dispatch(t, reg, c.tool, c.args)
			if !errors.Is(err, approval.ErrNotRun) {
				t.Fatalf("err %v, want one wrapping ErrNotRun", err)
			}
		})
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM tasks`).Scan(&n); err != nil || n != 3 {
		t.Errorf("rows %d (%v), want 3 untouched", n, err)
	}
}

// A title at the limit is accepted; the limit counts runes, not bytes.
func TestTitleLimitInRunes(t *testing.T) {
	reg := newRegistry(t, openDB(t))
	title := strings.Repeat("猫", MaxTitleRunes)
	res, err := dispatch(t, reg, "task_create", `{"title":"`+title+`"}`)
	if err != nil || res.IsError {
		t.Fatalf("res %+v, err %v", res, err)
	}
}

// Run called directly with undecodable arguments (bypassing the registry)
// reports that it did not run.
func TestRunUndecodableArgs(t *testing.T) {
	for _, tl := range New(openDB(t), nil) {
		_, err := tl.Run(context.Background(), json.RawMessage(`{"id":`))
		if !errors.Is(err, approval.ErrNotRun) {
			t.Errorf("%s: err %v, want ErrNotRun", tl.Name(), err)
		}
	}
}

// The stored row has what the preview promised, and created_at from the clock.
func TestCreateStoresRow(t *testing.T) {
	db := openDB(t)
	reg := newRegistry(t, db)
	if _, err := dispatch(t, reg, "task_create", `{"title":"a\tb","due":"tomorrow"}`); err != nil {
		t.Fatal(err)
	}
	var title, due, created string
	var done int
	if err := db.QueryRow(`SELECT title, due, done, created_at FROM tasks WHERE id = 1`).
		Scan(&title, &due, &done, &created); err != nil {
		t.Fatal(err)
	}
	if title != "a b" || due != "2026-11-21" || done != 0 || created != "2026-11-20T09:30:00Z" {
		t.Errorf("row %q %q %d %q", title, due, done, created)
	}
	// No due: NULL, not "".
	if _, err := dispatch(t, reg, "task_create", `{"title":"c"}`); err != nil {
		t.Fatal(err)
	}
	var nullDue sql.NullString
	if err := db.QueryRow(`SELECT due FROM tasks WHERE id = 2`).Scan(&nullDue); err != nil || nullDue.Valid {
		t.Errorf("due %+v (%v), want NULL", nullDue, err)
	}
}

func TestListEmptyAndCut(t *testing.T) {
	db := openDB(t)
	reg := newRegistry(t, db)
	res, err := dispatch(t, reg, "task_list", `{}`)
	if err != nil || res.Content != "No open tasks." {
		t.Fatalf("empty list: %q %v", res.Content, err)
	}
	for i := 0; i < MaxListed+3; i++ {
		if _, err := dispatch(t, reg, "task_create", `{"title":"t"}`); err != nil {
			t.Fatal(err)
		}
	}
	res, err = dispatch(t, reg, "task_list", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Content, "53 open tasks:") || !strings.HasSuffix(res.Content, "… and 3 more") {
		t.Errorf("content %q", res.Content)
	}
	if lines := strings.Count(res.Content, "\n"); lines != MaxListed+1 {
		t.Errorf("%d lines, want %d", lines, MaxListed+1)
	}
}

// A statement SQLite refuses (here: the table is gone) is a known failure.
func TestDBFailureIsKnown(t *testing.T) {
	db := openDB(t, seed...)
	reg := newRegistry(t, db)
	if _, err := db.Exec(`DROP TABLE tasks`); err != nil {
		t.Fatal(err)
	}
	res, err := dispatch(t, reg, "task_create", `{"title":"x"}`)
	if err != nil || !res.IsError {
		t.Fatalf("res %+v err %v, want IsError", res, err)
	}
}

// TestExplain: each demo tool tells its approver what it does in both
// languages, not with its description for the model.
func TestExplain(t *testing.T) {
	for _, tool := range New(openDB(t), nil) {
		a := agent.About(tool)
		if a.EN == "" || a.ZH == "" || a.ZH == a.EN {
			t.Errorf("%s explains itself as %+v", tool.Name(), a)
		}
	}
}

// TestPreviewWords: every preview is said in Chinese too (for the cards
// in Chinese), its English the one Preview gives.
func TestPreviewWords(t *testing.T) {
	db := openDB(t, seed...)
	reg := newRegistry(t, db)
	for _, c := range previewCases {
		tl, _ := reg.Get(c.tool)
		w, err := tl.(agent.WordsPreviewer).PreviewWords(context.Background(), json.RawMessage(c.args))
		if err != nil || w.EN != c.want || w.ZH == "" || w.ZH == w.EN {
			t.Errorf("%s: PreviewWords = %+v, %v; want English %q and its Chinese", c.name, w, err, c.want)
		}
	}
	tl, _ := reg.Get("task_create")
	w, err := tl.(agent.WordsPreviewer).PreviewWords(context.Background(), json.RawMessage(`{"title":"买牛奶","due":"2026-12-01"}`))
	if err != nil || w.ZH != "创建任务“买牛奶”（截止 2026-12-01）" {
		t.Errorf("task_create in Chinese = %q, %v", w.ZH, err)
	}
}
