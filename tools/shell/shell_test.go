package shell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
)

// one builds a single enabled command and registers it.
func one(t *testing.T, cc CommandConfig) (agent.Tool, *agent.Registry) {
	t.Helper()
	tools, err := New(Config{Enabled: true, Commands: []CommandConfig{cc}})
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 1 {
		t.Fatalf("%d tools", len(tools))
	}
	reg := agent.NewRegistry()
	if err := reg.Register(tools...); err != nil {
		t.Fatal(err)
	}
	return tools[0], reg
}

func dispatch(t *testing.T, reg *agent.Registry, name string, args any) (approval.Result, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return reg.Dispatch(context.Background(), approval.Call{Tool: name, Args: raw})
}

// str is a schema with one string property per name.
func str(names ...string) map[string]any {
	props := map[string]any{}
	for _, n := range names {
		props[n] = map[string]any{"type": "string"}
	}
	return map[string]any{"type": "object", "properties": props}
}

func TestDisabled(t *testing.T) {
	tools, err := New(Config{Commands: []CommandConfig{{Name: "x", Argv: []string{"/nonexistent"}}}})
	if tools != nil || err != nil {
		t.Errorf("disabled: %v, %v", tools, err)
	}
}

// Shell metacharacters arrive as one literal argument: echo prints them
// verbatim.
var injectionValues = []string{
	"; rm -rf /", "$(id)", "`id`", "a b", "a\tb", "x && echo pwned", "| cat /etc/passwd", "*", "'\"", "x\ny", "$HOME", "> /tmp/f",
}

func TestInjectionIsLiteral(t *testing.T) {
	_, reg := one(t, CommandConfig{Name: "say", Argv: []string{"/bin/echo", "{{.msg}}"}, Parameters: str("msg")})
	for _, v := range injectionValues {
		res, err := dispatch(t, reg, "say", map[string]string{"msg": v})
		if err != nil || res.IsError {
			t.Fatalf("%q: %+v %v", v, res, err)
		}
		if res.Content != v+"\n" {
			t.Errorf("%q: echo printed %q", v, res.Content)
		}
	}
}

var argvCases = []struct {
	name string
	argv []string
	args map[string]any
	want string // printf prints each argument after the format as <arg>
}{
	{"whole element", []string{"{{.a}}"}, map[string]any{"a": "x y z"}, "<x y z>"},
	{"part of element", []string{"--unit={{.a}}.service"}, map[string]any{"a": "a b"}, "<--unit=a b.service>"},
	{"two in one element", []string{"{{.a}}:{{.b}}"}, map[string]any{"a": "1 2", "b": "3"}, "<1 2:3>"},
	{"same twice", []string{"{{.a}}", "{{.a}}"}, map[string]any{"a": "q"}, "<q><q>"},
	{"empty value", []string{"[{{.a}}]"}, map[string]any{"a": ""}, "<[]>"},
	{"number", []string{"{{.a}}"}, map[string]any{"a": json.Number("12345678901234567890")}, "<12345678901234567890>"},
	{"bool", []string{"{{.a}}"}, map[string]any{"a": true}, "<true>"},
	{"dash inside", []string{"x{{.a}}"}, map[string]any{"a": "a-rf"}, "<xa-rf>"},
}

// One placeholder never yields more argv entries: printf shows one <...>
// per argument it got.
func TestArgvShape(t *testing.T) {
	for _, c := range argvCases {
		t.Run(c.name, func(t *testing.T) {
			params := map[string]any{"properties": map[string]any{"a": map[string]any{}, "b": map[string]any{}}}
			_, reg := one(t, CommandConfig{Name: "p", Argv: append([]string{"/usr/bin/printf", "<%s>"}, c.argv...), Parameters: params})
			res, err := dispatch(t, reg, "p", c.args)
			if err != nil || res.IsError {
				t.Fatalf("%+v %v", res, err)
			}
			if res.Content != c.want {
				t.Errorf("got %q, want %q", res.Content, c.want)
			}
		})
	}
}

