// Package argtmpl holds what the ops-defined tools (httptool, shell) share:
// the {{.name}} templates that put a parameter's value in its place, the
// JSON schema of a tool's parameters given in YAML, and the decoding of a
// call's arguments.
//
// A template is text with {{.name}} placeholders (spaces inside the braces
// are allowed: {{ .name }}). Nothing else of text/template is supported: no
// functions, no pipelines, no conditionals, so a template can do nothing
// but put a value, encoded by the caller for where it lands, in its place.
package argtmpl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Template is a parsed template.
type Template []Piece

// Piece is literal text or, when Param is set, a placeholder.
type Piece struct {
	Lit   string
	Param string
}

var paramName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Parse splits s into literal text and placeholders.
func Parse(s string) (Template, error) {
	var t Template
	for s != "" {
		i := strings.Index(s, "{{")
		if i < 0 {
			t = append(t, Piece{Lit: s})
			break
		}
		if i > 0 {
			t = append(t, Piece{Lit: s[:i]})
		}
		j := strings.Index(s[i:], "}}")
		if j < 0 {
			return nil, errors.New(`"{{" without a closing "}}"`)
		}
		inner := strings.TrimSpace(s[i+2 : i+j])
		name, ok := strings.CutPrefix(inner, ".")
		if !ok || !paramName.MatchString(name) {
			return nil, fmt.Errorf("placeholder %q: want {{.name}} (a parameter name; nothing else is supported)", s[i:i+j+2])
		}
		t = append(t, Piece{Param: name})
		s = s[i+j+2:]
	}
	return t, nil
}

// Params returns the names of the placeholders, in order, with repeats.
func (t Template) Params() []string {
	var out []string
	for _, p := range t {
		if p.Param != "" {
			out = append(out, p.Param)
		}
	}
	return out
}

// Single reports whether the template is exactly one placeholder, and which.
func (t Template) Single() (string, bool) {
	if len(t) == 1 && t[0].Param != "" {
		return t[0].Param, true
	}
	return "", false
}

// Render fills the placeholders with value(name).
func (t Template) Render(value func(name string) (string, error)) (string, error) {
	var b strings.Builder
	for _, p := range t {
		if p.Param == "" {
			b.WriteString(p.Lit)
			continue
		}
		v, err := value(p.Param)
		if err != nil {
			return "", err
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

// Schema turns the YAML parameters map of a tool into the JSON schema of
// its arguments object.
func Schema(params map[string]any) (*jsonschema.Schema, error) {
	s := &jsonschema.Schema{}
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("not representable as JSON: %v", err)
		}
		if err := json.Unmarshal(b, s); err != nil {
			return nil, fmt.Errorf("not a JSON schema: %v", err)
		}
	}
	if s.Type == "" && len(s.Types) == 0 {
		s.Type = "object"
	}
	if s.Type != "object" && !slices.Equal(s.Types, []string{"object"}) {
		return nil, errors.New(`type must be "object"`)
	}
	if s.Properties == nil {
		s.Properties = map[string]*jsonschema.Schema{}
	}
	return s, nil
}

// DecodeArgs reads a call's arguments object, keeping numbers as written.
func DecodeArgs(raw json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{}, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("arguments are not a JSON object: %v", err)
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}
