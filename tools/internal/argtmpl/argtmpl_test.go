package argtmpl

import (
	"strings"
	"testing"
)

var parseTests = []struct {
	in     string
	params string // the placeholders, comma-joined; "!" means an error
	out    string // rendered with value(name) = "<name>"
}{
	{"", "", ""},
	{"plain", "", "plain"},
	{"/orders/{{.id}}/refund", "id", "/orders/<id>/refund"},
	{"{{ .a }}{{.b}}-{{.a}}", "a,b,a", "<a><b>-<a>"},
	{"{{.a", "!", ""},
	{"{{a}}", "!", ""},
	{`{{printf "%s" .id}}`, "!", ""},
	{"{{.1x}}", "!", ""},
	{"}} {{.x}}", "x", "}} <x>"},
}

func TestParseRender(t *testing.T) {
	for _, tt := range parseTests {
		tm, err := Parse(tt.in)
		if tt.params == "!" {
			if err == nil {
				t.Errorf("%q: parsed, want an error", tt.in)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tt.in, err)
		}
		if got := strings.Join(tm.Params(), ","); got != tt.params {
			t.Errorf("%q: params %q, want %q", tt.in, got, tt.params)
		}
		out, _ := tm.Render(func(n string) (string, error) { return "<" + n + ">", nil })
		if out != tt.out {
			t.Errorf("%q: rendered %q, want %q", tt.in, out, tt.out)
		}
	}
	if n, ok := mustParse(t, "{{.id}}").Single(); !ok || n != "id" {
		t.Error("Single of one placeholder")
	}
	if _, ok := mustParse(t, "x{{.id}}").Single(); ok {
		t.Error("Single of text and a placeholder")
	}
}

func mustParse(t *testing.T, s string) Template {
	t.Helper()
	tm, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func TestSchemaAndArgs(t *testing.T) {
	if _, err := Schema(map[string]any{"type": "array"}); err == nil {
		t.Error("a non-object schema was accepted")
	}
	s, err := Schema(nil)
	if err != nil || s.Type != "object" || s.Properties == nil {
		t.Errorf("Schema(nil) = %+v, %v", s, err)
	}
	m, err := DecodeArgs([]byte(`{"n": 1.50}`))
	if err != nil || m["n"].(interface{ String() string }).String() != "1.50" {
		t.Errorf("DecodeArgs kept %v, %v", m, err)
	}
	if _, err := DecodeArgs([]byte(`[1]`)); err == nil {
		t.Error("an array was accepted as arguments")
	}
	if m, _ := DecodeArgs(nil); len(m) != 0 {
		t.Error("empty arguments")
	}
}
