package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/internal/testredis"
	"github.com/hitlbot/hitlbot/internal/waitfor"
)

func TestMain(m *testing.M) { testredis.Main(m) }

// syncBuffer is an io.Writer safe for the server's goroutines and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls cond until it holds or d passes (waitfor.Within).
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	waitfor.Within(t, d, what, cond)
}

var readyRE = regexp.MustCompile(`is running: open (http://[^/ ]+)/ in a browser`)

// server is one in-process `bot serve`.
type server struct {
	base           string
	stdout, stderr *syncBuffer
	stop           context.CancelFunc
	done           chan int
}

// serve runs `bot serve ARGS -listen 127.0.0.1:0` in process until the test
// ends (or stop is called) and waits for its ready line.
func serve(t *testing.T, args ...string) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{stdout: &syncBuffer{}, stderr: &syncBuffer{}, stop: cancel, done: make(chan int, 1)}
	args = append([]string{"serve", "-listen", "127.0.0.1:0"}, args...)
	go func() { s.done <- run(ctx, args, strings.NewReader(""), s.stdout, s.stderr) }()
	t.Cleanup(func() { s.shutdown(t) })
	waitFor(t, 60*time.Second, "the ready line", func() bool {
		select {
		case st := <-s.done:
			s.done <- st
			t.Fatalf("serve exited with %d before it was ready:\n%s", st, s.stderr)
		default:
		}
		m := readyRE.FindStringSubmatch(s.stdout.String())
		if m != nil {
			s.base = m[1]
		}
		return m != nil
	})
	return s
}

