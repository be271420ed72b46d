package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/tools/mcptool"
	"github.com/hitlbot/hitlbot/tools/mcptool/mcptest"
)

// runMCP is the agent mode with an MCP tool (-mode mcp): every
// conversation asks for a destructive tool of an MCP server over
// streamable HTTP in this process (the test server of tools/mcptool), and
// its approval runs the tool through the client, the transport and the
// server. Its figures less agent mode's are what an MCP call costs end to
// end: the definition pinned in the hash, the session, the HTTP round trip
// and the server's JSON.
func runMCP(ctx context.Context, cfg Config, sa, sb approval.Store, cnt *counter, info *server, log *slog.Logger, res *Result) error {
	srv := mcptest.New()
	// A listener and a server of net/http, not httptest's: that package
	// would be in the binary only for this (cmd/bot/deps_test.go).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("the bench's MCP server: %w", err)
	}
	hs := &http.Server{Handler: srv.Handler("", false)}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	m := mcptool.Start(ctx, []mcptool.ServerConfig{{Name: "bench", URL: "http://" + ln.Addr().String()}}, mcptool.Options{Logger: log})
	defer m.Close()
	st := m.Status()[0]
	if !st.Up {
		return fmt.Errorf("the bench's MCP server did not start: %s", st.Err)
	}
	for _, t := range m.Tools() {
		if t.Name() == "bench__destructive" {
			bt := benchTool{tool: t, args: json.RawMessage(`{"x":"1"}`), runs: func() int64 { return int64(srv.Calls("destructive")) }}
			return runConversations(ctx, cfg, sa, sb, cnt, info, log, res, bt)
		}
	}
	return fmt.Errorf("the bench's MCP server offers no bench__destructive")
}
