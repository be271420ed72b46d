package httptool

import (
	"net/url"
	"strings"
	"testing"
	"unicode"
)

// FuzzRenderURL renders URL templates with arbitrary values. It never
// panics; whatever the value, the scheme and host stay the template's, a
// value never adds a path segment, and a value that fills a whole segment
// comes back unchanged when the segment is unescaped.
func FuzzRenderURL(f *testing.F) {
	for _, s := range []struct{ tmpl, value string }{
		{"https://api.example.com/orders/{{.v}}/refund", "42"},
		{"https://api.example.com/orders/{{.v}}/refund", "../admin"},
		{"http://127.0.0.1:8080/{{.v}}", "@evil.com"},
		{"http://[::1]:8080/a/{{.v}}?q={{.v}}&x=1", "a&b=c#d"},
		{"https://a.example/x-{{ .v }}.json", "%2e%2e/"},
		{"https://a.example?{{.v}}", "http://evil.com/"},
		{"https://a.example/{{.v}}{{.v}}", "."},
		{"https://a.example", "\\\\evil.com"},
	} {
		f.Add(s.tmpl, s.value)
	}
	f.Fuzz(func(t *testing.T, tmpl, value string) {
		ut, err := parseURLTemplate(tmpl)
		if err != nil {
			return
		}
		args := map[string]any{}
		for _, p := range append(ut.pathParams(), ut.query.Params()...) {
			args[p] = value
		}
		u, err := ut.render(args)
		if err != nil {
			return
		}
		if u.Scheme != ut.scheme || u.Host != ut.host || u.User != nil {
			t.Fatalf("template %q value %q: URL %q left %s://%s", tmpl, value, u, ut.scheme, ut.host)
		}
		// The host a client would dial is the template's.
		again, err := url.Parse(u.String())
		if err != nil || again.Host != ut.host {
			t.Fatalf("template %q value %q: %q re-parses to host %q (%v)", tmpl, value, u, again.Host, err)
		}
		var literalSlashes int
		for _, p := range ut.path {
			literalSlashes += strings.Count(p.Lit, "/")
		}
		if got := strings.Count(u.EscapedPath(), "/"); got != literalSlashes {
			t.Fatalf("template %q value %q: path %q has %d slashes, the template %d", tmpl, value, u.EscapedPath(), got, literalSlashes)
		}
		if len(ut.path) == 2 && ut.path[0].Lit == "/" && ut.path[1].Param != "" {
			seg, err := url.PathUnescape(strings.TrimPrefix(u.EscapedPath(), "/"))
			if err != nil || seg != value {
				t.Fatalf("template %q value %q: segment came back as %q (%v)", tmpl, value, seg, err)
			}
		}
	})
}

// FuzzParseTemplate: any text either parses or is refused; never a panic,
// and a parsed template renders its literal text unchanged.
func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{"", "a{{.b}}c", "{{", "}}", "{{ .x }}", "{{.x}}{{.y}}", "{{.}}", "{{{.a}}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := parseTemplate(s)
		if err != nil {
			return
		}
		out, err := renderArgs(tm, nil, func(name string, _ any, _ bool) (string, error) { return "{{." + name + "}}", nil })
		if err != nil {
			t.Fatal(err)
		}
		if !strings.ContainsFunc(s, unicode.IsSpace) && out != s {
			t.Fatalf("%q re-renders as %q", s, out)
		}
	})
}
