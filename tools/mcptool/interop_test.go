package mcptool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/tools/mcptool/mcptest"
)

// startNPM starts one reference server over stdio, with OnChange feeding
// a registry, and stops it when the test ends.
func startNPM(t *testing.T, c ServerConfig) (*Manager, *agent.Registry) {
	t.Helper()
	reg := agent.NewRegistry()
	m := Start(context.Background(), []ServerConfig{c}, Options{Logger: testLogger(t), Getenv: os.Getenv,
		OnChange: func(server string, tools []agent.Tool) []string {
			if err := reg.SetGroup(server, tools...); err != nil {
				t.Errorf("SetGroup: %v", err)
			}
			return nil
		}})
	t.Cleanup(func() { m.Close() })
	if st := m.Status()[0]; !st.Up {
		t.Fatalf("%s did not start: %s", c.Name, st.Err)
	}
	return m, reg
}

// TestFilesystemServerFromNPM: @modelcontextprotocol/server-filesystem,
// run as users run it. Its read tools are reads only when the server is
// trusted; its writes are destructive either way; a write pinned to the
// tool's definition runs through the registry and the file exists once
// with the content; a call with arguments its schema refuses never
// reaches it.
func TestFilesystemServerFromNPM(t *testing.T) {
	node, script := "node", mcptest.NPMServer(t, "mcp-server-filesystem")
	share := t.TempDir()
	for _, trusted := range []bool{false, true} {
		m, reg := startNPM(t, ServerConfig{Name: "fs", Command: node, Args: []string{script, share}, Trusted: trusted})
		read, ok := reg.Get("fs__read_text_file")
		if !ok {
			t.Fatalf("fs__read_text_file is not offered; tools: %v", names(m.Tools()))
		}
		write, ok := reg.Get("fs__write_file")
		if !ok {
			t.Fatalf("fs__write_file is not offered; tools: %v", names(m.Tools()))
		}
		// write_file says destructiveHint true; read_text_file readOnlyHint
		// true, which counts only from a trusted server.
		wantRead := approval.EffectDestructive
		if trusted {
			wantRead = approval.EffectRead
		}
		if read.Effect(nil) != wantRead || write.Effect(nil) != approval.EffectDestructive {
			t.Errorf("trusted %v: read %s, write %s", trusted, read.Effect(nil), write.Effect(nil))
		}
	}

	_, reg := startNPM(t, ServerConfig{Name: "fs", Command: node, Args: []string{script, share}})
	target := filepath.Join(share, "a.txt")
	tool, _ := reg.Get("fs__write_file")
	args, hash, err := agent.HashCall(tool, "fs__write_file", []byte(`{"path":`+quote(target)+`,"content":"hi from hitlbot"}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := reg.Dispatch(context.Background(), approval.Call{Tool: "fs__write_file", Args: args, PayloadSHA256: hash})
	if err != nil || res.IsError {
		t.Fatalf("write: %+v, %v", res, err)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "hi from hitlbot" {
		t.Fatalf("the file holds %q (%v)", b, err)
	}
	if _, err := reg.Validate("fs__write_file", json.RawMessage(`{"path":`+quote(target)+`}`)); err == nil {
		t.Fatal("a write without content passed the tool's input schema")
	}
	res, err = reg.Dispatch(context.Background(), approval.Call{Tool: "fs__read_text_file", Args: json.RawMessage(`{"path":` + quote(target) + `}`),
		PayloadSHA256: pinned(t, reg, "fs__read_text_file", `{"path":`+quote(target)+`}`)})
	if err != nil || res.IsError || !strings.Contains(res.Content, "hi from hitlbot") {
		t.Fatalf("read: %+v, %v", res, err)
	}
	res, err = reg.Dispatch(context.Background(), approval.Call{Tool: "fs__read_text_file", Args: json.RawMessage(`{"path":"/etc/passwd"}`),
		PayloadSHA256: pinned(t, reg, "fs__read_text_file", `{"path":"/etc/passwd"}`)})
	if err != nil || !res.IsError {
		t.Fatalf("a read outside the allowed directory: %+v, %v (want the server's refusal as a failure)", res, err)
	}
}

// TestEverythingServerFromNPM: @modelcontextprotocol/server-everything,
// the protocol's own demonstration server: its annotations as it sends
// them, its results of every kind as the model reads them.
func TestEverythingServerFromNPM(t *testing.T) {
	node, script := "node", mcptest.NPMServer(t, "mcp-server-everything")
	m, reg := startNPM(t, ServerConfig{Name: "ev", Command: node, Args: []string{script, "stdio"}, Trusted: true})
	if p := m.Status()[0].Protocol; p == "" {
		t.Fatal("no protocol revision negotiated")
	}
	echo, ok := reg.Get("ev__echo")
	if !ok {
		t.Fatalf("ev__echo is not offered; tools: %v", names(m.Tools()))
	}
	if echo.Effect(nil) != approval.EffectRead {
		t.Errorf("echo (readOnlyHint true from a trusted server) is %s", echo.Effect(nil))
	}
	for _, tt := range []struct{ tool, args, want string }{
		{"ev__echo", `{"message":"ping 你好"}`, "ping 你好"},
		{"ev__get-sum", `{"a":2,"b":40}`, "42"},
		{"ev__get-tiny-image", `{}`, "[image image/png"},
		{"ev__get-structured-content", `{"location":"New York"}`, "temperature"},
	} {
		if _, ok := reg.Get(tt.tool); !ok {
			t.Errorf("%s is not offered", tt.tool)
			continue
		}
		res, err := reg.Dispatch(context.Background(), approval.Call{Tool: tt.tool, Args: json.RawMessage(tt.args), PayloadSHA256: pinned(t, reg, tt.tool, tt.args)})
		if err != nil || res.IsError || !strings.Contains(res.Content, tt.want) {
			t.Errorf("%s %s: %+v, %v; want %q in it", tt.tool, tt.args, res, err, tt.want)
		}
	}
}

// pinned is the payload hash of a call of the named tool as registered now.
func pinned(t *testing.T, reg *agent.Registry, name, args string) string {
	t.Helper()
	tool, ok := reg.Get(name)
	if !ok {
		t.Fatalf("%s is not offered", name)
	}
	_, h, err := agent.HashCall(tool, name, []byte(args))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func names(tools []agent.Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name()
	}
	return out
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestEverythingServerElicitsFromNPM: server-everything's
// trigger-elicitation-request (a form of every kind the protocol has:
// strings with formats, a bounded integer and number, a boolean, titled,
// untitled and legacy enums, multi-selects) is asked as hitlbot's
// questions (approval.ElicitArgs), answered as a person answers a card
// (AnswerQuestions, then the typed content), and the server, which nobody
// here wrote, takes the content (the SDK checks it against the schema
// first) and says it back.
func TestEverythingServerElicitsFromNPM(t *testing.T) {
	node, script := "node", mcptest.NPMServer(t, "mcp-server-everything")
	reg := agent.NewRegistry()
	var asked json.RawMessage
	m := Start(context.Background(), []ServerConfig{{Name: "ev", Command: node, Args: []string{script, "stdio"}, Trusted: true}}, Options{
		Logger: testLogger(t), Getenv: os.Getenv,
		OnChange: func(server string, tools []agent.Tool) []string {
			if err := reg.SetGroup(server, tools...); err != nil {
				t.Errorf("SetGroup: %v", err)
			}
			return nil
		},
		Elicit: func(ctx context.Context, server, message string, schema any) (approval.ElicitAnswer, error) {
			if _, ok := approval.OriginOf(ctx); !ok {
				return approval.ElicitAnswer{Action: approval.ElicitDecline}, approval.ErrNoOrigin
			}
			args, err := approval.ElicitArgs(message, schema)
			if err != nil {
				return approval.ElicitAnswer{Action: approval.ElicitDecline}, err
			}
			asked = args
			qs, _ := approval.ParseQuestions(args)
			picks := map[string]any{}
			for i, q := range qs {
				switch q.Header {
				case "name":
					picks["#"+fmt.Sprint(i+1)] = "王小明"
				case "check":
					picks["#"+fmt.Sprint(i+1)] = map[string]any{"options": []int{1}}
				case "integer":
					picks["#"+fmt.Sprint(i+1)] = "7"
				case "email":
					picks["#"+fmt.Sprint(i+1)] = "ming@example.com"
				case "titledSingleSelectEnum", "untitledMultipleSelectEnum":
					picks["#"+fmt.Sprint(i+1)] = map[string]any{"options": []int{2}}
				}
			}
			b, _ := json.Marshal(map[string]any{"answers": picks})
			answered, err := approval.AnswerQuestions(args, b)
			if err != nil {
				return approval.ElicitAnswer{Action: approval.ElicitCancel}, err
			}
			content, err := approval.ElicitContent(answered)
			return approval.ElicitAnswer{Action: approval.ElicitAccept, Content: content}, err
		},
	})
	t.Cleanup(func() { m.Close() })
	if st := m.Status()[0]; !st.Up {
		t.Fatalf("server-everything did not start: %s", st.Err)
	}
	const tool = "ev__trigger-elicitation-request"
	if _, ok := reg.Get(tool); !ok {
		t.Fatalf("%s is not offered (the server offers it to a client that declares elicitation); tools: %v", tool, names(m.Tools()))
	}
	ctx := approval.WithOrigin(context.Background(), approval.Origin{Session: "feishu:oc_1", Channel: "feishu", ChatID: "oc_1", Requester: "ou_a"})
	res, err := reg.Dispatch(ctx, approval.Call{Tool: tool, Args: json.RawMessage(`{}`), PayloadSHA256: pinned(t, reg, tool, `{}`)})
	if err != nil || res.IsError {
		t.Fatalf("%+v, %v\nasked: %s", res, err, asked)
	}
	for _, want := range []string{"User provided the requested information", "Name: 王小明", "Agreed to terms: true", "Email: ming@example.com",
		"Favorite Integer: 7", `"titledSingleSelectEnum": "hero-2"`, `"Piano"`} {
		if !strings.Contains(res.Content, want) {
			t.Errorf("the server said %q; want %q in it", res.Content, want)
		}
	}
	// With no turn behind the call there is nobody to ask: declined.
	res, err = reg.Dispatch(context.Background(), approval.Call{Tool: tool, Args: json.RawMessage(`{}`), PayloadSHA256: pinned(t, reg, tool, `{}`)})
	if err != nil || !strings.Contains(res.Content, "declined") {
		t.Fatalf("no turn: %+v, %v", res, err)
	}
}
