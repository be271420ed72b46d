package httptool

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/redact"
	"github.com/hitlbot/hitlbot/tools/internal/argtmpl"
)

// Defaults.
const (
	// DefaultTimeout bounds one request when ToolConfig.Timeout is zero.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxResponseBytes is how much of a response body is kept when
	// ToolConfig.MaxResponseBytes is zero.
	DefaultMaxResponseBytes = 16 << 10
)

// ToolConfig defines one HTTP tool (YAML: tools.http[]).
//
// There is deliberately no allowed-hosts list: the scheme and host are the
// literal start of URL, checked at build time to hold no placeholder, so a
// tool can only ever call the host ops wrote down.
type ToolConfig struct {
	// Name is the tool's name as the model sees it: lower_snake_case, unique.
	Name string `yaml:"name" mapstructure:"name"`
	// Description tells the model what the tool does and when to use it.
	// Empty: "METHOD URL".
	Description string `yaml:"description" mapstructure:"description"`
	// Method is GET, HEAD, POST, PUT, PATCH or DELETE (any case). Empty: GET.
	Method string `yaml:"method" mapstructure:"method"`
	// URL is a template: "https://api.example.com/orders/{{.id}}/refund".
	// Placeholders {{.param}} may appear in the path and the query only,
	// never in the scheme or host. A value is path-escaped in the path ("/"
	// becomes %2F: it cannot add a segment; a segment may not become "." or
	// "..") and query-escaped in the query. Every parameter used in the path
	// is made required.
	URL string `yaml:"url" mapstructure:"url"`
	// Headers are fixed request headers. A value may contain "${ENV_NAME}",
	// read from the environment when the tool is built; a variable that is
	// missing or empty is a config error. Header values are never shown in
	// previews (names only), and the environment values are scrubbed from
	// every output and error. Placeholders are not supported here.
	Headers map[string]string `yaml:"headers" mapstructure:"headers"`
	// Query adds query parameters: name -> template. A value that is
	// exactly one placeholder is left out when its parameter is absent;
	// values are encoded by the client. Secret-looking names (token, key,
	// ...) have their values hidden in previews, but prefer headers for
	// secrets.
	Query map[string]string `yaml:"query" mapstructure:"query"`
	// Body is an optional JSON template, e.g. {"amount": {{.amount}}}. Each
	// value is JSON-encoded where its placeholder stands (so write {{.note}},
	// not "{{.note}}"); an absent parameter becomes null. Sent with
	// Content-Type: application/json unless Headers sets one. Not allowed
	// with GET or HEAD.
	Body string `yaml:"body" mapstructure:"body"`
	// Parameters is the JSON schema of the arguments object, e.g.
	// {type: object, properties: {id: {type: integer}}, required: [id]}.
	// Every placeholder must name one of its properties. Prefer tight
	// schemas (enum, pattern, minimum) for what reaches the URL.
	Parameters map[string]any `yaml:"parameters" mapstructure:"parameters"`
	// Kind is read, write or destructive; it sets the default risk (LOW,
	// MEDIUM, HIGH). Empty: GET and HEAD are read, DELETE destructive,
	// anything else write.
	Kind string `yaml:"kind" mapstructure:"kind"`
	// Timeout bounds the whole request, reading the response included.
	// Zero: DefaultTimeout (10s).
	Timeout time.Duration `yaml:"timeout" mapstructure:"timeout"`
	// MaxResponseBytes is how much of the response body is kept; the rest is
	// cut and the output says so. Zero: DefaultMaxResponseBytes (16 KiB).
	MaxResponseBytes int64 `yaml:"max_response_bytes" mapstructure:"max_response_bytes"`
}

var (
	toolName   = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	headerName = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
	envRef     = regexp.MustCompile(`\$\{([^}]*)\}`)
	envName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	methods    = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
)

