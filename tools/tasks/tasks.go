package tasks

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/words"
)

// Limits on what a call may store and show.
const (
	// MaxTitleRunes is the longest title accepted (the schema's maxLength).
	MaxTitleRunes = 200
	// MaxDueRunes is the longest free-text due date accepted.
	MaxDueRunes = 100
	// MaxListed is how many tasks task_list shows; it says how many more there are.
	MaxListed = 50
)

// New returns the four task tools working on db: task_create, task_list,
// task_complete and task_delete. now is the clock used for created_at and to
// turn "today" / "tomorrow" into dates; nil means time.Now.
func New(db *sql.DB, now func() time.Time) []agent.Tool {
	if now == nil {
		now = time.Now
	}
	s := &store{db: db, now: now}
	return []agent.Tool{
		&createTool{s: s, schema: createSchema()},
		&listTool{s: s, schema: listSchema()},
		completeTool(s),
		deleteTool(s),
	}
}

// Interface guards.
var (
	_ agent.Tool = (*createTool)(nil)
	_ agent.Tool = (*listTool)(nil)
	_ agent.Tool = (*idTool)(nil)
)

// store is what the four tools share.
type store struct {
	db  *sql.DB
	now func() time.Time
}

// task is one row.
type task struct {
	ID    int64
	Title string
	Due   string
	Done  bool
}

// label renders `3 “buy milk”`.
func (t task) label() string { return fmt.Sprintf("%d “%s”", t.ID, t.Title) }

// get looks a task up (read-only). ok is false when it does not exist.
func (s *store) get(ctx context.Context, id int64) (t task, ok bool, err error) {
	var due sql.NullString
	var done int64
	err = s.db.QueryRowContext(ctx, `SELECT id, title, due, done FROM tasks WHERE id = ?`, id).
		Scan(&t.ID, &t.Title, &due, &done)
	if errors.Is(err, sql.ErrNoRows) {
		return task{}, false, nil
	}
	if err != nil {
		return task{}, false, fmt.Errorf("look up task %d: %w", id, err)
	}
	t.Due, t.Done = due.String, done != 0
	return t, true, nil
}

// notRun wraps a decoding failure: the tool never touched the database.
func notRun(tool string, err error) error {
	return fmt.Errorf("%w: %s: %v", approval.ErrNotRun, tool, err)
}

// dbFailure turns an error from a statement into the Tool contract: a
// statement SQLite refused is atomic, so nothing happened (Output with
// IsError); if the call's context ended meanwhile nobody can tell whether
// it committed, so the error is returned as of unknown effect.
func dbFailure(ctx context.Context, what string, err error) (agent.Output, error) {
	if ctx.Err() != nil {
		return agent.Output{}, fmt.Errorf("%s: %w (the change may or may not have been saved)", what, err)
	}
	return agent.Output{Content: fmt.Sprintf("%s failed: %v", what, err), IsError: true}, nil
}

func notExist(id int64) string { return fmt.Sprintf("task %d does not exist", id) }

// ---- task_create ----

type createTool struct {
	s      *store
	schema *jsonschema.Schema
}

type createArgs struct {
	Title string `json:"title"`
	Due   string `json:"due"`
}

func createSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"title": {Type: "string", MinLength: jsonschema.Ptr(1), MaxLength: jsonschema.Ptr(MaxTitleRunes),
				Description: "What is to be done, e.g. \"buy milk\"."},
			"due": {Type: "string", MaxLength: jsonschema.Ptr(MaxDueRunes),
				Description: "Optional due date: YYYY-MM-DD, \"today\", \"tomorrow\" or free text."},
		},
		Required:             []string{"title"},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
}

// Explain says what a call does, for its approver (agent.Explainer).
func (*createTool) Explain() approval.Words { return approval.Say(words.AboutTaskCreate) }

func (*createTool) Name() string                           { return "task_create" }
func (*createTool) Description() string                    { return "Add a task to the demo to-do list." }
func (t *createTool) Schema() *jsonschema.Schema           { return t.schema }
func (*createTool) Effect(json.RawMessage) approval.Effect { return approval.EffectWrite }
func (t *createTool) parse(raw json.RawMessage) (title, due string, err error) {
	var a createArgs
	if err := decode(raw, &a); err != nil {
		return "", "", err
	}
	title = cleanText(a.Title)
	if title == "" {
		return "", "", errors.New("the title is empty")
	}
	if n := len([]rune(title)); n > MaxTitleRunes {
		return "", "", fmt.Errorf("the title is %d characters long; at most %d are allowed", n, MaxTitleRunes)
	}
	due, err = normalizeDue(a.Due, t.s.now())
	return title, due, err
}

