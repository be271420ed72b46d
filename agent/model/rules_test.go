package model

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
)

// builtinToolSpecs offers every tool the built-in rules call.
var builtinToolSpecs = []agent.ToolSpec{
	{Name: "sql_query"}, {Name: "sql_execute"},
	{Name: "task_create"}, {Name: "task_list"}, {Name: "task_complete"}, {Name: "task_delete"},
}

// rulesTest is one phrase and what the rules model should make of it: a
// call of tool with args (JSON) and confidence, or, when tool is empty, a
// text answer that contains text.
type rulesTest struct {
	in   string
	tool string
	args string
	conf float64
	text string
}

const helpMarker = "I understand these commands"

var rulesTests = []rulesTest{
	// /sql: which tool is asked in rules_sql_test.go, with the real SQL tools.
	{in: "/sql", text: "Usage: /sql"},
	{in: "/sqlite foo", text: helpMarker},

	// Listing.
	{in: "list tasks", tool: "task_list", args: `{}`, conf: 1},
	{in: "show tasks", tool: "task_list", args: `{}`, conf: 1},
	{in: "Show my tasks.", tool: "task_list", args: `{}`, conf: 1},
	{in: "please list all my open tasks", tool: "task_list", args: `{}`, conf: 1},
	{in: "what are my tasks?", tool: "task_list", args: `{}`, conf: 1},
	{in: "任务列表", tool: "task_list", args: `{}`, conf: 1},
	{in: "请查看任务", tool: "task_list", args: `{}`, conf: 1},

	// Complete and delete by id.
	{in: "complete task 3", tool: "task_complete", args: `{"id":3}`, conf: 1},
	{in: "Complete task #12.", tool: "task_complete", args: `{"id":12}`, conf: 1},
	{in: "mark task 4 as done", tool: "task_complete", args: `{"id":4}`, conf: 1},
	{in: "task 5 done", tool: "task_complete", args: `{"id":5}`, conf: 1},
	{in: "完成任务 7", tool: "task_complete", args: `{"id":7}`, conf: 1},
	{in: "完成任务：8", tool: "task_complete", args: `{"id":8}`, conf: 1},
	{in: "delete task 9", tool: "task_delete", args: `{"id":9}`, conf: 1},
	{in: "can you delete task 10?", tool: "task_delete", args: `{"id":10}`, conf: 0.5},
	{in: "I need to delete task 11", tool: "task_delete", args: `{"id":11}`, conf: 1},
	{in: "删除任务 2", tool: "task_delete", args: `{"id":2}`, conf: 1},
	{in: "delete task 3 please", tool: "task_delete", args: `{"id":3}`, conf: 1},
	{in: "delete task 0", text: helpMarker},
	{in: "complete task 99999999999999999999", text: helpMarker},

	// Creating, with the multipliers.
	{in: "create a task: buy milk", tool: "task_create", args: `{"title":"buy milk"}`, conf: 0.95},
	{in: "Create a new task: Write the quarterly report", tool: "task_create", args: `{"title":"Write the quarterly report"}`, conf: 0.95},
	{in: "add a task to call the plumber", tool: "task_create", args: `{"title":"call the plumber"}`, conf: 0.95},
	{in: "new task: renew passport", tool: "task_create", args: `{"title":"renew passport"}`, conf: 0.95},
	{in: `please create a task: "ship the release"`, tool: "task_create", args: `{"title":"ship the release"}`, conf: 0.95},
	{in: "create a task：ｂｕｙ ｍｉｌｋ", tool: "task_create", args: `{"title":"buy milk"}`, conf: 0.95},
	{in: "task: book flights", tool: "task_create", args: `{"title":"book flights"}`, conf: 0.90},
	{in: "todo: fix the fence", tool: "task_create", args: `{"title":"fix the fence"}`, conf: 0.90},
	{in: "task: list tasks", tool: "task_create", args: `{"title":"list tasks"}`, conf: 0.90},
	{in: "task: pay rent tomorrow", tool: "task_create", args: `{"title":"pay rent","due":"tomorrow"}`, conf: 0.90},
	{in: "Task: Pay rent on 2026-01-31", tool: "task_create", args: `{"title":"Pay rent","due":"2026-01-31"}`, conf: 0.90},
	{in: "task: gym", tool: "task_create", args: `{"title":"gym"}`, conf: 0.90 * 0.7},
	{in: "task: call mom sometime", tool: "task_create", args: `{"title":"call mom sometime"}`, conf: 0.90 * 0.8},
	{in: "task: call mom?", tool: "task_create", args: `{"title":"call mom"}`, conf: 0.90 * 0.5},
	{in: "task: a?", tool: "task_create", args: `{"title":"a"}`, conf: 0.90 * 0.7 * 0.5},
	{in: "task: later?", tool: "task_create", args: `{"title":"later"}`, conf: 0.90 * 0.8 * 0.5},
	{in: "remind: water the plants", tool: "task_create", args: `{"title":"water the plants"}`, conf: 0.85},
	{in: "remind me to call the bank on friday", tool: "task_create", args: `{"title":"call the bank","due":"friday"}`, conf: 0.85},
	{in: "remind me to", text: helpMarker},
	{in: "task: meet Ann at 2026-03-04 10:30", tool: "task_create", args: `{"title":"meet Ann","due":"2026-03-04 10:30"}`, conf: 0.90},
	{in: "Remind me tomorrow to call mom", tool: "task_create", args: `{"title":"call mom","due":"tomorrow"}`, conf: 0.85},
	{in: "remind me about the dentist appointment next week", tool: "task_create", args: `{"title":"the dentist appointment next week"}`, conf: 0.85 * 0.8},
	{in: "can you remind me to renew the domain soon?", tool: "task_create", args: `{"title":"renew the domain soon"}`, conf: 0.85 * 0.8 * 0.5},
	{in: "I need to renew my passport", tool: "task_create", args: `{"title":"renew my passport"}`, conf: 0.75},
	{in: "I need to buy milk soon", tool: "task_create", args: `{"title":"buy milk soon"}`, conf: 0.75 * 0.8},
	{in: "i need to pay the invoice by 2026-12-01", tool: "task_create", args: `{"title":"pay the invoice","due":"2026-12-01"}`, conf: 0.75},
	{in: "I need to eat", tool: "task_create", args: `{"title":"eat"}`, conf: 0.75 * 0.7},
	{in: "add buy milk to my tasks", tool: "task_create", args: `{"title":"buy milk"}`, conf: 0.65},
	{in: "put renew insurance on the todo list", tool: "task_create", args: `{"title":"renew insurance"}`, conf: 0.65},
	{in: "add water plants as a task", tool: "task_create", args: `{"title":"water plants"}`, conf: 0.65},
	{in: "add tax return to my tasks next week?", text: helpMarker}, // implicit forms are anchored at "tasks"
	{in: "创建任务：买牛奶", tool: "task_create", args: `{"title":"买牛奶"}`, conf: 0.95 * 0.7},
	{in: "创建任务:准备周会材料", tool: "task_create", args: `{"title":"准备周会材料"}`, conf: 0.95},
	{in: "创建任务 整理发票和报销单", tool: "task_create", args: `{"title":"整理发票和报销单"}`, conf: 0.95},
	{in: "创建任务：明天交周报", tool: "task_create", args: `{"title":"交周报","due":"明天"}`, conf: 0.95 * 0.7},
	{in: "创建任务：有空整理书架", tool: "task_create", args: `{"title":"有空整理书架"}`, conf: 0.95 * 0.8},
	{in: "创建任务：下周一提交季度报告", tool: "task_create", args: `{"title":"提交季度报告","due":"下周一"}`, conf: 0.95},
	{in: "创建任务：下周提交季度报告？", tool: "task_create", args: `{"title":"下周提交季度报告"}`, conf: 0.95 * 0.8 * 0.5},
	{in: "提醒我给妈妈打电话", tool: "task_create", args: `{"title":"给妈妈打电话"}`, conf: 0.85},
	{in: "把买牛奶加到任务里", tool: "task_create", args: `{"title":"买牛奶"}`, conf: 0.65 * 0.7},

	// Everything else: help.
	{in: "hello", text: helpMarker},
	{in: "what is the weather?", text: helpMarker},
	{in: "", text: helpMarker},
	{in: "create a task", text: helpMarker},
	{in: "I have a task for you", text: helpMarker},
	{in: "history of tasks", text: helpMarker},
}

