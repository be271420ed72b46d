package feishu

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/hitlbot/hitlbot/gate"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher/callback"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/hitltest"
	"github.com/hitlbot/hitlbot/internal/waitfor"
)

var quiet = slog.New(slog.DiscardHandler)

// appSeq makes every test's app id unique: the SDK's token cache is
// process-global and keyed by app id and secret, not by base URL.
var appSeq atomic.Int64

func testConfig(fake *feishutest.Server) Config {
	return Config{
		AppID:     fmt.Sprintf("cli_test_%d_%d", time.Now().UnixNano(), appSeq.Add(1)),
		AppSecret: "secret",
		BaseURL:   fake.URL,
		Lang:      "en",
		// Keep test runs short.
		RequestTimeout: 5 * time.Second,
		MaxRetryWait:   time.Second,
		StartTimeout:   10 * time.Second,
	}
}

// eventually polls cond until it holds (waitfor.True).
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitfor.True(t, what, cond)
}

// rig is the Feishu channel, started, behind a real router, approval
// engine and agent loop, talking to a fake Feishu.
type rig struct {
	fake   *feishutest.Server
	ch     *Channel
	cfg    Config
	router *channels.Router
	engine *approval.Engine
	erase  *hitltest.Tool
	model  *hitltest.Model
	scope  channels.Scope
	// srv serves the channel's WebhookHandler in webhook mode; events are
	// then posted to it, signed and encrypted, instead of pushed over the
	// long connection.
	srv *httptest.Server
	// said are the messages say sent, in order.
	said []feishutest.MessageEvent
}

// rigOptions let several rigs act as replicas of one deployment: one
// fake Feishu (one app), one shared store, one tool.
type rigOptions struct {
	fake    *feishutest.Server // default: a new fake
	store   approval.Store     // default: a new memstore
	tool    *hitltest.Tool     // default: a new erase tool
	webhook bool               // webhook mode (default: long connection)
	scope   channels.Scope     // default per_chat
	// approvers, when set, is the approver rule of every risk (default:
	// the requester).
	approvers approval.ApproverMode
	// policy, when set, is the whole approval policy (approvers ignored).
	policy *approval.PolicyConfig
	// now, when set, is the channel's clock (the webhook's timestamp
	// bound).
	now func() time.Time
	// log, when set, is the channel's logger (default: discarded).
	log *slog.Logger
	// model, when set, is the agent's model (default: the rig's
	// scripted hitltest.Model).
	model agent.Model
	// editPolicy, when set, changes the approval policy (after approvers
	// and policy).
	editPolicy func(*approval.PolicyConfig)
	// clock, when set, is the engine's clock (default: the wall clock).
	clock clock.Clock
	// noViews leaves the channel's Config.Views nil, as `bot doctor`
	// makes it (default: the presenter's, as the server does).
	noViews bool
	// reminders, when set, are the engine's (approval.EngineConfig.Reminders).
	reminders []float64
	// tools are more tools of the registry (an MCP server's).
	tools []agent.Tool
}

// webhookKey is the encrypt key of webhook-mode rigs.
const webhookKey = "ekey"

func newRig(t *testing.T, mod ...func(*Config, *hitltest.Tool)) *rig {
	t.Helper()
	return newRigWith(t, rigOptions{}, mod...)
}

func newRigWith(t *testing.T, o rigOptions, mod ...func(*Config, *hitltest.Tool)) *rig {
	t.Helper()
	fake := o.fake
	if fake == nil {
		fake = feishutest.New()
		t.Cleanup(fake.Close)
	}
	tool := o.tool
	if tool == nil {
		tool = hitltest.NewTool("erase", approval.EffectDestructive)
	}
	scope := o.scope
	if scope == "" {
		scope = channels.ScopePerChat
	}
	g := &rig{fake: fake, erase: tool, model: &hitltest.Model{}, scope: scope}
	cfg := testConfig(fake)
	if o.webhook {
		cfg.Mode, cfg.EncryptKey, cfg.VerificationToken = ModeWebhook, webhookKey, "vtoken"
	}
	for _, m := range mod {
		m(&cfg, g.erase)
	}
	store := o.store
	if store == nil {
		store = memstore.New(memstore.Options{})
	}
	// As the server does: the webhook's request marks in the shared store.
	cfg.Marks = store
	var pc *approval.PolicyConfig
	if o.approvers != "" {
		c := approval.DefaultPolicyConfig()
		c.Approvers = map[string]approval.ApproverConfig{}
		for _, r := range []string{"LOW", "MEDIUM", "HIGH"} {
			c.Approvers[r] = approval.ApproverConfig{Mode: o.approvers}
		}
		pc = &c
	}
	if o.policy != nil {
		pc = o.policy
	}
	if o.editPolicy != nil {
		if pc == nil {
			c := approval.DefaultPolicyConfig()
			pc = &c
		}
		o.editPolicy(pc)
	}
	var m agent.Model = g.model
	if o.model != nil {
		m = o.model
	}
	// The stack as `bot serve` builds it (channels.Assemble), other
	// agents' calls as the server wires them (questions).
	st := hitltest.New(t, hitltest.Config{Store: store, Model: m, Tools: append([]agent.Tool{g.erase}, o.tools...), Policy: pc, Clock: o.clock, Lang: "en",
		Engine: func(ec *approval.EngineConfig) {
			ec.Dispatcher, ec.Editor = gate.Dispatcher{Next: ec.Dispatcher}, gate.Editor{Next: ec.Editor}
			ec.Reminders = o.reminders
		},
		Router: func(c *channels.RouterConfig) { c.Scope = scope }})
	// Made after the stack, as the server does: given the presenter's views.
	if !o.noViews {
		cfg.Views = st.Presenter
	}
	g.cfg = cfg
	chLog := quiet
	if o.log != nil {
		chLog = o.log
	}
	ch, err := New(cfg, chLog)
	if err != nil {
		t.Fatal(err)
	}
	g.ch = ch
	if o.now != nil {
		ch.now = o.now
	}
	if o.webhook {
		g.srv = httptest.NewServer(ch.WebhookHandler())
		t.Cleanup(g.srv.Close)
	}
	st.Register(t, ch)
	st.Start(t)
	t.Cleanup(func() { // before the router closes
		if g.erase.Gate != nil {
			select {
			case <-g.erase.Gate:
			default:
				close(g.erase.Gate)
			}
		}
	})
	g.router, g.engine = st.Router, st.Engine
	return g
}

