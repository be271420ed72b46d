package shell

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/tools/internal/argtmpl"
)

// Defaults.
const (
	// DefaultTimeout bounds one run when CommandConfig.Timeout is zero.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxOutputBytes is how much output is kept when
	// CommandConfig.MaxOutputBytes is zero.
	DefaultMaxOutputBytes = 16 << 10
	// waitDelay is how long Wait waits for the output pipes once the
	// command has exited or been killed (a background child may hold them).
	waitDelay = 2 * time.Second
)

// Config is the YAML section tools.shell.
type Config struct {
	// Enabled turns the shell tools on. Default false: New builds nothing,
	// whatever Commands says.
	Enabled bool `yaml:"enabled" mapstructure:"enabled"`
	// Commands are the allow-listed command templates, one tool each.
	Commands []CommandConfig `yaml:"commands" mapstructure:"commands"`
}

// CommandConfig is one allow-listed command (YAML: tools.shell.commands[]).
// It runs without a shell, always as a destructive (HIGH risk) call.
type CommandConfig struct {
	// Name is the tool's name as the model sees it: lower_snake_case, unique.
	Name string `yaml:"name" mapstructure:"name"`
	// Description tells the model what the command does and when to use it.
	// Empty: the argv template.
	Description string `yaml:"description" mapstructure:"description"`
	// Argv is the command line, one element per argument, e.g.
	// ["systemctl", "restart", "{{.service}}"]. A {{.param}} placeholder
	// fills a whole element or part of one ("--unit={{.service}}"); a value
	// is never split, so it always stays inside its element. Argv[0] is
	// fixed (no placeholder): an absolute path, or a name looked up in PATH
	// when the tool is built (missing: a config error).
	Argv []string `yaml:"argv" mapstructure:"argv"`
	// Parameters is the JSON schema of the arguments object. Every
	// placeholder must name one of its properties, and is made required.
	// Constrain them tightly: enum for a fixed set, pattern otherwise.
	Parameters map[string]any `yaml:"parameters" mapstructure:"parameters"`
	// AllowLeadingDash names parameters whose values may start with "-". By
	// default such a value is refused (option injection: "--help",
	// "-rf", "--output=/etc/passwd"), unless the parameter's schema lists
	// that exact value in enum or const. Pair an entry here with a tight
	// pattern (e.g. "^-?[0-9]+$" for a negative number).
	AllowLeadingDash []string `yaml:"allow_leading_dash" mapstructure:"allow_leading_dash"`
	// Timeout bounds one run; then the whole process group is killed and
	// the call is reported with unknown effect. Zero: DefaultTimeout (30s).
	Timeout time.Duration `yaml:"timeout" mapstructure:"timeout"`
	// MaxOutputBytes is how much of stdout and stderr (interleaved, as
	// written) is kept; the output says when it was cut. Zero:
	// DefaultMaxOutputBytes (16 KiB).
	MaxOutputBytes int64 `yaml:"max_output_bytes" mapstructure:"max_output_bytes"`
	// Dir is the working directory: an absolute path to an existing
	// directory. Empty: the bot's own.
	Dir string `yaml:"dir" mapstructure:"dir"`
	// Env names the environment variables passed through from the bot's
	// environment (read at each run). Nothing else is inherited, not even
	// PATH or HOME: list what the command needs.
	Env []string `yaml:"env" mapstructure:"env"`
}

