package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/agent/model"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/hitltest"
)

var quiet = slog.New(slog.DiscardHandler)

type opArgs = hitltest.Args

// dropTool is a destructive tool whose target decides how it ends: "bad"
// is a failure the tool knows about, "boom" an error of unknown effect,
// anything else a success.
type dropTool struct{ runs atomic.Int64 }

func (t *dropTool) Name() string        { return "drop" }
func (t *dropTool) Description() string { return "drops a table" }
func (t *dropTool) Schema() *jsonschema.Schema {
	s, err := jsonschema.For[opArgs](nil)
	if err != nil {
		panic(err)
	}
	return s
}
func (t *dropTool) Effect(json.RawMessage) approval.Effect { return approval.EffectDestructive }
func (t *dropTool) Preview(_ context.Context, args json.RawMessage) (string, error) {
	return "drop " + string(args), nil
}
func (t *dropTool) Run(_ context.Context, args json.RawMessage) (agent.Output, error) {
	t.runs.Add(1)
	var a opArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return agent.Output{}, err
	}
	switch a.Target {
	case "bad":
		return agent.Output{Content: "no such table: bad", IsError: true}, nil
	case "boom":
		return agent.Output{}, errors.New("connection lost during commit")
	}
	return agent.Output{Content: "dropped " + a.Target}, nil
}

// scripted is a Model that plays a script: a function of the request.
type scripted func(req agent.Request) (agent.Response, error)

func (s scripted) Complete(ctx context.Context, req agent.Request) (agent.Response, error) {
	return s(req)
}

// callThenSummarise asks for calls on the user's message, then answers with
// the tool results it got.
func callThenSummarise(calls ...agent.ToolCall) scripted {
	return func(req agent.Request) (agent.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == agent.RoleTool {
			var parts []string
			for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role == agent.RoleTool; i-- {
				parts = append([]string{req.Messages[i].Content}, parts...)
			}
			return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "summary: " + strings.Join(parts, " | ")}}, nil
		}
		return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, ToolCalls: calls}}, nil
	}
}

func call(id, name, target string) agent.ToolCall {
	return agent.ToolCall{ID: id, Name: name, Args: json.RawMessage(`{"target":"` + target + `"}`), Confidence: 1}
}

// speaker records what the agent says in the chat (said), every event
// (events), and hands each turn's result to the channel registered for
// its message id (or for a resumed turn, its approval id).
type speaker struct {
	mu      sync.Mutex
	said    []agent.Say
	events  []agent.Say
	results map[string]chan agent.TurnResult
	resumed chan resumedTurn
}

// resumedTurn is the end of a resumed turn.
type resumedTurn struct {
	to  agent.Inbound
	res agent.TurnResult
}

// noticesWith counts the notices said that start with prefix.
func (s *speaker) noticesWith(prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.events {
		if m.Kind == agent.SayNotice && strings.HasPrefix(m.Text, prefix) {
			n++
		}
	}
	return n
}

func (s *speaker) Say(_ context.Context, to agent.Inbound, m agent.Say) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, m)
	switch m.Kind {
	case agent.SayTurnEnded:
		if to.Resumed != "" {
			if s.resumed != nil {
				s.resumed <- resumedTurn{to, *m.Result}
			}
			return nil
		}
		if ch := s.results[to.MessageID]; ch != nil {
			delete(s.results, to.MessageID)
			ch <- *m.Result
		}
	case agent.SayAwaiting:
	default:
		s.said = append(s.said, m)
	}
	return nil
}

// expect registers the channel that receives the result of msgID's turn.
func (s *speaker) expect(msgID string) chan agent.TurnResult {
	ch := make(chan agent.TurnResult, 1)
	s.mu.Lock()
	if s.results == nil {
		s.results = map[string]chan agent.TurnResult{}
	}
	s.results[msgID] = ch
	s.mu.Unlock()
	return ch
}