func (t *createTool) Preview(ctx context.Context, raw json.RawMessage) (string, error) {
	w, err := t.PreviewWords(ctx, raw)
	return w.EN, err
}

// PreviewWords is Preview in both languages (agent.WordsPreviewer).
func (t *createTool) PreviewWords(_ context.Context, raw json.RawMessage) (approval.Words, error) {
	title, due, err := t.parse(raw)
	if err != nil {
		return approval.Words{}, err
	}
	if due == "" {
		return approval.Say(words.TaskPreviewCreate, title), nil
	}
	return approval.Say(words.TaskPreviewCreateDue, title, due), nil
}

func (t *createTool) Run(ctx context.Context, raw json.RawMessage) (agent.Output, error) {
	title, due, err := t.parse(raw)
	if err != nil {
		var ae argError
		if errors.As(err, &ae) {
			return agent.Output{}, notRun(t.Name(), err)
		}
		return agent.Output{Content: err.Error(), IsError: true}, nil
	}
	var dueVal any
	if due != "" {
		dueVal = due
	}
	created := t.s.now().UTC().Format(time.RFC3339)
	res, err := t.s.db.ExecContext(ctx,
		`INSERT INTO tasks (title, due, done, created_at) VALUES (?, ?, 0, ?)`, title, dueVal, created)
	if err != nil {
		return dbFailure(ctx, "creating the task", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return agent.Output{Content: "Created task “" + title + "”" + dueSuffix(due)}, nil
	}
	return agent.Output{Content: fmt.Sprintf("Created task %d “%s”%s", id, title, dueSuffix(due))}, nil
}

func dueSuffix(due string) string {
	if due == "" {
		return ""
	}
	return " (due " + due + ")"
}

// ---- task_list ----

type listTool struct {
	s      *store
	schema *jsonschema.Schema
}

type listArgs struct {
	IncludeDone bool `json:"include_done"`
}

func listSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"include_done": {Type: "boolean", Description: "Also show tasks that are done (default false)."},
		},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
}

// Explain says what a call does, for its approver (agent.Explainer).
func (*listTool) Explain() approval.Words { return approval.Say(words.AboutTaskList) }

func (*listTool) Name() string                           { return "task_list" }
func (*listTool) Description() string                    { return "Show the demo to-do list (open tasks, or all)." }
func (t *listTool) Schema() *jsonschema.Schema           { return t.schema }
func (*listTool) Effect(json.RawMessage) approval.Effect { return approval.EffectRead }

func (t *listTool) Preview(ctx context.Context, raw json.RawMessage) (string, error) {
	w, err := t.PreviewWords(ctx, raw)
	return w.EN, err
}

// PreviewWords is Preview in both languages (agent.WordsPreviewer).
func (t *listTool) PreviewWords(_ context.Context, raw json.RawMessage) (approval.Words, error) {
	var a listArgs
	if err := decode(raw, &a); err != nil {
		return approval.Words{}, err
	}
	if a.IncludeDone {
		return approval.Say(words.TaskPreviewListAll), nil
	}
	return approval.Say(words.TaskPreviewListOpen), nil
}

func (t *listTool) Run(ctx context.Context, raw json.RawMessage) (agent.Output, error) {
	var a listArgs
	if err := decode(raw, &a); err != nil {
		return agent.Output{}, notRun(t.Name(), err)
	}
	q := `SELECT id, title, due, done FROM tasks`
	if !a.IncludeDone {
		q += ` WHERE done = 0`
	}
	q += ` ORDER BY done, id`
	rows, err := t.s.db.QueryContext(ctx, q)
	if err != nil {
		return agent.Output{Content: "listing the tasks failed: " + err.Error(), IsError: true}, nil
	}
	defer rows.Close()
	var list []task
	total := 0
	for rows.Next() {
		total++
		if len(list) == MaxListed {
			continue
		}
		var tk task
		var due sql.NullString
		var done int64
		if err := rows.Scan(&tk.ID, &tk.Title, &due, &done); err != nil {
			return agent.Output{Content: "listing the tasks failed: " + err.Error(), IsError: true}, nil
		}
		tk.Due, tk.Done = due.String, done != 0
		list = append(list, tk)
	}
	if err := rows.Err(); err != nil {
		return agent.Output{Content: "listing the tasks failed: " + err.Error(), IsError: true}, nil
	}
	return agent.Output{Content: renderList(list, total, a.IncludeDone)}, nil
}

