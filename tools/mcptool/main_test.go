package mcptool

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/tools/mcptool/mcptest"
)

// The test binary is also the stdio test server: run with serveEnv=stdio
// it serves mcptest over stdin/stdout (and logs each call to the file
// named by callLogEnv).
const (
	serveEnv   = "MCPTOOL_TEST_SERVE"
	callLogEnv = "MCPTOOL_TEST_CALL_LOG"
	secretEnv  = "MCPTOOL_TEST_SECRET"
)

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "serve-stdio" {
		var opts []mcptest.Option
		if p := os.Getenv(callLogEnv); p != "" {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			opts = append(opts, mcptest.WithCallLog(f))
		}
		// What the parent's log must show scrubbed or not at all.
		var names []string
		for _, kv := range os.Environ() {
			n, _, _ := strings.Cut(kv, "=")
			names = append(names, n)
		}
		fmt.Fprintf(os.Stderr, "mcptest serving on stdio; env names: %s; secret: %s\n", strings.Join(names, ","), os.Getenv(secretEnv))
		if err := mcptest.New(opts...).ServeStdio(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// env is a fake environment.
type env map[string]string

func (e env) get(k string) string { return e[k] }

// changes records OnChange calls.
type changes struct {
	mu    sync.Mutex
	calls []change
	tools map[string][]agent.Tool
}

type change struct {
	server string
	tools  []agent.Tool
}

func (c *changes) on(server string, tools []agent.Tool) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, change{server, tools})
	if c.tools == nil {
		c.tools = map[string][]agent.Tool{}
	}
	c.tools[server] = tools
	return nil
}

func (c *changes) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.calls)
}

func (c *changes) last() change {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[len(c.calls)-1]
}

// inMemory returns options whose transport connects to srv in-process.
func inMemory(srv *mcptest.Server) func(ServerConfig) (mcp.Transport, error) {
	return func(ServerConfig) (mcp.Transport, error) {
		st, ct := mcp.NewInMemoryTransports()
		if _, err := srv.MCP().Connect(context.Background(), st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
}

// startInMemory starts a manager with one trusted server "t" served by a
// new mcptest server in-process.
func startInMemory(t testing.TB, c ServerConfig, ch *changes) (*Manager, *mcptest.Server) {
	t.Helper()
	srv := mcptest.New()
	if c.Name == "" {
		c.Name = "t"
	}
	if c.Command == "" && c.URL == "" {
		c.Command = "unused"
	}
	opts := Options{transport: inMemory(srv), Logger: testLogger(t)}
	if ch != nil {
		opts.OnChange = ch.on
	}
	m := Start(context.Background(), []ServerConfig{c}, opts)
	t.Cleanup(func() { _ = m.Close() })
	if st := m.Status()[0]; !st.Up {
		t.Fatalf("server not up: %s", st.Err)
	}
	return m, srv
}

// find returns the named tool.
func find(t testing.TB, tools []agent.Tool, name string) agent.Tool {
	t.Helper()
	for _, tl := range tools {
		if tl.Name() == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

// testLogger logs through t.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// bufLogger logs into a buffer the test can search.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var _ = httptest.NewServer

func mcptestNew() *mcptest.Server { return mcptest.New() }

func slogTo(w *lockedBuf) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
