package agentcli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Codex is a Codex CLI with a home of its own (config, sessions) and a
// working directory, for one test.
type Codex struct {
	// Bin is the codex program.
	Bin string
	// Home is the HOME codex runs with (its config in Home/.codex).
	Home string
	// Work is the session's working directory.
	Work string
	// Env is added to codex's environment (the hook inherits it: a token
	// for the hook's Authorization header goes here).
	Env []string
}

// CodexConfig is what NewCodex writes into config.toml.
type CodexConfig struct {
	// ModelURL is the base URL of the Responses API fake (Responses.URL).
	ModelURL string
	// HookCommand is the PermissionRequest hook's command (run by sh).
	HookCommand string
	// HookTimeout is the hook's timeout in seconds.
	HookTimeout int
}

// NewCodex installs the pinned Codex CLI (or skips t) and writes a home
// whose config points the model at cfg.ModelURL, asks for approval on
// request in a read-only sandbox, and runs cfg.HookCommand as the
// PermissionRequest hook for every tool.
func NewCodex(t testing.TB, cfg CodexConfig) *Codex {
	t.Helper()
	c := &Codex{Bin: filepath.Join(Install(t, CodexPackage), "codex"), Home: t.TempDir(), Work: t.TempDir()}
	if v, err := version(c.Bin); err != nil {
		t.Skipf("the installed Codex CLI does not run here: %v", err)
	} else {
		t.Logf("agentcli: %s", v)
	}
	if err := os.MkdirAll(filepath.Join(c.Home, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	toml := fmt.Sprintf(`model = "gpt-5"
model_provider = "fake"
approval_policy = "on-request"
sandbox_mode = "read-only"

[model_providers.fake]
name = "fake"
base_url = %s
wire_api = "responses"
env_key = "FAKE_OPENAI_KEY"

[[hooks.PermissionRequest]]
matcher = "*"
[[hooks.PermissionRequest.hooks]]
type = "command"
command = %s
timeout = %d
`, strconv.Quote(cfg.ModelURL), strconv.Quote(cfg.HookCommand), cfg.HookTimeout)
	if err := os.WriteFile(filepath.Join(c.Home, ".codex", "config.toml"), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// Turn is what one Codex turn did.
type Turn struct {
	// Hooks are the PermissionRequest hook runs' statuses: "completed"
	// (allowed), "blocked" (denied), "failed" (an answer Codex refused).
	Hooks []string
	// Asked are the approval requests that reached Codex's own client (the
	// hook gave no verdict); the driver declines each.
	Asked []string
	// Commands are the command executions' final statuses ("completed",
	// "declined", "failed").
	Commands []string
}

// rpc is one JSON-RPC message of the app-server protocol.
type rpc struct {
	ID     *json.RawMessage `json:"id,omitempty"`
	Method string           `json:"method,omitempty"`
	Params json.RawMessage  `json:"params,omitempty"`
	Result json.RawMessage  `json:"result,omitempty"`
	Error  json.RawMessage  `json:"error,omitempty"`
}

// Run runs one turn with prompt through `codex app-server`, the protocol
// behind Codex's own interfaces: the PermissionRequest hook runs in its
// approval path as in the terminal UI (`codex exec` never asks, its
// approval policy is always never). It first trusts the configured hooks
// as a person does in /hooks (hooks/list's currentHash, written back with
// config/batchWrite: Codex skips a hook nobody trusted). It returns when
// the turn completes, or fails t after d.
func (c *Codex) Run(t testing.TB, prompt string, d time.Duration) Turn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Bin, "app-server")
	cmd.Dir = c.Work
	cmd.Env = append(append(os.Environ(), "HOME="+c.Home, "FAKE_OPENAI_KEY=fake", "NO_COLOR=1"), c.Env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		in.Close()
		cancel()
		cmd.Wait()
	}()
	msgs := make(chan rpc, 64)
	go func() {
		defer close(msgs)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var m rpc
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				msgs <- m
			}
		}
	}()
	d2 := &driver{t: t, in: in, msgs: msgs, ctx: ctx, stderr: &stderr}
	d2.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "hitlbot-test", "version": "1"}})
	d2.send(map[string]any{"method": "initialized"})
	var hooks struct {
		Data []struct {
			Hooks []struct {
				Key         string `json:"key"`
				CurrentHash string `json:"currentHash"`
			} `json:"hooks"`
		} `json:"data"`
	}
	d2.decode(d2.call("hooks/list", map[string]any{"cwds": []string{c.Work}}), &hooks)
	var edits []map[string]any
	for _, e := range hooks.Data {
		for _, h := range e.Hooks {
			edits = append(edits, map[string]any{"keyPath": "hooks.state." + strconv.Quote(h.Key) + ".trusted_hash",
				"mergeStrategy": "upsert", "value": h.CurrentHash})
		}
	}
	if len(edits) == 0 {
		t.Fatalf("agentcli: codex lists no hooks; its config:\n%s", c.config(t))
	}
	d2.call("config/batchWrite", map[string]any{"edits": edits, "reloadUserConfig": true})
	var thread struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	d2.decode(d2.call("thread/start", map[string]any{"cwd": c.Work, "approvalPolicy": "on-request", "sandbox": "read-only"}), &thread)
	d2.send(map[string]any{"id": 100, "method": "turn/start", "params": map[string]any{"threadId": thread.Thread.ID,
		"input": []any{map[string]any{"type": "text", "text": prompt}}}})
	var turn Turn
	for {
		m := d2.next()
		switch {
		case m.ID != nil && m.Method != "":
			// A request of the server: an approval nobody gave (the hook
			// did not decide). Decline it, as a person away would.
			turn.Asked = append(turn.Asked, m.Method)
			d2.send(map[string]any{"id": m.ID, "result": map[string]any{"decision": "decline"}})
		case m.Method == "hook/completed":
			var p struct {
				Run struct {
					EventName string `json:"eventName"`
					Status    string `json:"status"`
				} `json:"run"`
			}
			d2.decode(m.Params, &p)
			if p.Run.EventName == "permissionRequest" {
				turn.Hooks = append(turn.Hooks, p.Run.Status)
			}
		case m.Method == "item/completed":
			var p struct {
				Item struct {
					Type   string `json:"type"`
					Status string `json:"status"`
				} `json:"item"`
			}
			d2.decode(m.Params, &p)
			if p.Item.Type == "commandExecution" {
				turn.Commands = append(turn.Commands, p.Item.Status)
			}
		case m.Method == "turn/completed":
			return turn
		case m.Method == "error":
			t.Fatalf("agentcli: codex reported an error: %s\nstderr:\n%s", m.Params, tail(stderr.String(), 30))
		}
	}
}

