package shell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/tools/internal/argtmpl"
	"github.com/hitlbot/hitlbot/words"
)

// errTimeout is the cause of a run's own timeout.
var errTimeout = errors.New("command timed out")

// tool is one allow-listed command.
type tool struct {
	name, desc string
	path       string     // argv[0], absolute
	args       []template // argv[1:]
	schema     *jsonschema.Schema
	allowDash  []string
	timeout    time.Duration
	maxBytes   int64
	dir        string
	env        []string // names passed through
}

var _ agent.Tool = (*tool)(nil)

// Explain says what a call does, for its approver (agent.Explainer).
func (t *tool) Explain() approval.Words { return approval.Say(words.AboutShell) }

func (t *tool) Name() string               { return t.name }
func (t *tool) Description() string        { return t.desc }
func (t *tool) Schema() *jsonschema.Schema { return t.schema }

// Kind is always destructive: a command can do anything its program can.
func (t *tool) Effect(json.RawMessage) approval.Effect { return approval.EffectDestructive }

// argv decodes the arguments and renders the command line: one element per
// template element, whatever the values hold.
func (t *tool) argv(raw json.RawMessage) ([]string, error) {
	args, err := decodeArgs(raw)
	if err != nil {
		return nil, err
	}
	return t.render(args)
}

func (t *tool) render(args map[string]any) ([]string, error) {
	out := make([]string, 0, 1+len(t.args))
	out = append(out, t.path)
	for _, a := range t.args {
		s, err := a.Render(func(name string) (string, error) { return t.value(name, args) })
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// value renders one parameter for argv: strings as they are, numbers in
// their JSON spelling, booleans as true/false. It refuses a missing value,
// objects and arrays, NUL bytes, and a value starting with "-" unless the
// parameter allows it (see CommandConfig.AllowLeadingDash).
func (t *tool) value(name string, args map[string]any) (string, error) {
	v, ok := args[name]
	if !ok || v == nil {
		return "", &paramError{words.ShellMissing, []any{name}}
	}
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case json.Number:
		s = x.String()
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		s = strconv.FormatBool(x)
	default:
		return "", &paramError{words.ShellNotScalar, []any{name}}
	}
	if strings.ContainsRune(s, 0) {
		return "", &paramError{words.ShellNUL, []any{name}}
	}
	if strings.HasPrefix(s, "-") && !t.dashAllowed(name, s) {
		return "", &paramError{words.ShellDash, []any{name, quote(s)}}
	}
	return s, nil
}

// paramError is a parameter that does not render, said in each language
// (its Error is the English).
type paramError struct {
	key  words.Key
	args []any
}

func (e *paramError) Error() string             { return e.in(words.EN) }
func (e *paramError) in(lang words.Lang) string { return words.Text(lang, e.key, e.args...) }

// dashAllowed reports whether a value starting with "-" is allowed: the
// parameter is listed in AllowLeadingDash, or its schema names this exact
// value in enum or const.
func (t *tool) dashAllowed(name, s string) bool {
	if slices.Contains(t.allowDash, name) {
		return true
	}
	p := t.schema.Properties[name]
	if p == nil {
		return false
	}
	listed := func(e any) bool {
		switch x := e.(type) {
		case string:
			return x == s
		case float64:
			return strconv.FormatFloat(x, 'f', -1, 64) == s
		}
		return false
	}
	if p.Const != nil && listed(*p.Const) {
		return true
	}
	return slices.ContainsFunc(p.Enum, listed)
}

// decodeArgs reads the arguments object, keeping numbers as written.
func decodeArgs(raw json.RawMessage) (map[string]any, error) { return argtmpl.DecodeArgs(raw) }

// Preview shows the exact argv, shell-quoted for reading (nothing is ever
// run through a shell), e.g. /usr/bin/systemctl restart 'nginx; rm -rf /'.
func (t *tool) Preview(_ context.Context, raw json.RawMessage) (string, error) {
	argv, err := t.argv(raw)
	if err != nil {
		return "", fmt.Errorf("%s: %w", t.name, err)
	}
	s := quoteArgv(argv)
	if t.dir != "" {
		s += "\n(in " + quote(t.dir) + ")"
	}
	return s, nil
}

// Run executes the command directly (exec, no shell), in a process group of
// its own, with only the allow-listed environment and stdin from /dev/null.
//
//   - Arguments that do not render (missing, refused "-" value): nothing
//     runs; Output with IsError.
//   - The program cannot be started: an error wrapping approval.ErrNotRun.
//   - Exit 0: the output (stdout and stderr as written, cut at
//     MaxOutputBytes).
//   - Another exit status or a signal: Output with IsError, the status and
//     the output.
//   - Timeout (or the caller's context ends): the process group is killed
//     and a plain error is returned. The command may have done part of its
//     work, so the effect is unknown and the approval freezes rather than
//     being retried.
func (t *tool) Run(ctx context.Context, raw json.RawMessage) (agent.Output, error) {
	argv, err := t.argv(raw)
	if err != nil {
		lang := words.LangOf(ctx)
		why := err.Error()
		var pe *paramError
		if errors.As(err, &pe) {
			why = pe.in(lang)
		}
		return agent.Output{Content: words.Text(lang, words.ShellNotRun, why), IsError: true}, nil
	}
	ctx, cancel := context.WithTimeoutCause(ctx, t.timeout, errTimeout)
	defer cancel()

	out := &capped{max: t.maxBytes, lang: words.LangOf(ctx)}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = t.environ()
	cmd.Dir = t.dir
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.WaitDelay = waitDelay
	isolate(cmd)

	if err := cmd.Start(); err != nil {
		return agent.Output{}, fmt.Errorf("%w: %s: cannot start %s: %v", approval.ErrNotRun, t.name, argv[0], err)
	}
	err = cmd.Wait()
	killGroup(cmd)

	shown := quoteArgv(argv)
	if context.Cause(ctx) == errTimeout {
		return agent.Output{}, fmt.Errorf("%s: timed out after %s; the process group was killed; the command may have done part of its work (effect unknown)\n%s",
			shown, t.timeout, out.text())
	}
	if ctx.Err() != nil {
		return agent.Output{}, fmt.Errorf("%s: interrupted (%v); the process group was killed; effect unknown\n%s",
			shown, context.Cause(ctx), out.text())
	}
	var ee *exec.ExitError
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
		return agent.Output{Content: out.text()}, nil
	case errors.As(err, &ee):
		status := words.Text(out.lang, words.ShellExit, ee.ExitCode())
		if ee.ExitCode() < 0 {
			status = words.Text(out.lang, words.ShellTerminated, ee.ProcessState.String())
		}
		return agent.Output{Content: status + "\n" + out.text(), IsError: true}, nil
	}
	// Wait failed for another reason (an output pipe broke): the command
	// ran, its end is unknown.
	return agent.Output{}, fmt.Errorf("%s: %v (effect unknown)\n%s", shown, err, out.text())
}

