package metrics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/tools/mcptool"
)

// scrape returns the text the handler serves.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func wantLines(t *testing.T, text string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(text, l+"\n") {
			t.Errorf("metrics lack %q", l)
		}
	}
}

type fakeNotifier struct {
	approval.NopNotifier // Progress and Escalate do nothing

	showErr error
}

func (f fakeNotifier) Show(context.Context, *approval.Approval) ([]approval.CardRef, error) {
	return nil, f.showErr
}
func (f fakeNotifier) Settle(context.Context, *approval.Approval, approval.Outcome) error { return nil }

type fakeTool struct {
	out agent.Output
	err error
}

func (fakeTool) Name() string                           { return "fake" }
func (fakeTool) Description() string                    { return "" }
func (fakeTool) Schema() *jsonschema.Schema             { return &jsonschema.Schema{Type: "object"} }
func (fakeTool) Effect(json.RawMessage) approval.Effect { return approval.EffectWrite }
func (fakeTool) Preview(context.Context, json.RawMessage) (string, error) {
	return "", nil
}
func (f fakeTool) Run(context.Context, json.RawMessage) (agent.Output, error) { return f.out, f.err }

type fakeModel struct{ err error }

func (f fakeModel) Complete(context.Context, agent.Request) (agent.Response, error) {
	return agent.Response{}, f.err
}

