package httptool

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hitlbot/hitlbot/tools/internal/argtmpl"
	"net/url"
	"strconv"
	"strings"
)

// template is a parsed {{.name}} template (see argtmpl).
type template = argtmpl.Template

// parseTemplate parses a template.
func parseTemplate(s string) (template, error) { return argtmpl.Parse(s) }

// renderArgs fills t's placeholders with enc(value); a missing parameter is
// passed to enc as nil with present false.
func renderArgs(t template, args map[string]any, enc func(name string, v any, present bool) (string, error)) (string, error) {
	return t.Render(func(name string) (string, error) {
		v, ok := args[name]
		return enc(name, v, ok)
	})
}

// scalar renders a parameter value as text for a URL: strings as they are,
// numbers in their JSON spelling, booleans as true/false. Objects, arrays
// and null are refused.
func scalar(name string, v any, present bool) (string, error) {
	if !present {
		return "", fmt.Errorf("parameter %s is missing", name)
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case bool:
		return strconv.FormatBool(x), nil
	case nil:
		return "", fmt.Errorf("parameter %s is null", name)
	}
	return "", fmt.Errorf("parameter %s must be a string, number or boolean", name)
}

// urlTemplate is a parsed URL template. The scheme and host are literal text
// fixed at build time; only the path and the query hold placeholders.
type urlTemplate struct {
	origin string   // "https://api.example.com:8443": scheme://host, no placeholder
	scheme string   // "https"
	host   string   // "api.example.com:8443"
	path   template // from the first "/" up to "?" (may be empty)
	query  template // after "?" (nil when the template has none)
}

// parseURLTemplate checks and splits a URL template. The host part may not
// hold a placeholder, user info or anything url.Parse would not keep as the
// host; a fragment is refused (it is never sent).
func parseURLTemplate(s string) (*urlTemplate, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || (scheme != "http" && scheme != "https") {
		return nil, errors.New(`must start with "http://" or "https://"`)
	}
	if strings.Contains(s, "#") {
		return nil, errors.New("must not have a fragment (#...)")
	}
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	host := rest[:end]
	switch {
	case host == "":
		return nil, errors.New("has no host")
	case strings.Contains(host, "{") || strings.Contains(host, "}"):
		return nil, errors.New("host part must not contain a placeholder: parameters may fill the path and query only")
	case strings.Contains(host, "@"):
		return nil, errors.New("must not carry user info (user:password@); put credentials in a header from the environment")
	case strings.ContainsAny(host, "\\ %\t\r\n"):
		return nil, errors.New("host part has characters a host cannot have")
	}
	origin := scheme + "://" + host
	u, err := url.Parse(origin)
	if err != nil || u.Host != host || u.Scheme != scheme || u.Hostname() == "" {
		return nil, errors.New("host part is not a valid host[:port]")
	}
	rest = rest[end:]
	pathPart, queryPart, hasQuery := strings.Cut(rest, "?")
	ut := &urlTemplate{origin: origin, scheme: scheme, host: host}
	if ut.path, err = parseTemplate(pathPart); err != nil {
		return nil, fmt.Errorf("path: %w", err)
	}
	if err := checkLiterals(ut.path, ""); err != nil {
		return nil, fmt.Errorf("path: %w", err)
	}
	if hasQuery {
		if ut.query, err = parseTemplate(queryPart); err != nil {
			return nil, fmt.Errorf("query: %w", err)
		}
		if err := checkLiterals(ut.query, "?"); err != nil {
			return nil, fmt.Errorf("query: %w", err)
		}
		if ut.query == nil {
			ut.query = template{}
		}
	}
	// The literal parts must make a valid URL with the same host.
	probe := map[string]any{}
	for _, p := range append(ut.path.Params(), ut.query.Params()...) {
		probe[p] = "x"
	}
	if _, err := ut.render(probe); err != nil {
		return nil, err
	}
	return ut, nil
}

// pathParams returns the names used in the path.
func (ut *urlTemplate) pathParams() []string { return ut.path.Params() }