// environ returns NAME=value for each allow-listed variable that is set;
// never nil, so nothing is inherited.
func (t *tool) environ() []string {
	env := make([]string, 0, len(t.env))
	for _, n := range t.env {
		if v, ok := os.LookupEnv(n); ok {
			env = append(env, n+"="+v)
		}
	}
	return env
}

// capped keeps the first max bytes written to it and counts the rest. It
// never fails a write, so the command is not disturbed by the cut.
type capped struct {
	mu    sync.Mutex
	max   int64
	buf   []byte
	total int64
	lang  words.Lang // the language of its notes (cut, no output)
}

func (c *capped) Write(p []byte) (int, error) {
	n := len(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(n)
	if room := c.max - int64(len(c.buf)); room > 0 {
		if int64(len(p)) > room {
			p = p[:room]
		}
		c.buf = append(c.buf, p...)
	}
	return n, nil
}

// text is the kept output, valid UTF-8, with a note when it was cut.
func (c *capped) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.buf
	cut := c.total > int64(len(b))
	if cut {
		// Do not end in the middle of a rune.
		n := len(b)
		for k := 1; k <= utf8.UTFMax && k <= n; k++ {
			if utf8.RuneStart(b[n-k]) {
				if !utf8.FullRune(b[n-k:]) {
					n -= k
				}
				break
			}
		}
		b = b[:n]
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if cut {
		s += "\n" + words.Text(c.lang, words.ShellCut, c.max, c.total)
	}
	if s == "" {
		return words.Text(c.lang, words.ShellNoOutput)
	}
	return s
}

// quoteArgv quotes each element for display (see quote) and joins them.
func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = quote(a)
	}
	return strings.Join(q, " ")
}

// quote renders s the way a POSIX shell would need it: as it is when it is
// made of safe characters only, in single quotes otherwise, and in $'...'
// with escapes when it holds control or invisible characters or invalid
// UTF-8 (so a value cannot fake extra lines or reorder text in a preview).
func quote(s string) string {
	if s == "" {
		return "''"
	}
	safe, printable := true, utf8.ValidString(s)
	for _, r := range s {
		if !(r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			strings.ContainsRune("_@%+=:,./-", r))) {
			safe = false
		}
		if r != ' ' && !unicode.IsGraphic(r) || unicode.Is(unicode.Bidi_Control, r) {
			printable = false
		}
	}
	switch {
	case safe:
		return s
	case printable:
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\' || r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r != ' ' && !unicode.IsGraphic(r) || unicode.Is(unicode.Bidi_Control, r):
			switch {
			case r < 0x80:
				fmt.Fprintf(&b, `\x%02x`, r)
			case r > 0xffff:
				fmt.Fprintf(&b, `\U%08x`, r)
			default:
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
		i += size
	}
	b.WriteString("'")
	return b.String()
}