func mustRules(t testing.TB, cfg RulesConfig) *Rules {
	t.Helper()
	m, err := NewRules(cfg, RulesDeps{})
	if err != nil {
		t.Fatalf("NewRules: %v", err)
	}
	return m
}

func complete(t *testing.T, m agent.Model, tools []agent.ToolSpec, msgs ...agent.Message) agent.Message {
	t.Helper()
	resp, err := m.Complete(context.Background(), agent.Request{Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if resp.Message.Role != agent.RoleAssistant {
		t.Errorf("role = %q, want assistant", resp.Message.Role)
	}
	return resp.Message
}

// checkCall compares one call with a rulesTest row.
func checkCall(t *testing.T, in string, got agent.Message, test rulesTest) {
	t.Helper()
	if test.tool == "" {
		if len(got.ToolCalls) != 0 {
			t.Errorf("%q: got call %s %s, want text containing %q", in, got.ToolCalls[0].Name, got.ToolCalls[0].Args, test.text)
		} else if !strings.Contains(got.Content, test.text) {
			t.Errorf("%q: got text %q, want it to contain %q", in, got.Content, test.text)
		}
		return
	}
	if len(got.ToolCalls) != 1 {
		t.Errorf("%q: got %d calls (text %q), want %s %s", in, len(got.ToolCalls), got.Content, test.tool, test.args)
		return
	}
	c := got.ToolCalls[0]
	if c.Name != test.tool {
		t.Errorf("%q: tool %s, want %s", in, c.Name, test.tool)
	}
	var gotArgs, wantArgs any
	if err := json.Unmarshal(c.Args, &gotArgs); err != nil {
		t.Errorf("%q: args %s: %v", in, c.Args, err)
	}
	if err := json.Unmarshal([]byte(test.args), &wantArgs); err != nil {
		t.Fatalf("%q: bad test args %s: %v", in, test.args, err)
	}
	if !reflect.DeepEqual(gotArgs, wantArgs) {
		t.Errorf("%q: args %s, want %s", in, c.Args, test.args)
	}
	if math.Abs(c.Confidence-test.conf) > 1e-9 {
		t.Errorf("%q: confidence %v, want %v", in, c.Confidence, test.conf)
	}
	if c.ID != "rules-1" {
		t.Errorf("%q: id %q, want rules-1", in, c.ID)
	}
}

func TestRulesPhrases(t *testing.T) {
	m := mustRules(t, RulesConfig{})
	for _, test := range rulesTests {
		got := complete(t, m, builtinToolSpecs, agent.Message{Role: agent.RoleSystem, Content: "sys"}, agent.Message{Role: agent.RoleUser, Content: test.in})
		checkCall(t, test.in, got, test)
	}
}

func TestRulesUsesLastUserMessage(t *testing.T) {
	m := mustRules(t, RulesConfig{})
	got := complete(t, m, builtinToolSpecs,
		agent.Message{Role: agent.RoleUser, Content: "list tasks"},
		agent.Message{Role: agent.RoleAssistant, Content: "1 buy milk"},
		agent.Message{Role: agent.RoleUser, Content: "complete task 1"},
	)
	checkCall(t, "last", got, rulesTest{tool: "task_complete", args: `{"id":1}`, conf: 1})
}

func TestRulesToolNotOffered(t *testing.T) {
	m := mustRules(t, RulesConfig{})
	got := complete(t, m, []agent.ToolSpec{{Name: "sql_query"}}, agent.Message{Role: agent.RoleUser, Content: "list tasks"})
	if len(got.ToolCalls) != 0 || !strings.Contains(got.Content, "task_list") || !strings.Contains(got.Content, "not available") {
		t.Errorf("got %+v, want a text saying task_list is not available", got)
	}
	got = complete(t, m, nil, agent.Message{Role: agent.RoleUser, Content: "/sql delete from t"})
	if len(got.ToolCalls) != 0 || !strings.Contains(got.Content, "sql_execute") {
		t.Errorf("got %+v, want a text saying sql_execute is not available", got)
	}
	got = complete(t, m, nil, agent.Message{Role: agent.RoleUser, Content: "任务列表"})
	if len(got.ToolCalls) != 0 || !strings.Contains(got.Content, "没有这个工具") {
		t.Errorf("got %+v, want a Chinese not-available text", got)
	}
}

func TestRulesHelp(t *testing.T) {
	m := mustRules(t, RulesConfig{Patterns: []RulePattern{{Name: "deploy", Regexp: "^deploy$", Tool: "deploy"}}})
	for _, msgs := range [][]agent.Message{nil, {{Role: agent.RoleSystem, Content: "sys"}}, {{Role: agent.RoleUser, Content: "hi there"}}} {
		got := complete(t, m, builtinToolSpecs, msgs...)
		for _, want := range []string{helpMarker, "/sql", "create a task:", "list tasks", "complete task", "delete task", "创建任务", "任务列表", "完成任务", "删除任务", "deploy"} {
			if !strings.Contains(got.Content, want) {
				t.Errorf("help for %v lacks %q: %q", msgs, want, got.Content)
			}
		}
	}
}

func TestRulesCancelled(t *testing.T) {
	m := mustRules(t, RulesConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.Complete(ctx, agent.Request{Messages: []agent.Message{{Role: agent.RoleUser, Content: "list tasks"}}})
	var me *agent.ModelError
	if !errors.As(err, &me) || !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want a ModelError wrapping context.Canceled", err)
	}
}

var configPatterns = []RulePattern{
	{Name: "shout", Regexp: `^task: (?P<t>.+)$`, Tool: "shout", Args: map[string]string{"text": "${t}!"}},
	{Name: "deploy", Regexp: `(?i)^deploy (?P<svc>[a-z-]+) to (?P<env>staging|prod)(?: with (?P<n>\d+) replicas)?$`, Tool: "deploy",
		Args: map[string]string{"service": "${svc}", "env": "${env}", "replicas": "${n:int}"}, Confidence: 0.9},
	{Name: "pay", Regexp: `^pay (\d+) to (\w+)$`, Tool: "pay", Args: map[string]string{"amount": "$$${1}", "to": "${2}", "whole": "${0}"}},
	{Name: "flag", Regexp: `^flag (?P<on>\w+)$`, Tool: "flag", Args: map[string]string{"on": "${on:bool}"}, Confidence: 0.5},
	{Name: "size", Regexp: `^size (?P<n>\S+)$`, Tool: "size", Args: map[string]string{"n": "${n:number}"}},
	{Name: "offline", Regexp: `^offline$`, Tool: "not_offered"},
}

var configTests = []rulesTest{
	{in: "task: x", tool: "shout", args: `{"text":"x!"}`, conf: 1}, // before the built-in "task:"
	{in: "deploy api to prod with 3 replicas", tool: "deploy", args: `{"service":"api","env":"prod","replicas":3}`, conf: 0.9},
	{in: "Deploy web-ui to staging", tool: "deploy", args: `{"service":"web-ui","env":"staging"}`, conf: 0.9},
	{in: "pay 5 to bob", tool: "pay", args: `{"amount":"$5","to":"bob","whole":"pay 5 to bob"}`, conf: 1},
	{in: "flag true", tool: "flag", args: `{"on":true}`, conf: 0.5},
	{in: "flag maybe", text: helpMarker}, // does not convert: no match
	{in: "size 2.5", tool: "size", args: `{"n":2.5}`, conf: 1},
	{in: "size big", text: helpMarker},
	{in: "offline", text: "not available"},
	{in: "list tasks", tool: "task_list", args: `{}`, conf: 1}, // built-ins still work
}

func TestRulesConfigPatterns(t *testing.T) {
	m := mustRules(t, RulesConfig{Patterns: configPatterns})
	tools := append([]agent.ToolSpec{{Name: "shout"}, {Name: "deploy"}, {Name: "pay"}, {Name: "flag"}, {Name: "size"}}, builtinToolSpecs...)
	for _, test := range configTests {
		got := complete(t, m, tools, agent.Message{Role: agent.RoleUser, Content: test.in})
		checkCall(t, test.in, got, test)
	}
}

var newRulesErrorTests = []struct {
	p    RulePattern
	want []string
}{
	{RulePattern{Name: "bad", Regexp: `(`, Tool: "x"}, []string{`"bad"`, "bad regexp"}},
	{RulePattern{Name: "empty", Tool: "x"}, []string{`"empty"`, "regexp is empty"}},
	{RulePattern{Name: "notool", Regexp: `x`}, []string{`"notool"`, "tool is empty"}},
	{RulePattern{Name: "conf", Regexp: `x`, Tool: "x", Confidence: 1.5}, []string{`"conf"`, "confidence"}},
	{RulePattern{Name: "negconf", Regexp: `x`, Tool: "x", Confidence: -0.1}, []string{`"negconf"`, "confidence"}},
	{RulePattern{Name: "nan", Regexp: `x`, Tool: "x", Confidence: math.NaN()}, []string{`"nan"`, "confidence"}},
	{RulePattern{Name: "group", Regexp: `(?P<a>x)`, Tool: "x", Args: map[string]string{"k": "${nope}"}}, []string{`"group"`, "args.k", `unknown group "nope"`, "a"}},
	{RulePattern{Name: "num", Regexp: `(x)`, Tool: "x", Args: map[string]string{"k": "${2}"}}, []string{`"num"`, `unknown group "2"`}},
	{RulePattern{Name: "unclosed", Regexp: `(?P<a>x)`, Tool: "x", Args: map[string]string{"k": "${a"}}, []string{`"unclosed"`, "unclosed"}},
	{RulePattern{Name: "typed", Regexp: `(?P<a>\d)`, Tool: "x", Args: map[string]string{"k": "id-${a:int}"}}, []string{`"typed"`, "whole template"}},
	{RulePattern{Name: "type", Regexp: `(?P<a>\d)`, Tool: "x", Args: map[string]string{"k": "${a:float}"}}, []string{`"type"`, `unknown type "float"`}},
	{RulePattern{Regexp: `(`, Tool: "x"}, []string{"patterns[1]", "bad regexp"}},
}

func TestNewRulesErrors(t *testing.T) {
	ok := RulePattern{Name: "fine", Regexp: "^fine$", Tool: "x"}
	for _, test := range newRulesErrorTests {
		_, err := NewRules(RulesConfig{Patterns: []RulePattern{ok, test.p}}, RulesDeps{})
		if err == nil {
			t.Errorf("%+v: no error", test.p)
			continue
		}
		for _, w := range test.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: error %q lacks %q", test.p, err, w)
			}
		}
	}
}