// shutdown cancels the server's context and checks it ends cleanly.
func (s *server) shutdown(t *testing.T) {
	t.Helper()
	s.stop()
	select {
	case st := <-s.done:
		s.done <- st
		if st != 0 {
			t.Errorf("serve exited with %d:\n%s", st, s.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("serve did not stop within 30s of its context ending")
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// chat posts to /agent/chat and decodes the answer.
func chat(t *testing.T, base string, req map[string]any) map[string]any {
	t.Helper()
	body, _ := json.Marshal(req)
	resp, err := http.Post(base+"/agent/chat", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST /agent/chat: %v", err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("POST /agent/chat: decode: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /agent/chat %v: %d %v", req, resp.StatusCode, out)
	}
	return out
}

// token returns the pendingAction token of a chat answer.
func token(t *testing.T, res map[string]any) string {
	t.Helper()
	pa, _ := res["pendingAction"].(map[string]any)
	tok, _ := pa["token"].(string)
	if res["requiresConfirmation"] != true || tok == "" {
		t.Fatalf("the answer asks for no confirmation: %v", res)
	}
	return tok
}

const deleteCancelled = "/sql DELETE FROM orders WHERE status = 'cancelled'"

func TestServeZeroConfig(t *testing.T) {
	data := t.TempDir()
	s := serve(t, "-data", data)
	if !strings.Contains(s.stdout.String(), "/agent/chat") {
		t.Errorf("the ready line does not mention the API: %q", s.stdout)
	}
	if !strings.HasSuffix(strings.TrimSpace(s.stdout.String()), "; try: "+deleteCancelled+" (a delete: it asks for your approval first)") {
		t.Errorf("the ready line suggests no request to try: %q", s.stdout)
	}
	if n := strings.Count(strings.TrimSpace(s.stdout.String()), "\n"); n != 0 {
		t.Errorf("serve printed %d lines on stdout, want one: %q", n+1, s.stdout)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := get(t, s.base+path); code != http.StatusOK || !strings.Contains(body, `"ok"`) {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
	}
	if code, body := get(t, s.base+"/"); code != http.StatusOK || !strings.Contains(strings.ToLower(body), "<html") {
		t.Errorf("GET /: %d, not the chat page", code)
	} else if !strings.Contains(body, `data-greeting="{&#34;text&#34;:&#34;hitlbot: an assistant`) ||
		!strings.Contains(body, `/sql DELETE FROM orders WHERE status = &#39;cancelled&#39;`) {
		// The page greets as bot chat does, with the demo's requests.
		t.Errorf("GET /: the page has no greeting with the demo's requests:\n%s", body)
	}

	res := chat(t, s.base, map[string]any{"message": "list tasks"})
	if text, _ := res["text"].(string); !strings.Contains(text, "Renew the TLS certificate") {
		t.Errorf("list tasks answered %v", res)
	}
	res = chat(t, s.base, map[string]any{"message": deleteCancelled})
	tok := token(t, res)
	res = chat(t, s.base, map[string]any{"confirmationToken": tok, "confirmed": true})
	if text, _ := res["text"].(string); !strings.Contains(text, "7 rows affected") {
		t.Errorf("the confirmed DELETE answered %v", res)
	}

	_, metrics := get(t, s.base+"/metrics")
	for _, name := range []string{
		`hitlbot_approvals_requested_total{risk="HIGH",tool="sql_execute"} 1`,
		`hitlbot_approvals_decided_total{risk="HIGH",status="executed",tool="sql_execute"} 1`,
		`hitlbot_messages_inbound_total{channel="api"}`,
		`hitlbot_tool_duration_seconds_count{tool="task_list"} 1`,
		`hitlbot_model_request_duration_seconds_count{provider="rules"}`,
		"hitlbot_build_info", "go_goroutines", "process_cpu_seconds_total",
		"hitlbot_audit_sinks_failing 0", "hitlbot_audit_refused_records_total 0", "hitlbot_audit_queue_size 4096",
	} {
		if !strings.Contains(metrics, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}

	s.shutdown(t)
	if _, err := os.Stat(filepath.Join(data, "demo.db")); err != nil {
		t.Errorf("no demo database in the data directory: %v", err)
	}
	var out, errb bytes.Buffer
	if st := run(context.Background(), []string{"audit", "verify", "-data", data}, nil, &out, &errb); st != 0 || !strings.Contains(out.String(), "OK file") {
		t.Errorf("audit verify after serve: %d %s %s", st, out.String(), errb.String())
	}

	// tail prints the newest records (and would follow until ^C).
	out.Reset()
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	if st := run(ctx, []string{"audit", "tail", "-n", "2", "-data", data}, nil, &out, &errb); st != 0 {
		t.Errorf("audit tail: exit %d: %s", st, errb.String())
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 2 || !strings.Contains(lines[1], "execute") || !strings.Contains(lines[1], `outcome="executed"`) {
		t.Errorf("audit tail -n 2 printed:\n%s", out.String())
	}

	// An edited record breaks its chain.
	file := filepath.Join(data, "audit.jsonl")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(file, bytes.Replace(b, []byte(`"actor":"local/local"`), []byte(`"actor":"local/mallory"`), 1), 0o600)
	out.Reset()
	if st := run(context.Background(), []string{"audit", "verify", "-data", data}, nil, &out, &errb); st != 1 || !strings.Contains(out.String(), "BROKEN file") {
		t.Errorf("audit verify of an edited file: exit %d, %s", st, out.String())
	}
}

func TestTailFileFollows(t *testing.T) {
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	rec := func(seq int) string {
		return fmt.Sprintf(`{"writer":"w","seq":%d,"time":"2026-01-01T00:00:00Z","event":"confirm","approval_id":"ap_%d","prev":"","hash":"h"}`, seq, seq)
	}
	os.WriteFile(file, []byte(rec(1)+"\n"+rec(2)+"\n"), 0o600)
	var mu sync.Mutex
	var got []string
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- tailFile(ctx, file, 1, func(r audit.Record) {
			mu.Lock()
			got = append(got, r.ApprovalID)
			mu.Unlock()
		})
	}()
	seen := func(n int) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= n }
	}
	waitFor(t, 5*time.Second, "the last record", seen(1))
	f, _ := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	line := rec(3) + "\n"
	f.WriteString(line[:20]) // half a line: not printed until it is complete
	time.Sleep(2 * tailPoll)
	f.WriteString(line[20:])
	f.Close()
	waitFor(t, 5*time.Second, "the appended record", seen(2))
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, ",") != "ap_2,ap_3" {
		t.Errorf("tail printed %q, want ap_2,ap_3", got)
	}
}

// checkTest is one `bot check` run: a config file and environment, the
// exit status, and what stdout or stderr must hold.
type checkTest struct {
	name   string
	file   string
	env    map[string]string
	status int
	stdout []string
	stderr []string
}

var checkTests = []checkTest{
	{
		name:   "zero config",
		status: 0,
		stdout: []string{"listen: 127.0.0.1:8080", "backend: memory", "provider: rules"},
	},
	{
		name:   "unknown key",
		file:   "approval:\n  policy:\n    confidence_treshold: 0.9\n",
		status: 1,
		stderr: []string{"approval.policy.confidence_treshold: unknown key"},
	},
	{
		name:   "bad duration",
		file:   "approval:\n  dedup_ttl: 10 minutes\n",
		status: 1,
		stderr: []string{`approval.dedup_ttl: "10 minutes" is not a duration`},
	},
	{
		name:   "missing secret",
		file:   "model:\n  provider: openai\n  openai:\n    model: gpt-4o-mini\n",
		status: 1,
		stderr: []string{"model.openai.api_key:", "HITLBOT_MODEL_OPENAI_API_KEY"},
	},
	{
		name:   "missing secret file",
		file:   "store:\n  backend: redis\n  redis:\n    url: redis://127.0.0.1:6379\n    password_file: /nonexistent/redis-password\n",
		status: 1,
		stderr: []string{"store.redis.password_file:"},
	},
	{
		name:   "secret written in the file",
		file:   "store:\n  redis:\n    password: hunter2\n",
		status: 1,
		stderr: []string{"store.redis.password:", "HITLBOT_STORE_REDIS_PASSWORD"},
	},
	{
		name:   "every problem at once",
		file:   "server:\n  listen: 0.0.0.0:8080\napproval:\n  lang: fr\n  policy:\n    confidence_threshold: 2\n",
		status: 1,
		stderr: []string{"config: 5 problems", "server.listen:", "server.public", "channels.api.tokens:", "channels.web.tokens:", "approval.lang:", "approval.policy.confidence_threshold:"},
	},
	// The example values of deploy/hitlbot.env.example ("change-me…") are
	// refused wherever the config would use them.
	{
		name:   "placeholder web token",
		env:    map[string]string{"HITLBOT_CHANNELS_WEB_TOKENS": "change-me-do-not-print-me-0001 alice ops"},
		status: 1,
		stderr: []string{`channels.web.tokens: the token of user "alice" is the example placeholder`, "HITLBOT_CHANNELS_WEB_TOKENS", "channels.web.tokens_file"},
	},
	{
		name:   "placeholder API token among real ones",
		env:    map[string]string{"HITLBOT_CHANNELS_API_TOKENS": "a-real-token-8c1f2a9d7e alice ops, Change-Me-do-not-print-me-0002 ci-bot ops"},
		status: 1,
		stderr: []string{`channels.api.tokens: the token of user "ci-bot" is the example placeholder`, "HITLBOT_CHANNELS_API_TOKENS"},
	},
	{
		name: "placeholder Redis password",
		env: map[string]string{"HITLBOT_STORE_BACKEND": "redis", "HITLBOT_STORE_REDIS_URL": "redis://127.0.0.1:6379/0",
			"HITLBOT_STORE_REDIS_PASSWORD": "change-me-do-not-print-me"},
		status: 1,
		stderr: []string{"store.redis.password: the Redis password is the example placeholder", "HITLBOT_STORE_REDIS_PASSWORD", "store.redis.password_file"},
	},
	{
		name: "placeholder model key",
		env: map[string]string{"HITLBOT_MODEL_PROVIDER": "openai", "HITLBOT_MODEL_OPENAI_MODEL": "gpt-4o-mini",
			"HITLBOT_MODEL_OPENAI_API_KEY": "change-me-do-not-print-me"},
		status: 1,
		stderr: []string{"model.openai.api_key: the model's API key is the example placeholder", "HITLBOT_MODEL_OPENAI_API_KEY"},
	},
	{
		name: "placeholder DingTalk secret",
		env: map[string]string{"HITLBOT_CHANNELS_DINGTALK_ENABLED": "true", "HITLBOT_CHANNELS_DINGTALK_CLIENT_ID": "dingabc",
			"HITLBOT_CHANNELS_DINGTALK_CLIENT_SECRET": "change-me-do-not-print-me"},
		status: 1,
		stderr: []string{"channels.dingtalk.client_secret: the DingTalk AppSecret is the example placeholder", "HITLBOT_CHANNELS_DINGTALK_CLIENT_SECRET"},
	},
	{
		name: "placeholder Feishu secrets",
		env: map[string]string{"HITLBOT_CHANNELS_FEISHU_ENABLED": "true", "HITLBOT_CHANNELS_FEISHU_APP_ID": "cli_abc", "HITLBOT_CHANNELS_FEISHU_MODE": "webhook",
			"HITLBOT_CHANNELS_FEISHU_APP_SECRET": "change-me-do-not-print-me", "HITLBOT_CHANNELS_FEISHU_ENCRYPT_KEY": " change-me-do-not-print-me",
			"HITLBOT_CHANNELS_FEISHU_VERIFICATION_TOKEN": "CHANGE-ME-do-not-print-me"},
		status: 1,
		stderr: []string{"config: 3 problems", "channels.feishu.app_secret: the Feishu app secret is the example placeholder", "HITLBOT_CHANNELS_FEISHU_APP_SECRET",
			"channels.feishu.encrypt_key: the Feishu Encrypt Key is the example placeholder", "channels.feishu.verification_token: the Feishu Verification Token is the example placeholder"},
	},
	{
		name: "placeholders nothing uses",
		env: map[string]string{"HITLBOT_CHANNELS_DINGTALK_CLIENT_SECRET": "change-me-do-not-print-me", "HITLBOT_STORE_REDIS_PASSWORD": "change-me-do-not-print-me",
			"HITLBOT_CHANNELS_WEB_ENABLED": "false", "HITLBOT_CHANNELS_WEB_TOKENS": "change-me-do-not-print-me-0001 alice ops"},
		status: 0,
		stdout: []string{"backend: memory"},
	},
	{
		name:   "secrets from the environment are redacted",
		env:    map[string]string{"HITLBOT_MODEL_OPENAI_API_KEY": "sk-do-not-print-me", "HITLBOT_MODEL_PROVIDER": "openai", "HITLBOT_MODEL_OPENAI_MODEL": "gpt-4o-mini"},
		status: 0,
		stdout: []string{"api_key: <secret>", "provider: openai"},
	},
}

func TestCheck(t *testing.T) {
	for _, tt := range checkTests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			args := []string{"check", "-data", t.TempDir()}
			if tt.file != "" {
				p := filepath.Join(t.TempDir(), "bot.yaml")
				os.WriteFile(p, []byte(tt.file), 0o600)
				args = append(args, "-config", p)
			}
			var out, errb bytes.Buffer
			st := run(context.Background(), args, nil, &out, &errb)
			if st != tt.status {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", st, tt.status, out.String(), errb.String())
			}
			for _, w := range tt.stdout {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, out.String())
				}
			}
			for _, w := range tt.stderr {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, errb.String())
				}
			}
			if strings.Contains(out.String()+errb.String(), "do-not-print-me") {
				t.Errorf("a secret was printed")
			}
		})
	}
}

func TestUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if st := run(context.Background(), []string{"frobnicate"}, nil, &out, &errb); st != 2 || !strings.Contains(errb.String(), "usage: bot") {
		t.Errorf("unknown command: exit %d, stderr %q", st, errb.String())
	}
	out.Reset()
	if st := run(context.Background(), []string{"version"}, nil, &out, &errb); st != 0 || !strings.HasPrefix(out.String(), "hitlbot ") {
		t.Errorf("version: exit %d, %q", st, out.String())
	}
	if st := run(context.Background(), []string{"serve", "-listen", "127.0.0.1:0", "extra"}, nil, &out, &errb); st != 2 {
		t.Errorf("serve with an argument: exit %d, want 2", st)
	}
}

// replaceFile writes a new file and renames it over file, as editors do.
func replaceFile(t *testing.T, file, text string) {
	t.Helper()
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}

func TestReload(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bot.yaml")
	write := func(text string) { t.Helper(); replaceFile(t, file, text) }
	write("approval:\n  policy:\n    enabled: true\n")
	s := serve(t, "-config", file, "-data", filepath.Join(dir, "data"))

	res := chat(t, s.base, map[string]any{"message": deleteCancelled})
	token(t, res) // asks

	// Turning approvals off reloads at once; the DELETE then runs unasked.
	write("approval:\n  policy:\n    enabled: false\n")
	waitFor(t, 20*time.Second, "the reload", func() bool { return strings.Contains(s.stderr.String(), "approval policy reloaded") })
	res = chat(t, s.base, map[string]any{"message": deleteCancelled})
	if res["requiresConfirmation"] == true || !strings.Contains(fmt.Sprint(res["text"]), "rows affected") {
		t.Errorf("after the reload the DELETE still asks: %v", res)
	}

	// A broken file is refused and the running policy stays.
	write("approval:\n  policy:\n    enabled: nope\n    confidence_threshold: 7\n")
	waitFor(t, 20*time.Second, "the refused reload", func() bool { return strings.Contains(s.stderr.String(), "config reload failed") })
	if !strings.Contains(s.stderr.String(), "approval.policy.confidence_threshold") {
		t.Errorf("the log does not say why the reload failed:\n%s", s.stderr)
	}
	res = chat(t, s.base, map[string]any{"message": "/sql DELETE FROM orders WHERE status = 'pending'"})
	if res["requiresConfirmation"] == true {
		t.Errorf("a failed reload changed the policy: %v", res)
	}

	// The tools section reloads too: without the task tools, "list tasks"
	// no longer runs one.
	if res := chat(t, s.base, map[string]any{"message": "list tasks"}); !strings.Contains(fmt.Sprint(res["actions"]), "task_list") {
		t.Fatalf("before the tools reload: %v", res)
	}
	write("approval:\n  policy:\n    enabled: false\ntools:\n  tasks:\n    enabled: false\n")
	waitFor(t, 20*time.Second, "the tools reload", func() bool { return strings.Contains(s.stderr.String(), "tools reloaded") })
	if res := chat(t, s.base, map[string]any{"message": "list tasks"}); strings.Contains(fmt.Sprint(res["actions"]), "task_list") {
		t.Errorf("after the tools reload task_list still runs: %v", res)
	}

	// A change to a section that does not reload says so.
	write("approval:\n  policy:\n    enabled: false\ntools:\n  tasks:\n    enabled: false\nlog:\n  level: debug\n")
	waitFor(t, 20*time.Second, "the restart warning", func() bool {
		return strings.Contains(s.stderr.String(), "only take effect after a restart")
	})
}