// config is the home's config.toml, for a failure message.
func (c *Codex) config(t testing.TB) string {
	b, _ := os.ReadFile(filepath.Join(c.Home, ".codex", "config.toml"))
	return string(b)
}

// driver speaks JSON-RPC lines with one app-server.
type driver struct {
	t      testing.TB
	in     io.Writer
	msgs   <-chan rpc
	ctx    context.Context
	stderr *bytes.Buffer
	nextID int
}

func (d *driver) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		d.t.Fatal(err)
	}
	if _, err := d.in.Write(append(b, '\n')); err != nil {
		d.t.Fatalf("agentcli: writing to codex: %v\nstderr:\n%s", err, tail(d.stderr.String(), 30))
	}
}

func (d *driver) next() rpc {
	select {
	case m, ok := <-d.msgs:
		if !ok {
			d.t.Fatalf("agentcli: codex app-server ended\nstderr:\n%s", tail(d.stderr.String(), 30))
		}
		return m
	case <-d.ctx.Done():
		d.t.Fatalf("agentcli: codex did not finish in time\nstderr:\n%s", tail(d.stderr.String(), 30))
	}
	panic("unreachable")
}

// call sends a request and returns its result, setting aside the
// notifications that come meanwhile (none matters before the turn).
func (d *driver) call(method string, params any) json.RawMessage {
	d.nextID++
	id := d.nextID
	d.send(map[string]any{"id": id, "method": method, "params": params})
	for {
		m := d.next()
		if m.ID == nil || m.Method != "" || strings.TrimSpace(string(*m.ID)) != strconv.Itoa(id) {
			continue
		}
		if len(m.Error) > 0 {
			d.t.Fatalf("agentcli: codex %s: %s", method, m.Error)
		}
		return m.Result
	}
}

func (d *driver) decode(raw json.RawMessage, v any) {
	if err := json.Unmarshal(raw, v); err != nil {
		d.t.Fatalf("agentcli: decoding %s: %v", raw, err)
	}
}
