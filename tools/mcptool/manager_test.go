package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/waitfor"
	"github.com/hitlbot/hitlbot/words"
)

var offeredCases = []struct {
	tool    string
	trusted bool
	effect  approval.Effect
	source  words.Key
}{
	{"t__read_only", true, approval.EffectRead, words.MCPRiskReadOnly},
	{"t__not_destructive", true, approval.EffectWrite, words.MCPRiskNotDestructive},
	{"t__destructive", true, approval.EffectDestructive, words.MCPRiskDestructive},
	{"t__plain", true, approval.EffectDestructive, words.MCPRiskDestructive},
	{"t__read_only", false, approval.EffectDestructive, words.MCPRiskUntrusted},
	{"t__not_destructive", false, approval.EffectDestructive, words.MCPRiskUntrusted},
}

func TestInMemoryOffersToolsWithTheirRisk(t *testing.T) {
	for _, trusted := range []bool{true, false} {
		ch := &changes{}
		m, _ := startInMemory(t, ServerConfig{Trusted: trusted, Tools: ToolFilter{Deny: []string{"whoami"}}}, ch)
		if ch.count() != 1 || ch.last().server != "t" || len(ch.last().tools) != len(m.Tools()) {
			t.Fatalf("OnChange calls %d; want one with the tools", ch.count())
		}
		st := m.Status()[0]
		if st.Protocol != "2026-07-28" || st.Transport != "stdio" || st.Tools != len(m.Tools()) {
			t.Errorf("status %+v", st)
		}
		for _, tl := range m.Tools() {
			if tl.Name() == "t__whoami" {
				t.Errorf("denied tool offered")
			}
		}
		for _, tt := range offeredCases {
			if tt.trusted != trusted {
				continue
			}
			f, ok := agent.AsForeign(find(t, m.Tools(), tt.tool))
			if !ok {
				t.Fatalf("%s is not Foreign", tt.tool)
			}
			if f.Effect(nil) != tt.effect || f.EffectSource() != approval.Say(tt.source, "t") {
				t.Errorf("%s (trusted %v): %s %+v", tt.tool, trusted, f.Effect(nil), f.EffectSource())
			}
		}
	}
}

var runCases = []struct {
	tool, args string
	want       string
	isError    bool
}{
	{"t__echo", `{"text":"hi 你好"}`, "hi 你好", false},
	{"t__fail", `{}`, "the disk is full", true},
	{"t__structured", `{}`, `{"rows":7}`, false},
	{"t__media", `{}`, "here\n[image image/png, 1234 bytes]\n[resource file:///a.txt text/plain, 99 bytes]\n[resource file:///b.txt text/plain, 5 bytes]", false},
}

func TestRunMapsResults(t *testing.T) {
	m, srv := startInMemory(t, ServerConfig{Trusted: true}, nil)
	for _, tt := range runCases {
		out, err := find(t, m.Tools(), tt.tool).Run(context.Background(), json.RawMessage(tt.args))
		if err != nil {
			t.Fatalf("%s: %v", tt.tool, err)
		}
		if !strings.Contains(out.Content, tt.want) || out.IsError != tt.isError {
			t.Errorf("%s: got %+v, want %q (isError %v)", tt.tool, out, tt.want, tt.isError)
		}
	}
	st := m.Status()[0]
	if srv.Calls("echo") != 1 || st.Calls != uint64(len(runCases)) || st.Errors != 1 {
		t.Errorf("echo calls %d; status calls %d errors %d", srv.Calls("echo"), st.Calls, st.Errors)
	}
}

func TestTimeoutCancelsTheCallAndIsOfUnknownEffect(t *testing.T) {
	m, srv := startInMemory(t, ServerConfig{CallTimeout: 300 * time.Millisecond}, nil)
	_, err := find(t, m.Tools(), "t__slow").Run(context.Background(), json.RawMessage(`{}`))
	if err == nil || errors.Is(err, approval.ErrNotRun) || !strings.Contains(err.Error(), "timed out after 300ms") {
		t.Fatalf("got %v; want a plain timeout error", err)
	}
	select {
	case saw := <-srv.SlowEnded():
		if !saw {
			t.Fatal("the slow tool ended without seeing the cancellation")
		}
	case <-time.After(waitfor.Default):
		t.Fatal("the slow tool never ended: no cancellation reached it")
	}
}

func TestListChangedHandsOverNewDefinitions(t *testing.T) {
	ch := &changes{}
	m, srv := startInMemory(t, ServerConfig{}, ch)
	before := find(t, m.Tools(), "t__changing").(agent.Foreign)
	echo := find(t, m.Tools(), "t__echo").(agent.Foreign)
	srv.Change()
	waitfor.True(t, "OnChange with the changed tool", func() bool {
		ch.mu.Lock()
		defer ch.mu.Unlock()
		for _, tl := range ch.tools["t"] {
			if tl.Name() == "t__changing" && tl.(agent.Foreign).Definition() != before.Definition() {
				return true
			}
		}
		return false
	})
	after := find(t, m.Tools(), "t__changing").(agent.Foreign)
	if !strings.Contains(after.Description(), "version 1") || before.Description() == after.Description() {
		t.Errorf("descriptions %q → %q", before.Description(), after.Description())
	}
	if find(t, m.Tools(), "t__echo").(agent.Foreign).Definition() != echo.Definition() {
		t.Error("an unchanged tool's definition changed")
	}
}

