//go:build unix

package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/channels/dingtalk/dingtalktest"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
)

// readmeNotRun lists, by their first line, the README.md command blocks
// this test does not run, each with the reason and what runs it instead.
// A block of README.md that is neither here nor in readmeRuns fails the
// test, and so does an entry here that names no block.
var readmeNotRun = map[string]string{
	"make run      # builds bin/bot from ./cmd/bot, then runs it with its embedded defaults": "" +
		"make test is what CI runs (.ci/run's first line, as written); make run is `go build -v -o bin/bot ./cmd/bot` " +
		"then `exec bin/bot`: this test builds that binary and runs it with no argument for the demo's curl block",
	"mkdir -p /tmp/hitlbot-share                  # the folder the server may use: it must exist": "" +
		"npx fetches @modelcontextprotocol/server-filesystem from the npm registry, which no test reaches " +
		"(scripts/mcp-npm.sh); the block's config.yaml is checked here with `bot check`, and the same server, " +
		"pinned by tools/mcptool/testdata/npm, configured as the block says, is run by TestFilesystemServerThroughTheAPI",
	"cp deploy/hitlbot.env.example deploy/hitlbot.env   # put real tokens in place of its change-me… ones": "" +
		"needs Docker; docker-compose.yml is checked by `make compose` in CI (scripts/check-compose.sh), " +
		"deploy/config.yaml by TestServeRefusesPlaceholders and the config tests, /readyz by TestServeZeroConfig",
}

// TestReadmeCommands runs every command block of README.md as written,
// with bash -e in a directory of its own: bin/bot there is the binary
// built from this package (what `make run` builds), config.yaml is the
// YAML block that comes before the command block in its section (each
// YAML block is also checked with `bot check`). What differs from a
// reader's machine, and how:
//   - the port: the README's 127.0.0.1:8080 is a free port, set for the
//     bot by HITLBOT_SERVER_LISTEN (the environment form of
//     server.listen) and replaced in the block's URLs;
//   - Feishu and DingTalk are the local fakes of their platforms, named
//     by HITLBOT_CHANNELS_FEISHU_BASE_URL and
//     HITLBOT_CHANNELS_DINGTALK_API_BASE_URL; they accept exactly the
//     placeholder secret the block exports;
//   - a block that leaves the bot running is stopped once what it should
//     do was seen (SIGTERM to its process group).
func TestReadmeCommands(t *testing.T) {
	doc, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := mdBlocks(string(doc))
	var runs []func(bin string)

	seen := map[string]bool{}
	config := "" // the last YAML block of the section
	section := ""
	for _, b := range blocks {
		if b.section != section {
			section, config = b.section, ""
		}
		first, _, _ := strings.Cut(b.text, "\n")
		switch b.lang {
		case "yaml":
			if !strings.HasPrefix(b.text, "# config.yaml\n") {
				t.Errorf("%s: a YAML block that is not a config.yaml: %q", section, first)
				continue
			}
			config = b.text
			name, cfg := "check "+section, config
			runs = append(runs, func(string) { t.Run(name, func(t *testing.T) { readmeCheck(t, cfg) }) })
		case "sh", "bash":
			seen[first] = true
			if why, ok := readmeNotRun[first]; ok {
				t.Logf("%s: not run: %s", section, why)
				continue
			}
			run, ok := readmeRuns[section]
			if !ok {
				t.Errorf("%s: the command block %q is neither run by this test nor listed in readmeNotRun with a reason", section, first)
				continue
			}
			name, cfg, text := section, config, b.text
			runs = append(runs, func(bin string) { t.Run(name, func(t *testing.T) { run(t, readmeDir(t, bin, cfg), text) }) })
		default:
			t.Errorf("%s: a %q block: say how this test checks it", section, b.lang)
		}
	}
	for first := range readmeNotRun {
		if !seen[first] {
			t.Errorf("readmeNotRun names a block README.md no longer has: %q", first)
		}
	}
	bin := buildBin(t)
	for _, r := range runs {
		r(bin)
	}
}

