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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitlbot/hitlbot/internal/fakellm"
	"github.com/hitlbot/hitlbot/tools/mcptool/mcptest"
)

// The value of the Authorization header of the MCP server in the tests
// below (an environment variable names it, as ops configure it), and its
// credential alone.
const (
	mcpAuthEnv  = "HITLBOT_TEST_MCP_AUTH"
	mcpAuth     = "Bearer tok-9c1e5ecret"
	mcpAuthCred = "tok-9c1e5ecret"
)

// leakyTools are an MCP server's tools that carry its secret (the value
// of its Authorization header) in every string of their definitions, and
// in one tool's name.
func leakyTools() []*mcp.Tool {
	schema := strings.ReplaceAll(`{"type":"object","properties":{
		"mode":{"type":"string","enum":["a","CRED"],"default":"CRED","description":"the mode, e.g. CRED","title":"Mode CRED"},
		"key_CRED":{"type":"string","pattern":"^CRED$"}},"required":["mode"]}`, "CRED", mcpAuthCred)
	return []*mcp.Tool{
		{Name: "leaky", Title: "Leaky " + mcpAuthCred, Description: "sends " + mcpAuth + ", or " + mcpAuthCred + " alone",
			InputSchema: json.RawMessage(schema), Annotations: &mcp.ToolAnnotations{Title: "annotated " + mcpAuthCred}},
		{Name: "get_" + mcpAuthCred, Description: "named after the secret", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
}

// leakyServer serves mcptest with leakyTools over streamable HTTP, asking
// for mcpAuth, and sets mcpAuthEnv for the bot; it returns the server's
// entry of tools.mcp.servers.
func leakyServer(t *testing.T) (*mcptest.Server, string) {
	t.Helper()
	t.Setenv(mcpAuthEnv, mcpAuth)
	srv := mcptest.New()
	srv.Add(leakyTools()...)
	hs := httptest.NewServer(srv.Handler(mcpAuth, false))
	t.Cleanup(hs.Close)
	return srv, mcpServerYAML("s", hs.URL, "        headers:\n          Authorization: "+mcpAuthEnv+"\n")
}

// noSecret fails the test when what holds the server's secret.
func noSecret(t *testing.T, where, what string) {
	t.Helper()
	if strings.Contains(what, mcpAuthCred) {
		t.Errorf("the MCP server's secret reached %s:\n%s", where, what)
	}
}

// dataFiles is every file under dir, concatenated (the audit trail, the
// store's files).
func dataFiles(t *testing.T, dir string) string {
	t.Helper()
	var all bytes.Buffer
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		all.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return all.String()
}

// TestMCPToolDefinitionsHideTheServersSecrets: an MCP server whose tool
// definitions carry the value of one of its headers (title, description,
// annotations' title, the schema's property names, enum, default,
// description, title and pattern) and a tool named after it. The named tool
// is not offered (and /readyz says so without the secret); the other is,
// with the secret hidden everywhere: /tools, the approval's answer, the
// audit trail, /metrics, /readyz and the log.
func TestMCPToolDefinitionsHideTheServersSecrets(t *testing.T) {
	srv, entry := leakyServer(t)
	data := t.TempDir()
	s := serve(t, "-config", writeConfig(t, mcpConfig(entry)), "-data", data)

	tools := chat(t, s.base, map[string]any{"message": "/tools"})
	out := fmt.Sprint(tools)
	if !strings.Contains(out, "s__leaky") || strings.Contains(out, "s__get_") && !strings.Contains(out, "s__get_[REDACTED]") {
		t.Errorf("/tools: %s", out)
	}
	noSecret(t, "/tools", out)

	res := chat(t, s.base, map[string]any{"message": `/call s__leaky {"mode":"a"}`})
	b, _ := json.Marshal(res)
	noSecret(t, "the approval's answer", string(b))
	res = chat(t, s.base, map[string]any{"confirmationToken": token(t, res), "confirmed": true})
	if srv.Calls("leaky") != 1 {
		t.Fatalf("s__leaky was not run once approved: %v", res)
	}
	b, _ = json.Marshal(res)
	noSecret(t, "the answer after the run", string(b))

	code, ready := get(t, s.base+"/readyz")
	if code != http.StatusOK || !strings.Contains(ready, "s__get_[REDACTED] is not offered: its name holds the value of one of the server's env or headers variables") {
		t.Errorf("/readyz: %d %s", code, ready)
	}
	noSecret(t, "/readyz", ready)
	_, metrics := get(t, s.base+"/metrics")
	for _, want := range []string{`hitlbot_tool_duration_seconds_count{tool="s__leaky"} 1`, `hitlbot_mcp_server_tools_refused{server="s"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	noSecret(t, "/metrics", metrics)
	s.shutdown(t)
	noSecret(t, "the log", s.stderr.String())
	noSecret(t, "the data directory (audit trail, store)", dataFiles(t, data))
}

// TestMCPToolDefinitionsSentToTheModelHideTheServersSecrets: what the
// model reads of an MCP server's tools (the tool list of every request)
// holds none of the server's secrets, nor does the approval it leads to.
func TestMCPToolDefinitionsSentToTheModelHideTheServersSecrets(t *testing.T) {
	_, entry := leakyServer(t)
	llm := fakellm.New(t)
	llm.Enqueue(fakellm.Calls(fakellm.Call("s__leaky", `{"mode":"a"}`)), fakellm.Text("asked"))
	for k, v := range modelEnv(llm.URL, llm.APIKey()) {
		t.Setenv(k, v)
	}
	s := serve(t, "-config", writeConfig(t, mcpConfig(entry)), "-data", t.TempDir())
	res := chat(t, s.base, map[string]any{"message": "use the leaky tool"})
	if res["requiresConfirmation"] != true {
		t.Fatalf("the model's call did not ask: %v", res)
	}
	b, _ := json.Marshal(res)
	noSecret(t, "the approval's answer", string(b))
	reqs := llm.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model was not asked")
	}
	var offered bool
	for _, r := range reqs {
		noSecret(t, "a request to the model", string(r.Body))
		offered = offered || bytes.Contains(r.Body, []byte(`"s__leaky"`))
	}
	if !offered {
		t.Errorf("s__leaky was not offered to the model:\n%s", reqs[0].Body)
	}
}

// collidingServers serves two mcptest servers whose tools a__b__c collide:
// server a's tool b__c and server a__b's tool c; it returns their entries
// of tools.mcp.servers, a first.
func collidingServers(t *testing.T, extraB string) (a, b string) {
	t.Helper()
	serveWith := func(tool string) string {
		srv := mcptest.New()
		srv.Add(&mcp.Tool{Name: tool, Description: "collides", InputSchema: json.RawMessage(`{"type":"object"}`)})
		hs := httptest.NewServer(srv.Handler("", false))
		t.Cleanup(hs.Close)
		return hs.URL
	}
	return mcpServerYAML("a", serveWith("b__c")), mcpServerYAML("a__b", serveWith("c"), extraB)
}

// builtInNamed is a tools.http entry named name.
func builtInNamed(name string) string {
	return "  http:\n    - name: " + name + "\n      url: http://127.0.0.1:1/x\n"
}

// TestMCPToolNameCollisions: server a's tool b__c and server a__b's tool c
// are both a__b__c, and a built-in tool is named a__read_only. Each server
// offers all its other tools; a__b__c is a's (listed first), a__read_only
// the built-in's, and /readyz says both without failing (neither server is
// required).
func TestMCPToolNameCollisions(t *testing.T) {
	a, b := collidingServers(t, "")
	s := serve(t, "-config", writeConfig(t, mcpConfig(a, b)+builtInNamed("a__read_only")), "-data", t.TempDir())
	out := fmt.Sprint(chat(t, s.base, map[string]any{"message": "/tools"}))
	for _, want := range []string{"a__echo", "a__b__echo", "a__b__c", "a__read_only"} {
		if !regexp.MustCompile(`\b` + want + `\b`).MatchString(out) {
			t.Errorf("/tools lacks %s:\n%s", want, out)
		}
	}
	// a__b__c is server a's tool: its card says which server.
	res := chat(t, s.base, map[string]any{"message": `/call a__b__c {}`})
	if b, _ := json.Marshal(res); !strings.Contains(string(b), "a · b__c") {
		t.Errorf("a__b__c is not server a's tool b__c: %s", b)
	}
	code, ready := get(t, s.base+"/readyz")
	for _, want := range []string{
		"MCP server a__b: a__b__c is not offered: MCP server a, listed before it in tools.mcp.servers, has a tool of that name",
		"MCP server a: a__read_only is not offered: a built-in tool has that name",
	} {
		if code != http.StatusOK || !strings.Contains(ready, want) {
			t.Errorf("/readyz: %d %s\nwant %q", code, ready, want)
		}
	}
}

// TestMCPToolNameCollisionOfARequiredServer: /readyz fails while a tool of
// a required server is refused for its name.
func TestMCPToolNameCollisionOfARequiredServer(t *testing.T) {
	a, b := collidingServers(t, "        required: true\n")
	s := serve(t, "-config", writeConfig(t, mcpConfig(a, b)), "-data", t.TempDir())
	code, ready := get(t, s.base+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(ready, "required MCP server a__b: a__b__c is not offered") {
		t.Errorf("/readyz: %d %s", code, ready)
	}
}

// TestCheckProbeRefusals: `bot check -probe` says which tools a served bot
// would refuse for their names (another server's, a built-in's, a
// secret), without the secret.
func TestCheckProbeRefusals(t *testing.T) {
	a, b := collidingServers(t, "")
	_, leaky := leakyServer(t)
	body := mcpConfig(a, b, leaky) + builtInNamed("a__read_only")
	var out, errb bytes.Buffer
	if st := run(context.Background(), []string{"check", "-probe", "-config", writeConfig(t, body), "-data", t.TempDir()}, nil, &out, &errb); st != 0 {
		t.Fatalf("exit %d\n%s\n%s", st, out.String(), errb.String())
	}
	for _, re := range []string{
		`a__read_only +- +- +not offered: a built-in tool \(tools.http\) has that name`,
		`a__b__c +HIGH +yes`, // in server a's list
		`a__b__c +- +- +not offered: MCP server a, listed before it in tools.mcp.servers, has that name`,
		`a__b__echo +HIGH +yes`,
		`s__get_\[REDACTED\] +- +- +not offered: its name holds the value of one of the server's env or headers variables`,
		`s__leaky +HIGH +yes`,
	} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("the probe's output does not match %q:\n%s", re, out.String())
		}
	}
	noSecret(t, "the probe's output", out.String()+errb.String())
}
