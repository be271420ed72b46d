package redact

import (
	"net/url"
	"sort"
	"strings"
)

// MinValueLen is the shortest known secret Values hides; shorter values
// would blank out ordinary text.
const MinValueLen = 4

// Values hides secrets known by value (a tool's configured header values,
// the environment an MCP server is given) wherever they appear, also
// URL-escaped; the zero Values hides nothing.
type Values struct{ secrets []string }

// NewValues returns a Values for secrets. A value shorter than
// MinValueLen is left out; an Authorization-style value ("Bearer abc")
// is hidden whole and its credential on its own too.
func NewValues(secrets ...string) Values {
	var s []string
	for _, v := range secrets {
		if len(v) < MinValueLen {
			continue
		}
		s = append(s, v)
		if _, cred, ok := strings.Cut(v, " "); ok && len(cred) >= MinValueLen {
			s = append(s, cred)
		}
	}
	// Longest first, so a secret that contains another is hidden whole.
	sort.Slice(s, func(i, j int) bool { return len(s[i]) > len(s[j]) })
	return Values{s}
}

// Hide replaces every known secret in text with Mark.
func (v Values) Hide(text string) string {
	for _, s := range v.secrets {
		text = strings.ReplaceAll(text, s, Mark)
		if e := url.QueryEscape(s); e != s {
			text = strings.ReplaceAll(text, e, Mark)
		}
	}
	return text
}
