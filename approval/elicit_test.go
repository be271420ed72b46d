package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/internal/waitfor"
)

// deploySchema is an elicitation's requestedSchema as the SDK decodes it:
// a titled enum, a boolean, a bounded integer, a string with a format and
// a length, an untitled multi-select; env and notify required.
var deploySchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"env": map[string]any{"type": "string", "title": "Environment", "oneOf": []any{
			map[string]any{"const": "staging", "title": "Staging"}, map[string]any{"const": "prod", "title": "Production"}}},
		"notify":   map[string]any{"type": "boolean", "title": "Notify", "description": "post in #deploys"},
		"replicas": map[string]any{"type": "integer", "title": "Replicas", "minimum": 1.0, "maximum": 10.0},
		"ratio":    map[string]any{"type": "number", "title": "Ratio", "maximum": 1.0},
		"mail":     map[string]any{"type": "string", "format": "email", "maxLength": 40.0},
		"regions":  map[string]any{"type": "array", "minItems": 1.0, "items": map[string]any{"type": "string", "enum": []any{"eu", "us", "ap"}}},
	},
	"required": []any{"notify", "env"},
}

// TestElicitArgsAsksEachField: every field is a question, required ones
// first; an enum's options say their titles, a boolean's are true and
// false, the rest are free text; the input names the fields it checks.
func TestElicitArgsAsksEachField(t *testing.T) {
	args, err := approval.ElicitArgs("Deploy web?", deploySchema)
	if err != nil {
		t.Fatal(err)
	}
	qs, err := approval.ParseQuestions(args)
	if err != nil {
		t.Fatal(err)
	}
	var heads []string
	for _, q := range qs {
		heads = append(heads, q.Header)
	}
	if want := []string{"env", "notify", "mail", "ratio", "regions", "replicas"}; !reflect.DeepEqual(heads, want) {
		t.Fatalf("questions %v, want %v", heads, want)
	}
	if qs[0].Question != "Environment" || len(qs[0].Options) != 2 || qs[0].Options[1].Label != "Production (prod)" {
		t.Errorf("the enum: %+v", qs[0])
	}
	if qs[1].Question != "Notify: post in #deploys" || len(qs[1].Options) != 2 || qs[1].Options[0].Label != "true" {
		t.Errorf("the boolean: %+v", qs[1])
	}
	if !qs[4].MultiSelect || len(qs[4].Options) != 3 || len(qs[5].Options) != 0 {
		t.Errorf("the multi-select %+v, the integer %+v", qs[4], qs[5])
	}
}

// TestElicitArgsRefuses: a schema hitlbot cannot ask is refused (the
// elicitation is declined), never asked in part.
func TestElicitArgsRefuses(t *testing.T) {
	many, wide := map[string]any{}, map[string]any{}
	for i := range approval.MaxQuestions + 1 {
		many[string(rune('a'+i))] = map[string]any{"type": "string"}
	}
	for i := range approval.MaxElicitOptions/approval.MaxQuestionOptions + 1 {
		var vals []any
		for j := range approval.MaxQuestionOptions {
			vals = append(vals, string(rune('a'+i))+string(rune('a'+j)))
		}
		wide[string(rune('a'+i))] = map[string]any{"type": "string", "enum": vals}
	}
	for name, schema := range map[string]any{
		"nested":         map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "object"}}},
		"no fields":      map[string]any{"type": "object"},
		"too many":       map[string]any{"type": "object", "properties": many},
		"options in all": map[string]any{"type": "object", "properties": wide},
		"unknown format": map[string]any{"properties": map[string]any{"a": map[string]any{"type": "string", "format": "ipv4"}}},
		"numeric enum":   map[string]any{"properties": map[string]any{"a": map[string]any{"type": "string", "enum": []any{1, 2}}}},
		"control chars":  map[string]any{"properties": map[string]any{"a\nb": map[string]any{"type": "string"}}},
	} {
		if _, err := approval.ElicitArgs("x", schema); !errors.Is(err, approval.ErrElicitSchema) {
			t.Errorf("%s: %v, want ErrElicitSchema", name, err)
		}
	}
}

