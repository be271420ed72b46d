package mcptool

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/internal/redact"
	"github.com/hitlbot/hitlbot/internal/waitfor"
	"github.com/hitlbot/hitlbot/tools/mcptool/mcptest"
)

const bearer = "Bearer tok-7f3a9c2e51"

// httpServer serves a new mcptest server over streamable HTTP, asking for
// bearer.
func httpServer(t *testing.T, stateless bool) (*mcptest.Server, string) {
	t.Helper()
	srv := mcptest.New()
	hs := httptest.NewServer(srv.Handler(bearer, stateless))
	t.Cleanup(hs.Close)
	return srv, hs.URL
}

func TestHTTPBothProtocolRevisions(t *testing.T) {
	for _, tt := range []struct {
		stateless bool
		protocol  string
	}{{false, "2025-11-25"}, {true, "2026-07-28"}} {
		srv, url := httpServer(t, tt.stateless)
		var logs lockedBuf
		c := ServerConfig{Name: "web", URL: url, Headers: map[string]string{"Authorization": "WEB_AUTH"}}
		m := Start(context.Background(), []ServerConfig{c}, Options{Getenv: env{"WEB_AUTH": bearer}.get, Logger: slogTo(&logs)})
		st := m.Status()[0]
		if !st.Up || st.Protocol != tt.protocol || st.Transport != "http" {
			t.Fatalf("stateless %v: status %+v", tt.stateless, st)
		}
		out, err := find(t, m.Tools(), "web__echo").Run(context.Background(), json.RawMessage(`{"text":"over http"}`))
		if err != nil || out.Content != "over http" || srv.Calls("echo") != 1 {
			t.Fatalf("echo: %+v %v", out, err)
		}
		// A server that echoes the secret back does not put it in the chat.
		out, err = find(t, m.Tools(), "web__whoami").Run(context.Background(), json.RawMessage(`{}`))
		if err != nil || strings.Contains(out.Content, "tok-7f3a9c2e51") || !strings.Contains(out.Content, redact.Mark) {
			t.Fatalf("whoami: %+v %v", out, err)
		}
		// tools/list_changed reaches the client on this revision too.
		before := find(t, m.Tools(), "web__changing").(agent.Foreign).Definition()
		srv.Change()
		waitfor.True(t, "the changed definition over "+tt.protocol, func() bool {
			return find(t, m.Tools(), "web__changing").(agent.Foreign).Definition() != before
		})
		_ = m.Close()
		if strings.Contains(logs.String(), "tok-7f3a9c2e51") {
			t.Errorf("the secret reached the log")
		}
	}
}

func TestHTTPWrongOrMissingBearer(t *testing.T) {
	_, url := httpServer(t, false)
	for _, tt := range []struct {
		name string
		env  env
	}{
		{"wrong", env{"WEB_AUTH": "Bearer wrong-secret-93"}},
		{"missing", env{}},
	} {
		var logs lockedBuf
		c := ServerConfig{Name: "web", URL: url, Headers: map[string]string{"Authorization": "WEB_AUTH"}, Required: true}
		m := Start(context.Background(), []ServerConfig{c}, Options{Getenv: tt.env.get, Logger: slogTo(&logs)})
		st := m.Status()[0]
		if st.Up || !strings.Contains(st.Err, "Unauthorized") {
			t.Errorf("%s: status %+v; want down, saying unauthorized", tt.name, st)
		}
		t.Logf("%s: %s", tt.name, st.Err)
		err := m.Ready()
		if err == nil || !strings.Contains(err.Error(), "required MCP server web is down") {
			t.Errorf("%s: Ready %v", tt.name, err)
		}
		_ = m.Close()
		for _, text := range []string{st.Err, err.Error(), logs.String()} {
			if strings.Contains(text, "wrong-secret-93") {
				t.Errorf("%s: the secret shows: %s", tt.name, text)
			}
		}
		_, perr := Probe(context.Background(), c, Options{Getenv: tt.env.get})
		if perr == nil || strings.Contains(perr.Error(), "wrong-secret-93") {
			t.Errorf("%s: Probe %v", tt.name, perr)
		}
	}
}

func TestProbe(t *testing.T) {
	_, url := httpServer(t, false)
	c := ServerConfig{Name: "web", URL: url, Headers: map[string]string{"Authorization": "WEB_AUTH"}, Trusted: true, Tools: ToolFilter{Deny: []string{"fail"}}}
	infos, err := Probe(context.Background(), c, Options{Getenv: env{"WEB_AUTH": bearer}.get})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ToolInfo{}
	for _, i := range infos {
		got[i.Name] = i
	}
	if i := got["web__read_only"]; i.Effect != "read" || i.Skipped != "" || i.Source.EN == "" {
		t.Errorf("read_only: %+v", i)
	}
	if i := got["web__fail"]; !strings.Contains(i.Skipped, "tools.allow/deny") {
		t.Errorf("fail: %+v", i)
	}
	if len(infos) != 13 { // mcptest's tools
		t.Errorf("%d tools listed", len(infos))
	}
}