func TestRegistryRefusesACallPinnedToAnOldDefinition(t *testing.T) {
	reg := agent.NewRegistry()
	ch := &changes{}
	onChange := func(server string, tools []agent.Tool) []string {
		ch.on(server, tools)
		if err := reg.SetGroup(server, tools...); err != nil {
			t.Errorf("SetGroup: %v", err)
		}
		return nil
	}
	srv := mcptestNew()
	m := Start(context.Background(), []ServerConfig{{Name: "t", Command: "x"}}, Options{transport: inMemory(srv), OnChange: onChange})
	defer m.Close()
	tl, ok := reg.Get("t__changing")
	if !ok {
		t.Fatal("t__changing not registered")
	}
	args := []byte(`{"path":"/a"}`)
	canon, oldHash, err := agent.HashCall(tl, "t__changing", args)
	if err != nil {
		t.Fatal(err)
	}
	n := ch.count()
	srv.Change()
	waitfor.True(t, "the changed tool registered", func() bool { return ch.count() > n })
	_, err = reg.Dispatch(context.Background(), approval.Call{Tool: "t__changing", Args: canon, PayloadSHA256: oldHash})
	if !errors.Is(err, approval.ErrToolChanged) || !errors.Is(err, approval.ErrNotRun) {
		t.Fatalf("dispatch with the old hash: %v; want ErrToolChanged", err)
	}
	if c := srv.Calls("changing"); c != 0 {
		t.Fatalf("the server saw %d calls; want none", c)
	}
	// The same call hashed against the new definition runs.
	tl, _ = reg.Get("t__changing")
	canon, newHash, _ := agent.HashCall(tl, "t__changing", args)
	res, err := reg.Dispatch(context.Background(), approval.Call{Tool: "t__changing", Args: canon, PayloadSHA256: newHash})
	if err != nil || res.Status != approval.StatusExecuted || srv.Calls("changing") != 1 {
		t.Fatalf("dispatch with the new hash: %+v %v (calls %d)", res, err, srv.Calls("changing"))
	}
}

func TestAServerThatNeverStarts(t *testing.T) {
	var logs lockedBuf
	cfgs := []ServerConfig{
		{Name: "bad", Command: "/nonexistent/mcp-server", Required: true, Env: []string{"BAD_TOKEN"}},
		{Name: "soft", Command: "/nonexistent/other"},
	}
	m := Start(context.Background(), cfgs, Options{Getenv: env{"BAD_TOKEN": "tok-abcdef"}.get, Logger: slogTo(&logs)})
	defer m.Close()
	st := m.Status()
	if st[0].Up || !strings.Contains(st[0].Err, "/nonexistent/mcp-server") || st[0].Since.IsZero() {
		t.Fatalf("status %+v", st[0])
	}
	err := m.Ready()
	if err == nil || !strings.Contains(err.Error(), "required MCP server bad is down") || strings.Contains(err.Error(), "soft") {
		t.Fatalf("Ready: %v", err)
	}
	if len(m.Tools()) != 0 {
		t.Fatal("tools offered by a server that is down")
	}
}

func TestSessionEndWithdrawsToolsAndReconnects(t *testing.T) {
	ch := &changes{}
	srv := mcptestNew()
	fake := clock.NewFake(time.Unix(1e9, 0))
	m := Start(context.Background(), []ServerConfig{{Name: "t", Command: "x"}}, Options{transport: inMemory(srv), OnChange: ch.on, Clock: fake})
	defer m.Close()
	echo := find(t, m.Tools(), "t__echo")
	for ss := range srv.MCP().Sessions() {
		_ = ss.Close()
	}
	waitfor.True(t, "the tools withdrawn", func() bool { return ch.count() >= 2 && ch.last().tools == nil })
	if _, err := echo.Run(context.Background(), json.RawMessage(`{"text":"x"}`)); !errors.Is(err, approval.ErrNotRun) {
		t.Fatalf("a call while down: %v; want ErrNotRun", err)
	}
	waitfor.True(t, "reconnected", func() bool {
		fake.Advance(time.Minute)
		return m.Status()[0].Up
	})
	if ch.last().tools == nil || len(m.Tools()) == 0 {
		t.Fatal("tools not offered again after reconnecting")
	}
	if err := m.Ready(); err != nil {
		t.Fatal(err)
	}
}

func TestCallAfterCloseIsNotRun(t *testing.T) {
	m, srv := startInMemory(t, ServerConfig{}, nil)
	echo := find(t, m.Tools(), "t__echo")
	_ = m.Close()
	_, err := echo.Run(context.Background(), json.RawMessage(`{"text":"x"}`))
	if !errors.Is(err, approval.ErrNotRun) || !strings.Contains(err.Error(), "MCP server t is not connected") {
		t.Fatalf("got %v", err)
	}
	if srv.Calls("echo") != 0 {
		t.Fatal("the server saw the call")
	}
}

func TestCallOnAClosedSessionIsNotRun(t *testing.T) {
	m, srv := startInMemory(t, ServerConfig{}, nil)
	echo := find(t, m.Tools(), "t__echo")
	_ = m.servers[0].session().Close() // closed under the manager's feet
	_, err := echo.Run(context.Background(), json.RawMessage(`{"text":"x"}`))
	if !errors.Is(err, approval.ErrNotRun) {
		t.Fatalf("got %v; want ErrNotRun", err)
	}
	if srv.Calls("echo") != 0 {
		t.Fatal("the server saw the call")
	}
}