// render fills the template. Path values are path-escaped (a "/" in a value
// becomes %2F, so a value can never add or remove a path segment) and a
// segment that a value fills may not end up empty, "." or ".." (a server
// that normalises the path would otherwise climb up). Query values in the
// template's own query are query-escaped. The result is parsed back and its
// scheme and host checked against the template's.
func (ut *urlTemplate) render(args map[string]any) (*url.URL, error) {
	var b strings.Builder
	b.WriteString(ut.origin)
	seg, filled := "", false
	check := func() error {
		if filled && (seg == "" || seg == "." || seg == "..") {
			return fmt.Errorf("a path segment may not be %q", seg)
		}
		return nil
	}
	for _, p := range ut.path {
		if p.Param == "" {
			parts := strings.Split(p.Lit, "/")
			for i, part := range parts {
				if i > 0 {
					if err := check(); err != nil {
						return nil, err
					}
					seg, filled = "", false
				}
				seg += part
			}
			b.WriteString(p.Lit)
			continue
		}
		v, err := scalar(p.Param, args[p.Param], hasKey(args, p.Param))
		if err != nil {
			return nil, err
		}
		e := url.PathEscape(v)
		seg += e
		filled = true
		b.WriteString(e)
	}
	if err := check(); err != nil {
		return nil, err
	}
	path := b.String()[len(ut.origin):]
	if ut.query != nil {
		q, err := renderArgs(ut.query, args, func(name string, v any, present bool) (string, error) {
			if !present || v == nil {
				return "", nil // an optional parameter left out: empty value
			}
			s, err := scalar(name, v, true)
			return url.QueryEscape(s), err
		})
		if err != nil {
			return nil, err
		}
		b.WriteString("?")
		b.WriteString(q)
	}
	u, err := url.Parse(b.String())
	if err != nil {
		return nil, fmt.Errorf("the URL does not parse: %v", err)
	}
	if u.Scheme != ut.scheme || u.Host != ut.host || u.User != nil || u.Opaque != "" {
		// Cannot happen with escaped values; refuse rather than trust it.
		return nil, errors.New("the URL would change its host")
	}
	if u.EscapedPath() != path && !(path == "" && u.EscapedPath() == "/") {
		// The client would send another path than the one checked above
		// (e.g. an escaped "/" turned back into a separator).
		return nil, errors.New("the URL path would not be sent as written")
	}
	return u, nil
}

// checkLiterals refuses literal text that is not already in the form a URL
// carries it: only unreserved characters, sub-delimiters, ":", "@", "/"
// (and the characters in extra) and well-formed %XX escapes. Otherwise
// url.Parse re-encodes the path and may decode a value's %2F into a "/".
// Write non-ASCII text percent-encoded.
func checkLiterals(t template, extra string) error {
	for _, p := range t {
		s := p.Lit
		for i := 0; i < len(s); i++ {
			c := s[i]
			switch {
			case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
				strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0, strings.IndexByte(extra, c) >= 0:
			case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
				i += 2
			default:
				return fmt.Errorf("character %q must be percent-encoded", string(rune(c)))
			}
		}
	}
	return nil
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

func hasKey(m map[string]any, k string) bool { _, ok := m[k]; return ok }

// renderBody fills a JSON body template: every value is JSON-encoded (a
// string gets its quotes and escapes), a missing parameter becomes null. The
// result must be valid JSON.
func renderBody(t template, args map[string]any) ([]byte, error) {
	s, err := renderArgs(t, args, func(name string, v any, present bool) (string, error) {
		b, err := json.Marshal(v) // nil (missing or null) -> null
		if err != nil {
			return "", fmt.Errorf("parameter %s: %v", name, err)
		}
		return string(b), nil
	})
	if err != nil {
		return nil, err
	}
	if !json.Valid([]byte(s)) {
		return nil, errors.New("the body is not valid JSON once the parameters are filled in")
	}
	return []byte(s), nil
}
