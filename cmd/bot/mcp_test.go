package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/tools/mcptool/mcptest"
)

// mcpTestURL serves a new mcptest server over streamable HTTP until the
// test ends and returns its URL.
func mcpTestURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(mcptest.New().Handler("", false))
	t.Cleanup(srv.Close)
	return srv.URL
}

// mcpServerYAML is one entry of tools.mcp.servers for an HTTP server.
func mcpServerYAML(name, url string, extra ...string) string {
	return "      - name: " + name + "\n        url: " + url + "\n" + strings.Join(extra, "")
}

// mcpConfig is a config with the given tools.mcp.servers entries.
func mcpConfig(servers ...string) string {
	return "tools:\n  mcp:\n    servers:\n" + strings.Join(servers, "")
}

// writeConfig writes body to a config file and returns its path.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestServeMCP: a served bot offers a trusted MCP server's tools, says in
// /readyz which required server is down (and only that), and counts the
// servers in /metrics.
func TestServeMCP(t *testing.T) {
	down := "http://" + closedPort(t) + "/mcp"
	path := writeConfig(t, mcpConfig(
		mcpServerYAML("fs", mcpTestURL(t), "        trusted: true\n"),
		mcpServerYAML("gh", down, "        required: true\n        start_timeout: 2s\n"),
	))
	s := serve(t, "-config", path, "-data", t.TempDir())

	code, body := get(t, s.base+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "required MCP server gh is down") || strings.Contains(body, "server fs") {
		t.Fatalf("/readyz with a required server down: %d %s", code, body)
	}
	_, metrics := get(t, s.base+"/metrics")
	for _, want := range []string{`hitlbot_mcp_server_up{server="fs",transport="http"} 1`, `hitlbot_mcp_server_up{server="gh",transport="http"} 0`,
		`hitlbot_mcp_server_tools{server="fs"} 13`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// A trusted server's read-only tool runs at once, through the agent.
	res := chat(t, s.base, map[string]any{"message": `/call fs__echo {"text":"hello from MCP"}`})
	if res["requiresConfirmation"] == true || !strings.Contains(fmt.Sprint(res["text"]), "hello from MCP") {
		t.Fatalf("a trusted read-only MCP tool: %v", res)
	}
}

// TestCheckProbe: `bot check -probe` lists each server's tools with the
// risk the policy gives them and whether they ask, and fails when a
// server cannot be probed.
func TestCheckProbe(t *testing.T) {
	url := mcpTestURL(t)
	body := mcpConfig(mcpServerYAML("fs", url, "        trusted: true\n"), mcpServerYAML("raw", url)) +
		"approval:\n  policy:\n    tools:\n      raw__read_only: {risk: LOW}\n"
	var out, errb bytes.Buffer
	if st := run(context.Background(), []string{"check", "-probe", "-config", writeConfig(t, body), "-data", t.TempDir()}, nil, &out, &errb); st != 0 {
		t.Fatalf("exit %d\n%s\n%s", st, out.String(), errb.String())
	}
	for _, re := range []string{
		`# MCP server fs \(http, trusted\): 13 tools`,
		`fs__read_only +LOW +no +LOW risk \(a read\); annotation readOnlyHint from trusted server fs`,
		`fs__not_destructive +MEDIUM +yes +.*destructiveHint: false from trusted server fs`,
		`fs__destructive +HIGH +yes +HIGH risk \(destructive\); trusted server fs does not say`,
		`# MCP server raw \(http, untrusted\): 13 tools`,
		`raw__echo +HIGH +yes +HIGH risk \(destructive\); untrusted server raw: its annotations are ignored`,
		`raw__read_only +LOW +no +LOW risk\n`, // the override, and no word of the annotations
	} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("the probe's output does not match %q:\n%s", re, out.String())
		}
	}

	out.Reset()
	errb.Reset()
	body = mcpConfig(mcpServerYAML("gone", "http://"+closedPort(t)+"/mcp", "        start_timeout: 2s\n"))
	if st := run(context.Background(), []string{"check", "-probe", "-config", writeConfig(t, body), "-data", t.TempDir()}, nil, &out, &errb); st != 1 ||
		!strings.Contains(out.String(), "# MCP server gone (http, untrusted): FAILED") || !strings.Contains(errb.String(), "1 MCP server(s) could not be probed") {
		t.Fatalf("a server that cannot be probed: exit %d\n%s\n%s", st, out.String(), errb.String())
	}
}