// TestElicitArgsUntrustedText: the server's words are cleaned (control
// and bidi characters dropped, secrets redacted) and bounded.
func TestElicitArgsUntrustedText(t *testing.T) {
	schema := map[string]any{"properties": map[string]any{"a": map[string]any{"type": "string",
		"title": "Key\u202e sk-abcdefghijklmnopqrstuvwx1234", "description": strings.Repeat("d", 5000)}}}
	args, err := approval.ElicitArgs("hello\x1b[31m "+strings.Repeat("m", 5000), schema)
	if err != nil {
		t.Fatal(err)
	}
	s := string(args)
	if strings.Contains(s, "\u202e") || strings.Contains(s, "\x1b") || strings.Contains(s, "sk-abcdefghijklmnopqrstuvwx1234") || len(s) > 3000 {
		t.Fatalf("uncleaned: %.400s… (%d bytes)", s, len(s))
	}
}

// answer answers deploySchema's question input with picks (as a channel
// sends them) and returns the content, or the refusal.
func answer(t *testing.T, picks string) (map[string]any, error) {
	t.Helper()
	args, err := approval.ElicitArgs("Deploy web?", deploySchema)
	if err != nil {
		t.Fatal(err)
	}
	answered, err := approval.AnswerQuestions(args, json.RawMessage(picks))
	if err != nil {
		return nil, err
	}
	return approval.ElicitContent(answered)
}

