package mcptool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func baseTool() *mcp.Tool {
	return &mcp.Tool{
		Name:        "write_file",
		Title:       "Write",
		Description: "writes a file",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}},
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolp(false)},
	}
}

// definitionCases change one thing of the definition each (changed) or
// something outside it (not changed).
var definitionCases = []struct {
	name    string
	server  string
	edit    func(*mcp.Tool)
	changed bool
}{
	{"same", "fs", func(*mcp.Tool) {}, false},
	{"schema key order", "fs", func(m *mcp.Tool) {
		m.InputSchema = json.RawMessage(`{"properties":{"path":{"type":"string"}},"type":"object"}`)
	}, false},
	{"output schema", "fs", func(m *mcp.Tool) { m.OutputSchema = map[string]any{"type": "object"} }, false},
	{"server", "fs2", func(*mcp.Tool) {}, true},
	{"name", "fs", func(m *mcp.Tool) { m.Name = "write_file2" }, true},
	{"description", "fs", func(m *mcp.Tool) { m.Description += "!" }, true},
	{"title", "fs", func(m *mcp.Tool) { m.Title = "W" }, true},
	{"schema", "fs", func(m *mcp.Tool) {
		m.InputSchema = map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "integer"}}}
	}, true},
	{"annotation", "fs", func(m *mcp.Tool) { m.Annotations.DestructiveHint = boolp(true) }, true},
	{"annotations gone", "fs", func(m *mcp.Tool) { m.Annotations = nil }, true},
}

func TestDefinitionChangesIffTheDefinitionChanges(t *testing.T) {
	base, err := definition("fs", baseTool())
	if err != nil {
		t.Fatal(err)
	}
	if len(base) != 64 {
		t.Fatalf("definition %q is not a hex sha256", base)
	}
	for _, tt := range definitionCases {
		t.Run(tt.name, func(t *testing.T) {
			m := baseTool()
			tt.edit(m)
			got, err := definition(tt.server, m)
			if err != nil {
				t.Fatal(err)
			}
			if (got != base) != tt.changed {
				t.Errorf("changed = %v, want %v", got != base, tt.changed)
			}
		})
	}
}

var nameCases = []struct {
	server, tool string
	filter       ToolFilter
	skipped      string // substring; "" offered
}{
	{"fs", "read_file", ToolFilter{}, ""},
	{"fs", "read-file", ToolFilter{}, ""},
	{"fs", "read.file", ToolFilter{}, "is not 1 to 64"},
	{"fs", "读", ToolFilter{}, "is not 1 to 64"},
	{"fs", strings.Repeat("a", 60), ToolFilter{}, ""}, // fs__ + 60 = 64: the longest
	{"fs", strings.Repeat("a", 61), ToolFilter{}, "is not 1 to 64"},
	{"fs", "write_file", ToolFilter{Deny: []string{"write_*"}}, "left out by tools.allow/deny"},
}

func TestNewToolNames(t *testing.T) {
	for _, tt := range nameCases {
		s := newServer(ServerConfig{Name: tt.server, Command: "x", Tools: tt.filter}, Options{}.withDefaults(), nil, nil)
		mt := baseTool()
		mt.Name = tt.tool
		tl, skipped := newTool(s, mt)
		want := tt.skipped
		switch {
		case want == "" && skipped != "":
			t.Errorf("%s: skipped (%s), want offered", tt.tool, skipped)
		case want == "" && tl.Name() != tt.server+"__"+tt.tool:
			t.Errorf("%s: name %q", tt.tool, tl.Name())
		case want != "" && !strings.Contains(skipped, want):
			t.Errorf("%s: skipped %q, want %q", tt.tool, skipped, want)
		}
	}
}

func TestSchemaConversion(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   any
		ok   bool
		typ  string
	}{
		{"missing", nil, true, "object"},
		{"empty", map[string]any{}, true, "object"},
		{"object", map[string]any{"type": "object", "required": []any{"a"}}, true, "object"},
		{"unresolvable ref", map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"$ref": "#/$defs/nope"}}}, false, ""},
		{"not a schema", map[string]any{"type": 7}, false, ""},
	} {
		s, err := toSchema(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("%s: err %v, want ok=%v", tt.name, err, tt.ok)
			continue
		}
		if tt.ok && s.Type != tt.typ {
			t.Errorf("%s: type %q", tt.name, s.Type)
		}
	}
}

func TestDescription(t *testing.T) {
	if d := describe(baseTool()); d != "Write: writes a file" {
		t.Errorf("got %q", d)
	}
	long := strings.Repeat("é", maxDescription)
	d := describe(&mcp.Tool{Description: long})
	if len(d) > maxDescription+len(" …") || !strings.HasSuffix(d, " …") || !json.Valid([]byte(`"`+d+`"`)) {
		t.Errorf("long description cut wrongly: %d bytes", len(d))
	}
}

var resultCases = []struct {
	name string
	res  *mcp.CallToolResult
	want string
}{
	{"text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}}, "a\nb"},
	{"structured only", &mcp.CallToolResult{StructuredContent: map[string]any{"rows": 7}}, `{"rows":7}`},
	{"structured same as text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{ "rows": 7 }`}}, StructuredContent: map[string]any{"rows": 7}}, `{ "rows": 7 }`},
	{"structured adds", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}, StructuredContent: map[string]any{"rows": 7}}, "done\n{\"rows\":7}"},
	{"image", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: make([]byte, 1234), MIMEType: "image/png"}}}, "[image image/png, 1234 bytes]"},
	{"audio", &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: make([]byte, 5)}}}, "[audio unknown type, 5 bytes]"},
	{"link", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{URI: "file:///a", MIMEType: "text/plain"}}}, "[resource file:///a text/plain, size unknown]"},
	{"embedded", &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b", Blob: make([]byte, 9), MIMEType: "application/pdf"}}}}, "[resource file:///b application/pdf, 9 bytes]"},
}

func TestResultText(t *testing.T) {
	for _, tt := range resultCases {
		if got := resultText(tt.res); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
	big := resultText(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("界", maxResult)}}})
	if len(big) > maxResult+100 || !strings.Contains(big, "[result cut at 65536 bytes]") || !json.Valid([]byte(`"`+big[:len(big)-40]+`"`)) {
		t.Errorf("big result not cut cleanly: %d bytes", len(big))
	}
}

func TestPreview(t *testing.T) {
	s := newServer(ServerConfig{Name: "fs", Command: "x"}, Options{}.withDefaults(), nil, nil)
	tl, skipped := newTool(s, baseTool())
	if skipped != "" {
		t.Fatal(skipped)
	}
	p, err := tl.Preview(context.Background(), json.RawMessage(`{"path":"/srv/a.txt"}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "fs · write_file\n{\n  \"path\": \"/srv/a.txt\"\n}"; p != want {
		t.Errorf("preview %q, want %q", p, want)
	}
	p, _ = tl.Preview(context.Background(), json.RawMessage(`{"path":"`+strings.Repeat("ü", 3000)+`"}`))
	if len(p) > maxPreviewArgs+100 || !strings.HasSuffix(p, " …") || !json.Valid([]byte(`"`+strings.ReplaceAll(strings.ReplaceAll(p, "\n", ""), `"`, "")+`"`)) {
		t.Errorf("long preview not cut cleanly (%d bytes)", len(p))
	}
}