// renderList renders at most MaxListed tasks, one a line:
//
//	2 open tasks:
//	[ ] 1 buy milk (due 2026-11-30)
//	[ ] 4 call the bank
func renderList(list []task, total int, includeDone bool) string {
	what := "open tasks"
	if includeDone {
		what = "tasks"
	}
	if total == 0 {
		return "No " + what + "."
	}
	var b strings.Builder
	if total == 1 {
		what = strings.TrimSuffix(what, "s")
	}
	fmt.Fprintf(&b, "%d %s:", total, what)
	for _, tk := range list {
		box := "[ ]"
		if tk.Done {
			box = "[x]"
		}
		fmt.Fprintf(&b, "\n%s %d %s%s", box, tk.ID, tk.Title, dueSuffix(tk.Due))
	}
	if more := total - len(list); more > 0 {
		fmt.Fprintf(&b, "\n… and %d more", more)
	}
	return b.String()
}

// ---- task_complete and task_delete ----

type idArgs struct {
	ID any `json:"id"` // a json.Number when well formed (decode uses UseNumber)
}

func idSchema(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"id": {Type: "integer", Minimum: jsonschema.Ptr(1.0), Description: desc},
		},
		Required:             []string{"id"},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
}

// parseID decodes {"id": n}; n must be a positive whole number.
func parseID(raw json.RawMessage) (int64, error) {
	var a idArgs
	if err := decode(raw, &a); err != nil {
		return 0, err
	}
	if a.ID == nil {
		return 0, argError{errors.New("id is missing")}
	}
	n, isNum := a.ID.(json.Number)
	if !isNum {
		return 0, argError{fmt.Errorf("id must be a number, not %T", a.ID)}
	}
	id, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(n.String(), 64)
		if ferr != nil || f != math.Trunc(f) || f < 1 || f > 1<<53 {
			return 0, argError{fmt.Errorf("id %s is not a task id", n)}
		}
		id = int64(f)
	}
	if id < 1 {
		return 0, argError{fmt.Errorf("id %d is not a task id", id)}
	}
	return id, nil
}

// idTool is a tool that acts on one task named by its id: task_complete
// and task_delete, which differ only in what they say and do (the
// functions below).
type idTool struct {
	s          *store
	schema     *jsonschema.Schema
	name, desc string
	effect     approval.Effect
	about      words.Key
	// preview says what the call would do to task tk (ok: it exists).
	preview func(id int64, tk task, ok bool) approval.Words
	// run does it.
	run func(ctx context.Context, s *store, id int64) (agent.Output, error)
}

// completeTool marks a task done.
func completeTool(s *store) *idTool {
	return &idTool{s: s, schema: idSchema("The id of the task to mark done (task_list shows ids)."),
		name: "task_complete", desc: "Mark a task of the demo to-do list as done.", effect: approval.EffectWrite, about: words.AboutTaskComplete,
		preview: func(id int64, tk task, ok bool) approval.Words {
			switch {
			case !ok:
				return approval.Say(words.TaskPreviewCompleteMissing, id, id)
			case tk.Done:
				return approval.Say(words.TaskPreviewCompleteDone, tk.label())
			}
			return approval.Say(words.TaskPreviewComplete, tk.label())
		},
		run: complete,
	}
}

// deleteTool deletes a task.
func deleteTool(s *store) *idTool {
	return &idTool{s: s, schema: idSchema("The id of the task to delete (task_list shows ids)."),
		name: "task_delete", desc: "Delete a task from the demo to-do list.", effect: approval.EffectDestructive, about: words.AboutTaskDelete,
		preview: func(id int64, tk task, ok bool) approval.Words {
			if !ok {
				return approval.Say(words.TaskPreviewDeleteMissing, id, id)
			}
			return approval.Say(words.TaskPreviewDelete, tk.label())
		},
		run: remove,
	}
}

