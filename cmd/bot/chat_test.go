//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeLLM is an OpenAI-compatible chat-completions server: "please delete"
// asks for a DELETE on the demo database, a tool result is acknowledged
// with its first words, "slow" is answered once the test sends on gate
// (asked is told when it waits), anything else is echoed.
type fakeLLM struct {
	asked chan struct{}
	gate  chan struct{}
	mu    sync.Mutex
	tool  []string // the tool results the model was given
}

func (f *fakeLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	last := req.Messages[len(req.Messages)-1]
	msg := map[string]any{"role": "assistant", "content": "echo " + last.Content}
	switch {
	case last.Role == "tool":
		f.mu.Lock()
		f.tool = append(f.tool, last.Content)
		f.mu.Unlock()
		msg["content"] = "tool said: " + strings.SplitN(last.Content, ".", 2)[0]
	case last.Content == "slow":
		f.asked <- struct{}{}
		select {
		case <-f.gate:
			msg["content"] = "slow answer"
		case <-r.Context().Done():
			return
		}
	case last.Content == "please delete":
		args, _ := json.Marshal(map[string]string{"database": "demo", "statement": "DELETE FROM orders WHERE status = 'cancelled'"})
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": "call_1", "type": "function", "function": map[string]any{"name": "sql_execute", "arguments": string(args)}}}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion", "model": "fake",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}}})
}

func (f *fakeLLM) toolResults() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.tool...)
}

// TestChatCtrlC runs the real binary and sends it SIGINT, as Ctrl+C in a
// terminal does: at the approval prompt it declines (the outcome is
// printed, nothing runs, the chat goes on); during a turn it gives the
// prompt back without cutting the model short; at the input prompt it
// ends the chat with exit status 0, a goodbye, and no error line, and
// nothing anywhere says the language model failed.
func TestChatCtrlC(t *testing.T) {
	bin := buildBin(t)
	llm := &fakeLLM{asked: make(chan struct{}, 1), gate: make(chan struct{})}
	srv := httptest.NewServer(llm)
	defer srv.Close()

	cmd := exec.Command(bin, "chat", "-data", t.TempDir())
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "HITLBOT_MODEL_PROVIDER=openai", "HITLBOT_MODEL_OPENAI_BASE_URL="+srv.URL+"/v1",
		"HITLBOT_MODEL_OPENAI_MODEL=fake", "HITLBOT_MODEL_OPENAI_API_KEY=sk-test-not-a-real-key-0123456789")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	says := func(s string, n int) {
		t.Helper()
		waitFor(t, 30*time.Second, fmt.Sprintf("%q ×%d in the chat", s, n), func() bool { return strings.Count(stdout.String(), s) >= n })
	}
	write := func(line string) {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	interrupt := func() {
		t.Helper()
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		if t.Failed() {
			t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		}
	}()

	says("> ", 1)
	write("please delete")
	says("确认执行? [y/N] ", 1)
	interrupt() // Ctrl+C at the approval prompt
	says("Ctrl+C: declining it.", 1)
	says("[Declined; nothing was run]", 1)
	says("tool said: Not run: declined by", 1)
	says("> ", 2)

	write("slow")
	<-llm.asked
	interrupt() // Ctrl+C while the model answers
	says("(Ctrl+C: the turn goes on", 1)
	llm.gate <- struct{}{}
	says("slow answer", 1)

	write("hello")
	says("echo hello", 1)
	interrupt() // Ctrl+C at the input prompt
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("bot chat exited with %v", waitErr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("bot chat did not end after Ctrl+C at the prompt")
	}
	out, errOut := stdout.String(), stderr.String()
	if !strings.HasSuffix(out, "Bye.\n") {
		t.Errorf("no goodbye at the end:\n%s", out)
	}
	for _, bad := range []string{"language model failed", "panic", "goroutine ", "bot chat:"} {
		if strings.Contains(out, bad) || strings.Contains(errOut, bad) {
			t.Errorf("%q in the output", bad)
		}
	}
	if r := llm.toolResults(); len(r) != 1 || !strings.HasPrefix(r[0], "Not run: declined by") {
		t.Errorf("the model was given %q", r)
	}
}