var dashCases = []struct {
	name    string
	cc      CommandConfig
	value   any
	allowed bool
}{
	{"refused", CommandConfig{Parameters: str("msg")}, "-e", false},
	{"long option refused", CommandConfig{Parameters: str("msg")}, "--help", false},
	{"negative number refused", CommandConfig{Parameters: map[string]any{"properties": map[string]any{"msg": map[string]any{"type": "integer"}}}}, -5, false},
	{"enum lists it", CommandConfig{Parameters: map[string]any{"properties": map[string]any{"msg": map[string]any{"enum": []any{"-n", "x"}}}}}, "-n", true},
	{"const", CommandConfig{Parameters: map[string]any{"properties": map[string]any{"msg": map[string]any{"const": "-v"}}}}, "-v", true},
	{"numeric enum", CommandConfig{Parameters: map[string]any{"properties": map[string]any{"msg": map[string]any{"enum": []any{-1, 1}}}}}, -1, true},
	{"allow list", CommandConfig{Parameters: map[string]any{"properties": map[string]any{"msg": map[string]any{"type": "string", "pattern": "^-?[0-9]+$"}}},
		AllowLeadingDash: []string{"msg"}}, "-12", true},
}

func TestOptionInjection(t *testing.T) {
	for _, c := range dashCases {
		t.Run(c.name, func(t *testing.T) {
			cc := c.cc
			cc.Name, cc.Argv = "say", []string{"/usr/bin/printf", "<%s>", "{{.msg}}"}
			tl, reg := one(t, cc)
			args, _ := json.Marshal(map[string]any{"msg": c.value})
			_, perr := tl.Preview(context.Background(), args)
			res, err := dispatch(t, reg, "say", map[string]any{"msg": c.value})
			if err != nil {
				t.Fatal(err)
			}
			if c.allowed {
				if perr != nil || res.IsError || res.Content != fmt.Sprintf("<%v>", c.value) {
					t.Errorf("preview err %v, res %+v", perr, res)
				}
				return
			}
			if perr == nil || !strings.Contains(perr.Error(), "could be taken as an option") {
				t.Errorf("preview err %v", perr)
			}
			if !res.IsError || !strings.HasPrefix(res.Content, "command not run: ") {
				t.Errorf("res %+v", res)
			}
		})
	}
}

func TestEnvNotLeaked(t *testing.T) {
	t.Setenv("HITLBOT_TEST_SECRET", "hunter2")
	t.Setenv("HITLBOT_TEST_SHARED", "visible")
	_, reg := one(t, CommandConfig{Name: "env", Argv: []string{"/usr/bin/env"}})
	res, err := dispatch(t, reg, "env", map[string]any{})
	if err != nil || res.IsError {
		t.Fatalf("%+v %v", res, err)
	}
	if res.Content != "(no output)" {
		t.Errorf("the command saw an environment: %q", res.Content)
	}
	_, reg = one(t, CommandConfig{Name: "env", Argv: []string{"env"}, Env: []string{"HITLBOT_TEST_SHARED", "HITLBOT_TEST_UNSET"}})
	res, err = dispatch(t, reg, "env", map[string]any{})
	if err != nil || res.IsError {
		t.Fatalf("%+v %v", res, err)
	}
	if res.Content != "HITLBOT_TEST_SHARED=visible\n" {
		t.Errorf("env %q", res.Content)
	}
}

