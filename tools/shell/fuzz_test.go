package shell

import (
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// FuzzArgv renders an argv template with arbitrary values: it never panics,
// a template never yields more (or fewer) argv entries than it has
// elements, the program never changes, a whole-element placeholder comes
// back as the value itself, and a value starting with "-" is refused.
func FuzzArgv(f *testing.F) {
	for _, s := range []struct{ elem, value string }{
		{"{{.v}}", "a b"},
		{"{{.v}}", "; rm -rf /"},
		{"{{.v}}", "$(id)"},
		{"--unit={{.v}}", "x\ny z"},
		{"{{.v}}{{.v}}", "-rf"},
		{"{{ .v }}", "\x00"},
		{"plain", "--help"},
		{"{{.v", "x"},
	} {
		f.Add(s.elem, s.value)
	}
	f.Fuzz(func(t *testing.T, elem, value string) {
		tm, err := parseTemplate(elem)
		if err != nil {
			return
		}
		tl := &tool{path: "/bin/echo", args: []template{{{Lit: "fixed"}}, tm, {{Param: "v"}}}, schema: mustSchema(t)}
		args := map[string]any{"v": value}
		for _, n := range tm.Params() {
			args[n] = value
		}
		argv, err := tl.render(args)
		if err != nil {
			if !strings.HasPrefix(value, "-") && !strings.ContainsRune(value, 0) {
				t.Fatalf("elem %q value %q: refused: %v", elem, value, err)
			}
			return
		}
		if strings.HasPrefix(value, "-") || strings.ContainsRune(value, 0) {
			t.Fatalf("elem %q value %q: accepted", elem, value)
		}
		if len(argv) != 4 || argv[0] != "/bin/echo" || argv[1] != "fixed" || argv[3] != value {
			t.Fatalf("elem %q value %q: argv %q", elem, value, argv)
		}
	})
}

func mustSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	s, err := parseSchema(nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
