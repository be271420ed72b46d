package httptool

import (
	"bytes"
	"encoding/json"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// Redacted replaces a hidden value.
const Redacted = "[REDACTED]"

// secretKey matches names of JSON keys and query parameters whose values
// look secret; their values are hidden in previews.
var secretKey = regexp.MustCompile(`(?i)(passw|pwd|secret|token|api[-_]?key|apikey|auth|credential|private[-_]?key|signature|cookie|session|^key$)`)

// minSecretLen is the shortest environment value scrubbed from outputs and
// errors; shorter values would blank out ordinary text (they are still never
// shown in previews, which show header names only).
const minSecretLen = 4

// scrubber removes known secret values (the resolved environment values of
// the headers) from text shown to people or the model.
type scrubber struct{ secrets []string }

func newScrubber(secrets []string) scrubber {
	var s []string
	for _, v := range secrets {
		if len(v) >= minSecretLen {
			s = append(s, v)
		}
	}
	// Longest first, so a secret that contains another is hidden whole.
	sort.Slice(s, func(i, j int) bool { return len(s[i]) > len(s[j]) })
	return scrubber{s}
}

func (s scrubber) scrub(text string) string {
	for _, v := range s.secrets {
		text = strings.ReplaceAll(text, v, Redacted)
		if e := url.QueryEscape(v); e != v {
			text = strings.ReplaceAll(text, e, Redacted)
		}
	}
	return text
}

// redactURL hides the values of secret-looking query parameters.
func redactURL(u *url.URL) string {
	if u.RawQuery == "" {
		return u.String()
	}
	c := *u
	parts := strings.Split(c.RawQuery, "&")
	for i, p := range parts {
		k, _, hasVal := strings.Cut(p, "=")
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		if hasVal && secretKey.MatchString(name) {
			parts[i] = k + "=" + Redacted
		}
	}
	c.RawQuery = strings.Join(parts, "&")
	return c.String()
}

// redactJSON hides the values of secret-looking keys anywhere in a JSON
// document and returns it compact. Text that is not JSON is returned as a
// note, never as it is.
func redactJSON(body []byte) string {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "(not valid JSON)"
	}
	v = redactValue(v)
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return "(not valid JSON)"
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func redactValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if secretKey.MatchString(k) && e != nil {
				x[k] = Redacted
			} else {
				x[k] = redactValue(e)
			}
		}
	case []any:
		for i, e := range x {
			x[i] = redactValue(e)
		}
	}
	return v
}
