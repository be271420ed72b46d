package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cmd/bot/internal/config"
	"github.com/hitlbot/hitlbot/words"
)

// TestGreeting: the greeting says what the bot does in the chat's
// language, and lists the demo's three requests only when the demo runs.
func TestGreeting(t *testing.T) {
	for _, tc := range []struct {
		lang      words.Lang
		demo      bool
		want, not []string
	}{
		{words.EN, true, []string{"an assistant that does real work", "Try these with the demo database:",
			"  list tasks  — a read: it runs at once",
			"  /sql SELECT status, count(*) FROM orders GROUP BY status  — a read-only query",
			"  /sql DELETE FROM orders WHERE status = 'cancelled'  — a delete: it asks for your approval first"}, []string{"演示"}},
		{words.ZH, true, []string{"真正办事的助手", "用演示数据库试试这些：",
			"  list tasks  — 读取：立即执行",
			"  /sql SELECT status, count(*) FROM orders GROUP BY status  — 只读查询",
			"  /sql DELETE FROM orders WHERE status = 'cancelled'  — 删除：执行前先请你确认"}, []string{"demo database", "a read"}},
		{words.EN, false, []string{"an assistant that does real work"}, []string{"demo", "list tasks", "/sql"}},
		{words.ZH, false, []string{"真正办事的助手"}, []string{"演示", "list tasks", "/sql"}},
	} {
		g := greeting(tc.lang, tc.demo)
		for _, w := range tc.want {
			if !strings.Contains(g, w) {
				t.Errorf("%s demo=%v: the greeting lacks %q:\n%s", tc.lang, tc.demo, w, g)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(g, w) {
				t.Errorf("%s demo=%v: the greeting holds %q:\n%s", tc.lang, tc.demo, w, g)
			}
		}
		// The chat counts its prompts and finds its approval prompt in
		// the output: the greeting must hold neither.
		if strings.Contains(g, "> ") || strings.Contains(g, "确认执行?") {
			t.Errorf("%s demo=%v: the greeting looks like a prompt:\n%s", tc.lang, tc.demo, g)
		}
	}
}

// TestDemoOn: the examples are offered only when they work as they say:
// the demo database, the task tools, and a delete that asks.
func TestDemoOn(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(c *config.Config)
		want bool
	}{
		{"defaults", func(c *config.Config) {}, true},
		{"own databases", func(c *config.Config) { c.Tools.SQL.Databases = []config.SQLDatabase{{}} }, false},
		{"no task tools", func(c *config.Config) { c.Tools.Tasks.Enabled = false }, false},
		{"approvals off", func(c *config.Config) { c.Approval.Policy.Enabled = false }, false},
		{"sql_execute never asks", func(c *config.Config) {
			c.Approval.Policy.Tools = map[string]approval.ToolPolicy{"sql_execute": {Confirm: "never"}}
		}, false},
		{"sql_execute always asks", func(c *config.Config) {
			c.Approval.Policy.Tools = map[string]approval.ToolPolicy{"sql_execute": {Confirm: "always"}}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Load(config.Options{})
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(cfg)
			if got := demoOn(cfg); got != tc.want {
				t.Errorf("demoOn = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestChatGreets: `bot chat` greets before its first prompt, in
// channels.cli.lang, else approval.lang, with the demo's examples when
// the demo runs.
func TestChatGreets(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want words.Lang
		demo bool
	}{
		{"default", nil, words.EN, true},
		{"approval.lang zh", map[string]string{"HITLBOT_APPROVAL_LANG": "zh"}, words.ZH, true},
		{"cli lang zh", map[string]string{"HITLBOT_CHANNELS_CLI_LANG": "zh"}, words.ZH, true},
		{"cli lang en over approval.lang zh", map[string]string{"HITLBOT_APPROVAL_LANG": "zh", "HITLBOT_CHANNELS_CLI_LANG": "en"}, words.EN, true},
		{"no demo", map[string]string{"HITLBOT_TOOLS_TASKS_ENABLED": "false"}, words.EN, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var out, errb syncBuffer
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if st := run(ctx, []string{"chat", "-data", t.TempDir()}, strings.NewReader(""), &out, &errb); st != 0 {
				t.Fatalf("chat exited with %d:\n%s\n%s", st, out.String(), errb.String())
			}
			want := greeting(tc.want, tc.demo) + "\n\n> "
			if got := out.String(); !strings.HasPrefix(got, want) {
				t.Errorf("the chat begins\n%q\nwant\n%q", got, want)
			}
		})
	}
}

// TestWebGreeting: the page greets with the same words as the terminal,
// its examples the demo's three requests.
func TestWebGreeting(t *testing.T) {
	for _, lang := range words.Langs {
		g, text := webGreeting(lang, true), greeting(lang, true)
		if len(g.Examples) != 3 || !strings.HasPrefix(text, g.Text) {
			t.Fatalf("%s: web greeting %+v, terminal %q", lang, g, text)
		}
		for _, e := range g.Examples {
			if !strings.Contains(text, e.Request+"  — "+e.What) {
				t.Errorf("%s: example %+v is not the terminal's", lang, e)
			}
		}
		if g := webGreeting(lang, false); len(g.Examples) != 0 || g.Text != greeting(lang, false) {
			t.Errorf("%s without the demo: %+v", lang, g)
		}
	}
}
