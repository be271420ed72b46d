package channels_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/agent/model"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/internal/hitltest"
	"github.com/hitlbot/hitlbot/tools/demodb"
	"github.com/hitlbot/hitlbot/tools/httptool"
	"github.com/hitlbot/hitlbot/tools/shell"
	sqltool "github.com/hitlbot/hitlbot/tools/sql"
	"github.com/hitlbot/hitlbot/words"
	"github.com/hitlbot/hitlbot/words/wordstest"
)

// lateModel is a model set after the stack is built (the rules model
// asks the stack's registry).
type lateModel struct{ m agent.Model }

func (l *lateModel) Complete(ctx context.Context, r agent.Request) (agent.Response, error) {
	return l.m.Complete(ctx, r)
}

// zhNames are the names the sentences of TestEverythingSaidInChinese
// hold: the demo database's, the test tools' names and what they print.
var zhNames = []string{"alice", "demo", "orders", "ping", "disk", "usage", "pong"}

// TestEverythingSaidInChinese: with the language zh, every kind of
// sentence the bot says in a turn — /tools, the results of the SQL, HTTP
// and command tools, the rules model's summaries of executed, rejected
// and failed calls, the cards of their approvals and the errors of every
// kind — is Chinese except names, code and values (wordstest.English).
// Before the fix it printed, among others, "sql_execute was rejected, so
// it did not run.", "INSERT done on demo: 1 row affected" and "• sql_query
// — LOW — 低风险（只读）".
func TestEverythingSaidInChinese(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	ctx := context.Background()
	db, err := demodb.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	dbs := &sqltool.Databases{}
	if err := dbs.OpenDB("demo", "sqlite", db); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("to") == "away" {
			w.Header().Set("Location", "/elsewhere")
			w.WriteHeader(http.StatusFound)
			return
		}
		_, _ = w.Write([]byte("pong"))
	}))
	t.Cleanup(srv.Close)
	hts, err := httptool.New([]httptool.ToolConfig{{Name: "ping_api", Description: "检查服务是否在线。", Method: "GET",
		URL: srv.URL + "/ping", Query: map[string]string{"to": "{{.to}}"},
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"to": map[string]any{"type": "string"}}}}}, nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	shs, err := shell.New(shell.Config{Enabled: true, Commands: []shell.CommandConfig{
		{Name: "disk_usage", Description: "Shows the disk usage.", Argv: []string{"sh", "-c", "exit 3"}},
		{Name: "say_nothing", Description: "Prints nothing.", Argv: []string{"true"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	tools := append([]agent.Tool{sqltool.NewQueryTool(dbs), sqltool.NewExecuteTool(dbs)}, hts...)
	tools = append(tools, shs...)

	ch := newFake("fake")
	late := &lateModel{}
	st := hitltest.New(t, hitltest.Config{Model: late, Tools: tools, Lang: "zh",
		Loop: func(lc *agent.LoopConfig) { lc.Lang = "zh" }})
	pol, err := approval.NewPolicy(approval.DefaultPolicyConfig())
	if err != nil {
		t.Fatal(err)
	}
	rules, err := model.NewRules(model.RulesConfig{}, model.RulesDeps{Tools: st.Tools,
		Risk: func(name string) (approval.Risk, approval.Words, bool) { return st.Tools.Risk(pol, name) }})
	if err != nil {
		t.Fatal(err)
	}
	late.m = rules
	st.Register(t, ch)
	g := &rig{ch: ch}
	g.fill(st)

	// turn sends text and waits for the turn's answer.
	turn := func(text, wait string) {
		t.Helper()
		n := len(ch.texts())
		g.send(t, msg("alice", text))
		defer func() {
			if t.Failed() {
				t.Logf("said: %q", ch.texts())
			}
		}()
		eventually(t, "the answer to "+text, func() bool {
			for _, s := range ch.texts()[n:] {
				if strings.Contains(s, wait) {
					return true
				}
			}
			return false
		})
	}
	// ask sends text and waits for its approval's card.
	ask := func(text string) {
		t.Helper()
		n := len(ch.shownCards())
		g.send(t, msg("alice", text))
		eventually(t, "the card of "+text, func() bool { return len(ch.shownCards()) > n })
	}
	// decide answers the pending approval with a typed reply.
	decide := func(reply, wait string) {
		t.Helper()
		turn(reply, wait)
	}

	// The statements sent are code: a card shows them as written.
	var code []string
	sql := func(stmt string) string { code = append(code, stmt); return "/sql " + stmt }
	turn("/tools", "sql_query")
	turn(sql("SELECT COUNT(*) AS n FROM orders"), "（1 行）")
	ask(sql("INSERT INTO orders (customer, amount_cents, status, created_at) VALUES ('x', 1, 'paid', '2026-01-01')"))
	decide("确认", "INSERT 已在 demo 上执行：影响 1 行")
	ask(sql("UPDATE orders SET amount_cents = 2 WHERE id = 1"))
	decide("取消", "sql_execute 已被拒绝，未执行。")
	ask(sql("INSERT INTO nowhere VALUES (1)"))
	decide("确认", "在 demo 上执行失败")
	turn(`/call ping_api {"to":"here"}`, "HTTP 200")
	turn(`/call ping_api {"to":"away"}`, "不跟随重定向")
	ask(`/call disk_usage {}`)
	decide("确认", "退出码 3")
	ask(`/call say_nothing {}`)
	decide("确认", "（无输出）")
	turn(`/call no_such_tool {}`, "no_such_tool")
	g.drain()

	var said []string
	for _, s := range ch.texts() {
		_, text, _ := strings.Cut(s, ": ") // "kind: text"
		said = append(said, text)
	}
	for _, s := range ch.shownCards() {
		said = append(said, cards.Text(s.v, "zh"))
	}
	for _, s := range ch.settledCards() {
		said = append(said, cards.Text(s.v, "zh"))
	}
	for _, k := range []errkind.Kind{errkind.NotFound, errkind.Permission, errkind.Conflict, errkind.Expired,
		errkind.Unavailable, errkind.Invalid, errkind.Internal, errkind.Other, errkind.Closed} {
		said = append(said, approval.UserMessageIn(approval.E("test", k, "", nil), "zh"))
	}
	for _, s := range said {
		// A line of a result table is values, not words.
		var kept []string
		for _, c := range code {
			s = strings.ReplaceAll(s, c, "")
		}
		for _, line := range strings.Split(s, "\n") {
			// A result table's rule and header, and an approval's code,
			// are values.
			if strings.HasPrefix(strings.TrimSpace(line), "-") || strings.TrimSpace(line) == "n" || strings.HasPrefix(line, words.Text(words.ZH, words.CardCode)+":") {
				continue
			}
			kept = append(kept, line)
		}
		if w := wordstest.English(strings.Join(kept, "\n"), zhNames...); len(w) > 0 {
			t.Errorf("said in zh with English %q:\n%s", w, s)
		}
	}
	if len(said) < 20 {
		t.Fatalf("only %d sentences were said: %q", len(said), said)
	}
}
