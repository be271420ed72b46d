package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cmdMCP is `bot mcp`: an MCP server on stdin/stdout that forwards every
// tool call to a running hitlbot's /mcp, with an agent's token, for agents
// that only spawn commands (Claude Code's "type": "stdio" servers). The
// tools are the ones hitlbot offers (request_approval, create_approval,
// get_approval, wait_approval); progress notifications are passed back.
func cmdMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bot mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "http://127.0.0.1:8080/mcp", "the /mcp endpoint of the running hitlbot")
	tokenEnv := fs.String("token-env", "AGENT_TOKEN", "the environment variable holding the agent's bearer token (agents[].token_env on the server)")
	if st := parse(fs, args); st >= 0 {
		return st
	}
	tok := os.Getenv(*tokenEnv)
	if tok == "" {
		fmt.Fprintf(stderr, "bot mcp: the environment variable %s is empty; set it to the agent's token\n", *tokenEnv)
		return 2
	}
	if err := forwardMCP(ctx, *url, tok, stdin, stdout); err != nil {
		fmt.Fprintf(stderr, "bot mcp: %v\n", err)
		return 1
	}
	return 0
}

// forwardMCP serves on in/out the tools of the MCP server at url until in
// closes or ctx ends.
func forwardMCP(ctx context.Context, url, token string, in io.Reader, out io.Writer) error {
	// Progress of a forwarded call goes back to the session that made it,
	// under the caller's own token.
	var mu sync.Mutex
	waiting := map[any]*mcp.ServerSession{}
	client := mcp.NewClient(&mcp.Implementation{Name: "hitlbot-mcp", Version: Version()}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(ctx context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			ss := waiting[r.Params.ProgressToken]
			mu.Unlock()
			if ss != nil {
				_ = ss.NotifyProgress(ctx, r.Params)
			}
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{token}}}, nil)
	if err != nil {
		return fmt.Errorf("cannot reach hitlbot at %s: %v", url, err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("listing hitlbot's tools at %s: %v", url, err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "hitlbot", Version: Version()}, nil)
	for _, t := range tools.Tools {
		server.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			p := &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments}
			if tok := req.Params.GetProgressToken(); tok != nil {
				p.Meta = mcp.Meta{"progressToken": tok}
				mu.Lock()
				waiting[tok] = req.Session
				mu.Unlock()
				defer func() { mu.Lock(); delete(waiting, tok); mu.Unlock() }()
			}
			return cs.CallTool(ctx, p)
		})
	}
	return server.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
}

// bearerTransport adds the agent's token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