var summaryTests = []struct {
	name string
	msgs []agent.Message
	want string
}{
	{
		name: "one result",
		msgs: []agent.Message{
			{Role: agent.RoleUser, Content: "create a task: buy milk"},
			{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "rules-1", Name: "task_create", Args: json.RawMessage(`{"title":"buy milk"}`)}}},
			{Role: agent.RoleTool, ToolCallID: "rules-1", Content: "Created task 7 \"buy milk\"."},
		},
		want: "task_create: Created task 7 \"buy milk\".",
	},
	{
		name: "rejected",
		msgs: []agent.Message{
			{Role: agent.RoleUser, Content: "delete task 3"},
			{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "rules-1", Name: "task_delete"}}},
			{Role: agent.RoleTool, ToolCallID: "rules-1", Name: "task_delete", Content: "Rejected by alice.", Status: approval.StatusRejected},
		},
		want: "task_delete was rejected, so it did not run.",
	},
	{
		name: "expired, the reply in JSON",
		msgs: []agent.Message{
			{Role: agent.RoleUser, Content: "/sql delete from t"},
			{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "c1", Name: "sql_execute"}}},
			{Role: agent.RoleTool, ToolCallID: "c1", Content: `{"status":"expired","approval_id":"abc"}`, Status: approval.StatusExpired},
		},
		want: "sql_execute was not approved in time (the approval expired), so it did not run.",
	},
	{
		name: "expired, the reply in words",
		msgs: []agent.Message{
			{Role: agent.RoleUser, Content: "delete task 3"},
			{Role: agent.RoleTool, ToolCallID: "x", Name: "task_delete", Content: "The approval expired before anyone decided.", Status: approval.StatusExpired},
		},
		want: "task_delete was not approved in time (the approval expired), so it did not run.",
	},
	{
		name: "chinese",
		msgs: []agent.Message{
			{Role: agent.RoleUser, Content: "删除任务 3"},
			{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "rules-1", Name: "task_delete"}}},
			{Role: agent.RoleTool, ToolCallID: "rules-1", Content: "已拒绝（张三）", Status: approval.StatusRejected},
		},
		want: "task_delete 已被拒绝，未执行。",
	},
	{
		name: "parallel results of this turn only",
		msgs: []agent.Message{
			{Role: agent.RoleUser, Content: "old"},
			{Role: agent.RoleTool, ToolCallID: "old", Name: "task_list", Content: "old result"},
			{Role: agent.RoleUser, Content: "new"},
			{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "a", Name: "task_create"}, {ID: "b", Name: "task_list"}}},
			{Role: agent.RoleTool, ToolCallID: "a", Content: "cancelled by the requester", Status: approval.StatusCancelled},
			{Role: agent.RoleTool, ToolCallID: "b", Content: "", Status: approval.StatusExecuted},
		},
		want: "task_create was cancelled, so it did not run.\ntask_list finished.",
	},
	{
		name: "the loop's wording",
		msgs: []agent.Message{
			{Role: agent.RoleUser, Content: "do five things"},
			{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "1", Name: "a"}, {ID: "2", Name: "b"}, {ID: "3", Name: "c"}, {ID: "4", Name: "d"}, {ID: "5", Name: "e"}, {ID: "6", Name: "f"}}},
			{Role: agent.RoleTool, ToolCallID: "1", Content: "Not run: declined by bob: wrong table. Do not propose this same call again; ask the user what they want instead.", Status: approval.StatusRejected},
			{Role: agent.RoleTool, ToolCallID: "2", Content: "Not run: the approval expired before anyone decided.", Status: approval.StatusExpired},
			{Role: agent.RoleTool, ToolCallID: "3", Content: "Not run: a newer request in this conversation replaced it.", Status: approval.StatusSuperseded},
			{Role: agent.RoleTool, ToolCallID: "4", Content: "Not run: the approval was withdrawn.", Status: approval.StatusCancelled},
			{Role: agent.RoleTool, ToolCallID: "5", Content: "Not run yet: still waiting for a person's approval (ab12).", Status: approval.StatusPending},
			{Role: agent.RoleTool, ToolCallID: "6", Content: "Failed: table t does not exist", Status: approval.StatusFailed},
		},
		want: "a was rejected, so it did not run.\n" +
			"b was not approved in time (the approval expired), so it did not run.\n" +
			"c was replaced by a newer request, so it did not run.\n" +
			"d was cancelled, so it did not run.\n" +
			"e is still waiting for a person's approval.\n" +
			"f failed: table t does not exist",
	},
	{
		name: "rejected in content is not a status",
		msgs: []agent.Message{
			{Role: agent.RoleUser, Content: "/sql select * from orders where state = 'rejected'"},
			{Role: agent.RoleTool, ToolCallID: "a", Name: "sql_query", Content: "2 rows: 17 rejected, 18 rejected", Status: approval.StatusExecuted},
		},
		want: "sql_query: 2 rows: 17 rejected, 18 rejected",
	},
	{
		name: "the reply's words are not a status",
		msgs: []agent.Message{
			{Role: agent.RoleUser, Content: "delete task 3"},
			{Role: agent.RoleTool, ToolCallID: "a", Name: "task_delete", Content: "Not run: declined by bob: wrong table.", Status: approval.StatusFailed},
		},
		want: "task_delete: Not run: declined by bob: wrong table.",
	},
}

func TestRulesSummarisesToolResults(t *testing.T) {
	m := mustRules(t, RulesConfig{})
	for _, test := range summaryTests {
		got := complete(t, m, builtinToolSpecs, test.msgs...)
		if len(got.ToolCalls) != 0 {
			t.Errorf("%s: got calls %+v, want text only (the turn must end)", test.name, got.ToolCalls)
		}
		if got.Content != test.want {
			t.Errorf("%s: got %q, want %q", test.name, got.Content, test.want)
		}
	}
}
