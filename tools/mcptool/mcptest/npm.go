package mcptest

import (
	"os"
	"path/filepath"
)

// TB is what NPMServer and NPMModules need of a test: testing.TB has it.
// Not TB itself, so that this package (which bot bench imports
// for its MCP server) does not bring the testing package into the binary.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Skip(args ...any)
}

// NPMServer returns the entry point (a Node.js script) of one of the
// reference MCP servers from npm, as scripts/mcp-npm.sh installed them in
// the directory make test exports as HITLBOT_TEST_MCP_NPM_DIR: bin is
// "mcp-server-filesystem" or "mcp-server-everything". When they are not
// installed the test is skipped with the reason (HITLBOT_TEST_MCP_NPM_SKIP).
func NPMServer(t TB, bin string) string {
	t.Helper()
	script, err := filepath.EvalSymlinks(filepath.Join(NPMModules(t), ".bin", bin))
	if err != nil {
		t.Fatalf("the npm servers have no %s: %v", bin, err)
	}
	return script
}

// NPMModules returns the node_modules directory of the npm peers
// (NODE_PATH for a script that requires @modelcontextprotocol/sdk), or
// skips the test as NPMServer does.
func NPMModules(t TB) string {
	t.Helper()
	dir := os.Getenv("HITLBOT_TEST_MCP_NPM_DIR")
	if dir == "" {
		why := os.Getenv("HITLBOT_TEST_MCP_NPM_SKIP")
		if why == "" {
			why = "HITLBOT_TEST_MCP_NPM_DIR is not set (make test sets it: scripts/mcp-npm.sh)"
		}
		t.Skip("the reference MCP servers from npm are not installed: " + why)
	}
	return filepath.Join(dir, "node_modules")
}