// Explain says what a call does, for its approver (agent.Explainer).
func (t *idTool) Explain() approval.Words { return approval.Say(t.about) }

func (t *idTool) Name() string                           { return t.name }
func (t *idTool) Description() string                    { return t.desc }
func (t *idTool) Schema() *jsonschema.Schema             { return t.schema }
func (t *idTool) Effect(json.RawMessage) approval.Effect { return t.effect }

func (t *idTool) Preview(ctx context.Context, raw json.RawMessage) (string, error) {
	w, err := t.PreviewWords(ctx, raw)
	return w.EN, err
}

// PreviewWords is Preview in both languages (agent.WordsPreviewer).
func (t *idTool) PreviewWords(ctx context.Context, raw json.RawMessage) (approval.Words, error) {
	id, err := parseID(raw)
	if err != nil {
		return approval.Words{}, err
	}
	tk, ok, err := t.s.get(ctx, id)
	if err != nil {
		return approval.Words{}, err
	}
	return t.preview(id, tk, ok), nil
}

func (t *idTool) Run(ctx context.Context, raw json.RawMessage) (agent.Output, error) {
	id, err := parseID(raw)
	if err != nil {
		return agent.Output{}, notRun(t.Name(), err)
	}
	return t.run(ctx, t.s, id)
}

// complete marks task id done, telling "missing" from "already done".
func complete(ctx context.Context, s *store, id int64) (agent.Output, error) {
	var title string
	err := s.db.QueryRowContext(ctx,
		`UPDATE tasks SET done = 1 WHERE id = ? AND done = 0 RETURNING title`, id).Scan(&title)
	if err == nil {
		return agent.Output{Content: fmt.Sprintf("Task %d “%s” is done.", id, title)}, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return dbFailure(ctx, "completing the task", err)
	}
	// Nothing changed: tell "missing" from "already done".
	tk, ok, gerr := s.get(ctx, id)
	switch {
	case gerr != nil:
		return agent.Output{Content: gerr.Error(), IsError: true}, nil
	case !ok:
		return agent.Output{Content: notExist(id), IsError: true}, nil
	}
	return agent.Output{Content: "Task " + tk.label() + " was already done."}, nil
}

// remove deletes task id.
func remove(ctx context.Context, s *store, id int64) (agent.Output, error) {
	var title string
	err := s.db.QueryRowContext(ctx, `DELETE FROM tasks WHERE id = ? RETURNING title`, id).Scan(&title)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return agent.Output{Content: notExist(id), IsError: true}, nil
	case err != nil:
		return dbFailure(ctx, "deleting the task", err)
	}
	return agent.Output{Content: fmt.Sprintf("Deleted task %d “%s”.", id, title)}, nil
}

// ---- helpers ----

// argError marks arguments that cannot be decoded at all.
type argError struct{ error }

func (e argError) Unwrap() error { return e.error }

// decode reads the arguments object strictly: unknown fields are an error
// (the schema says additionalProperties false; Preview is not validated by
// the registry, so it checks here too).
func decode(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage("{}")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return argError{fmt.Errorf("arguments: %v", err)}
	}
	return nil
}

// cleanText trims and collapses every run of white space (newlines, tabs)
// to one space, and drops other control characters.
func cleanText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f {
			return -1
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// normalizeDue turns the due argument into what is stored: "" for none, a
// checked YYYY-MM-DD, a date for today/tomorrow, or the cleaned free text.
func normalizeDue(s string, now time.Time) (string, error) {
	s = cleanText(s)
	if s == "" {
		return "", nil
	}
	if n := len([]rune(s)); n > MaxDueRunes {
		return "", fmt.Errorf("the due date is %d characters long; at most %d are allowed", n, MaxDueRunes)
	}
	switch strings.ToLower(s) {
	case "today", "今天":
		return now.Format(time.DateOnly), nil
	case "tomorrow", "明天":
		return now.AddDate(0, 0, 1).Format(time.DateOnly), nil
	}
	if looksLikeDate(s) {
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return "", fmt.Errorf("due date %s is not a valid date", s)
		}
		return d.Format(time.DateOnly), nil
	}
	return s, nil
}

// looksLikeDate reports whether s has the shape NNNN-NN-NN.
func looksLikeDate(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if i == 4 || i == 7 {
			continue
		}
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