// readmeRuns runs the command block of a README section, by the
// section's heading.
var readmeRuns = map[string]func(t *testing.T, dir, block string){
	"A five-minute demo": func(t *testing.T, dir, block string) {
		addr := closedPort(t)
		// What `make run` starts: bin/bot with no argument, in the checkout.
		bot := readmeStart(t, dir, "exec bin/bot", addr, nil)
		waitFor(t, 60*time.Second, "the ready line", func() bool {
			bot.alive(t)
			return readyRE.MatchString(bot.stdout())
		})
		curl := readmeStart(t, dir, block, addr, nil)
		out := curl.wait(t)
		answers := strings.Split(strings.TrimSpace(out), "\n")
		if len(answers) != 3 {
			t.Fatalf("the demo's curl block printed %d answers, want 3:\n%s\n%s", len(answers), out, curl.stderr())
		}
		for i, want := range []string{"Renew the TLS certificate", `"requiresConfirmation":true`, `Created task`} {
			if !strings.Contains(answers[i], want) {
				t.Errorf("answer %d of the demo's curl block lacks %q:\n%s", i+1, want, answers[i])
			}
		}
		if !strings.HasSuffix(answers[2], `"status":"executed"}`) {
			t.Errorf("the approval did not run the call: %s", answers[2])
		}
	},
	"Feishu in ten minutes": func(t *testing.T, dir, block string) {
		fake := feishutest.New()
		t.Cleanup(fake.Close)
		fake.RequireSecret("<App Secret>")
		p := readmeStart(t, dir, block, closedPort(t), []string{"HITLBOT_CHANNELS_FEISHU_BASE_URL=" + fake.URL})
		waitFor(t, 60*time.Second, "the long connection to the fake Feishu", func() bool {
			p.alive(t)
			return fake.Connected()
		})
		if l := doctorLine(t, p.stdout(), "feishu"); !strings.Contains(l, "OK") {
			t.Errorf("bot doctor's feishu line: %q", l)
		}
		// What the section says next: in the group, @ the bot with the
		// DELETE; a card appears, a click decides, the card ends final
		// (in Chinese: no approval.lang on Feishu).
		if _, err := fake.Push(feishutest.MessageEvent{EventID: "ev-readme-1", MessageID: "om_readme_1", ChatID: "oc_readme",
			ChatType: "group", Sender: "ou_newcomer", Text: "@_user_1 " + deleteCancelled,
			Mentions: map[string]string{"@_user_1": fake.BotOpenID}}.JSON(), 5*time.Second); err != nil {
			t.Fatal(err)
		}
		var card feishutest.Call
		waitFor(t, 20*time.Second, "the approval card in the group", func() bool {
			p.alive(t)
			for _, c := range fake.Calls() {
				if c.MsgType == "interactive" && (c.Op == "create" || c.Op == "reply") {
					card = c
					return true
				}
			}
			return false
		})
		value := buttonValue(t, card.Content, "approve")
		if resp, err := fake.Push(feishutest.CardActionEvent{EventID: "ev-readme-2", Operator: "ou_newcomer", MessageID: "om_card",
			ChatID: "oc_readme", Value: value}.JSON(), 5*time.Second); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("click ack %+v, %v", resp, err)
		}
		waitFor(t, 20*time.Second, "the card in its final state (the DELETE ran)", func() bool {
			for _, c := range fake.Calls() {
				if c.Op == "patch" && strings.Contains(c.Content, "已在 demo 上执行") {
					return true
				}
			}
			return false
		})
	},
	"DingTalk": func(t *testing.T, dir, block string) {
		fake := dingtalktest.New(t)
		fake.RequireSecret("<Client Secret>")
		p := readmeStart(t, dir, block, closedPort(t), []string{"HITLBOT_CHANNELS_DINGTALK_API_BASE_URL=" + fake.URL(),
			"HITLBOT_CHANNELS_DINGTALK_WEBHOOK_BASE_URL=" + fake.URL()})
		fake.WaitConn(60 * time.Second)
		p.alive(t)
		if l := doctorLine(t, p.stdout(), "dingtalk"); !strings.Contains(l, "OK") {
			t.Errorf("bot doctor's dingtalk line: %q", l)
		}
	},
	"Approvals for other agents": func(t *testing.T, dir, block string) {
		p := readmeStart(t, dir, block, closedPort(t), nil)
		out := p.wait(t)
		if !strings.Contains(out, `"status":"pending"`) {
			t.Errorf("POST /api/approvals answered %s\n%s", out, p.stderr())
		}
	},
}

