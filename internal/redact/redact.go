// Package redact hides secrets in what people read and what the audit
// trail keeps: free text a person typed (a rejection's comment, a
// cancellation's reason) and tool arguments shown as a preview.
//
// It works on what text looks like, not on what it is: a value after a
// secret-looking name (password=…, "api_key": …, token: …), the credential
// of an Authorization scheme (Bearer …, Basic …), the password of a URL
// (scheme://user:password@host) and a few well-known token shapes (sk-…,
// ghp_…, xoxb-…, AKIA…). A secret that looks like ordinary words is not
// found; callers that know their secrets (a tool's configured keys) scrub
// them by value as well.
package redact

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Mark replaces a hidden value.
const Mark = "[REDACTED]"

// secretName matches names of keys, fields and parameters whose values
// look secret.
var secretName = regexp.MustCompile(`(?i)(passw|pwd|secret|token|api[-_]?key|apikey|access[-_]?key|auth|credential|private[-_]?key|signature|cookie|session|^key$|dsn)`)

// SecretKey reports whether a key, field or parameter named name probably
// holds a secret.
func SecretKey(name string) bool { return secretName.MatchString(name) }

var textRules = []struct {
	re   *regexp.Regexp
	repl string
}{
	// name=value, name: value, "name": "value" where the name looks secret;
	// the name stays, the value goes.
	{regexp.MustCompile(`(?i)([\w.-]*(?:passw(?:or)?d|passwd|pwd|secret|token|api[-_]?key|apikey|access[-_]?key|authorization|auth[-_]?key|credentials?|private[-_]?key|signature|cookie|session[-_]?id|dsn)[\w.-]*["']?\s*[:=]\s*)((?:bearer|basic)\s+)?("[^"]*"|'[^']*'|[^\s,;&"']+)`),
		"${1}${2}" + Mark},
	// The credential of a Bearer authorization.
	{regexp.MustCompile(`(?i)\b(bearer)(\s+)[A-Za-z0-9._~+/=-]{8,}`), "${1}${2}" + Mark},
	// The password of a URL.
	{regexp.MustCompile(`(://[^/\s:@]*):[^/\s@]+@`), "${1}:" + Mark + "@"},
	// Well-known token shapes: OpenAI-style keys, GitHub and Slack
	// tokens, AWS access key ids.
	{regexp.MustCompile(`\b(?:sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})\b`), Mark},
}

// basicAuth matches a Basic authorization; it is a credential only when
// the word after "Basic" looks like base64 rather than English (it holds
// a digit, '+', '/', '=' or a capital letter after its first).
var basicAuth = regexp.MustCompile(`(?i)\b(basic\s+)([A-Za-z0-9+/]{8,}={0,2})`)

// Text returns s with the secrets it appears to hold replaced by Mark.
func Text(s string) string {
	if s == "" {
		return s // nothing to redact (a decision without a comment, mostly)
	}
	for _, r := range textRules {
		s = r.re.ReplaceAllString(s, r.repl)
	}
	return basicAuth.ReplaceAllStringFunc(s, func(m string) string {
		sub := basicAuth.FindStringSubmatch(m)
		if !strings.ContainsAny(sub[2], "0123456789+/=") && strings.ToLower(sub[2][1:]) == sub[2][1:] {
			return m
		}
		return sub[1] + Mark
	})
}

// Clean makes free text safe to record and show: invalid UTF-8 and control
// and bidirectional-formatting characters are dropped (line breaks and
// tabs become spaces), surrounding space is trimmed, secrets are redacted
// (Text), and the result is cut to maxRunes runes plus "…" when longer
// (maxRunes <= 0: no bound).
func Clean(s string, maxRunes int) string {
	if maxRunes > 0 {
		// Redacting megabytes to keep 500 runes is wasted work: cut
		// generously first (a secret cut in half here is still redacted
		// below, or falls beyond the final cut).
		s = cut(s, 4*maxRunes+64, "")
	}
	s = strings.ToValidUTF8(s, "")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r' || r == '\t' || r == '\u2028' || r == '\u2029':
			return ' '
		case unicode.IsControl(r), bidi(r):
			return -1
		}
		return r
	}, s)
	s = Text(strings.TrimSpace(s))
	if maxRunes > 0 {
		s = cut(s, maxRunes, "…")
	}
	return s
}

// bidi reports the invisible characters that reorder or hide text.
func bidi(r rune) bool {
	return r == '\u200e' || r == '\u200f' || r == '\u061c' || ('\u202a' <= r && r <= '\u202e') || ('\u2066' <= r && r <= '\u2069')
}

// cut returns the first n runes of s, followed by more when it cut.
func cut(s string, n int, more string) string {
	if len(s) <= n {
		return s
	}
	i, count := 0, 0
	for i < len(s) {
		if count == n {
			return s[:i] + more
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	return s
}

// Cut returns the first n runes of s followed by "…" when s is longer.
func Cut(s string, n int) string { return cut(s, n, "…") }

// maxDepth bounds the nesting Value walks; deeper values become "…".
const maxDepth = 32

// Value returns a copy of a decoded JSON value (map[string]any, []any,
// strings, numbers, booleans, nil) safe to show: the value of every key
// that looks secret (SecretKey) is Mark, strings are redacted (Text) and
// cut to maxString runes (maxString <= 0: not cut), arrays keep their first
// maxItems elements (maxItems <= 0: all) followed by a note of how many
// were left out, and nesting deeper than 32 levels becomes "…".
func Value(v any, maxString, maxItems int) any {
	return value(v, maxString, maxItems, 0)
}

func value(v any, maxString, maxItems, depth int) any {
	if depth >= maxDepth {
		return "…"
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if SecretKey(k) && e != nil {
				out[k] = Mark
			} else {
				out[k] = value(e, maxString, maxItems, depth+1)
			}
		}
		return out
	case []any:
		n := len(x)
		if maxItems > 0 && n > maxItems {
			n = maxItems
		}
		out := make([]any, 0, n+1)
		for _, e := range x[:n] {
			out = append(out, value(e, maxString, maxItems, depth+1))
		}
		if n < len(x) {
			out = append(out, "… "+strconv.Itoa(len(x)-n)+" more")
		}
		return out
	case string:
		s := Text(x)
		if maxString > 0 {
			s = Cut(s, maxString)
		}
		return s
	}
	return v
}