// New builds one tool per config. client makes the requests (nil: a new
// http.Client); the tools use a copy of it that never follows redirects, so
// a server cannot bounce a request, and its headers, to another host.
// getenv reads header secrets (nil: os.Getenv). Every problem is reported,
// each naming the tool and the field.
func New(cfgs []ToolConfig, client *http.Client, getenv func(string) string) ([]agent.Tool, error) {
	if client == nil {
		client = &http.Client{}
	}
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if getenv == nil {
		getenv = os.Getenv
	}
	var (
		tools []agent.Tool
		errs  []error
		seen  = map[string]bool{}
	)
	for i, cfg := range cfgs {
		label := fmt.Sprintf("tools.http[%d]", i)
		if cfg.Name != "" {
			label = fmt.Sprintf("tool %q", cfg.Name)
		}
		if seen[cfg.Name] && cfg.Name != "" {
			errs = append(errs, fmt.Errorf("httptool: %s: name: defined twice", label))
			continue
		}
		seen[cfg.Name] = true
		t, err := build(cfg, &c, getenv)
		if err != nil {
			errs = append(errs, fmt.Errorf("httptool: %s: %w", label, err))
			continue
		}
		tools = append(tools, t)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return tools, nil
}

func build(cfg ToolConfig, client *http.Client, getenv func(string) string) (*tool, error) {
	t := &tool{name: cfg.Name, client: client}
	if !toolName.MatchString(cfg.Name) {
		return nil, errors.New("name: must be lower_snake_case (a-z, 0-9, _), starting with a letter, at most 64 characters")
	}
	t.method = strings.ToUpper(strings.TrimSpace(cfg.Method))
	if t.method == "" {
		t.method = http.MethodGet
	}
	if !slices.Contains(methods, t.method) {
		return nil, fmt.Errorf("method: %q is not one of %s", cfg.Method, strings.Join(methods, ", "))
	}

	var err error
	if t.url, err = parseURLTemplate(cfg.URL); err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}

	if t.schema, err = parseSchema(cfg.Parameters); err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	declared := func(field string, names []string) error {
		for _, n := range names {
			if _, ok := t.schema.Properties[n]; !ok {
				return fmt.Errorf("%s: placeholder {{.%s}} is not a property in parameters", field, n)
			}
		}
		return nil
	}
	if err := declared("url", append(t.url.pathParams(), t.url.query.Params()...)); err != nil {
		return nil, err
	}
	for _, n := range t.url.pathParams() {
		if !slices.Contains(t.schema.Required, n) {
			t.schema.Required = append(t.schema.Required, n)
		}
	}

	keys := make([]string, 0, len(cfg.Query))
	for k := range cfg.Query {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "" {
			return nil, errors.New("query: a parameter has an empty name")
		}
		qt, err := parseTemplate(cfg.Query[k])
		if err != nil {
			return nil, fmt.Errorf("query.%s: %w", k, err)
		}
		if err := declared("query."+k, qt.Params()); err != nil {
			return nil, err
		}
		t.query = append(t.query, queryParam{key: k, tmpl: qt})
	}

	if strings.TrimSpace(cfg.Body) != "" {
		if t.method == http.MethodGet || t.method == http.MethodHead {
			return nil, fmt.Errorf("body: not allowed with %s", t.method)
		}
		if t.body, err = parseTemplate(cfg.Body); err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
		if err := declared("body", t.body.Params()); err != nil {
			return nil, err
		}
		// Fill every placeholder with a JSON string: a placeholder written
		// inside quotes ("{{.x}}") then gives ""x"" and is caught here.
		probe := map[string]any{}
		for _, n := range t.body.Params() {
			probe[n] = "x"
		}
		if _, err := renderBody(t.body, probe); err != nil {
			return nil, errors.New(`body: not valid JSON once placeholders are filled (values are JSON-encoded: write {{.x}}, not "{{.x}}")`)
		}
	}

	t.headers = http.Header{}
	var secrets []string
	hnames := make([]string, 0, len(cfg.Headers))
	for name := range cfg.Headers {
		hnames = append(hnames, name)
	}
	sort.Strings(hnames)
	for _, name := range hnames {
		raw := cfg.Headers[name]
		if !headerName.MatchString(name) {
			return nil, fmt.Errorf("headers: %q is not a valid header name", name)
		}
		if strings.Contains(raw, "{{") {
			return nil, fmt.Errorf("headers.%s: placeholders are not supported in headers", name)
		}
		val, used, err := expandEnv(raw, getenv)
		if err != nil {
			return nil, fmt.Errorf("headers.%s: %w", name, err)
		}
		if strings.ContainsAny(val, "\r\n\x00") {
			// Never print val: it may hold a secret.
			return nil, fmt.Errorf("headers.%s: the value has a line break or NUL", name)
		}
		secrets = append(secrets, used...)
		t.headers.Set(name, val)
	}
	if t.body != nil && t.headers.Get("Content-Type") == "" {
		t.headers.Set("Content-Type", "application/json")
	}
	for name := range t.headers {
		t.headerNames = append(t.headerNames, name)
	}
	sort.Strings(t.headerNames)
	t.scrub = redact.NewValues(secrets...)

	if t.effect, err = parseKind(cfg.Kind, t.method); err != nil {
		return nil, fmt.Errorf("kind: %w", err)
	}
	switch {
	case cfg.Timeout < 0:
		return nil, errors.New("timeout: must not be negative")
	case cfg.Timeout == 0:
		t.timeout = DefaultTimeout
	default:
		t.timeout = cfg.Timeout
	}
	switch {
	case cfg.MaxResponseBytes < 0:
		return nil, errors.New("max_response_bytes: must not be negative")
	case cfg.MaxResponseBytes == 0:
		t.maxBytes = DefaultMaxResponseBytes
	default:
		t.maxBytes = cfg.MaxResponseBytes
	}
	t.desc = strings.TrimSpace(cfg.Description)
	if t.desc == "" {
		t.desc = t.method + " " + cfg.URL
	}

	// The registry resolves the schema again; resolving here turns a bad
	// schema into a config error that names the tool.
	if _, err := t.schema.Resolve(nil); err != nil {
		return nil, fmt.Errorf("parameters: %w", err)
	}
	return t, nil
}

