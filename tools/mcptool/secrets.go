package mcptool

import (
	"net/url"
	"sort"
	"strings"

	"github.com/hitlbot/hitlbot/internal/redact"
)

// minSecretLen is the shortest environment value scrubbed from text;
// shorter ones would blank out ordinary words.
const minSecretLen = 4

// scrubber removes the server's secret values (its header and environment
// values) from text that people, logs or the model see.
type scrubber struct{ secrets []string }

func newScrubber(secrets []string) scrubber {
	var s []string
	for _, v := range secrets {
		if len(v) >= minSecretLen {
			s = append(s, v)
			// "Bearer abc": hide the token on its own too.
			if _, tok, ok := strings.Cut(v, " "); ok && len(tok) >= minSecretLen {
				s = append(s, tok)
			}
		}
	}
	sort.Slice(s, func(i, j int) bool { return len(s[i]) > len(s[j]) })
	return scrubber{s}
}

func (s scrubber) scrub(text string) string {
	for _, v := range s.secrets {
		text = strings.ReplaceAll(text, v, redact.Mark)
		if e := url.QueryEscape(v); e != v {
			text = strings.ReplaceAll(text, e, redact.Mark)
		}
	}
	return text
}

// secretsOf are the values of c's environment variables and headers.
func secretsOf(c ServerConfig, getenv func(string) string) []string {
	var out []string
	for _, n := range c.Env {
		out = append(out, getenv(n))
	}
	for _, n := range c.Headers {
		out = append(out, getenv(n))
	}
	return out
}