var exitCases = []struct {
	name    string
	argv    []string
	want    string
	isError bool
}{
	{"true", []string{"/bin/true"}, "(no output)", false},
	{"false", []string{"/bin/false"}, "exit status 1\n(no output)", true},
	{"exit 3 with output", []string{"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, "exit status 3\nout\nerr\n", true},
	{"stderr kept", []string{"/bin/cat", "/nonexistent/file"}, "exit status 1\n/bin/cat: /nonexistent/file: No such file or directory\n", true},
	{"signal", []string{"/bin/sh", "-c", "kill -TERM $$"}, "terminated: signal: terminated\n(no output)", true},
}

func TestExit(t *testing.T) {
	for _, c := range exitCases {
		t.Run(c.name, func(t *testing.T) {
			_, reg := one(t, CommandConfig{Name: "c", Argv: c.argv})
			res, err := dispatch(t, reg, "c", map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Content != c.want || res.IsError != c.isError {
				t.Errorf("got %+v, want %q (IsError %v)", res, c.want, c.isError)
			}
		})
	}
}

func TestOutputCut(t *testing.T) {
	_, reg := one(t, CommandConfig{Name: "seq", Argv: []string{"/usr/bin/seq", "{{.n}}"}, MaxOutputBytes: 100,
		Parameters: map[string]any{"properties": map[string]any{"n": map[string]any{"type": "integer", "maximum": 1000000}}}})
	res, err := dispatch(t, reg, "seq", map[string]any{"n": 100000})
	if err != nil || res.IsError {
		t.Fatalf("%+v %v", res, err)
	}
	want := "1\n2\n3\n"
	if !strings.HasPrefix(res.Content, want) || !strings.HasSuffix(res.Content, "\n[output cut at 100 bytes; 588895 bytes in all]") {
		t.Errorf("content %q", res.Content)
	}
	if i := strings.Index(res.Content, "\n[output cut"); i != 100 {
		t.Errorf("kept %d bytes, want 100", i)
	}
}

// A cut in the middle of a multi-byte character backs off to the rune start.
func TestOutputCutUTF8(t *testing.T) {
	_, reg := one(t, CommandConfig{Name: "e", Argv: []string{"/bin/echo", "猫猫猫"}, MaxOutputBytes: 4})
	res, err := dispatch(t, reg, "e", map[string]any{})
	if err != nil || res.Content != "猫\n[output cut at 4 bytes; 10 bytes in all]" {
		t.Errorf("%q %v", res.Content, err)
	}
}

// A timeout kills the process group and is an error of unknown effect.
func TestTimeoutKillsGroup(t *testing.T) {
	_, reg := one(t, CommandConfig{Name: "slow", Timeout: 300 * time.Millisecond,
		Argv: []string{"/bin/sh", "-c", "sleep 30 & echo child=$!; wait"}})
	start := time.Now()
	_, err := dispatch(t, reg, "slow", map[string]any{})
	if err == nil || errors.Is(err, approval.ErrNotRun) {
		t.Fatalf("err %v, want an unknown-effect error", err)
	}
	if !strings.Contains(err.Error(), "timed out after 300ms") || !strings.Contains(err.Error(), "effect unknown") {
		t.Errorf("err %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s", d)
	}
	waitGone(t, childPID(t, err.Error()))
}

// Children left behind by a command that exited are killed too.
func TestLeftoverChildrenKilled(t *testing.T) {
	_, reg := one(t, CommandConfig{Name: "bg", Argv: []string{"/bin/sh", "-c", "sleep 30 >/dev/null 2>&1 & echo child=$!"}})
	res, err := dispatch(t, reg, "bg", map[string]any{})
	if err != nil || res.IsError {
		t.Fatalf("%+v %v", res, err)
	}
	waitGone(t, childPID(t, res.Content))
}

// A child that keeps the output pipe open after the command exited: Wait
// gives up after waitDelay, the output so far is kept, the child is killed.
func TestChildHoldingOutput(t *testing.T) {
	_, reg := one(t, CommandConfig{Name: "bg", Argv: []string{"/bin/sh", "-c", "sleep 30 & echo child=$!"}})
	res, err := dispatch(t, reg, "bg", map[string]any{})
	if err != nil || res.IsError || !strings.HasPrefix(res.Content, "child=") {
		t.Fatalf("%+v %v", res, err)
	}
	waitGone(t, childPID(t, res.Content))
}

func TestSleepTimeout(t *testing.T) {
	_, reg := one(t, CommandConfig{Name: "sleep", Argv: []string{"/bin/sleep", "{{.s}}"}, Timeout: 100 * time.Millisecond,
		Parameters: map[string]any{"properties": map[string]any{"s": map[string]any{"type": "integer"}}}})
	_, err := dispatch(t, reg, "sleep", map[string]any{"s": 20})
	if err == nil || !strings.Contains(err.Error(), "timed out after 100ms") {
		t.Fatalf("err %v", err)
	}
}

// The caller cancelling is of unknown effect too.
func TestCallerCancel(t *testing.T) {
	tl, _ := one(t, CommandConfig{Name: "sleep", Argv: []string{"/bin/sleep", "20"}})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := tl.Run(ctx, nil)
	if err == nil || errors.Is(err, approval.ErrNotRun) || !strings.Contains(err.Error(), "effect unknown") {
		t.Fatalf("err %v", err)
	}
}

var childRE = regexp.MustCompile(`child=(\d+)`)

func childPID(t *testing.T, s string) int {
	t.Helper()
	m := childRE.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no child pid in %q", s)
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// waitGone waits until pid is gone or a zombie (killed, not yet reaped by
// whatever adopted it).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d still running: %s", pid, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestDir(t *testing.T) {
	dir := t.TempDir()
	tl, reg := one(t, CommandConfig{Name: "pwd", Argv: []string{"/bin/pwd"}, Dir: dir})
	res, err := dispatch(t, reg, "pwd", map[string]any{})
	if err != nil || res.Content != dir+"\n" {
		t.Errorf("%+v %v", res, err)
	}
	p, _ := tl.Preview(context.Background(), nil)
	if p != "/bin/pwd\n(in "+quote(dir)+")" {
		t.Errorf("preview %q", p)
	}
}

func TestPreview(t *testing.T) {
	tl, _ := one(t, CommandConfig{Name: "restart", Argv: []string{"/bin/echo", "restart", "--unit={{.svc}}", "{{.note}}"},
		Parameters: str("svc", "note")})
	if tl.Effect(nil) != approval.EffectDestructive || tl.Effect(nil).Risk() != approval.RiskHigh {
		t.Errorf("effect %s", tl.Effect(nil))
	}
	got, err := tl.Preview(context.Background(), json.RawMessage(`{"svc":"nginx; rm -rf /","note":"it's\nok"}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `/bin/echo restart '--unit=nginx; rm -rf /' $'it\'s\nok'`; got != want {
		t.Errorf("preview %s, want %s", got, want)
	}
}

var quoteCases = []struct{ in, want string }{
	{"", "''"},
	{"plain-1.2_x/y:z@a%b+c=d,e", "plain-1.2_x/y:z@a%b+c=d,e"},
	{"a b", "'a b'"},
	{"it's", `'it'\''s'`},
	{"$(id)", "'$(id)'"},
	{"猫", "'猫'"},
	{"a\nb", `$'a\nb'`},
	{"\x1b[31mred", `$'\x1b[31mred'`},
	{"a\u202eb", `$'a\u202eb'`},
	{"\xff", `$'\xff'`},
	{"\\'", `'\'\'''`},
	{"\\\x00", `$'\\\x00'`},
}

func TestQuote(t *testing.T) {
	for _, c := range quoteCases {
		if got := quote(c.in); got != c.want {
			t.Errorf("quote(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

// Arguments the schema refuses never reach the command.
func TestDispatchValidation(t *testing.T) {
	_, reg := one(t, CommandConfig{Name: "restart", Argv: []string{"/bin/echo", "{{.svc}}"},
		Parameters: map[string]any{"properties": map[string]any{"svc": map[string]any{"enum": []any{"nginx", "api"}}}}})
	for _, args := range []any{map[string]any{}, map[string]any{"svc": "postgres"}, []int{1}} {
		if _, err := dispatch(t, reg, "restart", args); !errors.Is(err, approval.ErrNotRun) {
			t.Errorf("%v: err %v", args, err)
		}
	}
}

// Run called directly with values the schema would refuse still refuses
// what it cannot render.
var refusedValues = []string{`{}`, `{"v":null}`, `{"v":[1]}`, `{"v":{"a":1}}`, `{"v":"a\u0000b"}`, `{"v":"-x"}`, `[1]`}

func TestRunRefuses(t *testing.T) {
	tl, _ := one(t, CommandConfig{Name: "c", Argv: []string{"/bin/echo", "{{.v}}"}, Parameters: map[string]any{
		"properties": map[string]any{"v": map[string]any{}}}})
	for _, a := range refusedValues {
		out, err := tl.Run(context.Background(), json.RawMessage(a))
		if err != nil || !out.IsError || !strings.HasPrefix(out.Content, "command not run: ") {
			t.Errorf("%s: %+v %v", a, out, err)
		}
	}
}

// A program that vanished after the tool was built: not run.
func TestStartFailureIsNotRun(t *testing.T) {
	dir := t.TempDir()
	prog := dir + "/prog"
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, reg := one(t, CommandConfig{Name: "c", Argv: []string{prog}})
	if err := os.Remove(prog); err != nil {
		t.Fatal(err)
	}
	if _, err := dispatch(t, reg, "c", map[string]any{}); !errors.Is(err, approval.ErrNotRun) {
		t.Errorf("err %v", err)
	}
}

func TestLookPathAndDefaults(t *testing.T) {
	tl, _ := one(t, CommandConfig{Name: "e", Argv: []string{"echo", "{{.a}}"}, Parameters: str("a")})
	st := tl.(*tool)
	if !strings.HasPrefix(st.path, "/") || st.timeout != DefaultTimeout || st.maxBytes != DefaultMaxOutputBytes {
		t.Errorf("%q %v %v", st.path, st.timeout, st.maxBytes)
	}
	if st.desc != "Run echo {{.a}}" {
		t.Errorf("desc %q", st.desc)
	}
	if len(st.schema.Required) != 1 || st.schema.Required[0] != "a" {
		t.Errorf("required %v", st.schema.Required)
	}
}

var configErrorCases = []struct {
	name string
	cc   CommandConfig
	want string
}{
	{"bad name", CommandConfig{Name: "Restart", Argv: []string{"/bin/echo"}}, `tool "Restart": name:`},
	{"no name", CommandConfig{Argv: []string{"/bin/echo"}}, `tools.shell.commands[0]: name:`},
	{"empty argv", CommandConfig{Name: "x"}, `tool "x": argv: empty`},
	{"empty program", CommandConfig{Name: "x", Argv: []string{""}}, `argv[0]: empty`},
	{"program placeholder", CommandConfig{Name: "x", Argv: []string{"{{.p}}"}, Parameters: str("p")}, `argv[0]: the program is fixed`},
	{"missing binary", CommandConfig{Name: "x", Argv: []string{"/nonexistent/bin/tool"}}, `argv[0]: "/nonexistent/bin/tool" does not exist`},
	{"not in PATH", CommandConfig{Name: "x", Argv: []string{"hitlbot-no-such-program"}}, `argv[0]: "hitlbot-no-such-program" not found in PATH`},
	{"relative path", CommandConfig{Name: "x", Argv: []string{"bin/echo"}}, `argv[0]: "bin/echo": use an absolute path`},
	{"directory", CommandConfig{Name: "x", Argv: []string{"/bin"}}, `is not an executable file`},
	{"undeclared placeholder", CommandConfig{Name: "x", Argv: []string{"/bin/echo", "{{.a}}"}}, `argv[1]: placeholder {{.a}} is not a property`},
	{"bad placeholder", CommandConfig{Name: "x", Argv: []string{"/bin/echo", "{{ index . 0 }}"}}, `argv[1]: placeholder`},
	{"unclosed placeholder", CommandConfig{Name: "x", Argv: []string{"/bin/echo", "{{.a"}}, `argv[1]: "{{" without`},
	{"NUL in argv", CommandConfig{Name: "x", Argv: []string{"/bin/echo", "a\x00b"}}, `argv[1]: has a NUL byte`},
	{"allow dash unknown", CommandConfig{Name: "x", Argv: []string{"/bin/echo"}, AllowLeadingDash: []string{"n"}}, `allow_leading_dash: "n"`},
	{"schema not object", CommandConfig{Name: "x", Argv: []string{"/bin/echo"}, Parameters: map[string]any{"type": "array"}}, `parameters: type must be "object"`},
	{"schema bad", CommandConfig{Name: "x", Argv: []string{"/bin/echo"}, Parameters: map[string]any{"required": "a"}}, `parameters: not a JSON schema`},
	{"negative timeout", CommandConfig{Name: "x", Argv: []string{"/bin/echo"}, Timeout: -time.Second}, `timeout: must not be negative`},
	{"negative output", CommandConfig{Name: "x", Argv: []string{"/bin/echo"}, MaxOutputBytes: -1}, `max_output_bytes: must not be negative`},
	{"relative dir", CommandConfig{Name: "x", Argv: []string{"/bin/echo"}, Dir: "tmp"}, `dir: "tmp" is not an absolute path`},
	{"missing dir", CommandConfig{Name: "x", Argv: []string{"/bin/echo"}, Dir: "/nonexistent/dir"}, `dir: "/nonexistent/dir" is not an existing directory`},
	{"env value", CommandConfig{Name: "x", Argv: []string{"/bin/echo"}, Env: []string{"TOKEN=abc"}}, `env: "TOKEN=abc" is not an environment variable name`},
}

func TestConfigErrors(t *testing.T) {
	for _, c := range configErrorCases {
		t.Run(c.name, func(t *testing.T) {
			tools, err := New(Config{Enabled: true, Commands: []CommandConfig{c.cc}})
			if err == nil {
				t.Fatalf("no error; tools %v", tools)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestNotExecutable(t *testing.T) {
	f := t.TempDir() + "/data"
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(Config{Enabled: true, Commands: []CommandConfig{{Name: "x", Argv: []string{f}}}})
	if err == nil || !strings.Contains(err.Error(), "is not an executable file") {
		t.Errorf("err %v", err)
	}
}

func TestConfigDuplicate(t *testing.T) {
	_, err := New(Config{Enabled: true, Commands: []CommandConfig{
		{Name: "a", Argv: []string{"/bin/echo"}}, {Name: "a", Argv: []string{"/bin/echo"}}, {Name: "b"},
	}})
	if err == nil || !strings.Contains(err.Error(), `tool "a": name: defined twice`) || !strings.Contains(err.Error(), `tool "b": argv: empty`) {
		t.Errorf("err %v", err)
	}
}