// parseSchema turns the YAML parameters map into a JSON schema of an object.
func parseSchema(params map[string]any) (*jsonschema.Schema, error) { return argtmpl.Schema(params) }

// expandEnv replaces every ${NAME} in v with the environment value. It
// returns the values it used, so they can be scrubbed from outputs.
func expandEnv(v string, getenv func(string) string) (string, []string, error) {
	var used []string
	var firstErr error
	out := envRef.ReplaceAllStringFunc(v, func(m string) string {
		name := m[2 : len(m)-1]
		if !envName.MatchString(name) {
			if firstErr == nil {
				firstErr = fmt.Errorf("%q is not a valid environment variable name", name)
			}
			return ""
		}
		val := getenv(name)
		if val == "" && firstErr == nil {
			firstErr = fmt.Errorf("environment variable %s is not set", name)
		}
		used = append(used, val)
		return val
	})
	if firstErr != nil {
		return "", nil, firstErr
	}
	if strings.Contains(envRef.ReplaceAllString(v, ""), "${") {
		return "", nil, errors.New(`"${" without a closing "}"`)
	}
	return out, used, nil
}

func parseKind(s, method string) (approval.Effect, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "":
		switch method {
		case http.MethodGet, http.MethodHead:
			return approval.EffectRead, nil
		case http.MethodDelete:
			return approval.EffectDestructive, nil
		}
		return approval.EffectWrite, nil
	case string(approval.EffectRead):
		return approval.EffectRead, nil
	case string(approval.EffectWrite):
		return approval.EffectWrite, nil
	case string(approval.EffectDestructive):
		return approval.EffectDestructive, nil
	}
	return "", fmt.Errorf("%q is not read, write or destructive", s)
}
