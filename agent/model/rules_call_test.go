package model

import (
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
)

// callToolSpecs are the tools the /call tests offer.
var callToolSpecs = []agent.ToolSpec{
	{Name: "fs__write_file"}, {Name: "fs__read_file"}, {Name: "fs__list_directory"},
	{Name: "task_list"}, {Name: "task_create"},
}

// callTest is one /call message and its answer: a call of tool with args
// exactly as given (the arguments are passed on as written), or, when
// tool is empty, a text that contains every one of text and none of
// notText.
type callTest struct {
	name    string
	in      string
	tool    string
	args    string
	text    []string
	notText []string
}

const usageEN = "Usage: /call <tool>"

var callTests = []callTest{
	{name: "good object", in: `/call fs__write_file {"path":"/srv/share/a.txt","content":"hi"}`,
		tool: "fs__write_file", args: `{"path":"/srv/share/a.txt","content":"hi"}`},
	{name: "spacing kept", in: `/call fs__write_file   { "path" : "/a" ,"content":"x" }  `,
		tool: "fs__write_file", args: `{ "path" : "/a" ,"content":"x" }`},
	{name: "no args", in: "/call task_list", tool: "task_list", args: `{}`},
	{name: "empty object", in: "/call task_list {}", tool: "task_list", args: `{}`},
	{name: "brace right after the name", in: `/call task_create{"title":"x"}`, tool: "task_create", args: `{"title":"x"}`},
	{name: "command in capitals", in: "/CALL task_list", tool: "task_list", args: `{}`},
	{name: "full-width command and name", in: "／ｃａｌｌ　ｔａｓｋ＿ｌｉｓｔ", tool: "task_list", args: `{}`},
	{name: "chinese command", in: `/调用 task_create {"title":"买牛奶"}`, tool: "task_create", args: `{"title":"买牛奶"}`},
	{name: "multi-line", in: "/call fs__write_file\n{\n  \"path\": \"/a\",\n  \"content\": \"x\"\n}\n",
		tool: "fs__write_file", args: "{\n  \"path\": \"/a\",\n  \"content\": \"x\"\n}"},
	{name: "name on the next line too", in: "/call\nfs__read_file\n{\"path\":\"/a\"}", tool: "fs__read_file", args: `{"path":"/a"}`},
	{name: "nested, strings with braces", in: `/call fs__write_file {"path":"/a","content":"} { \"x\": [1,{}] } {","meta":{"tags":["{","}"],"n":{"m":[{}]}}}`,
		tool: "fs__write_file", args: `{"path":"/a","content":"} { \"x\": [1,{}] } {","meta":{"tags":["{","}"],"n":{"m":[{}]}}}`},
	{name: "numbers as written", in: `/call task_create {"n":1.50,"big":12345678901234567890}`,
		tool: "task_create", args: `{"n":1.50,"big":12345678901234567890}`},
	{name: "full-width punctuation outside strings is folded, not inside",
		in:   `/call task_create ｛"title"："买牛奶，今天"，"due"："明天"｝`,
		tool: "task_create", args: `{"title":"买牛奶，今天","due":"明天"}`},
	{name: "valid JSON with full-width text is never folded", in: `/call task_create {"title":"ａ：ｂ｛｝"}`,
		tool: "task_create", args: `{"title":"ａ：ｂ｛｝"}`},
	{name: "a schema-invalid object is still passed on (the loop validates)", in: `/call task_list {"bogus":true}`,
		tool: "task_list", args: `{"bogus":true}`},

	{name: "text after the JSON", in: `/call task_list {} please`,
		text: []string{"text after the JSON object of task_list's arguments", `"please"`, "Nothing was called", usageEN}},
	{name: "two objects", in: `/call task_list {}{"a":1}`, text: []string{`("{\"a\":1}")`, usageEN}},
	{name: "an array", in: "/call task_list [1,2]", text: []string{"must be one JSON object", "nothing was called", usageEN}},
	{name: "a string", in: `/call task_list "x"`, text: []string{"must be one JSON object"}},
	{name: "null", in: "/call task_list null", text: []string{"must be one JSON object"}},
	{name: "invalid JSON", in: `/call task_create {"title": }`, text: []string{"not valid JSON (near character 11)", usageEN}},
	{name: "unfinished JSON", in: `/call task_create {"title":"a"`, text: []string{"end before their JSON is complete", usageEN}},
	{name: "unfinished string", in: `/call task_create {"title":"a}`, text: []string{"end before their JSON is complete"}},
	{name: "single quotes", in: `/call task_create {'title':'a'}`, text: []string{"not valid JSON (near character 2)"}},
	{name: "a word", in: "/call task_create hello", text: []string{"not valid JSON (near character 1)"}},
	{name: "full-width folding does not rescue bad JSON", in: `/call task_create ｛"title"："a"`, text: []string{"not valid JSON"}},
	{name: "chinese: answered in Chinese", in: `/call task_create {"title":"买牛奶"} 谢谢`,
		text: []string{"task_create 的参数 JSON 对象后面还有内容", `"谢谢"`, "用法：/call"}, notText: []string{"Usage"}},

	{name: "unknown tool: same server", in: `/call fs__write {"path":"/a"}`,
		text: []string{"There is no tool fs__write here", "Did you mean: fs__write_file, fs__list_directory, fs__read_file?", usageEN}},
	{name: "unknown tool: a server's tool without its prefix", in: "/call write_file {}", text: []string{"Did you mean: fs__write_file?"}},
	{name: "unknown tool: a typo", in: "/call task_lst", text: []string{"Did you mean: task_list?"}},
	{name: "unknown tool: another case", in: "/call Task_List", text: []string{"Did you mean: task_list?"}},
	{name: "unknown tool: nothing close", in: "/call launch_rockets {}", text: []string{"There is no tool launch_rockets here"}, notText: []string{"Did you mean"}},
	{name: "unknown tool is said before bad JSON", in: "/call nope {", text: []string{"There is no tool nope here"}, notText: []string{"not valid JSON"}},
	{name: "unknown tool, in Chinese", in: "/调用 fs__remove {}", text: []string{"这里没有工具 fs__remove", "你是不是想用："}},

	{name: "no tool", in: "/call", text: []string{usageEN}, notText: []string{"There is no tool"}},
	{name: "no tool, only JSON", in: `/call {"a":1}`, text: []string{usageEN}, notText: []string{"There is no tool"}},
	{name: "not the command", in: "/calling task_list", text: []string{helpMarker}},
}

