package hitltest

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/tools/mcptool"
	"github.com/hitlbot/hitlbot/tools/mcptool/mcptest"
)

// Elicit answers an MCP server's form (mcptool.Options.Elicit); a test
// hands its stack's Engine.Elicit.
type Elicit func(ctx context.Context, server, message string, schema any) (approval.ElicitAnswer, error)

// MCPServer starts mcptest's server (its "ask" tool asks a form) over
// streamable HTTP and a Manager connected to it as the trusted server "t"
// (its tools are "t__<name>", run at once), whose forms elicit answers;
// both end with the test. It fails the test when the server is not up.
func MCPServer(t testing.TB, elicit Elicit) (*mcptest.Server, *mcptool.Manager) {
	t.Helper()
	srv := mcptest.New()
	hs := httptest.NewServer(srv.Handler("", true))
	t.Cleanup(hs.Close)
	m := mcptool.Start(context.Background(), []mcptool.ServerConfig{{Name: "t", URL: hs.URL, Trusted: true}}, mcptool.Options{Logger: slog.New(slog.DiscardHandler),
		Elicit: elicit})
	t.Cleanup(func() { _ = m.Close() })
	if st := m.Status()[0]; !st.Up {
		t.Fatalf("the MCP server is down: %s", st.Err)
	}
	return srv, m
}
