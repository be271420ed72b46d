package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/redact"
	"github.com/hitlbot/hitlbot/internal/waitfor"
)

const childSecret = "child-secret-4711"

// stdioServer is a config that runs this test binary as the mcptest
// server over stdio, logging its calls to the returned file.
func stdioServer(t testing.TB) (ServerConfig, func(string) string, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "calls.log")
	e := env{serveEnv: "serve-stdio", callLogEnv: log, secretEnv: childSecret, "PATH": os.Getenv("PATH"), "UNLISTED": "x"}
	c := ServerConfig{Name: "sub", Command: exe, Env: []string{serveEnv, callLogEnv, secretEnv}}
	return c, e.get, log
}

// callLines are the lines of the call log that name tool.
func callLines(t testing.TB, log, tool string) []string {
	b, err := os.ReadFile(log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, tool+" ") {
			out = append(out, l)
		}
	}
	return out
}

func TestStdioServer(t *testing.T) {
	c, getenv, log := stdioServer(t)
	var logs lockedBuf
	m := Start(context.Background(), []ServerConfig{c}, Options{Getenv: getenv, Logger: slogTo(&logs)})
	st := m.Status()[0]
	if !st.Up || st.Transport != "stdio" || st.Protocol == "" {
		t.Fatalf("status %+v", st)
	}
	out, err := find(t, m.Tools(), "sub__echo").Run(context.Background(), json.RawMessage(`{"text":"over stdio"}`))
	if err != nil || out.Content != "over stdio" {
		t.Fatalf("echo: %+v %v", out, err)
	}
	if n := len(callLines(t, log, "echo")); n != 1 {
		t.Fatalf("the server logged %d echo calls", n)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	text := logs.String()
	if !strings.Contains(text, "mcptest serving on stdio") {
		t.Fatalf("the child's stderr was not logged:\n%s", text)
	}
	if strings.Contains(text, childSecret) || !strings.Contains(text, "secret: "+redact.Mark) {
		t.Errorf("the child's env value was not scrubbed from the log:\n%s", text)
	}
	for _, line := range strings.Split(text, "\n") {
		if i := strings.Index(line, "env names: "); i >= 0 {
			names := strings.Split(strings.SplitN(line[i+len("env names: "):], ";", 2)[0], ",")
			for _, n := range names {
				switch n {
				case "PATH", serveEnv, callLogEnv, secretEnv:
				default:
					t.Errorf("the child saw %s, which the config does not list", n)
				}
			}
		}
	}
}

func TestStdioServerKilledMidCall(t *testing.T) {
	c, getenv, log := stdioServer(t)
	reg := agent.NewRegistry()
	ch := &changes{}
	m := Start(context.Background(), []ServerConfig{c}, Options{Getenv: getenv, Logger: testLogger(t),
		OnChange: func(s string, tools []agent.Tool) []string {
			ch.on(s, tools)
			_ = reg.SetGroup(s, tools...)
			return nil
		}})
	defer m.Close()
	tl, ok := reg.Get("sub__slow")
	if !ok {
		t.Fatal("sub__slow not registered")
	}
	canon, hash, _ := agent.HashCall(tl, "sub__slow", []byte(`{}`))
	done := make(chan error, 1)
	go func() {
		_, err := reg.Dispatch(context.Background(), approval.Call{Tool: "sub__slow", Args: canon, PayloadSHA256: hash})
		done <- err
	}()
	var pid int
	waitfor.True(t, "the slow call to reach the server", func() bool {
		l := callLines(t, log, "slow")
		if len(l) == 0 {
			return false
		}
		pid, _ = strconv.Atoi(strings.Fields(l[0])[1])
		return true
	})
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(waitfor.Default):
		t.Fatal("the call did not return after the server died")
	}
	if err == nil || errors.Is(err, approval.ErrNotRun) || !strings.Contains(err.Error(), "effect unknown") {
		t.Fatalf("got %v; want a plain error of unknown effect (frozen)", err)
	}
	// The manager restarts the server (backoff 1s on the wall clock); the
	// call is not sent again.
	waitfor.True(t, "the server restarted", func() bool {
		ch.mu.Lock()
		defer ch.mu.Unlock()
		return len(ch.calls) >= 3 && ch.calls[1].tools == nil && ch.calls[2].tools != nil
	})
	if _, err := find(t, m.Tools(), "sub__echo").Run(context.Background(), json.RawMessage(`{"text":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if n := len(callLines(t, log, "slow")); n != 1 {
		t.Fatalf("the server received the slow call %d times; want once", n)
	}
}
