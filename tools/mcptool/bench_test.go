package mcptool

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/tools/mcptool/mcptest"
)

// BenchmarkCallOverhead measures one call of the test server's fastest
// tool (echo) over stdio and over HTTP, twice: through
// agent.Registry.Dispatch (schema validation, definition pin check, the
// tool's Run with its result mapping; no policy) and as a bare
// cs.CallTool. The direct sub-benchmark also reports the difference as
// overhead-ns/op: what hitlbot adds to the server's time and the
// transport's.
func BenchmarkCallOverhead(b *testing.B) {
	b.Run("stdio", func(b *testing.B) {
		c, getenv, _ := stdioServer(b)
		c.Env = []string{serveEnv} // no call log: file writes would dominate
		benchOverhead(b, c, Options{Getenv: getenv})
	})
	b.Run("http", func(b *testing.B) {
		srv := mcptest.New()
		hs := httptest.NewServer(srv.Handler(bearer, false))
		defer hs.Close()
		c := ServerConfig{Name: "web", URL: hs.URL, Headers: map[string]string{"Authorization": "WEB_AUTH"}}
		benchOverhead(b, c, Options{Getenv: env{"WEB_AUTH": bearer}.get})
	})
}

func benchOverhead(b *testing.B, c ServerConfig, opts Options) {
	reg := agent.NewRegistry()
	opts.OnChange = func(s string, tools []agent.Tool) []string { _ = reg.SetGroup(s, tools...); return nil }
	m := Start(context.Background(), []ServerConfig{c}, opts)
	defer m.Close()
	if st := m.Status()[0]; !st.Up {
		b.Fatalf("server down: %s", st.Err)
	}
	name := c.Name + "__echo"
	tl, ok := reg.Get(name)
	if !ok {
		b.Fatal("no echo tool")
	}
	canon, hash, err := agent.HashCall(tl, name, []byte(`{"text":"hi"}`))
	if err != nil {
		b.Fatal(err)
	}
	call := approval.Call{Tool: name, Args: canon, PayloadSHA256: hash}
	cs := m.servers[0].session()
	ctx := context.Background()
	var dispatch float64
	b.Run("dispatch", func(b *testing.B) {
		for b.Loop() {
			if res, err := reg.Dispatch(ctx, call); err != nil || res.Content != "hi" {
				b.Fatalf("%+v %v", res, err)
			}
		}
		dispatch = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); err != nil || res.IsError {
				b.Fatalf("%+v %v", res, err)
			}
		}
		direct := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		// A parent benchmark prints no metrics: the difference is
		// reported here, once both sides are measured.
		b.ReportMetric(dispatch-direct, "overhead-ns/op")
	})
}

// BenchmarkOwnWork measures what hitlbot itself does for one MCP call,
// without any transport or server: validating the arguments against the
// tool's schema, hashing the call with its pinned definition, the
// policy's verdict, the pin check before the run, and turning the
// server's result into the model's text. BenchmarkCallOverhead measures
// the same around a real round trip, where it drowns in the transport's
// noise.
func BenchmarkOwnWork(b *testing.B) {
	m, _ := startInMemory(b, ServerConfig{}, nil)
	tl, ok := agent.AsForeign(find(b, m.Tools(), "t__echo"))
	if !ok {
		b.Fatal("echo is not foreign")
	}
	reg := agent.NewRegistry()
	if err := reg.SetGroup("t", tl); err != nil {
		b.Fatal(err)
	}
	pol, err := approval.NewPolicy(approval.DefaultPolicyConfig())
	if err != nil {
		b.Fatal(err)
	}
	args := []byte(`{"text":"hello, world"}`)
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello, world"}}}
	for b.Loop() {
		if _, err := reg.Validate("t__echo", args); err != nil {
			b.Fatal(err)
		}
		canon, hash, err := agent.HashCall(tl, "t__echo", args)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := pol.Evaluate(approval.CallInfo{Tool: "t__echo", Effect: tl.Effect(canon), EffectSource: tl.EffectSource(), Hash: hash, Confidence: 1}, nil); err != nil {
			b.Fatal(err)
		}
		c2, err := approval.Canonicalize(canon)
		if err != nil || approval.PinnedHash("t__echo", c2, tl.Definition()) != hash {
			b.Fatal("pin check failed")
		}
		if resultText(res) != "hello, world" {
			b.Fatal("result text")
		}
	}
}