// TestFilesystemServerThroughTheAPI: the reference filesystem server from
// npm, configured as the README and docs/mcp.md say, used through the HTTP API with the
// rules model. A write asks; after 确认 the file exists with its content
// and the same confirmation again finds nothing to decide; after 取消
// nothing is written. A read runs at once only when the server is trusted.
func TestFilesystemServerThroughTheAPI(t *testing.T) {
	script := mcptest.NPMServer(t, "mcp-server-filesystem")
	share := t.TempDir()
	fs := func(trusted bool) string {
		return fmt.Sprintf("      - name: fs\n        command: node\n        args: [%q, %q]\n        trusted: %v\n", script, share, trusted)
	}
	s := serve(t, "-config", writeConfig(t, mcpConfig(fs(false))), "-data", t.TempDir())
	write := func(name, content string) string {
		return fmt.Sprintf(`/call fs__write_file {"path":%q,"content":%q}`, filepath.Join(share, name), content)
	}

	tok := token(t, chat(t, s.base, map[string]any{"message": write("a.txt", "approved once")}))
	if _, err := os.Stat(filepath.Join(share, "a.txt")); !os.IsNotExist(err) {
		t.Fatalf("the file exists before anyone approved: %v", err)
	}
	res := chat(t, s.base, map[string]any{"confirmationToken": tok, "confirmed": true})
	if b, err := os.ReadFile(filepath.Join(share, "a.txt")); err != nil || string(b) != "approved once" {
		t.Fatalf("after 确认 the file holds %q (%v); the answer: %v", b, err, res)
	}
	body, _ := json.Marshal(map[string]any{"confirmationToken": tok, "confirmed": true})
	resp, err := http.Post(s.base+"/agent/chat", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("the same confirmation again got %d, want 404", resp.StatusCode)
	}

	tok = token(t, chat(t, s.base, map[string]any{"message": write("b.txt", "never")}))
	chat(t, s.base, map[string]any{"confirmationToken": tok, "confirmed": false})
	if _, err := os.Stat(filepath.Join(share, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("a declined write was written: %v", err)
	}

	read := fmt.Sprintf(`/call fs__read_text_file {"path":%q}`, filepath.Join(share, "a.txt"))
	if res := chat(t, s.base, map[string]any{"message": read}); res["requiresConfirmation"] != true {
		t.Fatalf("a read of an untrusted server ran without asking: %v", res)
	}
	s.shutdown(t)

	s = serve(t, "-config", writeConfig(t, mcpConfig(fs(true))), "-data", t.TempDir())
	res = chat(t, s.base, map[string]any{"message": read})
	if res["requiresConfirmation"] == true || !strings.Contains(fmt.Sprint(res["text"]), "approved once") {
		t.Fatalf("a read of a trusted server: %v", res)
	}
}

// TestToolChangedBetweenCardAndClick: a served bot asks for an MCP tool;
// the server then changes that tool (tools/list_changed) before the
// click. The click runs nothing: the answer says the tool changed, the
// server saw no call, and asking again shows the new definition and runs.
func TestToolChangedBetweenCardAndClick(t *testing.T) {
	srv := mcptest.New()
	hs := httptest.NewServer(srv.Handler("", false))
	t.Cleanup(hs.Close)
	s := serve(t, "-config", writeConfig(t, mcpConfig(mcpServerYAML("t", hs.URL))), "-data", t.TempDir())
	offered := func() int {
		return strings.Count(s.stderr.String(), `"msg":"MCP server tools offered","component":"mcp","server":"t"`)
	}
	if offered() != 1 {
		t.Fatalf("the server's tools were offered %d times at start:\n%s", offered(), s.stderr)
	}

	const call = `/call t__changing {"path":"/srv/a"}`
	tok := token(t, chat(t, s.base, map[string]any{"message": call}))
	srv.Change()
	waitFor(t, 10*time.Second, "the changed tool list", func() bool { return offered() == 2 })
	res := chat(t, s.base, map[string]any{"confirmationToken": tok, "confirmed": true})
	if text := fmt.Sprint(res["text"]); !strings.Contains(fmt.Sprint(res), "changed on its server") || srv.Calls("changing") != 0 {
		t.Fatalf("a click after the tool changed: %d calls; the answer: %s\n%v", srv.Calls("changing"), text, res)
	}

	tok = token(t, chat(t, s.base, map[string]any{"message": call}))
	chat(t, s.base, map[string]any{"confirmationToken": tok, "confirmed": true})
	if srv.Calls("changing") != 1 {
		t.Fatalf("asked again and approved: %d calls, want 1", srv.Calls("changing"))
	}
}

// TestHangingToolIsFrozen: an approved call to an MCP tool that never
// answers ends at call_timeout: the server is told to cancel, the answer
// says the effect is unknown (frozen, never retried by itself), and the
// approval's record says frozen.
func TestHangingToolIsFrozen(t *testing.T) {
	srv := mcptest.New()
	hs := httptest.NewServer(srv.Handler("", false))
	t.Cleanup(hs.Close)
	t.Cleanup(srv.Release)
	s := serve(t, "-config", writeConfig(t, mcpConfig(mcpServerYAML("t", hs.URL, "        call_timeout: 1s\n"))), "-data", t.TempDir())
	res := chat(t, s.base, map[string]any{"message": `/call t__slow {}`})
	tok := token(t, res)
	id := fmt.Sprint(res["pendingAction"].(map[string]any)["approvalId"])
	res = chat(t, s.base, map[string]any{"confirmationToken": tok, "confirmed": true})
	select {
	case cancelled := <-srv.SlowEnded():
		if !cancelled {
			t.Error("the hanging call ended without seeing its cancellation")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the hanging call did not end")
	}
	if !strings.Contains(fmt.Sprint(res), "frozen") {
		t.Errorf("the answer does not say the action is frozen: %v", res)
	}
	if code, body := get(t, s.base+"/api/approvals/"+id); code != http.StatusOK || !strings.Contains(body, `"frozen"`) {
		t.Errorf("GET /api/approvals/%s: %d %s", id, code, body)
	}
	if srv.Calls("slow") != 1 {
		t.Errorf("the slow tool was called %d times, want 1", srv.Calls("slow"))
	}
}