// readmeCheck runs `bot check` on a README config block, with the secrets
// it names in the environment.
func readmeCheck(t *testing.T, config string) {
	for k, v := range map[string]string{
		"HITLBOT_CHANNELS_FEISHU_APP_SECRET":      "feishu-secret-for-check",
		"HITLBOT_CHANNELS_DINGTALK_CLIENT_SECRET": "dingtalk-secret-for-check",
		"AGENT_CI_CLAUDE_TOKEN":                   "0123456789abcdef0123456789abcdef",
	} {
		t.Setenv(k, v)
	}
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb syncBuffer
	if st := run(context.Background(), []string{"check", "-config", p, "-data", t.TempDir()}, nil, &out, &errb); st != 0 {
		t.Errorf("bot check: exit %d\n%s\n%s\nconfig:\n%s", st, out.String(), errb.String(), config)
	}
}

// readmeDir makes the directory a block runs in: bin/bot, and config.yaml
// when the section has one.
func readmeDir(t *testing.T, bin, config string) string {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(dir, "bin", "bot")); err != nil {
		t.Fatal(err)
	}
	if config != "" {
		if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// readmeProc is a block running under bash -e, in a process group of its
// own (a bot it starts in the background included).
type readmeProc struct {
	cmd              *exec.Cmd
	outName, errName string
	done             chan error
}

func readmeStart(t *testing.T, dir, block, addr string, env []string) *readmeProc {
	t.Helper()
	script := strings.ReplaceAll(block, "127.0.0.1:8080", addr)
	cmd := exec.Command("bash", "-e", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "HITLBOT_SERVER_LISTEN="+addr), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Files, not buffers: a bot left in the background keeps its end of a
	// pipe open, and Wait would wait for it.
	out, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	errf, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, errf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &readmeProc{cmd: cmd, outName: out.Name(), errName: errf.Name(), done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); out.Close(); errf.Close() }()
	t.Cleanup(func() {
		pg := -cmd.Process.Pid
		syscall.Kill(pg, syscall.SIGTERM)
		waitFor(t, 30*time.Second, "the block's processes to stop", func() bool {
			return syscall.Kill(pg, 0) == syscall.ESRCH
		})
	})
	return p
}

func readFile(name string) string {
	b, _ := os.ReadFile(name)
	return string(b)
}

func (p *readmeProc) stdout() string { return readFile(p.outName) }
func (p *readmeProc) stderr() string { return readFile(p.errName) }

// alive fails the test when the block's bash ended before what was
// waited for happened.
func (p *readmeProc) alive(t *testing.T) {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		t.Fatalf("the block ended (%v) before it did what the README says:\nstdout:\n%s\nstderr:\n%s", err, p.stdout(), p.stderr())
	default:
	}
}

// wait waits for the block's bash to end, fails the test unless it
// succeeded, and returns its stdout.
func (p *readmeProc) wait(t *testing.T) string {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		if err != nil {
			t.Fatalf("the block failed: %v\nstdout:\n%s\nstderr:\n%s", err, p.stdout(), p.stderr())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the block did not end:\nstdout:\n%s\nstderr:\n%s", p.stdout(), p.stderr())
	}
	return p.stdout()
}