func TestMetrics(t *testing.T) {
	m := New("v1.2.3")
	ctx := context.Background()

	m.Inbound("web")
	m.Inbound("web")
	m.Deduplicated("web")
	m.Refused("feishu")
	m.Refused("feishu")
	m.Decision("api", approval.StatusExecuted)
	m.Reload("ok")

	n := m.Notifier(fakeNotifier{})
	created := time.Now().Add(-3 * time.Second)
	a := &approval.Approval{Calls: []approval.Call{{Tool: "sql_execute"}}, Risk: approval.RiskHigh, CreatedAt: created}
	b := &approval.Approval{Calls: []approval.Call{{Tool: "sql_execute"}}, Risk: approval.RiskHigh, CreatedAt: created}
	n.Show(ctx, a)
	n.Show(ctx, b)
	a.DecidedAt = created.Add(2 * time.Second)
	n.Settle(ctx, a, approval.Outcome{Status: approval.StatusExecuted})
	failing := m.Notifier(fakeNotifier{showErr: errors.New("down")})
	c := &approval.Approval{Calls: []approval.Call{{Tool: "task_delete"}}, Risk: approval.RiskMedium, CreatedAt: created}
	if _, err := failing.Show(ctx, c); err == nil {
		t.Fatal("the wrapper swallowed Show's error")
	}

	for _, tt := range []fakeTool{
		{out: agent.Output{Content: "ok"}},
		{out: agent.Output{IsError: true}},
		{err: approval.ErrNotRun},
		{err: errors.New("connection reset")},
	} {
		w := m.Tool(tt)
		if w.Name() != "fake" || w.Effect(nil) != approval.EffectWrite {
			t.Fatal("the tool wrapper does not forward")
		}
		out, err := w.Run(ctx, nil)
		if out != tt.out || !errors.Is(err, tt.err) {
			t.Errorf("Run returned %v, %v; want %v, %v", out, err, tt.out, tt.err)
		}
	}

	md := m.Model(fakeModel{err: errors.New("503")}, "openai")
	md.Complete(ctx, agent.Request{})
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	m.Model(fakeModel{err: context.Canceled}, "openai").Complete(cancelled, agent.Request{})

	text := scrape(t, m)
	wantLines(t, text,
		`hitlbot_messages_inbound_total{channel="web"} 2`,
		`hitlbot_messages_deduplicated_total{channel="web"} 1`,
		`hitlbot_inbound_refused_total{channel="feishu"} 2`,
		`hitlbot_decisions_total{channel="api",status="executed"} 1`,
		`hitlbot_config_reloads_total{result="ok"} 1`,
		`hitlbot_approvals_requested_total{risk="HIGH",tool="sql_execute"} 2`,
		`hitlbot_approvals_requested_total{risk="MEDIUM",tool="task_delete"} 1`,
		`hitlbot_approvals_decided_total{risk="HIGH",status="executed",tool="sql_execute"} 1`,
		`hitlbot_approvals_decided_total{risk="MEDIUM",status="cancelled",tool="task_delete"} 1`,
		`hitlbot_approvals_pending 1`,
		`hitlbot_approval_decision_seconds_bucket{risk="HIGH",status="executed",le="1"} 0`,
		`hitlbot_approval_decision_seconds_bucket{risk="HIGH",status="executed",le="2"} 1`,
		`hitlbot_tool_duration_seconds_count{tool="fake"} 4`,
		`hitlbot_tool_errors_total{kind="failed",tool="fake"} 1`,
		`hitlbot_tool_errors_total{kind="not_run",tool="fake"} 1`,
		`hitlbot_tool_errors_total{kind="unknown",tool="fake"} 1`,
		`hitlbot_model_request_duration_seconds_count{provider="openai"} 2`,
		`hitlbot_model_errors_total{provider="openai"} 1`,
	)
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", `hitlbot_build_info{go_version="go`} {
		if !strings.Contains(text, name) {
			t.Errorf("metrics lack %s", name)
		}
	}
}

// recordingNotifier records the Progress and Escalate calls it gets.
type recordingNotifier struct {
	approval.NopNotifier
	progress []approval.ID
	steps    []int
	reminded []int
}

func (r *recordingNotifier) Remind(_ context.Context, a *approval.Approval, k int) error {
	r.reminded = append(r.reminded, k)
	return nil
}

func (r *recordingNotifier) Progress(_ context.Context, a *approval.Approval) error {
	r.progress = append(r.progress, a.ID)
	return nil
}

func (r *recordingNotifier) Escalate(_ context.Context, a *approval.Approval, step int) ([]approval.CardRef, error) {
	r.steps = append(r.steps, step)
	return []approval.CardRef{{Channel: "feishu", ChatID: "oc_oncall", MessageID: "om_" + string(a.ID)}}, nil
}

// TestNotifierForwardsEveryCapability: the metrics notifier hands a
// quorum's progress and an escalation step to the router (with the cards
// the step sent), and counts neither as a request nor as an end.
func TestNotifierForwardsEveryCapability(t *testing.T) {
	m := New("v1.2.3")
	next := &recordingNotifier{}
	n := m.Notifier(next)
	ctx := context.Background()
	a := &approval.Approval{ID: "a1", Calls: []approval.Call{{Tool: "sql_execute"}}, Risk: approval.RiskHigh, CreatedAt: time.Now()}
	if err := n.Progress(ctx, a); err != nil {
		t.Fatal(err)
	}
	refs, err := n.Escalate(ctx, a, 1)
	if err != nil || len(refs) != 1 || refs[0].MessageID != "om_a1" {
		t.Fatalf("Escalate returned %+v, %v", refs, err)
	}
	if err := n.Remind(ctx, a, 1); err != nil {
		t.Fatal(err)
	}
	if len(next.progress) != 1 || next.progress[0] != "a1" || len(next.steps) != 1 || next.steps[0] != 1 || len(next.reminded) != 1 || next.reminded[0] != 1 {
		t.Fatalf("forwarded progress %v, steps %v, reminders %v", next.progress, next.steps, next.reminded)
	}
	text := scrape(t, m)
	wantLines(t, text, "hitlbot_approvals_pending 0")
	if strings.Contains(text, "hitlbot_approvals_requested_total{") || strings.Contains(text, "hitlbot_approvals_decided_total{") {
		t.Fatalf("a redraw or an escalation step was counted:\n%s", text)
	}
}

func TestNilMetrics(t *testing.T) {
	var m *Metrics
	m.Inbound("web")
	m.Deduplicated("web")
	m.Refused("web")
	m.Decision("web", approval.StatusRejected)
	m.Reload("failed")
	if _, ok := m.Tool(fakeTool{}).(fakeTool); !ok {
		t.Error("a nil Metrics wrapped a tool")
	}
	if _, ok := m.Notifier(fakeNotifier{}).(fakeNotifier); !ok {
		t.Error("a nil Metrics wrapped a notifier")
	}
}

func TestRegistriesAreSeparate(t *testing.T) {
	// Two instances (two servers in one test binary) must not collide.
	a, b := New("a"), New("b")
	a.Inbound("cli")
	if strings.Contains(scrape(t, b), `hitlbot_messages_inbound_total{channel="cli"}`) {
		t.Error("metrics leak between instances")
	}
}

// assessTool is a fakeTool that measures its calls.
type assessTool struct{ fakeTool }

func (assessTool) Assess(context.Context, json.RawMessage) (approval.Blast, approval.Words) {
	return approval.Blast{Rows: 29, Measured: true}, approval.Words{EN: "affects 29 rows", ZH: "影响 29 行"}
}

// TestToolKeepsAssess: the metrics wrapper must not hide a tool's blast
// radius from the policy (the agent loop looks for agent.Assessor), and
// must not invent one for a tool without it.
func TestToolKeepsAssess(t *testing.T) {
	m := New("test")
	as, ok := m.Tool(assessTool{}).(agent.Assessor)
	if !ok {
		t.Fatal("the wrapped tool is no longer an agent.Assessor")
	}
	if b, p := as.Assess(context.Background(), nil); b.Rows != 29 || !b.Measured || p.EN != "affects 29 rows" || p.ZH != "影响 29 行" {
		t.Errorf("Assess through the wrapper = %+v, %q", b, p)
	}
	if _, ok := m.Tool(fakeTool{}).(agent.Assessor); ok {
		t.Error("a tool without Assess became an agent.Assessor")
	}
}

// checkTool is a fakeTool that refuses every call.
type checkTool struct{ fakeTool }

func (checkTool) Check(json.RawMessage) error { return errors.New("refused") }

// TestToolKeepsCheck: the metrics wrapper must not hide a tool's refusal
// from Registry.Check (the rules model asks it which SQL tool to call).
func TestToolKeepsCheck(t *testing.T) {
	m := New("test")
	for _, test := range []struct {
		tool    agent.Tool
		refuses bool
	}{{checkTool{}, true}, {fakeTool{}, false}, {assessTool{}, false}} {
		r := agent.NewRegistry()
		if err := r.Register(m.Tool(test.tool)); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Check("fake", json.RawMessage(`{}`)); (err != nil) != test.refuses {
			t.Errorf("%T: Check through the wrapper = %v, want refused %v", test.tool, err, test.refuses)
		}
	}
}

// namedTool is a fakeTool with a name.
type namedTool struct {
	fakeTool
	name string
}

func (n namedTool) Name() string { return n.name }

// TestMCPToolLabelsAreBounded: an MCP server names its tools and may
// rename them without end; its tools get at most MaxToolLabels tool labels
// of their own (in the tools' metrics and the approvals'), the rest share
// "<server>__(other)". Built-in tools keep their names.
func TestMCPToolLabelsAreBounded(t *testing.T) {
	m := New("v")
	m.MCP(func() []mcptool.ServerStatus { return []mcptool.ServerStatus{{Name: "u"}} })
	ctx := context.Background()
	n := notifierOf(m)
	for i := range MaxToolLabels + 50 {
		name := fmt.Sprintf("u__tool%03d", i)
		if _, err := m.Tool(namedTool{name: name}).Run(ctx, nil); err != nil {
			t.Fatal(err)
		}
		a := &approval.Approval{Calls: []approval.Call{{Tool: name}}, Risk: approval.RiskHigh}
		_, _ = n.Show(ctx, a)
		_ = n.Settle(ctx, a, approval.Outcome{Status: approval.StatusRejected})
	}
	_, _ = m.Tool(namedTool{name: "fs__x"}).Run(ctx, nil)
	text := scrape(t, m)
	for _, metric := range []string{"hitlbot_tool_duration_seconds_count", "hitlbot_approvals_requested_total", "hitlbot_approvals_decided_total"} {
		labels := map[string]bool{}
		for _, line := range strings.Split(text, "\n") {
			if rest, ok := strings.CutPrefix(line, metric+"{"); ok {
				_, v, _ := strings.Cut(rest, `tool="`)
				v, _, _ = strings.Cut(v, `"`)
				labels[v] = true
			}
		}
		if !labels["u__(other)"] || !labels["u__tool000"] || labels[fmt.Sprintf("u__tool%03d", MaxToolLabels)] {
			t.Errorf("%s: the labels are not the first %d tools and u__(other)", metric, MaxToolLabels)
		}
		if want := MaxToolLabels + 1; len(labels)-btoi(labels["fs__x"]) != want {
			t.Errorf("%s: %d tool labels of server u; want %d", metric, len(labels)-btoi(labels["fs__x"]), want)
		}
	}
	wantLines(t, text, `hitlbot_tool_duration_seconds_count{tool="fs__x"} 1`,
		fmt.Sprintf(`hitlbot_tool_duration_seconds_count{tool="u__(other)"} %d`, 50))
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// notifierOf is m's notifier over one that shows and settles nothing.
func notifierOf(m *Metrics) approval.Notifier { return m.Notifier(fakeNotifier{}) }
