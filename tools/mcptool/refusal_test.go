package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/redact"
	"github.com/hitlbot/hitlbot/internal/waitfor"
	"github.com/hitlbot/hitlbot/tools/mcptool/mcptest"
)

// defSecret is the value of the env variable the server of the tests
// below is given.
const defSecret = "s3cr3t-4b9d1f"

// secretDefs are tool definitions that carry a text in every string the
// client keeps (and one whose name holds it), with secret standing for
// the text.
func secretDefs(secret string) []*mcp.Tool {
	schema := strings.ReplaceAll(`{"type":"object","properties":{
		"mode":{"type":"string","enum":["a","SECRET"],"default":"SECRET","description":"e.g. SECRET","title":"Mode SECRET"},
		"key_SECRET":{"type":"string","pattern":"^SECRET$"}},"required":["mode"]}`, "SECRET", secret)
	return []*mcp.Tool{
		{Name: "leaky", Title: "Leaky " + secret, Description: "uses " + secret, InputSchema: json.RawMessage(schema),
			OutputSchema: json.RawMessage(`{"type":"object","description":"` + secret + `"}`),
			Annotations:  &mcp.ToolAnnotations{Title: "annotated " + secret}},
		{Name: "get_" + secret, Description: "named after it", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
}

// startSecretServer starts a manager with one server "t" that is given
// defSecret in its env and whose mcptest server lists defs.
func startSecretServer(t *testing.T, logs *lockedBuf, defs ...*mcp.Tool) *Manager {
	t.Helper()
	srv := mcptest.New()
	srv.Add(defs...)
	c := ServerConfig{Name: "t", Command: "x", Env: []string{"T_TOKEN"}}
	m := Start(context.Background(), []ServerConfig{c}, Options{transport: inMemory(srv), Getenv: env{"T_TOKEN": defSecret}.get, Logger: slogTo(logs)})
	t.Cleanup(func() { _ = m.Close() })
	if !m.Status()[0].Up {
		t.Fatalf("not up: %s", m.Status()[0].Err)
	}
	return m
}

// TestToolDefinitionsHideTheServersSecrets: every string of a definition
// has the server's secrets hidden before the tool is made, so what the
// model reads (name, description, schema), what a person approves (the
// preview), the digest that pins it, Probe's lines and the log hold none;
// a tool whose name holds one is refused and the status says so without
// it.
func TestToolDefinitionsHideTheServersSecrets(t *testing.T) {
	var logs lockedBuf
	m := startSecretServer(t, &logs, secretDefs(defSecret)...)
	leaky := find(t, m.Tools(), "t__leaky")
	schema, _ := json.Marshal(leaky.Schema())
	preview, _ := leaky.Preview(context.Background(), json.RawMessage(`{"mode":"a"}`))
	for what, s := range map[string]string{"name": leaky.Name(), "description": leaky.Description(), "schema": string(schema), "preview": preview} {
		if strings.Contains(s, defSecret) {
			t.Errorf("the secret is in the tool's %s: %s", what, s)
		}
	}
	if !strings.Contains(leaky.Description(), "Leaky "+redact.Mark+": uses "+redact.Mark) ||
		!strings.Contains(string(schema), `"key_`+redact.Mark+`"`) || !strings.Contains(string(schema), `"enum":["a","`+redact.Mark+`"]`) {
		t.Errorf("the secret is not marked where it was: %s %s", leaky.Description(), schema)
	}
	for _, tl := range m.Tools() {
		if strings.Contains(tl.Name(), "get_") {
			t.Errorf("a tool named after the secret is offered: %s", tl.Name())
		}
	}
	st := m.Status()[0]
	want := []Refusal{{Tool: "t__get_" + redact.Mark, Reason: errSecretName}}
	if len(st.Refused) != 1 || st.Refused[0] != want[0] {
		t.Errorf("refused %+v; want %+v", st.Refused, want)
	}

	// What is pinned is what is shown: the same definitions with the mark
	// written where the secret was have the same digest.
	shown := startSecretServer(t, &lockedBuf{}, secretDefs(redact.Mark)...)
	if a, b := leaky.(agent.Foreign).Definition(), find(t, shown.Tools(), "t__leaky").(agent.Foreign).Definition(); a != b {
		t.Errorf("the pinned definition is not the one shown: %s != %s", a, b)
	}

	srv := mcptest.New()
	srv.Add(secretDefs(defSecret)...)
	infos, err := Probe(context.Background(), ServerConfig{Name: "t", Command: "x", Env: []string{"T_TOKEN"}},
		Options{transport: inMemory(srv), Getenv: env{"T_TOKEN": defSecret}.get, Logger: slogTo(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(infos)
	if strings.Contains(string(b), defSecret) || !strings.Contains(string(b), `"Name":"t__get_`+redact.Mark+`"`) {
		t.Errorf("probe: %s", b)
	}
	_ = m.Close()
	if strings.Contains(logs.String(), defSecret) {
		t.Errorf("the secret reached the log:\n%s", logs.String())
	}
}

// TestSchemaKeysThatReadAlikeRefuseTheTool: a schema whose two keys become
// one once the secret is hidden cannot be shown faithfully: the tool is
// not offered.
func TestSchemaKeysThatReadAlikeRefuseTheTool(t *testing.T) {
	var logs lockedBuf
	m := startSecretServer(t, &logs, &mcp.Tool{Name: "alike", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"k_` + defSecret + `":{"type":"string"},"k_` + redact.Mark + `":{"type":"string"}}}`)})
	for _, tl := range m.Tools() {
		if tl.Name() == "t__alike" {
			t.Fatal("t__alike is offered")
		}
	}
	if !strings.Contains(logs.String(), errKeysAlike.Error()) {
		t.Errorf("the log does not say why t__alike is not offered:\n%s", logs.String())
	}
}

// twoServers starts servers a and a__b (in that order) whose tools b__c
// and c are both a__b__c; a's first connection fails (so a__b comes up
// first) until connectA is set. OnChange feeds reg with Offer, as the bot
// does.
func twoServers(t *testing.T, reg *agent.Registry, fake *clock.Fake, connectA *atomic.Bool, requiredB bool) (*Manager, *mcptest.Server) {
	t.Helper()
	srvA, srvB := mcptest.New(), mcptest.New()
	srvA.Add(&mcp.Tool{Name: "b__c", Description: "a's", InputSchema: json.RawMessage(`{"type":"object"}`)})
	srvB.Add(&mcp.Tool{Name: "c", Description: "a__b's", InputSchema: json.RawMessage(`{"type":"object"}`)})
	transport := func(c ServerConfig) (mcp.Transport, error) {
		if c.Name == "a" {
			if !connectA.Load() {
				return nil, errors.New("not yet")
			}
			return inMemory(srvA)(c)
		}
		return inMemory(srvB)(c)
	}
	servers := []ServerConfig{{Name: "a", Command: "x"}, {Name: "a__b", Command: "x", Required: requiredB}}
	m := Start(context.Background(), servers, Options{transport: transport, Clock: fake, Logger: testLogger(t),
		OnChange: func(server string, tools []agent.Tool) []string {
			taken, err := reg.Offer(server, tools...)
			if err != nil {
				t.Errorf("Offer: %v", err)
			}
			return taken
		}})
	t.Cleanup(func() { _ = m.Close() })
	return m, srvA
}

// serverOf says which server's tool the registry has under name.
func serverOf(reg *agent.Registry, name string) string {
	tl, ok := reg.Get(name)
	if !ok {
		return ""
	}
	if mt, ok := tl.(*tool); ok {
		return mt.srv.cfg.Name
	}
	return "built-in"
}

// TestCollidingNamesGoToTheServerListedFirst: a__b__c is server a's once
// a has listed it, whichever came up first, and stays a's while a is
// down; a__b keeps its other tools and its status says which it lost.
func TestCollidingNamesGoToTheServerListedFirst(t *testing.T) {
	reg := agent.NewRegistry()
	fake := clock.NewFake(time.Unix(1e9, 0))
	var connectA atomic.Bool
	m, srvA := twoServers(t, reg, fake, &connectA, false)
	if got := serverOf(reg, "a__b__c"); got != "a__b" {
		t.Fatalf("with a down from the start, a__b__c is %q's; want a__b's", got)
	}
	connectA.Store(true)
	// a comes up; a__b__c becomes a's (a__b lets it go first).
	waitfor.True(t, "a__b__c to be server a's", func() bool {
		fake.Advance(time.Minute)
		return serverOf(reg, "a__b__c") == "a"
	})
	for _, n := range []string{"a__echo", "a__b__echo"} {
		if _, ok := reg.Get(n); !ok {
			t.Errorf("%s is not offered", n)
		}
	}
	want := Refusal{Tool: "a__b__c", Reason: "MCP server a, listed before it in tools.mcp.servers, has a tool of that name"}
	if st := m.Status()[1]; len(st.Refused) != 1 || st.Refused[0] != want || st.Tools != len(m.servers[1].listed.tools)-1 {
		t.Errorf("a__b's status %+v", st)
	}
	if err := m.Ready(); err != nil {
		t.Errorf("Ready with a server that is not required: %v", err)
	}
	if w := m.Warnings(); len(w) != 1 || w[0] != "MCP server a__b: "+want.String() {
		t.Errorf("Warnings %q", w)
	}

	// a goes down: a__b__c leaves the registry and a__b does not take it.
	connectA.Store(false)
	for ss := range srvA.MCP().Sessions() {
		_ = ss.Close()
	}
	waitfor.True(t, "a's tools withdrawn", func() bool { _, ok := reg.Get("a__echo"); return !ok })
	if got := serverOf(reg, "a__b__c"); got != "" {
		t.Errorf("with a down, a__b__c is %q's; want nobody's", got)
	}
	if st := m.Status()[1]; len(st.Refused) != 1 || st.Refused[0] != want {
		t.Errorf("a__b's status with a down: %+v", st)
	}
}

// TestRequiredServerWithARefusedToolIsNotReady: a required server is
// expected whole; one of its tools refused makes the manager unready.
func TestRequiredServerWithARefusedToolIsNotReady(t *testing.T) {
	reg := agent.NewRegistry()
	var connectA atomic.Bool
	connectA.Store(true)
	m, _ := twoServers(t, reg, clock.NewFake(time.Unix(1e9, 0)), &connectA, true)
	err := m.Ready()
	if err == nil || !strings.Contains(err.Error(), "required MCP server a__b: a__b__c is not offered: MCP server a") {
		t.Fatalf("Ready: %v", err)
	}
	if len(m.Warnings()) != 0 {
		t.Errorf("Warnings %q", m.Warnings())
	}
}

// TestNameOfABuiltInToolIsRefused: the registry keeps a built-in tool's
// name; the server offers its other tools and says which it lost.
func TestNameOfABuiltInToolIsRefused(t *testing.T) {
	reg := agent.NewRegistry()
	if err := reg.Register(&namedTool{Tool: find(t, startInMemoryTools(t), "t__plain"), name: "t__echo"}); err != nil {
		t.Fatal(err)
	}
	srv := mcptest.New()
	m := Start(context.Background(), []ServerConfig{{Name: "t", Command: "x"}}, Options{transport: inMemory(srv), Logger: testLogger(t),
		OnChange: func(server string, tools []agent.Tool) []string {
			taken, err := reg.Offer(server, tools...)
			if err != nil {
				t.Errorf("Offer: %v", err)
			}
			return taken
		}})
	defer m.Close()
	if _, ok := reg.Get("t__read_only"); !ok {
		t.Fatal("the server's other tools are not offered")
	}
	if serverOf(reg, "t__echo") != "built-in" {
		t.Fatal("the built-in t__echo was replaced")
	}
	st := m.Status()[0]
	if len(st.Refused) != 1 || st.Refused[0] != (Refusal{Tool: "t__echo", Reason: reasonBuiltIn}) || st.Tools != len(m.Tools()) {
		t.Errorf("status %+v", st)
	}
	for _, tl := range m.Tools() {
		if tl.Name() == "t__echo" {
			t.Error("Tools has the refused t__echo")
		}
	}
}

// namedTool is a tool under another name (a built-in tool, for the
// registry, whatever it wraps).
type namedTool struct {
	agent.Tool
	name string
}

func (n *namedTool) Name() string { return n.name }

// startInMemoryTools are the tools of a fresh in-memory server "t".
func startInMemoryTools(t *testing.T) []agent.Tool {
	m, _ := startInMemory(t, ServerConfig{}, nil)
	return m.Tools()
}