// TestElicitAnswersTyped: answers become the fields' typed values.
func TestElicitAnswersTyped(t *testing.T) {
	got, err := answer(t, `{"answers":{"#1":{"options":[2]},"#2":{"options":[2]},"#3":{"other":"ops@example.com"},`+
		`"#4":{"other":"0.5"},"#5":{"options":[1,3]},"#6":{"other":"3"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"env": "prod", "notify": false, "mail": "ops@example.com", "ratio": 0.5, "regions": []any{"eu", "ap"}, "replicas": 3.0}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("content %#v\nwant %#v", got, want)
	}
	// Free text may name an option by its value, and a boolean in words.
	got, err = answer(t, `{"answers":{"#1":"staging","#2":"是"}}`)
	if err != nil || got["env"] != "staging" || got["notify"] != true || len(got) != 2 {
		t.Fatalf("content %v, %v", got, err)
	}
}

// TestElicitAnswersRefused: a wrong-typed answer is refused with a
// sentence naming the field, in English and in Chinese.
func TestElicitAnswersRefused(t *testing.T) {
	const req = `"#1":"prod","#2":"true"`
	for _, tt := range []struct{ name, picks, en, zh string }{
		{"not a number", `{"answers":{` + req + `,"#6":"three"}}`, `replicas: "three" is not a number.`, `replicas："three" 不是数字。`},
		{"not whole", `{"answers":{` + req + `,"#6":"2.5"}}`, `replicas: "2.5" is not a whole number.`, `replicas："2.5" 不是整数。`},
		{"too large", `{"answers":{` + req + `,"#6":"11"}}`, `replicas: the answer must be at most 10.`, `replicas：回答不能大于 10。`},
		{"too small", `{"answers":{` + req + `,"#6":"0"}}`, `replicas: the answer must be at least 1.`, `replicas：回答不能小于 1。`},
		{"bad email", `{"answers":{` + req + `,"#3":"ops at example"}}`, `mail: the answer is not a valid email.`, `mail：回答不是有效的 email。`},
		{"email without a domain", `{"answers":{` + req + `,"#3":"ops@localhost"}}`, `mail: the answer is not a valid email.`, `mail：回答不是有效的 email。`},
		{"too long", `{"answers":{` + req + `,"#3":"` + strings.Repeat("a", 35) + `@example.com"}}`, `mail: the answer must have at most 40 characters.`, `mail：回答最多 40 个字符。`},
		{"not an option", `{"answers":{"#1":"dev","#2":"true"}}`, `env: "dev" is not one of the options.`, `env："dev" 不是可选项之一。`},
		{"not a boolean", `{"answers":{"#1":"prod","#2":"maybe"}}`, `notify: answer true or false, not "maybe".`, `notify：请回答 true 或 false，而不是 "maybe"。`},
		{"required missing", `{"answers":{"#1":"prod"}}`, `notify: an answer is required.`, `notify：此项必须回答。`},
	} {
		_, err := answer(t, tt.picks)
		var ae *approval.AnswerError
		if !errors.As(err, &ae) || !errors.Is(err, approval.ErrQuestion) {
			t.Errorf("%s: %v, want an AnswerError", tt.name, err)
			continue
		}
		if ae.In("en") != tt.en || ae.In("zh") != tt.zh {
			t.Errorf("%s:\n en %q, want %q\n zh %q, want %q", tt.name, ae.In("en"), tt.en, ae.In("zh"), tt.zh)
		}
	}
}

// TestElicitFailsClosed: with no turn behind the call there is nobody to
// ask: declined, nothing asked; a call with under a second left is
// cancelled unasked; a question open at shutdown (EndElicitations) is
// withdrawn and the server told cancel, and nothing is asked after it.
func TestElicitFailsClosed(t *testing.T) {
	f := newFixture(t, backends[0])
	ans, err := f.a.Elicit(context.Background(), "srv", "hi", deploySchema)
	if ans.Action != approval.ElicitDecline || !errors.Is(err, approval.ErrNoOrigin) || ans.ID != "" {
		t.Fatalf("no origin: %+v, %v", ans, err)
	}
	origin := approval.Origin{Session: "test:el", Channel: "test", ChatID: "chat-1", Requester: "alice"}
	ctx, cancel := context.WithTimeout(approval.WithOrigin(context.Background(), origin), 500*time.Millisecond)
	defer cancel()
	if ans, err := f.a.Elicit(ctx, "srv", "hi", deploySchema); ans.Action != approval.ElicitCancel || err == nil || ans.ID != "" {
		t.Fatalf("no time left: %+v, %v", ans, err)
	}
	if ans, err := f.a.Elicit(approval.WithOrigin(context.Background(), origin), "srv", "hi", map[string]any{"type": "array"}); ans.Action != approval.ElicitDecline || !errors.Is(err, approval.ErrElicitSchema) {
		t.Fatalf("a schema it cannot ask: %+v, %v", ans, err)
	}
	done := make(chan approval.ElicitAnswer, 1)
	go func() {
		ans, _ := f.a.Elicit(approval.WithOrigin(context.Background(), origin), "srv", "hi", deploySchema)
		done <- ans
	}()
	var q *approval.Approval
	waitfor.True(t, "the question is asked", func() bool {
		q, _ = f.a.Pending(context.Background(), origin.Session)
		return q != nil && q.IsElicitation() && f.a.Waiting(q.ID)
	})
	f.a.EndElicitations()
	if ans := <-done; ans.Action != approval.ElicitCancel || ans.ID != q.ID {
		t.Fatalf("at shutdown: %+v", ans)
	}
	if got, _ := f.a.Get(context.Background(), q.ID); got.State != approval.StateCancelled {
		t.Fatalf("the question is %s, want cancelled", got.State)
	}
	if ans, err := f.a.Elicit(approval.WithOrigin(context.Background(), origin), "srv", "hi", deploySchema); ans.Action != approval.ElicitCancel || err == nil {
		t.Fatalf("after shutdown: %+v, %v", ans, err)
	}
}

// TestAnswerErrorSaidToThePerson: a refused answer, wrapped as the engine
// wraps an edit it refuses, is said as itself by UserMessageIn (bot
// chat, the web page), in the person's language.
func TestAnswerErrorSaidToThePerson(t *testing.T) {
	_, err := answer(t, `{"answers":{"#1":"prod","#2":"maybe"}}`)
	wrapped := approval.E("approval.Decide", errkind.Invalid, "ap_x", fmt.Errorf("%w: call 1 (mcp:t/AskUserQuestion): %w", approval.ErrEdit, err))
	if got := approval.UserMessageIn(wrapped, "zh"); got != `notify：请回答 true 或 false，而不是 "maybe"。` {
		t.Fatalf("zh: %q", got)
	}
	if got := approval.UserMessageIn(wrapped, "en"); got != `notify: answer true or false, not "maybe".` {
		t.Fatalf("en: %q", got)
	}
}

// originTool records the Origin of the calls it runs.
type originTool struct {
	got chan approval.Origin
}

func (o originTool) Dispatch(ctx context.Context, c approval.Call) (approval.Result, error) {
	or, _ := approval.OriginOf(ctx)
	o.got <- or
	return approval.Result{Tool: c.Tool, CallID: c.CallID, Status: approval.StatusExecuted, Content: "ok"}, nil
}

// TestApprovedCallCarriesItsOrigin: an approved call runs in a context
// that says whom for and where, from the approval's record: where a
// question the tool asks goes, and who may answer it.
func TestApprovedCallCarriesItsOrigin(t *testing.T) {
	tool := originTool{got: make(chan approval.Origin, 1)}
	e, err := approval.NewEngine(approval.EngineConfig{Store: memstore.New(memstore.Options{}), Dispatcher: tool, Audit: &recorder{}, Logger: quiet, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	a := request(t, e, func(r *approval.Request) {
		r.Group, r.RequesterName = true, "Alice"
		r.Verdict.Privacy = approval.PrivacyGroup
		r.IdempotencyKey = "msg-7/c1"
	})
	decide(t, e, a.ID, decision(a, approval.Approve, "bob"))
	got := <-tool.got
	want := approval.Origin{Session: a.Session, Channel: "test", ChatID: "chat-1", Requester: "alice", RequesterName: "Alice", Group: true,
		Turn: "msg-7", Approvers: a.Approvers, Risk: approval.RiskHigh, Privacy: approval.PrivacyGroup}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("origin %+v\nwant %+v", got, want)
	}
}

// TestElicitationInTheTurnsName: a question asked while a call runs
// carries the call's turn in front of its idempotency key, as the turn's
// own approvals do, so a channel that waits for the turn (the HTTP API's
// request) finds its card; each question's key is its own.
func TestElicitationInTheTurnsName(t *testing.T) {
	f := newFixture(t, backends[0])
	origin := approval.Origin{Session: "test:el-turn", Channel: "test", ChatID: "chat-1", Requester: "alice", Turn: "req_42"}
	ctx, cancel := context.WithCancel(approval.WithOrigin(context.Background(), origin))
	defer cancel()
	done := make(chan approval.ElicitAnswer, 1)
	go func() {
		ans, _ := f.a.Elicit(ctx, "srv", "hi", deploySchema)
		done <- ans
	}()
	var q *approval.Approval
	waitfor.True(t, "the question is asked", func() bool {
		q, _ = f.a.Pending(context.Background(), origin.Session)
		return q != nil && q.IsElicitation() && f.a.Waiting(q.ID)
	})
	if !strings.HasPrefix(q.IdempotencyKey, "req_42/elicit:") || len(q.IdempotencyKey) <= len("req_42/elicit:") {
		t.Fatalf("idempotency key %q, want req_42/elicit:<unique>", q.IdempotencyKey)
	}
	cancel()
	if ans := <-done; ans.Action != approval.ElicitCancel {
		t.Fatalf("after the call ended: %+v", ans)
	}
}

// defaultsSchema has a default on each kind of field, one that is no
// valid answer (ignored), and a required field whose default answers it.
var defaultsSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"env":      map[string]any{"type": "string", "title": "Environment", "default": "prod", "oneOf": []any{map[string]any{"const": "staging", "title": "Staging"}, map[string]any{"const": "prod", "title": "Production"}}},
		"notify":   map[string]any{"type": "boolean", "default": true},
		"replicas": map[string]any{"type": "integer", "default": 3.0, "maximum": 10.0},
		"regions":  map[string]any{"type": "array", "default": []any{"eu", "ap"}, "items": map[string]any{"type": "string", "enum": []any{"eu", "us", "ap"}}},
		"note":     map[string]any{"type": "string", "default": "none"},
		"ratio":    map[string]any{"type": "number", "default": 7.0, "maximum": 1.0}, // no valid answer: no default
	},
	"required": []any{"env"},
}

// TestElicitDefaults: a field's default (when it is a valid answer to
// the field) is what the questions show (approval.QuestionDefaults, as a
// person would answer it: an option's label) and what an empty answer to
// that field takes, required or not; a default that is no valid answer
// is ignored. An answer that answers nothing at all is still no answer.
func TestElicitDefaults(t *testing.T) {
	args, err := approval.ElicitArgs("Deploy?", defaultsSchema)
	if err != nil {
		t.Fatal(err)
	}
	qs, _ := approval.ParseQuestions(args)
	got := map[string]string{}
	for i, d := range approval.QuestionDefaults(args) {
		if d != "" {
			got[qs[i].Header] = d
		}
	}
	want := map[string]string{"env": "Production (prod)", "notify": "true", "replicas": "3", "regions": "eu, ap", "note": "none"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("defaults %v, want %v", got, want)
	}
	answered, err := approval.AnswerQuestions(args, json.RawMessage(`{"answers":{"#4":"1"}}`)) // ratio
	if err != nil {
		t.Fatal(err)
	}
	content, err := approval.ElicitContent(answered)
	if err != nil {
		t.Fatal(err)
	}
	wantContent := map[string]any{"env": "prod", "notify": true, "replicas": 3.0, "regions": []any{"eu", "ap"}, "note": "none", "ratio": 1.0}
	if !reflect.DeepEqual(content, wantContent) {
		t.Fatalf("content %#v\nwant %#v", content, wantContent)
	}
	if a := approval.QuestionAnswers(answered); a["Environment"] != "Production (prod)" || a["replicas"] != "3" {
		t.Fatalf("the answers the cards show: %v", a)
	}
	if _, err := approval.AnswerQuestions(args, json.RawMessage(`{"answers":{}}`)); !errors.Is(err, approval.ErrQuestion) {
		t.Fatalf("an empty answer: %v", err)
	}
	if approval.QuestionDefaults(json.RawMessage(`{"questions":[{"question":"q"}]}`)) != nil {
		t.Fatal("another agent's question has defaults")
	}
}

// TestQuestionDefaultsOnlyValid: QuestionDefaults reads the defaults from
// the question input itself, which is not always one ElicitArgs made
// (another agent's AskUserQuestion input may carry an "elicitation" key
// of its own making). A default ElicitArgs would not have kept — too long
// for a card, a secret, not a valid answer to its field — is none: it is
// neither shown nor taken.
func TestQuestionDefaultsOnlyValid(t *testing.T) {
	huge := strings.Repeat("x", 100_000)
	secret := "sk-live-" + strings.Repeat("a1B2", 10)
	for _, tc := range []struct{ name, field string }{
		{"huge", `{"name":"a","kind":"string","default":"` + huge + `"}`},
		{"secret", `{"name":"a","kind":"string","default":"` + secret + `"}`},
		{"not a number", `{"name":"a","kind":"number","default":"many"}`},
		{"no such option", `{"name":"a","kind":"enum","values":["s","l"],"default":"xl"}`},
		{"a line break", `{"name":"a","kind":"string","default":"one\ntwo"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := json.RawMessage(`{"questions":[{"question":"Which?","header":"a","options":[{"label":"s"},{"label":"l"}]}],` +
				`"elicitation":{"message":"m","fields":[` + tc.field + `]}}`)
			if tc.name != "no such option" {
				args = json.RawMessage(`{"questions":[{"question":"Which?","header":"a"}],"elicitation":{"message":"m","fields":[` + tc.field + `]}}`)
			}
			if _, err := approval.ParseQuestions(args); err != nil {
				t.Fatal(err)
			}
			if d := approval.QuestionDefaults(args); len(d) != 0 && d[0] != "" {
				t.Fatalf("default shown: %.80q", d[0])
			}
		})
	}
}