func TestChatThroughAPipe(t *testing.T) {
	in := strings.NewReader("list tasks\n" + deleteCancelled + "\ny\n")
	var out, errb syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if st := run(ctx, []string{"chat", "-data", t.TempDir()}, in, &out, &errb); st != 0 {
		t.Fatalf("chat exited with %d:\n%s\n%s", st, out.String(), errb.String())
	}
	for _, w := range []string{"Renew the TLS certificate", "确认执行?", "7 rows affected"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("the chat transcript lacks %q:\n%s", w, out.String())
		}
	}
}

// redisURL returns the URL of the test Redis behind client (its password,
// if any, goes to the environment).
func redisURL(t *testing.T, client redis.UniversalClient) string {
	t.Helper()
	c, ok := client.(*redis.Client)
	if !ok {
		t.Skipf("the test Redis is not a single server (%T)", client)
	}
	o := c.Options()
	if o.Password != "" {
		t.Setenv("HITLBOT_STORE_REDIS_PASSWORD", o.Password)
	}
	if o.Network == "unix" {
		return fmt.Sprintf("unix://%s?db=%d", o.Addr, o.DB)
	}
	return fmt.Sprintf("redis://%s/%d", o.Addr, o.DB)
}

// TestPendingSurvivesRestart: an approval pending when the server stops
// can be decided through a second server on the same Redis, and runs once.
func TestPendingSurvivesRestart(t *testing.T) {
	client, prefix := testredis.Start(t)
	t.Cleanup(func() { keysDocumented(t, client, prefix) })
	t.Setenv("HITLBOT_STORE_BACKEND", "redis")
	t.Setenv("HITLBOT_STORE_REDIS_URL", redisURL(t, client))
	t.Setenv("HITLBOT_STORE_REDIS_PREFIX", prefix)
	data := t.TempDir()

	first := serve(t, "-data", data)
	tok := token(t, chat(t, first.base, map[string]any{"message": deleteCancelled}))
	first.shutdown(t)

	second := serve(t, "-data", data)
	if code, body := get(t, second.base+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz with Redis: %d %s", code, body)
	}
	res := chat(t, second.base, map[string]any{"confirmationToken": tok, "confirmed": true})
	if !strings.Contains(fmt.Sprint(res["text"]), "7 rows affected") {
		t.Errorf("deciding after the restart answered %v", res)
	}
	// The same token again: the approval is decided, nothing runs twice.
	body, _ := json.Marshal(map[string]any{"confirmationToken": tok, "confirmed": true})
	resp, err := http.Post(second.base+"/agent/chat", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a second confirmation got %d, want 404", resp.StatusCode)
	}
	second.shutdown(t)

	var out, errb bytes.Buffer
	if st := run(context.Background(), []string{"audit", "verify", "-data", data}, nil, &out, &errb); st != 0 ||
		!strings.Contains(out.String(), "OK redis stream") || !strings.Contains(out.String(), "OK file") {
		t.Errorf("audit verify: exit %d\n%s%s", st, out.String(), errb.String())
	}
}

