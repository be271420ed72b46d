package mcptest

import (
	"os"
	"path/filepath"
	"testing"
)

// NPMServer returns the entry point (a Node.js script) of one of the
// reference MCP servers from npm, as scripts/mcp-npm.sh installed them in
// the directory make test exports as HITLBOT_TEST_MCP_NPM_DIR: bin is
// "mcp-server-filesystem" or "mcp-server-everything". When they are not
// installed the test is skipped with the reason (HITLBOT_TEST_MCP_NPM_SKIP).
func NPMServer(t testing.TB, bin string) string {
	t.Helper()
	dir := os.Getenv("HITLBOT_TEST_MCP_NPM_DIR")
	if dir == "" {
		why := os.Getenv("HITLBOT_TEST_MCP_NPM_SKIP")
		if why == "" {
			why = "HITLBOT_TEST_MCP_NPM_DIR is not set (make test sets it: scripts/mcp-npm.sh)"
		}
		t.Skip("the reference MCP servers from npm are not installed: " + why)
	}
	script, err := filepath.EvalSymlinks(filepath.Join(dir, "node_modules", ".bin", bin))
	if err != nil {
		t.Fatalf("HITLBOT_TEST_MCP_NPM_DIR=%s has no %s: %v", dir, bin, err)
	}
	return script
}
