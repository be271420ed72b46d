package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/channels/dingtalk/dingtalktest"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
	"github.com/hitlbot/hitlbot/internal/fakellm"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

// closedAddr is a 127.0.0.1 address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// doctorRun runs `bot doctor` with env and, when not empty, a config file;
// it returns the exit status, stdout and stderr.
func doctorRun(t *testing.T, env map[string]string, file string) (int, string, string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	args := []string{"doctor", "-data", t.TempDir(), "-timeout", "3s"}
	if file != "" {
		p := filepath.Join(t.TempDir(), "bot.yaml")
		if err := os.WriteFile(p, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-config", p)
	}
	var out, errb bytes.Buffer
	st := run(context.Background(), args, nil, &out, &errb)
	return st, out.String(), errb.String()
}

// doctorLine returns the line of part in doctor's output.
func doctorLine(t *testing.T, out, part string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == part {
			return l
		}
	}
	t.Fatalf("no line for %s in:\n%s", part, out)
	return ""
}

// doctorCase is one configuration and what doctor must say of it.
type doctorCase struct {
	name   string
	setup  func(t *testing.T) (env map[string]string, file string)
	status int
	// lines: part → the words its line must hold (the verdict first).
	lines map[string][]string
}

var doctorCases = []doctorCase{
	{
		name:   "defaults",
		setup:  func(t *testing.T) (map[string]string, string) { return nil, "" },
		status: 0,
		lines: map[string][]string{
			"store":    {"OK", "memory store"},
			"audit":    {"OK", "audit.jsonl", "can be written"},
			"model":    {"OK", "rules model"},
			"feishu":   {"SKIP", "not enabled"},
			"dingtalk": {"SKIP", "not enabled"},
			"webhook":  {"SKIP", "no channel in webhook mode"},
		},
	},
	{
		// The audit file's directory is a file: the trail cannot be
		// written, so `bot serve` would run no approved tool.
		name: "audit file cannot be written",
		setup: func(t *testing.T) (map[string]string, string) {
			notDir := filepath.Join(t.TempDir(), "a-file")
			if err := os.WriteFile(notDir, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return nil, "audit:\n  file: " + filepath.Join(notDir, "audit.jsonl") + "\n"
		},
		status: 1,
		lines:  map[string][]string{"audit": {"FAIL", "a-file", "cannot be written", fixAudit}},
	},
	{
		// The server's /readyz says its audit sink keeps failing: no
		// approved tool runs there, whatever the file's directory allows.
		name: "server audit sink failing",
		setup: func(t *testing.T) (map[string]string, string) {
			return map[string]string{"HITLBOT_SERVER_LISTEN": readyzServer(t, `{"status":"unavailable","problems":["audit trail: …"],
				"audit":{"failing":[{"sink":"redis:hitlbot:{audit}:stream","since":"2026-11-28T21:00:00Z","attempts":42,"error":"dial tcp: connection refused"}],
				"queued":4096,"queue_size":4096,"refused":17}}`)}, ""
		},
		status: 1,
		lines: map[string][]string{"audit": {"FAIL", "can be written",
			"audit trail sink redis:hitlbot:{audit}:stream failing since 2026-11-28T21:00:00Z (42 failed writes; last: dial tcp: connection refused)",
			"queue full (4096 records wait; 17 refused since start)", "fix: " + fixAuditServer}},
	},
	{
		name: "server audit trail writing",
		setup: func(t *testing.T) (map[string]string, string) {
			return map[string]string{"HITLBOT_SERVER_LISTEN": readyzServer(t, `{"status":"ok"}`)}, ""
		},
		status: 0,
		lines:  map[string][]string{"audit": {"OK", "can be written"}},
	},
	{
		name: "redis appendonly no",
		setup: func(t *testing.T) (map[string]string, string) {
			s := testredis.StartServer(t)
			return map[string]string{"HITLBOT_STORE_BACKEND": "redis", "HITLBOT_STORE_REDIS_URL": "redis://" + s.Addr()}, ""
		},
		status: 0,
		lines:  map[string][]string{"store": {"WARN", "answers PING", fixAppendOnly}},
	},
	{
		name: "redis appendonly yes",
		setup: func(t *testing.T) (map[string]string, string) {
			s := testredis.StartServer(t)
			if err := s.Client().ConfigSet(context.Background(), "appendonly", "yes").Err(); err != nil {
				t.Fatal(err)
			}
			return map[string]string{"HITLBOT_STORE_BACKEND": "redis", "HITLBOT_STORE_REDIS_URL": "redis://" + s.Addr()}, ""
		},
		status: 0,
		lines:  map[string][]string{"store": {"OK", "Redis (one server) answers PING; appendonly yes"}},
	},
	{
		name: "redis without CONFIG",
		setup: func(t *testing.T) (map[string]string, string) {
			s := testredis.StartServer(t)
			err := s.Client().Do(context.Background(), "ACL", "SETUSER", "bot", "on", ">redis-pass-7f3a", "~*", "&*", "+@all", "-config").Err()
			if err != nil {
				t.Fatal(err)
			}
			return map[string]string{"HITLBOT_STORE_BACKEND": "redis", "HITLBOT_STORE_REDIS_URL": "redis://" + s.Addr(),
				"HITLBOT_STORE_REDIS_USERNAME": "bot", "HITLBOT_STORE_REDIS_PASSWORD": "redis-pass-7f3a"}, ""
		},
		status: 0,
		lines:  map[string][]string{"store": {"OK", "answers PING; persistence could not be checked (CONFIG GET is not allowed"}},
	},
	{
		name: "redis closed port",
		setup: func(t *testing.T) (map[string]string, string) {
			return map[string]string{"HITLBOT_STORE_BACKEND": "redis", "HITLBOT_STORE_REDIS_URL": "redis://" + closedAddr(t)}, ""
		},
		status: 1,
		lines:  map[string][]string{"store": {"FAIL", "does not answer PING", "fix: " + fixRedis}},
	},
	{
		name: "model calls the tool",
		setup: func(t *testing.T) (map[string]string, string) {
			s := fakellm.New(t)
			s.Enqueue(fakellm.Calls(fakellm.Call(doctorToolName, "{}")), fakellm.Text("pong"))
			return modelEnv(s.URL, s.APIKey()), ""
		},
		status: 0,
		lines:  map[string][]string{"model": {"OK", `"gpt-test" at http://127.0.0.1`, "answers and calls the offered tool, and streams its answers"}},
	},
	{
		name: "model does not stream",
		setup: func(t *testing.T) (map[string]string, string) {
			s := fakellm.New(t)
			// The tools probe, then the streamed request refused, then
			// the same request whole (as the bot asks again).
			s.Enqueue(fakellm.Calls(fakellm.Call(doctorToolName, "{}")), fakellm.Status(400, "stream is not supported"), fakellm.Text("pong"))
			return modelEnv(s.URL, s.APIKey()), ""
		},
		status: 0,
		lines:  map[string][]string{"model": {"WARN", "answers and calls the offered tool", "answered a streamed request whole", "set it false to stop trying"}},
	},
	{
		name: "model stream off",
		setup: func(t *testing.T) (map[string]string, string) {
			s := fakellm.New(t)
			s.Enqueue(fakellm.Calls(fakellm.Call(doctorToolName, "{}")))
			env := modelEnv(s.URL, s.APIKey())
			env["HITLBOT_MODEL_OPENAI_STREAM"] = "false"
			return env, ""
		},
		status: 0,
		lines:  map[string][]string{"model": {"OK", "answers and calls the offered tool"}},
	},
	{
		name: "model answers in text",
		setup: func(t *testing.T) (map[string]string, string) {
			s := fakellm.New(t)
			s.Enqueue(fakellm.Text("pong"), fakellm.Text("pong"))
			return modelEnv(s.URL, s.APIKey()), ""
		},
		status: 0,
		lines:  map[string][]string{"model": {"OK", "accepts tools", "streams its answers"}},
	},
	{
		name: "model key refused",
		setup: func(t *testing.T) (map[string]string, string) {
			s := fakellm.New(t) // answers 401 to a key that is not its own
			return modelEnv(s.URL, "sk-wrong-key-0123456789"), ""
		},
		status: 1,
		lines:  map[string][]string{"model": {"FAIL", "refused the API key", "HTTP 401", "fix: " + fixModel}},
	},
	{
		name: "model refuses tools",
		setup: func(t *testing.T) (map[string]string, string) {
			s := fakellm.New(t)
			s.Enqueue(fakellm.Status(400, "tools are not supported by this model"))
			return modelEnv(s.URL, s.APIKey()), ""
		},
		status: 1,
		lines:  map[string][]string{"model": {"FAIL", "refused a chat completion that offers a tool", "tools are not supported", "fix: " + fixModelTools}},
	},
	{
		name: "model unreachable",
		setup: func(t *testing.T) (map[string]string, string) {
			return modelEnv("http://"+closedAddr(t)+"/v1", "sk-any-key-0123456789"), ""
		},
		status: 1,
		lines:  map[string][]string{"model": {"FAIL", "connection refused", "fix: " + fixModel}},
	},
	{
		name: "model too slow",
		setup: func(t *testing.T) (map[string]string, string) {
			s := fakellm.New(t)
			s.Enqueue(fakellm.Reply{Text: "late", Delay: time.Minute})
			return modelEnv(s.URL, s.APIKey()), ""
		},
		status: 1,
		lines:  map[string][]string{"model": {"FAIL", "did not answer within 3s", "fix: " + fixModel}},
	},
	{
		name: "feishu token",
		setup: func(t *testing.T) (map[string]string, string) {
			return feishuEnv(t, "feishu-secret-good", "feishu-secret-good"), ""
		},
		status: 0,
		lines: map[string][]string{
			"feishu":  {"OK", "app cli_doctor gets a tenant access token"},
			"webhook": {"SKIP", "not probed", "https://<public host>/webhook/feishu", "127.0.0.1:"},
		},
	},
	{
		name: "feishu bad secret",
		setup: func(t *testing.T) (map[string]string, string) {
			return feishuEnv(t, "feishu-secret-good", "feishu-secret-bad"), ""
		},
		status: 1,
		lines:  map[string][]string{"feishu": {"FAIL", "code 10014", "app secret invalid", "fix: " + fixFeishu}},
	},
	{
		name: "dingtalk token",
		setup: func(t *testing.T) (map[string]string, string) {
			return dingtalkEnv(t, "ding-secret-good", "ding-secret-good"), ""
		},
		status: 0,
		lines: map[string][]string{
			"dingtalk": {"OK", "client ding-doctor gets an access token"},
			"webhook":  {"SKIP", "no channel in webhook mode"},
		},
	},
	{
		name: "dingtalk bad secret",
		setup: func(t *testing.T) (map[string]string, string) {
			return dingtalkEnv(t, "ding-secret-good", "ding-secret-bad"), ""
		},
		status: 1,
		lines:  map[string][]string{"dingtalk": {"FAIL", "HTTP 400 invalidClientSecret", "fix: " + fixDingTalk}},
	},
	{
		name: "feishu unreachable",
		setup: func(t *testing.T) (map[string]string, string) {
			env := feishuEnv(t, "feishu-secret-good", "feishu-secret-good")
			env["HITLBOT_CHANNELS_FEISHU_BASE_URL"] = "http://" + closedAddr(t)
			return env, ""
		},
		status: 1,
		// The network first, the credentials last.
		lines: map[string][]string{"feishu": {"FAIL", "connection refused", "no answer (network)", "fix: " + fixFeishuNetwork}},
	},
	{
		name: "dingtalk unreachable",
		setup: func(t *testing.T) (map[string]string, string) {
			env := dingtalkEnv(t, "ding-secret-good", "ding-secret-good")
			env["HITLBOT_CHANNELS_DINGTALK_API_BASE_URL"] = "http://" + closedAddr(t)
			return env, ""
		},
		status: 1,
		lines:  map[string][]string{"dingtalk": {"FAIL", "connection refused", "no answer (network)", "fix: " + fixDingTalkNetwork}},
	},
	{
		name: "dingtalk token throttled",
		setup: func(t *testing.T) (map[string]string, string) {
			fake := dingtalktest.New(t)
			fake.Throttle(dingtalktest.QpsLimitForAppkeyAndApi, -1)
			env := dingtalkEnv(t, "ding-secret-good", "ding-secret-good")
			env["HITLBOT_CHANNELS_DINGTALK_API_BASE_URL"] = fake.URL()
			return env, ""
		},
		status: 1,
		lines: map[string][]string{"dingtalk": {"FAIL", "HTTP 403 Forbidden.AccessDenied.QpsLimitForAppkeyAndApi",
			"a rate limit (Forbidden.AccessDenied.QpsLimitForAppkeyAndApi)", "fix: " + fixDingTalkThrottle}},
	},
	{
		name: "dingtalk month quota spent",
		setup: func(t *testing.T) (map[string]string, string) {
			fake := dingtalktest.New(t)
			fake.Throttle(dingtalktest.ApiCountLimitForOrg, -1)
			env := dingtalkEnv(t, "ding-secret-good", "ding-secret-good")
			env["HITLBOT_CHANNELS_DINGTALK_API_BASE_URL"] = fake.URL()
			return env, ""
		},
		status: 1,
		lines:  map[string][]string{"dingtalk": {"FAIL", "the month's API call quota is spent", "fix: " + fixDingTalkQuota}},
	},
	{
		name: "dingtalk server keeps refusing",
		setup: func(t *testing.T) (map[string]string, string) {
			env := dingtalkEnv(t, "ding-secret-good", "ding-secret-good")
			env["HITLBOT_SERVER_LISTEN"] = readyzServer(t, `{"status":"ok","warnings":["dingtalk keeps refusing: …"],
				"refusing":{"dingtalk":{"calls":7,"api":"robot/groupMessages/send","code":"Forbidden.AccessDenied.QpsLimitForApi"}}}`)
			return env, ""
		},
		status: 0,
		lines: map[string][]string{"dingtalk": {"WARN", "client ding-doctor gets an access token",
			"dingtalk keeps refusing (the last 7 API calls failed; last: robot/groupMessages/send, code Forbidden.AccessDenied.QpsLimitForApi)",
			"a rate limit", "what to do: " + fixDingTalkThrottle}},
	},
	{
		name: "feishu server keeps refusing",
		setup: func(t *testing.T) (map[string]string, string) {
			env := feishuEnv(t, "feishu-secret-good", "feishu-secret-good")
			env["HITLBOT_SERVER_LISTEN"] = readyzServer(t, `{"status":"ok","refusing":{"feishu":{"calls":5,"api":"create","code":"99991672"}}}`)
			return env, ""
		},
		status: 0,
		lines: map[string][]string{"feishu": {"WARN", "app cli_doctor gets a tenant access token", "feishu keeps refusing",
			"a scope the app has not been granted (99991672)", "what to do: " + fixFeishuScope}},
	},
	{
		name: "server not refusing",
		setup: func(t *testing.T) (map[string]string, string) {
			env := dingtalkEnv(t, "ding-secret-good", "ding-secret-good")
			env["HITLBOT_SERVER_LISTEN"] = readyzServer(t, `{"status":"ok"}`)
			return env, ""
		},
		status: 0,
		lines:  map[string][]string{"dingtalk": {"OK", "client ding-doctor gets an access token"}},
	},
	{
		name: "mcp servers",
		setup: func(t *testing.T) (map[string]string, string) {
			return nil, mcpConfig(mcpServerYAML("fs", mcpTestURL(t)))
		},
		status: 0,
		lines:  map[string][]string{"mcp": {"OK", "fs lists 13 tools"}},
	},
	{
		name: "mcp server that does not start",
		setup: func(t *testing.T) (map[string]string, string) {
			return nil, mcpConfig(mcpServerYAML("fs", mcpTestURL(t)), "      - name: gone\n        command: /nonexistent/mcp-server\n")
		},
		status: 1,
		lines:  map[string][]string{"mcp": {"FAIL", "fs lists 13 tools", "MCP server gone", "/nonexistent/mcp-server", "fix: " + fixMCP}},
	},
}

func modelEnv(baseURL, key string) map[string]string {
	return map[string]string{
		"HITLBOT_MODEL_PROVIDER":        "openai",
		"HITLBOT_MODEL_OPENAI_MODEL":    "gpt-test",
		"HITLBOT_MODEL_OPENAI_BASE_URL": baseURL,
		"HITLBOT_MODEL_OPENAI_API_KEY":  key,
	}
}

// feishuEnv enables Feishu in webhook mode against a fake that accepts
// only the secret want.
func feishuEnv(t *testing.T, want, secret string) map[string]string {
	fake := feishutest.New()
	t.Cleanup(fake.Close)
	fake.RequireSecret(want)
	return map[string]string{
		"HITLBOT_CHANNELS_FEISHU_ENABLED":     "true",
		"HITLBOT_CHANNELS_FEISHU_APP_ID":      "cli_doctor",
		"HITLBOT_CHANNELS_FEISHU_APP_SECRET":  secret,
		"HITLBOT_CHANNELS_FEISHU_BASE_URL":    fake.URL,
		"HITLBOT_CHANNELS_FEISHU_MODE":        "webhook",
		"HITLBOT_CHANNELS_FEISHU_ENCRYPT_KEY": "feishu-encrypt-key-9d2c",
	}
}

// dingtalkEnv enables DingTalk against a fake that accepts only the
// secret want.
func dingtalkEnv(t *testing.T, want, secret string) map[string]string {
	fake := dingtalktest.New(t)
	fake.RequireSecret(want)
	return map[string]string{
		"HITLBOT_CHANNELS_DINGTALK_ENABLED":       "true",
		"HITLBOT_CHANNELS_DINGTALK_CLIENT_ID":     "ding-doctor",
		"HITLBOT_CHANNELS_DINGTALK_CLIENT_SECRET": secret,
		"HITLBOT_CHANNELS_DINGTALK_API_BASE_URL":  fake.URL(),
	}
}

// readyzServer serves body as a `bot serve`'s /readyz and returns its
// address (for server.listen).
func readyzServer(t *testing.T, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestDoctor runs `bot doctor` against the local fakes: each part's line,
// its verdict and fix, the order of the lines and the exit status.
func TestDoctor(t *testing.T) {
	for _, tt := range doctorCases {
		t.Run(tt.name, func(t *testing.T) {
			env, file := tt.setup(t)
			st, out, errb := doctorRun(t, env, file)
			if st != tt.status {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", st, tt.status, out, errb)
			}
			var parts []string
			for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
				parts = append(parts, strings.Fields(l)[0])
			}
			if got := strings.Join(parts, " "); got != "store audit model feishu dingtalk webhook mcp" {
				t.Fatalf("parts %q, want the fixed order\n%s", got, out)
			}
			for part, want := range tt.lines {
				line := doctorLine(t, out, part)
				if f := strings.Fields(line); f[1] != want[0] {
					t.Errorf("%s: verdict %s, want %s:\n%s", part, f[1], want[0], line)
				}
				for _, w := range want[1:] {
					if !strings.Contains(line, w) {
						t.Errorf("%s line lacks %q:\n%s", part, w, line)
					}
				}
				if (want[0] == verdictFail) != strings.Contains(line, "; fix: ") {
					t.Errorf("%s: a fix goes with FAIL, and only with it:\n%s", part, line)
				}
			}
		})
	}
}

// TestDoctorSecrets checks that no secret of the config reaches doctor's
// output, also when an error quotes one (a gateway echoing a header).
func TestDoctorSecrets(t *testing.T) {
	llm := fakellm.New(t)
	llm.Enqueue(fakellm.Status(400, "header X-Gateway-Key gw-header-secret-51e0 is not known here"))
	srv := testredis.StartServer(t)
	env := modelEnv(llm.URL, llm.APIKey())
	for k, v := range feishuEnv(t, "feishu-secret-good", "feishu-secret-a81c") {
		env[k] = v
	}
	for k, v := range dingtalkEnv(t, "ding-secret-good", "ding-secret-33b9") {
		env[k] = v
	}
	env["HITLBOT_STORE_BACKEND"] = "redis"
	env["HITLBOT_STORE_REDIS_URL"] = "redis://" + srv.Addr()
	env["HITLBOT_STORE_REDIS_PASSWORD"] = "redis-pass-0c4d" // a nopass default user takes any password
	env["HITLBOT_CHANNELS_FEISHU_VERIFICATION_TOKEN"] = "feishu-verify-6b1f"
	env["HITLBOT_CHANNELS_API_TOKENS"] = "api-token-0123456789abcdef alice"
	file := "model:\n  openai:\n    headers:\n      X-Gateway-Key: gw-header-secret-51e0\n"
	st, out, errb := doctorRun(t, env, file)
	if st != 1 {
		t.Fatalf("exit %d, want 1 (the model, Feishu and DingTalk fail)\n%s\n%s", st, out, errb)
	}
	if !strings.Contains(doctorLine(t, out, "model"), "header X-Gateway-Key <secret> is not known here") {
		t.Errorf("the echoed header is not redacted in place:\n%s", out)
	}
	for _, s := range []string{llm.APIKey(), "gw-header-secret-51e0", "feishu-secret-a81c", "ding-secret-33b9",
		"redis-pass-0c4d", "feishu-verify-6b1f", "feishu-encrypt-key-9d2c", "api-token-0123456789abcdef"} {
		if strings.Contains(out+errb, s) {
			t.Errorf("the secret %q is in the output:\n%s\n%s", s, out, errb)
		}
	}
}

// TestDoctorFixesInREADME holds every fix doctor prints to the words of the
// troubleshooting table, which moved from the README to
// docs/troubleshooting.md (the README links it; doctor.go names this test).
func TestDoctorFixesInREADME(t *testing.T) {
	b, err := os.ReadFile("../../docs/troubleshooting.md")
	if err != nil {
		t.Fatal(err)
	}
	table := string(b)
	if !strings.Contains(table, "run `bot doctor` first") {
		t.Error("the troubleshooting section does not say to run bot doctor first")
	}
	for _, fix := range []string{fixRedis, fixAppendOnly, fixAudit, fixAuditServer, fixModel, fixModelTools, fixFeishu, fixDingTalk, fixMCP, fixWebhookReach, fixFeishuWebhook, fixDingTalkHTTP,
		fixFeishuNetwork, fixDingTalkNetwork, fixFeishuThrottle, fixFeishuScope, fixFeishuNotInChat, fixDingTalkThrottle, fixDingTalkQuota, fixDingTalkScope} {
		if !strings.Contains(table, fix) {
			t.Errorf("the troubleshooting table lacks %q", fix)
		}
	}
}

// TestDoctorModelRequest checks what the model probe sends: one small
// chat completion that offers exactly one tool, in one attempt.
func TestDoctorModelRequest(t *testing.T) {
	s := fakellm.New(t)
	s.Enqueue(fakellm.Status(500, "down"), fakellm.Text("pong"))
	st, out, _ := doctorRun(t, modelEnv(s.URL, s.APIKey()), "")
	if st != 1 || !strings.Contains(doctorLine(t, out, "model"), "HTTP 500") {
		t.Fatalf("exit %d, want 1 with the 500 of the only attempt:\n%s", st, out)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1 (no retry)", len(reqs))
	}
	c := reqs[0].Chat
	if c.Model != "gpt-test" || len(c.Tools) != 1 || c.Tools[0].Function.Name != doctorToolName || len(c.Messages) != 1 {
		t.Fatalf("request %+v", c)
	}
	if c.MaxTokens == nil || *c.MaxTokens > 64 {
		t.Fatalf("max_tokens %v, want a small cap", c.MaxTokens)
	}
}