// TestBinary builds the real binary and runs it: check with a broken
// config, then serve until SIGTERM.
func TestBinary(t *testing.T) {
	bin := buildBin(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("server:\n  shutdown_timeout: 30\nbogus: true\n"), 0o600)
	out, err := exec.Command(bin, "check", "-config", bad).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("bot check of a broken file: %v, want exit 1\n%s", err, out)
	}
	for _, w := range []string{"server.shutdown_timeout:", "bogus: unknown key"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("bot check output lacks %q:\n%s", w, out)
		}
	}

	cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "-data", filepath.Join(dir, "data"))
	cmd.Dir = dir // no ./config.yaml there: the zero config
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()
	var base string
	waitFor(t, 60*time.Second, "the ready line", func() bool {
		m := readyRE.FindStringSubmatch(stdout.String())
		if m != nil {
			base = m[1]
		}
		return m != nil
	})
	if code, _ := get(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	cmd.Process.Signal(syscall.SIGHUP) // reloads, does not stop
	waitFor(t, 10*time.Second, "the SIGHUP reload", func() bool { return strings.Contains(stderr.String(), `"reason":"SIGHUP"`) })
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("after SIGTERM: %v\n%s", err, stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no exit within 30s of SIGTERM:\n%s", stderr)
	}
	if !strings.Contains(stderr.String(), `"msg":"stopped"`) {
		t.Errorf("no clean stop in the log:\n%s", stderr)
	}
}