func checkCallTest(t *testing.T, got agent.Message, test callTest) {
	t.Helper()
	if test.tool == "" {
		if len(got.ToolCalls) != 0 {
			t.Errorf("%s: got call %s %s, want a text", test.name, got.ToolCalls[0].Name, got.ToolCalls[0].Args)
			return
		}
		for _, w := range test.text {
			if !strings.Contains(got.Content, w) {
				t.Errorf("%s: text %q lacks %q", test.name, got.Content, w)
			}
		}
		for _, w := range test.notText {
			if strings.Contains(got.Content, w) {
				t.Errorf("%s: text %q has %q", test.name, got.Content, w)
			}
		}
		return
	}
	if len(got.ToolCalls) != 1 {
		t.Errorf("%s: got %d calls (text %q), want %s %s", test.name, len(got.ToolCalls), got.Content, test.tool, test.args)
		return
	}
	c := got.ToolCalls[0]
	if c.Name != test.tool || string(c.Args) != test.args || c.Confidence != 1 || c.ID != "rules-1" {
		t.Errorf("%s: got %s %s (confidence %v, id %q), want %s %s (confidence 1, id rules-1)", test.name, c.Name, c.Args, c.Confidence, c.ID, test.tool, test.args)
	}
}

func TestRulesCallCommand(t *testing.T) {
	m := mustRules(t, RulesConfig{})
	for _, test := range callTests {
		checkCallTest(t, complete(t, m, callToolSpecs, agent.Message{Role: agent.RoleUser, Content: test.in}), test)
	}
}

// No configured pattern can shadow /call or /tools: they are tried first.
func TestRulesCallBeforePatterns(t *testing.T) {
	m := mustRules(t, RulesConfig{Patterns: []RulePattern{
		{Name: "greedy", Regexp: `(?s).*`, Tool: "task_create", Args: map[string]string{"title": "${0}"}},
	}})
	checkCallTest(t, complete(t, m, callToolSpecs, agent.Message{Role: agent.RoleUser, Content: "/call task_list"}),
		callTest{name: "/call", tool: "task_list", args: `{}`})
	got := complete(t, m, callToolSpecs, agent.Message{Role: agent.RoleUser, Content: "/tools"})
	if len(got.ToolCalls) != 0 || !strings.Contains(got.Content, "• task_list") {
		t.Errorf("/tools under a greedy pattern: %+v", got)
	}
	// Anything else still goes to the pattern.
	checkCallTest(t, complete(t, m, callToolSpecs, agent.Message{Role: agent.RoleUser, Content: "/calling"}),
		callTest{name: "other", tool: "task_create", args: `{"title":"/calling"}`})
}

// The help lists the two commands in both languages.
func TestRulesHelpHasCallAndTools(t *testing.T) {
	got := complete(t, mustRules(t, RulesConfig{}), callToolSpecs, agent.Message{Role: agent.RoleUser, Content: "hello"})
	for _, want := range []string{"• /tools — ", "• /call <tool> <JSON arguments> — ", "• /tools 或 /工具 — ", "• /call <工具> <JSON 参数> — "} {
		if !strings.Contains(got.Content, want) {
			t.Errorf("help lacks %q: %s", want, got.Content)
		}
	}
}