var (
	toolName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	envName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// New builds one tool per command. A disabled config returns nil, nil.
// Every problem is reported, each naming the tool and the field.
func New(cfg Config) ([]agent.Tool, error) {
	if !cfg.Enabled {
		return nil, nil
	}
	var (
		tools []agent.Tool
		errs  []error
		seen  = map[string]bool{}
	)
	for i, cc := range cfg.Commands {
		label := fmt.Sprintf("tools.shell.commands[%d]", i)
		if cc.Name != "" {
			label = fmt.Sprintf("tool %q", cc.Name)
		}
		if seen[cc.Name] && cc.Name != "" {
			errs = append(errs, fmt.Errorf("shell: %s: name: defined twice", label))
			continue
		}
		seen[cc.Name] = true
		t, err := build(cc)
		if err != nil {
			errs = append(errs, fmt.Errorf("shell: %s: %w", label, err))
			continue
		}
		tools = append(tools, t)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return tools, nil
}

func build(cc CommandConfig) (*tool, error) {
	if !toolName.MatchString(cc.Name) {
		return nil, errors.New("name: must be lower_snake_case (a-z, 0-9, _), starting with a letter, at most 64 characters")
	}
	if len(cc.Argv) == 0 {
		return nil, errors.New("argv: empty")
	}
	t := &tool{name: cc.Name}
	var err error
	if t.path, err = resolveProgram(cc.Argv[0]); err != nil {
		return nil, fmt.Errorf("argv[0]: %w", err)
	}
	if t.schema, err = parseSchema(cc.Parameters); err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	t.args = make([]template, len(cc.Argv)-1)
	for i, a := range cc.Argv[1:] {
		if t.args[i], err = parseTemplate(a); err != nil {
			return nil, fmt.Errorf("argv[%d]: %w", i+1, err)
		}
		if strings.ContainsRune(a, 0) {
			return nil, fmt.Errorf("argv[%d]: has a NUL byte", i+1)
		}
		for _, n := range t.args[i].Params() {
			if _, ok := t.schema.Properties[n]; !ok {
				return nil, fmt.Errorf("argv[%d]: placeholder {{.%s}} is not a property in parameters", i+1, n)
			}
			if !slices.Contains(t.schema.Required, n) {
				t.schema.Required = append(t.schema.Required, n)
			}
		}
	}
	for _, n := range cc.AllowLeadingDash {
		if _, ok := t.schema.Properties[n]; !ok {
			return nil, fmt.Errorf("allow_leading_dash: %q is not a property in parameters", n)
		}
	}
	t.allowDash = slices.Clone(cc.AllowLeadingDash)
	if _, err := t.schema.Resolve(nil); err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}

	switch {
	case cc.Timeout < 0:
		return nil, errors.New("timeout: must not be negative")
	case cc.Timeout == 0:
		t.timeout = DefaultTimeout
	default:
		t.timeout = cc.Timeout
	}
	switch {
	case cc.MaxOutputBytes < 0:
		return nil, errors.New("max_output_bytes: must not be negative")
	case cc.MaxOutputBytes == 0:
		t.maxBytes = DefaultMaxOutputBytes
	default:
		t.maxBytes = cc.MaxOutputBytes
	}
	if cc.Dir != "" {
		if !filepath.IsAbs(cc.Dir) {
			return nil, fmt.Errorf("dir: %q is not an absolute path", cc.Dir)
		}
		fi, err := os.Stat(cc.Dir)
		if err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("dir: %q is not an existing directory", cc.Dir)
		}
		t.dir = cc.Dir
	}
	for _, n := range cc.Env {
		if !envName.MatchString(n) {
			return nil, fmt.Errorf("env: %q is not an environment variable name (list names only, no values)", n)
		}
	}
	t.env = slices.Clone(cc.Env)
	t.desc = strings.TrimSpace(cc.Description)
	if t.desc == "" {
		t.desc = "Run " + strings.Join(cc.Argv, " ")
	}
	return t, nil
}

// resolveProgram returns the absolute path of an executable: an absolute
// path as it is, a bare name looked up in PATH now. A relative path with a
// slash is refused: it would depend on the working directory.
func resolveProgram(p string) (string, error) {
	switch {
	case p == "":
		return "", errors.New("empty")
	case strings.Contains(p, "{{"):
		return "", errors.New("the program is fixed: no placeholder")
	case filepath.IsAbs(p):
	case strings.ContainsRune(p, filepath.Separator):
		return "", fmt.Errorf("%q: use an absolute path or a bare name found in PATH", p)
	default:
		lp, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("%q not found in PATH", p)
		}
		if lp, err = filepath.Abs(lp); err != nil {
			return "", fmt.Errorf("%q: %v", p, err)
		}
		p = lp
	}
	fi, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("%q does not exist", p)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%q is not an executable file", p)
	}
	return p, nil
}

// parseSchema turns the YAML parameters map into a JSON schema of an object.
func parseSchema(params map[string]any) (*jsonschema.Schema, error) { return argtmpl.Schema(params) }
