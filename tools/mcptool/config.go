package mcptool

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"
)

// Defaults.
const (
	// DefaultCallTimeout bounds one tool call when ServerConfig.CallTimeout is zero.
	DefaultCallTimeout = 60 * time.Second
	// DefaultStartTimeout bounds connecting, the handshake and the first
	// tools/list when ServerConfig.StartTimeout is zero.
	DefaultStartTimeout = 30 * time.Second
)

// ServerConfig is one MCP server (YAML: tools.mcp.servers[]).
type ServerConfig struct {
	// Name is the server's name, [a-z0-9_]{1,20}, unique; its tools are
	// offered to the model as <name>__<tool> (fs__read_file).
	Name string `mapstructure:"name"`
	// Command starts the server as a child process speaking MCP over
	// stdin/stdout (the stdio transport). Exactly one of Command and URL.
	Command string `mapstructure:"command"`
	// Args are the command's arguments.
	Args []string `mapstructure:"args"`
	// Env names the environment variables the child process may see, with
	// the bot's values. It sees nothing else but PATH and HOME.
	Env []string `mapstructure:"env"`
	// Dir is the child's working directory; empty: the bot's.
	Dir string `mapstructure:"dir"`
	// URL is the endpoint of a server speaking streamable HTTP
	// (https://mcp.example.com/mcp). Exactly one of Command and URL.
	URL string `mapstructure:"url"`
	// Headers are sent with every HTTP request: header name -> NAME of the
	// environment variable holding its value (Authorization:
	// MCP_GITHUB_AUTH, whose value is "Bearer ghp_…"). The values never
	// appear in logs, errors or anything the model sees.
	Headers map[string]string `mapstructure:"headers"`
	// Trusted lets the server's tool annotations lower a tool's risk
	// (readOnlyHint → LOW, destructiveHint: false → MEDIUM). An untrusted
	// server's tools are HIGH whatever they claim.
	Trusted bool `mapstructure:"trusted"`
	// Tools chooses which of the server's tools are offered.
	Tools ToolFilter `mapstructure:"tools"`
	// CallTimeout bounds one tool call; when it passes the call is
	// cancelled (the server is told) and its effect is unknown. Zero:
	// DefaultCallTimeout (60s).
	CallTimeout time.Duration `mapstructure:"call_timeout"`
	// StartTimeout bounds connecting, the handshake and the first tool
	// list. Zero: DefaultStartTimeout (30s).
	StartTimeout time.Duration `mapstructure:"start_timeout"`
	// Required makes the bot unready (/readyz fails) while the server is down.
	Required bool `mapstructure:"required"`
}

// ToolFilter chooses tools by the server's names for them, with path.Match
// globs ("read_*"). Deny wins over Allow; an empty Allow allows all.
type ToolFilter struct {
	// Allow lists the patterns of the tools offered; empty: all.
	Allow []string `mapstructure:"allow"`
	// Deny lists the patterns of the tools never offered.
	Deny []string `mapstructure:"deny"`
}

// Offers reports whether the server's tool name passes the filter.
func (f ToolFilter) Offers(name string) bool {
	for _, p := range f.Deny {
		if ok, _ := path.Match(p, name); ok {
			return false
		}
	}
	if len(f.Allow) == 0 {
		return true
	}
	for _, p := range f.Allow {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

var (
	serverNameRE = regexp.MustCompile(`^[a-z0-9_]{1,20}$`)
	envNameRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Transport is "stdio" or "http".
func (c ServerConfig) Transport() string {
	if c.URL != "" {
		return "http"
	}
	return "stdio"
}

func (c ServerConfig) callTimeout() time.Duration {
	if c.CallTimeout > 0 {
		return c.CallTimeout
	}
	return DefaultCallTimeout
}

func (c ServerConfig) startTimeout() time.Duration {
	if c.StartTimeout > 0 {
		return c.StartTimeout
	}
	return DefaultStartTimeout
}

// Validate reports every problem of c, each naming its key
// ("tools.mcp.servers[fs].url: ..."). getenv reads the environment
// variables the config names (nil: none is checked); a header whose
// variable is empty is a problem, and no value is ever said.
func (c ServerConfig) Validate(getenv func(string) string) error {
	id := c.Name
	if id == "" {
		id = "?"
	}
	key := func(k string) string { return fmt.Sprintf("tools.mcp.servers[%s].%s", id, k) }
	var errs []error
	add := func(k, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key(k), fmt.Sprintf(format, args...)))
	}
	if !serverNameRE.MatchString(c.Name) {
		add("name", "%q must be 1 to 20 of a-z, 0-9 and _ (it prefixes the tools' names: name__tool)", c.Name)
	}
	switch {
	case c.Command == "" && c.URL == "":
		add("command", "set command (a stdio server) or url (a streamable HTTP server)")
	case c.Command != "" && c.URL != "":
		add("url", "set either command or url, not both")
	}
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("url", "%q is not an http(s) URL with a host", c.URL)
		} else if u.User != nil {
			add("url", "must not hold user info; put credentials in headers (taken from environment variables)")
		}
		if len(c.Args) > 0 || len(c.Env) > 0 || c.Dir != "" {
			add("args", "args, env and dir are for a command (stdio); this server has a url")
		}
	}
	if c.Command != "" && len(c.Headers) > 0 {
		add("headers", "headers are for a url (HTTP); this server has a command")
	}
	for i, n := range c.Env {
		if !envNameRE.MatchString(n) {
			add(fmt.Sprintf("env[%d]", i), "%q is not an environment variable name (list names, not values)", n)
		}
	}
	for h, n := range c.Headers {
		switch {
		case h == "" || strings.ContainsAny(h, " :\r\n") || http.CanonicalHeaderKey(h) == "":
			add("headers", "%q is not a header name", h)
		case !envNameRE.MatchString(n):
			add("headers."+h, "%q is not an environment variable name: give the NAME of the variable that holds the value, never the value", n)
		case getenv != nil && getenv(n) == "":
			add("headers."+h, "environment variable %s is empty or not set", n)
		}
	}
	for _, p := range append(append([]string(nil), c.Tools.Allow...), c.Tools.Deny...) {
		if _, err := path.Match(p, ""); err != nil {
			add("tools", "%q is not a valid glob pattern", p)
		}
	}
	if c.CallTimeout < 0 {
		add("call_timeout", "%v is negative", c.CallTimeout)
	}
	if c.StartTimeout < 0 {
		add("start_timeout", "%v is negative", c.StartTimeout)
	}
	return errors.Join(errs...)
}

// ValidateServers validates every server and that their names are unique.
func ValidateServers(cs []ServerConfig, getenv func(string) string) error {
	var errs []error
	seen := map[string]bool{}
	for i, c := range cs {
		if err := c.Validate(getenv); err != nil {
			errs = append(errs, err)
		}
		if c.Name != "" && seen[c.Name] {
			errs = append(errs, fmt.Errorf("tools.mcp.servers[%d].name: %q is used by another server", i, c.Name))
		}
		seen[c.Name] = true
	}
	return errors.Join(errs...)
}

// secretsOf are the values of c's environment variables and headers.
func secretsOf(c ServerConfig, getenv func(string) string) []string {
	var out []string
	for _, n := range c.Env {
		out = append(out, getenv(n))
	}
	for _, n := range c.Headers {
		out = append(out, getenv(n))
	}
	return out
}
