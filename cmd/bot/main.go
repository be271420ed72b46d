package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"

	"github.com/go-sql-driver/mysql"

	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/cmd/bot/internal/config"
)

// version is set at build time: go build -ldflags "-X main.version=v1.2.3".
// Empty: the module version from the build info, or "dev".
var version string

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl+C ends the process at once
	}()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Version returns the version of this build.
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

const usage = `usage: bot [COMMAND] [FLAGS]

Commands:
  serve           run the server (the default): web chat, HTTP API, /healthz, /readyz, /metrics
  chat            chat with the agent in this terminal (approvals are y/N prompts)
  check           validate the config: list every problem (exit 1), or print the
                  effective config with secrets shown as <secret> (exit 0);
                  -probe also starts each MCP server once and lists its tools
                  with the risk the policy gives them (exit 1 if one fails)
  doctor          probe the configured parts (Redis and its persistence, the model
                  endpoint with a tool, Feishu/DingTalk credentials): one line per
                  part, OK, WARN, FAIL with its fix, or SKIP; exit 1 on a FAIL
                  (-timeout per probe, default 5s)
  audit verify    check the hash chains of the audit trail (file, and Redis stream)
  audit tail      print the newest audit records and follow new ones
  bench           measure approval round trips on two instances sharing one store
                  (-mode engine|agent|resume|mcp, -redis URL, -n, -c, -pending); prints JSON
  mcp             an MCP server on stdin/stdout forwarding to a running hitlbot's /mcp
                  (-url, default http://127.0.0.1:8080/mcp; -token-env, default
                  AGENT_TOKEN): for agents that only spawn commands
  version         print the version

Flags of serve, chat, check, doctor and audit:
  -config PATH    the YAML file (default ./config.yaml when it exists, else the
                  embedded defaults); HITLBOT_* environment variables override it
  -listen ADDR    the HTTP address, overriding server.listen (e.g. 127.0.0.1:8080)
  -data DIR       the data directory (demo database, audit file), overriding server.data_dir

Run "bot COMMAND -h" for the flags of one command.
`

// run is the whole program behind main: it returns the exit status. ctx
// ends on SIGINT or SIGTERM.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return cmdServe(ctx, args, stdout, stderr)
	case "chat":
		return cmdChat(ctx, args, stdin, stdout, stderr)
	case "check":
		return cmdCheck(args, stdout, stderr)
	case "doctor":
		return cmdDoctor(ctx, args, stdout, stderr)
	case "audit":
		return cmdAudit(ctx, args, stdout, stderr)
	case "bench":
		return cmdBench(ctx, args, stdout, stderr)
	case "mcp":
		return cmdMCP(ctx, args, stdin, stdout, stderr)
	case "version":
		fmt.Fprintf(stdout, "hitlbot %s\n", Version())
		return 0
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "bot: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
}

// commonFlags are the flags every command that reads the config takes.
type commonFlags struct {
	config, listen, data string
}

func (c *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.config, "config", "", "the YAML config `file` (default ./config.yaml when it exists, else the embedded defaults)")
	fs.StringVar(&c.listen, "listen", "", "the HTTP `address`, overriding server.listen")
	fs.StringVar(&c.data, "data", "", "the data `directory`, overriding server.data_dir")
}

// options turns the flags into config load options.
func (c *commonFlags) options() config.Options {
	o := config.Options{File: c.config, Overrides: map[string]any{}}
	if c.listen != "" {
		o.Overrides["server.listen"] = c.listen
	}
	if c.data != "" {
		o.Overrides["server.data_dir"] = c.data
	}
	return o
}

// newFlags returns a flag set for cmd that writes its errors to stderr.
func newFlags(cmd string, stderr io.Writer) (*flag.FlagSet, *commonFlags) {
	fs := flag.NewFlagSet("bot "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &commonFlags{}
	c.register(fs)
	return fs, c
}

// parse parses args; it returns the exit status to end with, or -1 to go on.
func parse(fs *flag.FlagSet, args []string) int {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected arguments %q\n", fs.Name(), fs.Args())
		return 2
	}
	return -1
}

// loadConfig loads and validates; on problems it lists every one of them
// on stderr and returns nil.
func loadConfig(opts config.Options, stderr io.Writer) *config.Config {
	cfg, ps := config.Check(opts)
	if len(ps) > 0 {
		printProblems(stderr, opts, cfg, ps)
		return nil
	}
	return cfg
}

func printProblems(w io.Writer, opts config.Options, cfg *config.Config, ps config.Problems) {
	src := opts.File
	if cfg != nil {
		src = cfg.File()
	}
	if src == "" {
		src = "the embedded defaults and the environment"
	}
	noun := "problems"
	if len(ps) == 1 {
		noun = "problem"
	}
	fmt.Fprintf(w, "config: %d %s (from %s):\n", len(ps), noun, src)
	for _, p := range ps {
		fmt.Fprintf(w, "  %s\n", p)
	}
}

// cmdCheck is `bot check`.
func cmdCheck(args []string, stdout, stderr io.Writer) int {
	fs, c := newFlags("check", stderr)
	probe := fs.Bool("probe", false, "also start each MCP server (tools.mcp.servers) once and list its tools with the risk the policy gives them")
	if st := parse(fs, args); st >= 0 {
		return st
	}
	opts := c.options()
	cfg := loadConfig(opts, stderr)
	if cfg == nil {
		return 1
	}
	out, err := cfg.Dump()
	if err != nil {
		fmt.Fprintf(stderr, "bot check: %v\n", err)
		return 1
	}
	src := cfg.File()
	if src == "" {
		src = "no file; embedded defaults"
	}
	fmt.Fprintf(stdout, "# hitlbot effective config (%s, environment, flags); secrets are shown as %s\n", src, config.Redacted)
	stdout.Write(out)
	if *probe {
		if failed := probeMCP(context.Background(), cfg, stdout); failed > 0 {
			fmt.Fprintf(stderr, "bot check -probe: %d MCP server(s) could not be probed (see above)\n", failed)
			return 1
		}
	}
	return 0
}

// newLogger returns the process logger: JSON lines on w at level.
func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

// routeLibraryLogs makes log the destination of the libraries' own log
// lines, so that stderr holds JSON records only: go-redis's
// (redisstore.SetLogger), the standard log package's and slog.Default's
// (slog.SetDefault: coder/websocket, a library's fallback logger) and the
// MySQL driver's. Every command that runs the bot or opens Redis calls it
// at start-up. (The DingTalk and Feishu SDKs get theirs where their
// channels are built.)
func routeLibraryLogs(log *slog.Logger) {
	redisstore.SetLogger(log)
	slog.SetDefault(log)
	// mysql.SetLogger is not safe to call while the driver runs: once,
	// with a logger that finds slog.Default when it prints.
	mysqlOnce.Do(func() { _ = mysql.SetLogger(mysqlLog{}) })
}

var mysqlOnce sync.Once

// mysqlLog is the MySQL driver's logger: its lines (a broken connection)
// as Warn records of slog.Default.
type mysqlLog struct{}

func (mysqlLog) Print(v ...any) {
	slog.Default().Warn(strings.TrimSpace(fmt.Sprint(v...)), "component", "mysql")
}
