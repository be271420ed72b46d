package mcptool

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/tools/mcptool/mcptest"
)

// asked records what Options.Elicit was asked.
type asked struct {
	mu       sync.Mutex
	server   string
	message  string
	schema   any
	origin   approval.Origin
	deadline bool
}

// TestElicitationAskedForItsCall: a server that elicits while its tool
// runs reaches Options.Elicit with its message and schema, in a context
// that carries the call's origin and its deadline; what Elicit answers
// (accept with typed content, decline, cancel) is what the server
// receives, over the in-process and the streamable HTTP transports.
// Without Options.Elicit hitlbot declares no elicitation, and the
// server's request fails.
func TestElicitationAskedForItsCall(t *testing.T) {
	origin := approval.Origin{Session: "feishu:oc_1", Channel: "feishu", ChatID: "oc_1", Requester: "ou_alice"}
	for _, transport := range []string{"memory", "http"} {
		for _, tt := range []struct {
			ans  approval.ElicitAnswer
			want string
		}{
			{approval.ElicitAnswer{Action: approval.ElicitAccept, Content: map[string]any{"env": "prod", "notify": true, "replicas": 3.0}},
				`{"action":"accept","content":{"env":"prod","notify":true,"replicas":3}}`},
			{approval.ElicitAnswer{Action: approval.ElicitDecline}, `{"action":"decline","content":null}`},
			{approval.ElicitAnswer{Action: approval.ElicitCancel}, `{"action":"cancel","content":null}`},
		} {
			var got asked
			opts := Options{Logger: testLogger(t), Elicit: func(ctx context.Context, server, message string, schema any) (approval.ElicitAnswer, error) {
				got.mu.Lock()
				defer got.mu.Unlock()
				got.server, got.message, got.schema = server, message, schema
				got.origin, _ = approval.OriginOf(ctx)
				_, got.deadline = ctx.Deadline()
				return tt.ans, nil
			}}
			m, _ := startElicitServer(t, transport, opts)
			tool := find(t, m.Tools(), "t__ask")
			out, err := tool.Run(approval.WithOrigin(context.Background(), origin), json.RawMessage(`{}`))
			if err != nil || out.IsError || out.Content != tt.want {
				t.Fatalf("%s %s: %+v, %v; want %s", transport, tt.ans.Action, out, err, tt.want)
			}
			got.mu.Lock()
			props, _ := got.schema.(map[string]any)["properties"].(map[string]any)
			if got.server != "t" || got.message != "Deploy settings for <b>web</b>" || len(props) != 4 || got.origin.Session != origin.Session || !got.deadline {
				t.Errorf("%s: Elicit was asked server %q message %q schema %v origin %+v deadline %v", transport, got.server, got.message, got.schema, got.origin, got.deadline)
			}
			got.mu.Unlock()
		}
		m, srv := startElicitServer(t, transport, Options{Logger: testLogger(t)})
		out, err := find(t, m.Tools(), "t__ask").Run(context.Background(), json.RawMessage(`{}`))
		if (err == nil && !out.IsError) || srv.Calls("ask") != 0 {
			t.Fatalf("%s: a client that declares no elicitation: %+v, %v", transport, out, err)
		}
	}
}

// TestElicitationOfWhichCall: on a legacy revision an elicitation is a
// request of the server's on the session; while two of its calls run,
// which one asks cannot be told, and it is declined without asking
// anyone.
func TestElicitationOfWhichCall(t *testing.T) {
	var n atomic.Int32
	m, srv := startElicitServer(t, "http", Options{Logger: testLogger(t), Elicit: func(context.Context, string, string, any) (approval.ElicitAnswer, error) {
		n.Add(1)
		return approval.ElicitAnswer{Action: approval.ElicitAccept, Content: map[string]any{"env": "prod", "notify": true}}, nil
	}})
	if p := m.Status()[0].Protocol; p != "2025-11-25" {
		t.Fatalf("protocol %s, want the legacy 2025-11-25", p)
	}
	ctx := approval.WithOrigin(context.Background(), approval.Origin{Session: "s", Channel: "feishu", ChatID: "oc_1", Requester: "ou_a"})
	slow := make(chan error, 1)
	go func() {
		_, err := find(t, m.Tools(), "t__slow").Run(ctx, json.RawMessage(`{}`))
		slow <- err
	}()
	<-srv.SlowStarted()
	out, err := find(t, m.Tools(), "t__ask").Run(ctx, json.RawMessage(`{}`))
	if err != nil || out.Content != `{"action":"decline","content":null}` || n.Load() != 0 {
		t.Fatalf("asked while two calls run: %+v, %v (Elicit called %d times)", out, err, n.Load())
	}
	srv.Release()
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	// One call alone: asked.
	out, err = find(t, m.Tools(), "t__ask").Run(ctx, json.RawMessage(`{}`))
	if err != nil || !strings.Contains(out.Content, `"action":"accept"`) || n.Load() != 1 {
		t.Fatalf("asked alone: %+v, %v", out, err)
	}
}

// startElicitServer starts a manager of one server "t" (mcptest) over
// transport, with opts.
func startElicitServer(t *testing.T, transport string, opts Options) (*Manager, *mcptest.Server) {
	t.Helper()
	srv := mcptest.New()
	c := ServerConfig{Name: "t", Trusted: true}
	switch transport {
	case "memory":
		c.Command, opts.transport = "unused", inMemory(srv)
	case "http":
		hs := httptest.NewServer(srv.Handler("", false))
		t.Cleanup(hs.Close)
		c.URL = hs.URL
	}
	m := Start(context.Background(), []ServerConfig{c}, opts)
	t.Cleanup(func() { _ = m.Close() })
	if st := m.Status()[0]; !st.Up {
		t.Fatalf("server not up: %s", st.Err)
	}
	return m, srv
}
