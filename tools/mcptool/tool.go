package mcptool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/tracing"
)

// Limits of what the model and a person are shown.
const (
	// maxDescription is how much of a server's tool description is offered.
	maxDescription = 1024
	// maxPreviewArgs is how much of the arguments a preview shows.
	maxPreviewArgs = 2000
	// Sep joins a server's name and its tool's name: fs__read_file.
	Sep = "__"
)

// toolNameRE is what a model API takes as a tool name (OpenAI's limit).
var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// errTimeout is the cause of a call's own timeout.
var errTimeout = errors.New("call timed out")

// tool is one tool of one MCP server as it was listed. It never changes: a
// new listing makes new tool objects.
type tool struct {
	srv         *server
	name        string // full: fs__read_file
	remote      string // the server's: read_file
	desc        string
	schema      *jsonschema.Schema
	effect      approval.Effect
	source      approval.Words
	definition  string
	callTimeout time.Duration
}

var (
	_ agent.Tool    = (*tool)(nil)
	_ agent.Foreign = (*tool)(nil)
)

func (t *tool) Name() string                           { return t.name }
func (t *tool) Description() string                    { return t.desc }
func (t *tool) Schema() *jsonschema.Schema             { return t.schema }
func (t *tool) Effect(json.RawMessage) approval.Effect { return t.effect }
func (t *tool) Definition() string                     { return t.definition }
func (t *tool) EffectSource() approval.Words           { return t.source }

// Preview is what a person approves: the server and the tool, then the
// arguments, indented and cut at maxPreviewArgs:
//
//	fs · write_file
//	{
//	  "path": "/srv/share/a.txt",
//	  "content": "hi"
//	}
func (t *tool) Preview(_ context.Context, args json.RawMessage) (string, error) {
	var b bytes.Buffer
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	if err := json.Indent(&b, args, "", "  "); err != nil {
		return "", fmt.Errorf("%s: arguments are not valid JSON: %v", t.name, err)
	}
	shown := b.String()
	if len(shown) > maxPreviewArgs {
		shown = cutUTF8(shown, maxPreviewArgs) + " …"
	}
	return t.srv.scrub.Hide(t.srv.cfg.Name + " · " + t.remote + "\n" + shown), nil
}

// Run calls the tool on the server.
//
//   - The server is down (not connected when the call starts), or the SDK
//     refused to send because the connection was closing
//     (mcp.ErrConnectionClosed): nothing was sent; an error wrapping
//     approval.ErrNotRun.
//   - The server answered with isError: Output with IsError.
//   - The call timed out: the SDK tells the server (notifications/cancelled);
//     the effect is unknown, so a plain error (the approval freezes).
//   - Any other failure once the request was handed to the connection (the
//     process died, the HTTP stream broke): a plain error, never re-sent.
func (t *tool) Run(ctx context.Context, args json.RawMessage) (agent.Output, error) {
	cs := t.srv.session()
	if cs == nil {
		return agent.Output{}, fmt.Errorf("%w: MCP server %s is not connected (%s); nothing was sent", approval.ErrNotRun, t.srv.cfg.Name, t.srv.downReason())
	}
	var arguments map[string]any
	if len(bytes.TrimSpace(args)) > 0 {
		d := json.NewDecoder(bytes.NewReader(args))
		d.UseNumber()
		if err := d.Decode(&arguments); err != nil {
			return agent.Output{}, fmt.Errorf("%w: %s: arguments are not a JSON object: %v", approval.ErrNotRun, t.name, err)
		}
	}
	ctx, cancel := context.WithTimeoutCause(ctx, t.callTimeout, errTimeout)
	defer cancel()
	defer t.srv.begin(ctx)() // an elicitation while it runs asks for it (elicit.go)
	t.srv.calls.Add(1)
	params := &mcp.CallToolParams{Name: t.remote, Arguments: arguments}
	if tp := tracing.FromContext(ctx); tp != "" {
		// The span the call runs in (the approval's execute_tool), as
		// MCP carries W3C trace context: _meta.traceparent. The server's
		// spans of the call join the approval's trace.
		params.Meta = mcp.Meta{tracing.MetaKey: tp}
	}
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.srv.errors.Add(1)
		if errors.Is(err, mcp.ErrConnectionClosed) {
			// The SDK (v1.8.0, jsonrpc2) says this only of a call it
			// refused to write because the connection was already closing,
			// or that the peer refused because it was closing: never of a
			// call in flight, which fails with the read error instead.
			return agent.Output{}, fmt.Errorf("%w: MCP server %s: the connection was closed before the call was sent (%s)", approval.ErrNotRun, t.srv.cfg.Name, t.srv.scrub.Hide(err.Error()))
		}
		if context.Cause(ctx) == errTimeout {
			return agent.Output{}, fmt.Errorf("%s: timed out after %s; the server was told to cancel, but it may have acted: effect unknown", t.name, t.callTimeout)
		}
		return agent.Output{}, fmt.Errorf("%s: %s; the request may have reached the server: effect unknown", t.name, t.srv.scrub.Hide(err.Error()))
	}
	if res.IsError {
		t.srv.errors.Add(1)
	}
	return agent.Output{Content: t.srv.scrub.Hide(resultText(res)), IsError: res.IsError}, nil
}