// closedPort returns a 127.0.0.1 address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestLibraryLogsAreJSON: go-redis's own log line (a failed dial) comes
// out of every command that opens Redis as a JSON record of the process
// log, component "redis", not as a plain "redis: …" line elsewhere.
func TestLibraryLogsAreJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("each command waits for go-redis's dial retries")
	}
	addr := closedPort(t)
	t.Setenv("HITLBOT_STORE_BACKEND", "redis")
	t.Setenv("HITLBOT_STORE_REDIS_URL", "redis://"+addr+"/0")
	for _, args := range [][]string{
		{"serve", "-listen", "127.0.0.1:0"},
		{"chat"},
		{"audit", "verify", "-source", "redis"},
		{"bench", "-redis", "redis://" + addr + "/0", "-n", "1", "-c", "1"},
	} {
		t.Run(args[0], func(t *testing.T) {
			if args[0] != "bench" {
				args = append(args, "-data", t.TempDir())
			}
			var out, errb syncBuffer
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if st := run(ctx, args, strings.NewReader(""), &out, &errb); st != 1 {
				t.Fatalf("bot %v with Redis unreachable: exit %d, want 1\n%s", args, st, errb.String())
			}
			dial := false
			for _, line := range strings.Split(strings.TrimSpace(errb.String()), "\n") {
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					// The command's own words ("bot: …", "FAIL …") are
					// plain; go-redis's default logger writes "redis: <date>".
					if strings.HasPrefix(line, "redis: ") {
						t.Errorf("go-redis wrote a plain line: %q", line)
					}
					continue
				}
				if msg, _ := rec["msg"].(string); rec["component"] == "redis" && strings.Contains(msg, "failed to dial") {
					dial = true
				}
			}
			if !dial {
				t.Errorf("no JSON record of go-redis's failed dial (component redis) on stderr:\n%s", errb.String())
			}
		})
	}
}

