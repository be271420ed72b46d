// Package agentcli runs the real agent command-line programs that hitlbot
// gates (Claude Code and the Codex CLI, from npm) in tests, offline: it installs a pinned
// version once into a cache shared by test runs, fakes the model API the
// program talks to, and drives the program the way a person's session
// would. Nothing reaches the internet but the npm registry, and only to
// install.
//
// A test that needs a program calls Install, which skips the test, saying
// why, where node or npm is missing or the registry cannot be reached; the
// rest of the suite runs anyway.
package agentcli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The agent programs hitlbot is verified against (docs/agents.md names
// the versions; change both together).
const (
	// ClaudeCodePackage is the Claude Code CLI (cmd/bot's TestClaudeCodeHook).
	ClaudeCodePackage = "@anthropic-ai/claude-code@2.1.328"
	// CodexPackage is the Codex CLI (TestCodexHookContract, TestCodexHook).
	CodexPackage = "@openai/codex@0.169.0"
)

// installTimeout bounds one npm install: the Codex package brings a ~300 MB
// binary.
const installTimeout = 10 * time.Minute

// Install installs the npm package spec ("name@version") into a directory
// of the user's cache that later runs reuse, and returns the directory
// holding its programs (node_modules/.bin). It skips t when node or npm is
// missing or the install fails (no registry), with npm's own words.
//
// Two test processes may install at once: each installs into a directory
// of its own and renames it into place; the loser uses the winner's.
func Install(t testing.TB, spec string) string {
	t.Helper()
	for _, prog := range []string{"node", "npm"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Skipf("%s is not installed, so %s cannot run here: %v", prog, spec, err)
		}
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "hitlbot", "npm", sanitize(spec))
	bin := filepath.Join(dir, "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(dir, ".installed")); err == nil {
		return bin
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatalf("agentcli: %v", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), sanitize(spec)+".tmp-")
	if err != nil {
		t.Fatalf("agentcli: %v", err)
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--prefix", tmp, spec)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Skipf("npm install %s failed (is the npm registry reachable?): %v\n%s", spec, err, tail(out.String(), 20))
	}
	if err := os.WriteFile(filepath.Join(tmp, ".installed"), []byte(spec+"\n"), 0o644); err != nil {
		t.Fatalf("agentcli: %v", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, ".installed")); statErr != nil {
			t.Fatalf("agentcli: install %s: %v", spec, err)
		}
		// Another process installed it first; use that one.
	}
	return bin
}

// sanitize makes an npm spec a directory name.
func sanitize(spec string) string {
	return strings.NewReplacer("/", "+", "@", "_", ":", "_").Replace(spec)
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// version runs prog --version: a check that the installed program runs.
func version(prog string) (string, error) {
	out, err := exec.Command(prog, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v: %s", prog, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}