func (s *speaker) kinds() []agent.SayKind {
	s.mu.Lock()
	defer s.mu.Unlock()
	var k []agent.SayKind
	for _, m := range s.said {
		k = append(k, m.Kind)
	}
	return k
}

// shower is a Notifier that hands every new approval to the test and,
// as the router does, resumes the turn of every approval that ends.
type shower struct {
	approval.NopNotifier // Progress and Escalate do nothing

	shown chan *approval.Approval
	h     *harness
}

func (n *shower) Show(_ context.Context, a *approval.Approval) ([]approval.CardRef, error) {
	n.shown <- a
	return nil, nil
}

func (n *shower) Settle(_ context.Context, a *approval.Approval, o approval.Outcome) error {
	if l := n.h.current(); l != nil {
		l.Resume(a, o)
	}
	return nil
}

type harness struct {
	mu      sync.Mutex
	loop    *agent.Loop
	engine  *approval.Engine
	clk     *clock.Fake
	speak   *speaker
	shown   chan *approval.Approval
	history *agent.MemoryHistory
	read    *hitltest.Tool
	del     *hitltest.Tool
	write   *hitltest.Tool
	drop    *dropTool
	reg     *agent.Registry
	cfg     agent.LoopConfig
}

func newHarness(t *testing.T, model agent.Model, mod ...func(*agent.LoopConfig)) *harness {
	t.Helper()
	h := &harness{clk: clock.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)), speak: &speaker{resumed: make(chan resumedTurn, 16)},
		shown: make(chan *approval.Approval, 16), history: agent.NewMemoryHistory(),
		read: hitltest.NewTool("look", approval.EffectRead), del: hitltest.NewTool("erase", approval.EffectDestructive),
		write: hitltest.NewTool("note", approval.EffectWrite), drop: &dropTool{}}
	reg := agent.NewRegistry()
	if err := reg.Register(h.read, h.del, h.write, h.drop); err != nil {
		t.Fatal(err)
	}
	pol0, err := approval.NewPolicy(approval.DefaultPolicyConfig())
	if err != nil {
		t.Fatal(err)
	}
	eng, err := approval.NewEngine(approval.EngineConfig{Store: memstore.New(memstore.Options{}), Notifier: &shower{shown: h.shown, h: h},
		Dispatcher: reg, Audit: hitltest.NopAudit{}, Clock: h.clk, Logger: quiet, PollInterval: time.Hour,
		Editor: agent.EditChecker{Tools: reg, Policy: func() *approval.Policy { return pol0 }}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	h.engine, h.reg = eng, reg
	pol, err := approval.NewPolicy(approval.DefaultPolicyConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.LoopConfig{Model: model, Tools: reg, Engine: eng, Policy: func() *approval.Policy { return pol },
		History: h.history, Speaker: h.speak, Clock: clock.Real{}, Logger: quiet, SlowNotice: time.Hour}
	for _, m := range mod {
		m(&cfg)
	}
	h.cfg = cfg
	h.start(t)
	return h
}

// start gives the harness a new loop on the same engine and history.
func (h *harness) start(t *testing.T) {
	t.Helper()
	loop, err := agent.NewLoop(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	h.loop = loop
	h.mu.Unlock()
	t.Cleanup(func() { loop.Close(context.Background()) })
}

// current returns the harness's loop.
func (h *harness) current() *agent.Loop {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.loop
}

// nextResumed returns the end of the next resumed turn.
func (h *harness) nextResumed(t *testing.T) resumedTurn {
	t.Helper()
	select {
	case r := <-h.speak.resumed:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no turn was resumed")
	}
	return resumedTurn{}
}

// restart closes the loop (its turns stop waiting; their approvals stay
// open) and starts a new one, as a process restart would.
func (h *harness) restart(t *testing.T) {
	t.Helper()
	if err := h.loop.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.start(t)
}

func (h *harness) submit(t *testing.T, session, text string) <-chan agent.TurnResult {
	t.Helper()
	id := fmt.Sprintf("m-%d", msgSeq.Add(1))
	ch := h.speak.expect(id)
	err := h.current().Submit(agent.Inbound{Session: approval.SessionKey(session), Channel: "test", ChatID: session, User: "alice",
		UserName: "Alice 张", MessageID: id, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

var msgSeq atomic.Int64

func (h *harness) nextApproval(t *testing.T) *approval.Approval {
	t.Helper()
	select {
	case a := <-h.shown:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("no approval was requested")
	}
	return nil
}

func result(t *testing.T, ch <-chan agent.TurnResult) agent.TurnResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the turn did not finish")
	}
	return agent.TurnResult{}
}

func (h *harness) decide(t *testing.T, a *approval.Approval, verb approval.Verb) approval.Outcome {
	t.Helper()
	o, err := h.engine.Decide(context.Background(), a.ID, approval.Decision{Verb: verb, Actor: "alice", Source: approval.SourceCard, PayloadSHA256: a.PayloadSHA256, Comment: "checked"})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestApprovedRunsOnce(t *testing.T) {
	h := newHarness(t, callThenSummarise(call("c1", "erase", "orders")))
	ch := h.submit(t, "s1", "erase the orders")
	a := h.nextApproval(t)
	if a.Tool() != "erase" || a.Risk != approval.RiskHigh || !strings.Contains(a.Summary, "orders") {
		t.Fatalf("approval = %+v", a)
	}
	if o := h.decide(t, a, approval.Approve); o.Status != approval.StatusExecuted {
		t.Fatalf("decision = %+v", o)
	}
	r := result(t, ch)
	if h.del.Runs.Load() != 1 || r.Text != "summary: erase done (run 1)" {
		t.Fatalf("runs %d, result %+v", h.del.Runs.Load(), r)
	}
	if len(r.Actions) != 1 || r.Actions[0].Status != "executed" {
		t.Fatalf("actions = %+v", r.Actions)
	}
	if k := h.speak.kinds(); len(k) != 2 || k[0] != agent.SayToolResult || k[1] != agent.SayAnswer {
		t.Fatalf("said %v", k)
	}
	// The turn's events, typed: it waited, a tool ran, it answered, it ended.
	h.speak.mu.Lock()
	var ev []agent.SayKind
	for _, e := range h.speak.events {
		ev = append(ev, e.Kind)
	}
	h.speak.mu.Unlock()
	want := []agent.SayKind{agent.SayAwaiting, agent.SayToolResult, agent.SayAnswer, agent.SayTurnEnded}
	if fmt.Sprint(ev) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", ev, want)
	}
	conv, _ := h.history.Load(context.Background(), "s1")
	if len(conv.Suspended) != 0 || len(conv.Messages) != 4 {
		t.Fatalf("history = %+v", conv)
	}
}

func TestRejectedNeverRuns(t *testing.T) {
	// The model stubbornly proposes the same call again after the refusal.
	var rounds atomic.Int64
	model := scripted(func(req agent.Request) (agent.Response, error) {
		if rounds.Add(1) <= 2 {
			return agent.Response{Message: agent.Message{ToolCalls: []agent.ToolCall{call(fmt.Sprint("c", rounds.Load()), "erase", "orders")}}}, nil
		}
		return agent.Response{Message: agent.Message{Content: "ok, not doing it"}}, nil
	})
	h := newHarness(t, model)
	ch := h.submit(t, "s1", "erase the orders")
	a := h.nextApproval(t)
	if o := h.decide(t, a, approval.Reject); o.Status != approval.StatusRejected {
		t.Fatalf("decision = %+v", o)
	}
	r := result(t, ch)
	if h.del.Runs.Load() != 0 {
		t.Fatal("a rejected call ran")
	}
	select {
	case a2 := <-h.shown:
		t.Fatalf("the same declined call asked again: %s", a2.ID)
	default:
	}
	if len(r.Actions) != 2 || r.Actions[0].Status != "rejected" || r.Actions[1].Status != "rejected" || !strings.Contains(r.Actions[1].Result, "already declined") {
		t.Fatalf("actions = %+v", r.Actions)
	}
}

func TestExpiredNeverRuns(t *testing.T) {
	h := newHarness(t, callThenSummarise(call("c1", "erase", "orders")))
	ch := h.submit(t, "s1", "erase the orders")
	h.nextApproval(t)
	for h.clk.Timers() < 2 {
		time.Sleep(time.Millisecond)
	}
	h.clk.Advance(approval.DefaultTimeout)
	r := result(t, ch)
	if h.del.Runs.Load() != 0 || !strings.Contains(r.Text, "expired") || r.Actions[0].Status != "expired" {
		t.Fatalf("runs %d, result %+v", h.del.Runs.Load(), r)
	}
}

// A LOW read runs at once, even when the model is unsure; a MEDIUM write
// beside it waits for a person (it asks the first time).
func TestLowRiskRunsAtOnce(t *testing.T) {
	unsure := call("c1", "look", "orders")
	unsure.Confidence = 0.3
	h := newHarness(t, callThenSummarise(unsure, call("c2", "note", "x")))
	ch := h.submit(t, "s1", "look")
	a := h.nextApproval(t)
	if h.read.Runs.Load() != 1 || h.write.Runs.Load() != 0 || a.Tool() != "note" || a.Risk != approval.RiskMedium {
		t.Fatalf("read %d write %d, approval %+v", h.read.Runs.Load(), h.write.Runs.Load(), a)
	}
	h.decide(t, a, approval.Approve)
	r := result(t, ch)
	if !strings.Contains(r.Text, "look done") || !strings.Contains(r.Text, "note done") || h.write.Runs.Load() != 1 {
		t.Fatalf("result = %+v", r)
	}
}

// TestMediumAsksFirstThenGrant: with the default policy a MEDIUM write asks
// the first time; once approved, the same call in the same session runs
// without asking for the grant window; another payload, another session or
// an unsure model asks again.
func TestMediumAsksFirstThenGrant(t *testing.T) {
	var mu sync.Mutex
	next := call("c1", "note", "x")
	model := scripted(func(req agent.Request) (agent.Response, error) {
		if req.Messages[len(req.Messages)-1].Role == agent.RoleTool {
			return agent.Response{Message: agent.Message{Content: "ok"}}, nil
		}
		mu.Lock()
		defer mu.Unlock()
		return agent.Response{Message: agent.Message{ToolCalls: []agent.ToolCall{next}}}, nil
	})
	h := newHarness(t, model)
	ch := h.submit(t, "s1", "note x")
	a := h.nextApproval(t)
	if a.Risk != approval.RiskMedium || a.GrantWindow != 300*time.Second || !strings.Contains(a.Reason, "first time") || a.ReasonZH == "" {
		t.Fatalf("first approval = %+v", a)
	}
	h.decide(t, a, approval.Approve)
	if r := result(t, ch); r.Actions[0].Status != "executed" || h.write.Runs.Load() != 1 {
		t.Fatalf("first turn = %+v", r)
	}
	// The same call again, in the window: it runs without a card.
	if r := result(t, h.submit(t, "s1", "note x")); r.Actions[0].Status != "executed" || h.write.Runs.Load() != 2 || len(h.shown) != 0 {
		t.Fatalf("second identical call: %+v, %d runs, %d cards", r, h.write.Runs.Load(), len(h.shown))
	}
	// It says so, with who approved the same request (and when: the
	// engine's clock is fake here, the loop's real, so only the start of
	// the sentence is compared).
	if n := h.speak.noticesWith("Auto-approved: the same request was approved by alice "); n != 1 {
		t.Fatalf("%d auto-approved notices, want 1: %+v", n, h.speak.said)
	}
	for _, tc := range []struct {
		name, session string
		c             agent.ToolCall
	}{
		{"another payload", "s1", call("c1", "note", "y")},
		{"another session", "s2", call("c1", "note", "x")},
		{"an unsure model", "s1", func() agent.ToolCall { c := call("c1", "note", "x"); c.Confidence = 0.5; return c }()},
	} {
		mu.Lock()
		next = tc.c
		mu.Unlock()
		ch := h.submit(t, tc.session, "note")
		a := h.nextApproval(t)
		h.decide(t, a, approval.Reject)
		if r := result(t, ch); r.Actions[0].Status != "rejected" {
			t.Fatalf("%s: %+v", tc.name, r)
		}
	}
	if h.write.Runs.Load() != 2 {
		t.Fatalf("%d runs, want 2", h.write.Runs.Load())
	}
}

// bulkTool is a write whose Assess reports a dry run of rows rows.
type bulkTool struct {
	*hitltest.Tool
	rows              int64
	assessed, preview atomic.Int64
}

func (t *bulkTool) Assess(_ context.Context, args json.RawMessage) (approval.Blast, approval.Words) {
	t.assessed.Add(1)
	return approval.Blast{Rows: t.rows, Measured: true}, approval.Words{EN: fmt.Sprintf("bulk %s — affects %d rows", args, t.rows),
		ZH: fmt.Sprintf("bulk %s — 影响 %d 行", args, t.rows)}
}

var _ agent.Assessor = (*bulkTool)(nil)

func (t *bulkTool) Preview(ctx context.Context, args json.RawMessage) (string, error) {
	t.preview.Add(1)
	return "not the assessed preview", nil
}

// TestBlastRadiusReachesTheCard: a tool's measured blast radius raises its
// call to HIGH through the loop, the record says why in both languages,
// and the card shows the preview of that same measurement.
func TestBlastRadiusReachesTheCard(t *testing.T) {
	bulk := &bulkTool{Tool: hitltest.NewTool("bulk", approval.EffectWrite), rows: 29}
	h := newHarness(t, callThenSummarise(call("c1", "bulk", "orders")), func(c *agent.LoopConfig) {
		if err := c.Tools.Register(bulk); err != nil {
			t.Fatal(err)
		}
	})
	ch := h.submit(t, "s1", "bulk")
	a := h.nextApproval(t)
	if a.Risk != approval.RiskHigh || a.Reason != "affects 29 rows, more than 20" || a.ReasonZH != "影响 29 行，超过 20 行" || a.GrantWindow != 0 {
		t.Fatalf("approval = %+v", a)
	}
	if !strings.Contains(a.Preview, "affects 29 rows") || bulk.assessed.Load() != 1 || bulk.preview.Load() != 0 {
		t.Fatalf("preview %q, assessed %d times, Preview called %d times", a.Preview, bulk.assessed.Load(), bulk.preview.Load())
	}
	// The tool said its preview in Chinese too: the record keeps it, for
	// the cards in Chinese, and the summaries with it.
	if !strings.Contains(a.PreviewZH, "影响 29 行") || !strings.Contains(a.SummaryZH, "bulk: bulk") || !strings.Contains(a.SummaryZH, "影响 29 行") ||
		a.Calls[0].SummaryIn("zh") != a.PreviewZH || a.Calls[0].SummaryIn("en") != a.Preview {
		t.Fatalf("Chinese preview %q, summary %q, call summary %q", a.PreviewZH, a.SummaryZH, a.Calls[0].SummaryZH)
	}
	h.decide(t, a, approval.Approve)
	if r := result(t, ch); r.Actions[0].Status != "executed" || bulk.Runs.Load() != 1 {
		t.Fatalf("result = %+v", r)
	}
}

// failingPreviewTool is a write whose Preview fails.
type failingPreviewTool struct{ *hitltest.Tool }

func (t *failingPreviewTool) Preview(ctx context.Context, args json.RawMessage) (string, error) {
	return "", errors.New("the dry run failed")
}

// TestNoPreviewInLang: when a tool makes no preview, the card's preview
// says so, with the tool's error, in the card's language (the record keeps
// both).
func TestNoPreviewInLang(t *testing.T) {
	for _, tc := range []struct{ lang, want string }{
		{"en", "(no preview: the dry run failed)"},
		{"zh", "（无法预览：the dry run failed）"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			tool := &failingPreviewTool{hitltest.NewTool("bulk", approval.EffectWrite)}
			h := newHarness(t, callThenSummarise(call("c1", "bulk", "orders")), func(c *agent.LoopConfig) {
				c.Lang = tc.lang
				if err := c.Tools.Register(tool); err != nil {
					t.Fatal(err)
				}
			})
			ch := h.submit(t, "s1", "bulk")
			a := h.nextApproval(t)
			if got := a.PreviewIn(tc.lang); got != tc.want {
				t.Fatalf("preview %q, want %q", got, tc.want)
			}
			h.decide(t, a, approval.Reject)
			result(t, ch)
		})
	}
}

// unreadableHistory fails every Load.
type unreadableHistory struct{ agent.History }

func (unreadableHistory) Load(context.Context, approval.SessionKey) (agent.Conversation, error) {
	return agent.Conversation{}, errors.New("history down")
}

// TestUnreadableHistoryInLang: a turn whose history cannot be loaded
// fails with the loop's sentence in its language, and runs nothing.
func TestUnreadableHistoryInLang(t *testing.T) {
	for _, tc := range []struct{ lang, want string }{
		{"en", "I could not load this conversation; please try again shortly."},
		{"zh", "无法读取这个会话，请稍后再试。"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			h := newHarness(t, callThenSummarise(call("c1", "erase", "a")), func(c *agent.LoopConfig) {
				c.Lang = tc.lang
				c.History = unreadableHistory{c.History}
			})
			r := result(t, h.submit(t, "s1", "erase a"))
			if r.Err == nil || r.Text != tc.want || h.del.Runs.Load() != 0 {
				t.Fatalf("result = %+v, runs %d; want an error saying %q", r, h.del.Runs.Load(), tc.want)
			}
		})
	}
}

func TestInvalidArgumentsNeverRun(t *testing.T) {
	bad := agent.ToolCall{ID: "c1", Name: "erase", Args: json.RawMessage(`{"target": 5, "extra": true}`)}
	malformed := agent.ToolCall{ID: "c2", Name: "erase", Args: json.RawMessage(`{"target": "x"`)}
	unknown := agent.ToolCall{ID: "c3", Name: "format_disk", Args: json.RawMessage(`{}`)}
	h := newHarness(t, callThenSummarise(bad, malformed, unknown))
	r := result(t, h.submit(t, "s1", "do it"))
	if h.del.Runs.Load() != 0 || len(h.shown) != 0 {
		t.Fatal("an invalid call ran or asked for approval")
	}
	for _, a := range r.Actions {
		if a.Status != "invalid" || !strings.HasPrefix(a.Result, "Error:") {
			t.Fatalf("action = %+v", a)
		}
	}
	if !strings.Contains(r.Actions[1].Result, "not valid JSON") {
		t.Fatalf("malformed arguments reply = %q", r.Actions[1].Result)
	}
	// The history stays storable (a Redis history marshals it).
	conv, err := h.history.Load(context.Background(), "s1")
	if err != nil || len(conv.Messages) != 6 {
		t.Fatalf("history after malformed arguments = %+v, %v", conv, err)
	}
}

func TestBatchApproval(t *testing.T) {
	h := newHarness(t, callThenSummarise(call("c1", "erase", "a"), call("c2", "look", "b"), call("c3", "erase", "c")))
	ch := h.submit(t, "s1", "erase a and c")
	a := h.nextApproval(t)
	if len(a.Calls) != 2 || a.Tool() != "batch" {
		t.Fatalf("batch approval = %+v", a)
	}
	h.decide(t, a, approval.Approve)
	r := result(t, ch)
	if h.del.Runs.Load() != 2 || h.read.Runs.Load() != 1 || len(r.Actions) != 3 {
		t.Fatalf("runs erase=%d look=%d, actions %+v", h.del.Runs.Load(), h.read.Runs.Load(), r.Actions)
	}
	// Replies stay in the model's call order.
	if r.Actions[0].Tool != "erase" || r.Actions[1].Tool != "look" || r.Actions[2].Status != "executed" {
		t.Fatalf("actions = %+v", r.Actions)
	}
}

func TestSessionsDoNotBlockEachOther(t *testing.T) {
	// One worker only: a session waiting for a person must not hold it.
	model := scripted(func(req agent.Request) (agent.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == agent.RoleUser && last.Content == "erase" {
			return agent.Response{Message: agent.Message{ToolCalls: []agent.ToolCall{call("c1", "erase", "x")}}}, nil
		}
		return agent.Response{Message: agent.Message{Content: "hello"}}, nil
	})
	h := newHarness(t, model, func(c *agent.LoopConfig) { c.Workers = 1 })
	slow := h.submit(t, "s-slow", "erase")
	a := h.nextApproval(t)
	for i := range 5 {
		if r := result(t, h.submit(t, fmt.Sprint("s-fast-", i), "hi")); r.Text != "hello" {
			t.Fatalf("fast session answered %q", r.Text)
		}
	}
	h.decide(t, a, approval.Approve)
	if r := result(t, slow); len(r.Actions) != 1 || r.Actions[0].Status != "executed" {
		t.Fatalf("slow session = %+v", r)
	}
}

func TestOrderWithinSession(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	model := scripted(func(req agent.Request) (agent.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		mu.Lock()
		seen = append(seen, last.Content)
		mu.Unlock()
		return agent.Response{Message: agent.Message{Content: "re: " + last.Content}}, nil
	})
	h := newHarness(t, model)
	var chs []<-chan agent.TurnResult
	for i := range 10 {
		chs = append(chs, h.submit(t, "s1", fmt.Sprint(i)))
	}
	for i, ch := range chs {
		if r := result(t, ch); r.Text != fmt.Sprint("re: ", i) {
			t.Fatalf("turn %d answered %q", i, r.Text)
		}
	}
	conv, _ := h.history.Load(context.Background(), "s1")
	if len(conv.Messages) != 20 || conv.Messages[18].Content != "9" {
		t.Fatalf("history has %d messages", len(conv.Messages))
	}
}

func TestModelErrorIsPublic(t *testing.T) {
	model := scripted(func(agent.Request) (agent.Response, error) {
		return agent.Response{}, &agent.ModelError{Public: "The language model refused the configured API key; ask an operator to check it.", Err: fmt.Errorf("401 from https://llm.internal key=sk-secret")}
	})
	h := newHarness(t, model)
	r := result(t, h.submit(t, "s1", "hi"))
	if r.Err == nil || strings.Contains(r.Text, "sk-secret") || !strings.Contains(r.Text, "API key") {
		t.Fatalf("result = %+v", r)
	}
	h.speak.mu.Lock()
	defer h.speak.mu.Unlock()
	if len(h.speak.said) != 1 || strings.Contains(h.speak.said[0].Text, "sk-secret") {
		t.Fatalf("said %+v", h.speak.said)
	}
}

func TestHistoryTrim(t *testing.T) {
	c := agent.Conversation{Messages: []agent.Message{
		{Role: agent.RoleUser, Content: "1"}, {Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{ID: "a"}}}, {Role: agent.RoleTool, ToolCallID: "a"},
		{Role: agent.RoleAssistant, Content: "x"}, {Role: agent.RoleUser, Content: "2"}, {Role: agent.RoleAssistant, Content: "y"},
	}}
	c.Trim(4)
	if len(c.Messages) != 2 || c.Messages[0].Content != "2" {
		t.Fatalf("trimmed = %+v", c.Messages)
	}
}

func TestSlowTurnSaysSo(t *testing.T) {
	release := make(chan struct{})
	model := scripted(func(req agent.Request) (agent.Response, error) {
		<-release
		return agent.Response{Message: agent.Message{Content: "finally"}}, nil
	})
	clk := clock.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	h := newHarness(t, model, func(c *agent.LoopConfig) { c.Clock, c.SlowNotice = clk, 20*time.Second })
	ch := h.submit(t, "s1", "think hard")
	for clk.Timers() == 0 {
		time.Sleep(time.Millisecond)
	}
	clk.Advance(20 * time.Second)
	for len(h.speak.kinds()) == 0 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	r := result(t, ch)
	k := h.speak.kinds()
	if r.Text != "finally" || len(k) != 2 || k[0] != agent.SayNotice || k[1] != agent.SayAnswer {
		t.Fatalf("said %v, result %+v", k, r)
	}
	if !strings.Contains(h.speak.said[0].Text, "Still working") {
		t.Fatalf("notice = %q", h.speak.said[0].Text)
	}
}

func TestRegistryReplace(t *testing.T) {
	reg := agent.NewRegistry()
	a, b := hitltest.NewTool("a", approval.EffectRead), hitltest.NewTool("b", approval.EffectRead)
	if err := reg.Register(a); err != nil {
		t.Fatal(err)
	}
	if err := reg.Replace(b, b); err == nil {
		t.Fatal("a duplicate was accepted")
	}
	if _, ok := reg.Get("a"); !ok {
		t.Fatal("a failed Replace changed the registry")
	}
	if err := reg.Replace(b); err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.Get("a"); ok {
		t.Fatal("the old tool is still there")
	}
	if _, err := reg.Dispatch(context.Background(), approval.Call{Tool: "a", Args: json.RawMessage(`{"target":"x"}`)}); !errors.Is(err, approval.ErrNotRun) {
		t.Fatalf("dispatch of a removed tool = %v, want ErrNotRun", err)
	}
}

// The loop's own notices are in the configured language; the model's
// answers are whatever the model says.
func TestNoticesInTheConfiguredLanguage(t *testing.T) {
	for _, tt := range []struct{ lang, want string }{
		{"", "The language model failed"},
		{"en", "The language model failed"},
		{"zh", "语言模型出错"},
		{"fr", "The language model failed"},
	} {
		model := scripted(func(agent.Request) (agent.Response, error) {
			return agent.Response{}, errors.New("connection refused")
		})
		h := newHarness(t, model, func(c *agent.LoopConfig) { c.Lang = tt.lang })
		r := result(t, h.submit(t, "s-"+tt.lang, "hello"))
		if r.Err == nil || !strings.Contains(r.Text, tt.want) {
			t.Errorf("lang %q: result %+v, want %q", tt.lang, r, tt.want)
		}
		if said := h.speak.said; len(said) != 1 || said[0].Kind != agent.SayNotice || !strings.Contains(said[0].Text, tt.want) {
			t.Errorf("lang %q: said %+v", tt.lang, said)
		}
	}
}

// The rules model words a call's fate from the Status the loop puts on the
// tool message, not from the reply's words.
func TestRulesModelReadsTheLoopsStatus(t *testing.T) {
	rules, err := model.NewRules(model.RulesConfig{Patterns: []model.RulePattern{
		{Name: "erase", Regexp: `^erase (?P<t>\w+)$`, Tool: "erase", Args: map[string]string{"target": "${t}"}},
	}}, model.RulesDeps{})
	if err != nil {
		t.Fatal(err)
	}
	for _, test := range []struct {
		verb approval.Verb
		want string
	}{
		{approval.Reject, "erase was rejected, so it did not run."},
		{approval.Approve, "erase: erase done (run 1)"},
	} {
		h := newHarness(t, rules)
		ch := h.submit(t, "s1", "erase orders")
		h.decide(t, h.nextApproval(t), test.verb)
		if r := result(t, ch); r.Text != test.want {
			t.Errorf("%s: answer %q, want %q", test.verb, r.Text, test.want)
		}
		conv, _ := h.history.Load(context.Background(), "s1")
		last := conv.Messages[len(conv.Messages)-2]
		if last.Role != agent.RoleTool || last.Status == "" {
			t.Errorf("%s: the tool message carries no status: %+v", test.verb, last)
		}
	}
}