// TestRouteLibraryLogs: after routeLibraryLogs, the standard log package
// (coder/websocket logs through it), slog.Default and the MySQL driver's
// logger write JSON records to the process log.
func TestRouteLibraryLogs(t *testing.T) {
	var buf syncBuffer
	routeLibraryLogs(newLogger(&buf, "info"))
	t.Cleanup(func() { routeLibraryLogs(newLogger(os.Stderr, "info")) })
	stdlog.Printf("websocket: a line of the log package")
	slog.Default().Info("a line of slog.Default")
	mysqlLog{}.Print("packets.go:58: unexpected EOF")
	want := []string{"websocket: a line of the log package", "a line of slog.Default", "packets.go:58: unexpected EOF"}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec["msg"] != want[i] {
			t.Errorf("line %d = %q, want a JSON record with msg %q", i, line, want[i])
		}
	}
}

// TestServeRefusesPlaceholders: `bot serve` runs the same validation as
// `bot check`: with the example token of deploy/hitlbot.env.example it does
// not start.
func TestServeRefusesPlaceholders(t *testing.T) {
	t.Setenv("HITLBOT_CHANNELS_API_TOKENS", "change-me-api-token-0001 ci-bot ops")
	var out, errb syncBuffer
	// Were it to start, it would serve until this ends, and exit 0.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if st := run(ctx, []string{"serve", "-listen", "127.0.0.1:0", "-data", t.TempDir()}, strings.NewReader(""), &out, &errb); st != 1 {
		t.Fatalf("serve with a placeholder token: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", st, out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), `channels.api.tokens: the token of user "ci-bot" is the example placeholder`) || out.String() != "" {
		t.Errorf("serve did not say why it refused to start, or started:\nstdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
	if strings.Contains(errb.String(), "change-me-api-token-0001") {
		t.Error("the token was printed")
	}
}
