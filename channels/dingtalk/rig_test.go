package dingtalk

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/dingtalk/dingtalktest"
	"github.com/hitlbot/hitlbot/internal/waitfor"
)

var quiet = slog.New(slog.DiscardHandler)

// eraseTool is a destructive tool that counts its runs.
type eraseTool struct{ runs atomic.Int64 }

type eraseArgs struct {
	Target string `json:"target" jsonschema:"what to erase"`
}

func (t *eraseTool) Name() string        { return "erase" }
func (t *eraseTool) Description() string { return "erases a target" }
func (t *eraseTool) Schema() *jsonschema.Schema {
	s, err := jsonschema.For[eraseArgs](nil)
	if err != nil {
		panic(err)
	}
	return s
}
func (t *eraseTool) Effect(json.RawMessage) approval.Effect { return approval.EffectDestructive }
func (t *eraseTool) Preview(_ context.Context, args json.RawMessage) (string, error) {
	return "erase " + string(args), nil
}
func (t *eraseTool) Run(context.Context, json.RawMessage) (agent.Output, error) {
	return agent.Output{Content: fmt.Sprintf("erase done (run %d)", t.runs.Add(1))}, nil
}

// model is scripted: "erase X" calls the erase tool, a tool result is
// summarised, anything else is echoed. It records the texts it saw.
type model struct {
	mu  sync.Mutex
	saw []string
}

func (m *model) Complete(_ context.Context, req agent.Request) (agent.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == agent.RoleTool {
		return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "summary: " + last.Content}}, nil
	}
	m.mu.Lock()
	m.saw = append(m.saw, last.Content)
	m.mu.Unlock()
	if target, ok := strings.CutPrefix(last.Content, "erase "); ok {
		return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{{
			ID: "c1", Name: "erase", Args: json.RawMessage(`{"target":"` + target + `"}`), Confidence: 1}}}}, nil
	}
	return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "echo: " + last.Content}}, nil
}

func (m *model) seen(text string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, s := range m.saw {
		if s == text {
			n++
		}
	}
	return n
}

type nopAudit struct{}

func (nopAudit) Append(audit.Record) {}

// rig is the DingTalk channel behind a real router, approval engine and
// agent loop, against a fake DingTalk.
type rig struct {
	fake   *dingtalktest.Fake
	ch     *Channel
	router *channels.Router
	engine *approval.Engine
	erase  *eraseTool
	model  *model
}

func newRig(t *testing.T, mod func(*Config)) *rig {
	t.Helper()
	return newRigStore(t, mod, memstore.New(memstore.Options{}))
}

// newRigStore is newRig on store (shared by the router and the engine).
func newRigStore(t *testing.T, mod func(*Config), store approval.Store) *rig {
	t.Helper()
	g := &rig{fake: dingtalktest.New(t), erase: &eraseTool{}, model: &model{}}
	cfg := Config{ClientID: "app-key", ClientSecret: "app-secret", CardTemplateID: "tpl.schema",
		APIBaseURL: g.fake.URL(), WebhookBaseURL: g.fake.URL(), Lang: "en", HTTPTimeout: 5 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	ch, err := New(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	r, err := channels.NewRouter(channels.RouterConfig{Store: store, Lang: "en", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	reg := agent.NewRegistry()
	if err := reg.Register(g.erase); err != nil {
		t.Fatal(err)
	}
	eng, err := approval.NewEngine(approval.EngineConfig{Store: store, Notifier: r, Dispatcher: reg, Audit: nopAudit{}, Logger: quiet, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pol, err := approval.NewPolicy(approval.DefaultPolicyConfig())
	if err != nil {
		t.Fatal(err)
	}
	loop, err := agent.NewLoop(agent.LoopConfig{Model: g.model, Tools: reg, Engine: eng, Policy: func() *approval.Policy { return pol },
		History: agent.NewMemoryHistory(), Speaker: r, Logger: quiet, SlowNotice: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { loop.Close(context.Background()) })
	if err := r.Bind(eng, loop); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(ch); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		_ = r.Close(cctx)
	})
	if cfg.Mode != ModeHTTP {
		g.fake.WaitConn(5 * time.Second)
	}
	g.ch, g.router, g.engine = ch, r, eng
	return g
}

// eventually polls cond until it holds (waitfor.True).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitfor.True(t, what, cond)
}

var msgSeq atomic.Int64

func nextID() string { return fmt.Sprintf("msg-%d", msgSeq.Add(1)) }
