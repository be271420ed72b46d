package mcptool

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitlbot/hitlbot/internal/tracing"
	"github.com/hitlbot/hitlbot/tools/mcptool/mcptest"
)

// TestCallCarriesTraceparent: a call made under a span (the approval's
// execute_tool span) carries its W3C traceparent in the request's _meta,
// the MCP convention for trace context, on both protocol revisions; a
// call with no span carries none.
func TestCallCarriesTraceparent(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		srv := mcptest.New()
		metas := make(chan mcp.Meta, 2)
		srv.MCP().AddTool(&mcp.Tool{Name: "traced", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				metas <- req.Params.Meta
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			})
		hs := httptest.NewServer(srv.Handler("", stateless))
		m := Start(context.Background(), []ServerConfig{{Name: "t", URL: hs.URL}}, Options{})
		tool := find(t, m.Tools(), "t__traced")

		const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
		if _, err := tool.Run(tracing.WithRemote(context.Background(), tp), json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
		if got := (<-metas)[tracing.MetaKey]; got != tp {
			t.Errorf("stateless %v: _meta.traceparent = %v, want %s", stateless, got, tp)
		}
		if _, err := tool.Run(context.Background(), json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
		if got, ok := (<-metas)[tracing.MetaKey]; ok {
			t.Errorf("stateless %v: a call without a span sent traceparent %v", stateless, got)
		}
		_ = m.Close()
		hs.Close()
	}
}