// newTool makes the offered tool for one listed tool, or says why it is
// not offered.
func newTool(s *server, mt *mcp.Tool) (*tool, string) {
	full := s.cfg.Name + Sep + mt.Name
	if !toolNameRE.MatchString(full) {
		return nil, fmt.Sprintf("the name %q is not 1 to 64 of a-z, A-Z, 0-9, _ and - (what model APIs take)", full)
	}
	if !s.cfg.Tools.Offers(mt.Name) {
		return nil, "left out by tools.allow/deny"
	}
	schema, err := toSchema(mt.InputSchema)
	if err != nil {
		return nil, "its input schema: " + err.Error()
	}
	def, err := definition(s.cfg.Name, mt)
	if err != nil {
		return nil, "its definition cannot be hashed: " + err.Error()
	}
	effect, source := effectOf(s.cfg.Name, s.cfg.Trusted, mt.Annotations)
	return &tool{
		srv:         s,
		name:        full,
		remote:      mt.Name,
		desc:        describe(mt),
		schema:      schema,
		effect:      effect,
		source:      source,
		definition:  def,
		callTimeout: s.cfg.callTimeout(),
	}, ""
}

// describe is the server's description, led by its title when it gave
// one, cut at maxDescription.
func describe(mt *mcp.Tool) string {
	title := mt.Title
	if title == "" && mt.Annotations != nil {
		title = mt.Annotations.Title
	}
	d := strings.TrimSpace(mt.Description)
	switch {
	case title != "" && d != "":
		d = title + ": " + d
	case title != "":
		d = title
	}
	d = strings.ToValidUTF8(d, "\uFFFD")
	if len(d) > maxDescription {
		d = cutUTF8(d, maxDescription) + " …"
	}
	return d
}

// toSchema converts the server's input schema (a JSON value) into a
// schema the registry can resolve. Missing or empty: any object.
func toSchema(in any) (*jsonschema.Schema, error) {
	if in == nil {
		return &jsonschema.Schema{Type: "object"}, nil
	}
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	if t := string(bytes.TrimSpace(b)); t == "null" || t == "{}" {
		return &jsonschema.Schema{Type: "object"}, nil
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("not a JSON schema: %v", err)
	}
	if _, err := s.Resolve(nil); err != nil {
		return nil, fmt.Errorf("does not resolve: %v", err)
	}
	return &s, nil
}

// definition is the hex sha256 of the canonical JSON of the tool's
// definition as the server sent it.
func definition(server string, mt *mcp.Tool) (string, error) {
	doc := map[string]any{
		"server":      server,
		"name":        mt.Name,
		"description": mt.Description,
		"title":       mt.Title,
		"inputSchema": mt.InputSchema,
		"annotations": mt.Annotations,
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	canon, err := approval.Canonicalize(b)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

// cutUTF8 returns at most n bytes of s, not splitting a rune.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
