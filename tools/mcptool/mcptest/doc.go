// Package mcptest is an MCP server for tests, written with the same SDK
// the client uses. It has a tool for every annotation combination
// (read_only, not_destructive, destructive, plain), a fast echo, a slow
// tool that blocks until released or cancelled, a failing tool (isError),
// tools that return structured content and media, a tool that echoes the
// Authorization header it received (to prove the client scrubs it), and a
// tool whose definition changes on request (Change, or the control tool
// change), which notifies tools/list_changed. A test adds tools of its
// own with Add (a definition carrying a secret, a name another server
// also offers) and takes them away with Remove.
//
// It runs in-process (Server.MCP with mcp.NewInMemoryTransports), over
// HTTP (Server.Handler) and as a subprocess over stdio (ServeStdio, which
// a test binary's TestMain calls when an environment variable says so).
package mcptest