var idSeq atomic.Int64

func nextID(prefix string) string { return fmt.Sprintf("%s_%d", prefix, idSeq.Add(1)) }

// push sends an event over the long connection, or posts it signed and
// encrypted to the webhook in webhook mode, and returns the ack (the HTTP
// status and body for a webhook).
func (g *rig) push(t *testing.T, payload []byte) (code int, data []byte, took time.Duration) {
	t.Helper()
	start := time.Now()
	if g.srv != nil {
		resp, body, err := feishutest.PostWebhook(g.srv.URL, webhookKey, payload, false)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, body, time.Since(start)
	}
	resp, err := g.fake.Push(payload, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Data, time.Since(start)
}

// say sends a text message from user in chat.
func (g *rig) say(t *testing.T, chatType, chat, user, text string, mentions map[string]string) feishutest.MessageEvent {
	t.Helper()
	e := feishutest.MessageEvent{EventID: nextID("ev"), MessageID: nextID("om_user"), ChatID: chat, ChatType: chatType,
		Sender: user, Text: text, Mentions: mentions}
	if code, _, _ := g.push(t, e.JSON()); code != 200 {
		t.Fatalf("message ack %d", code)
	}
	g.said = append(g.said, e)
	return e
}

// calls returns the fake's successful calls of op.
func (g *rig) calls(op string) []feishutest.Call {
	var out []feishutest.Call
	for _, c := range g.fake.Calls() {
		if c.Op == op && c.Answered == 200 {
			out = append(out, c)
		}
	}
	return out
}

// replyText reports whether a text reply to messageID contains sub.
func (g *rig) replied(messageID, sub string) int {
	n := 0
	for _, c := range g.calls("reply") {
		var t struct {
			Text string `json:"text"`
		}
		if c.MessageID == messageID && json.Unmarshal([]byte(c.Content), &t) == nil && strings.Contains(t.Text, sub) {
			n++
		}
	}
	return n
}

// pending asks for "erase target" as user in a p2p chat and returns the
// approval and the card (the create call) it got.
func (g *rig) pending(t *testing.T, chat, user, target string) (*approval.Approval, map[string]any) {
	t.Helper()
	g.say(t, "p2p", chat, user, "erase "+target, nil)
	var a *approval.Approval
	eventually(t, "an approval is pending and its card is sent", func() bool {
		p, err := g.engine.Pending(context.Background(), channels.SessionKey(g.scope, Name, chat, approval.UserID(user), ""))
		if err != nil {
			t.Fatal(err)
		}
		a = p
		return p != nil && len(p.Cards) > 0
	})
	for _, c := range g.calls("create") {
		if c.MsgType == "interactive" && c.ReceiveID == chat && strings.Contains(c.Content, string(a.ID)) {
			var card map[string]any
			if err := json.Unmarshal([]byte(c.Content), &card); err != nil {
				t.Fatalf("card content is not JSON: %v", err)
			}
			return a, card
		}
	}
	t.Fatalf("no card created for %s; calls %+v", a.ID, g.fake.Calls())
	return nil, nil
}

func buttonValue(a *approval.Approval, decision string) map[string]any {
	return map[string]any{"kind": "approval", "approval_id": string(a.ID), "decision": decision, "payload_sha256": a.PayloadSHA256}
}

// click pushes a card click and decodes the callback answer.
func (g *rig) click(t *testing.T, a *approval.Approval, user string, value any) (*callback.CardActionTriggerResponse, time.Duration) {
	t.Helper()
	e := feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: user, MessageID: a.Cards[0].MessageID, ChatID: a.ChatID, Value: value}
	code, data, took := g.push(t, e.JSON())
	if code != 200 {
		t.Fatalf("click ack %d: %s", code, data)
	}
	var resp callback.CardActionTriggerResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		t.Fatalf("callback answer %q: %v", data, err)
	}
	return &resp, took
}

func (g *rig) state(t *testing.T, id approval.ID) approval.State {
	t.Helper()
	a, err := g.engine.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return a.State
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
