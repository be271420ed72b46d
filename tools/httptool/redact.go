package httptool

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/hitlbot/hitlbot/internal/redact"
)

// Redacted replaces a hidden value.
const Redacted = redact.Mark

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
		if hasVal && redact.SecretKey(name) {
			parts[i] = k + "=" + Redacted
		}
	}
	c.RawQuery = strings.Join(parts, "&")
	return c.String()
}

// redactJSON hides the values of secret-looking keys anywhere in a JSON
// document, and secrets in its strings (redact.Value), and returns it
// compact. Text that is not JSON is returned as a
// note, never as it is.
func redactJSON(body []byte) string {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "(not valid JSON)"
	}
	v = redact.Value(v, 0, 0)
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return "(not valid JSON)"
	}
	return strings.TrimSuffix(b.String(), "\n")
}
