package config

import (
	"bufio"
	"fmt"
	"log/slog"
	"strings"
)

// Redacted is what a secret prints as.
const Redacted = "<secret>"

// Secret is a string that never prints: fmt, slog, JSON, YAML and text
// marshalling all show "<secret>" (or "" when it is empty). Reveal returns
// the value for the one place that needs it.
//
// A Secret may be set only from the environment (HITLBOT_…) or from the
// file its *_file sibling names; a non-empty secret written in the YAML
// file is a load error.
type Secret string

// Reveal returns the secret's value.
func (s Secret) Reveal() string { return string(s) }

func (s Secret) show() string {
	if s == "" {
		return ""
	}
	return Redacted
}

// String returns "<secret>", or "" for an empty secret.
func (s Secret) String() string { return s.show() }

// GoString is String, so that %#v redacts too.
func (s Secret) GoString() string { return fmt.Sprintf("config.Secret(%q)", s.show()) }

// LogValue redacts the secret in slog.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.show()) }

// MarshalText redacts the secret in JSON and other text encodings.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.show()), nil }

// MarshalYAML redacts the secret in YAML.
func (s Secret) MarshalYAML() (any, error) { return s.show(), nil }

// Token is one bearer token of an HTTP channel and who it stands for.
type Token struct {
	// Token is the bearer token.
	Token Secret
	// User is the user id the token authenticates.
	User string
	// Tenant is the user's tenant (family, team); may be empty.
	Tenant string
}

// Parse returns the tokens of a, from Tokens (which Load has filled from
// TokensFile when that is set): entries "TOKEN USER [TENANT]", separated
// by commas or new lines; blank entries and lines starting with # are
// skipped. Errors never contain a token.
func (a Auth) Parse() ([]Token, error) {
	var out []Token
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(a.Tokens.Reveal()))
	line := 0
	for sc.Scan() {
		line++
		for i, entry := range strings.Split(sc.Text(), ",") {
			entry = strings.TrimSpace(entry)
			if entry == "" || strings.HasPrefix(entry, "#") {
				continue
			}
			where := fmt.Sprintf("entry %d of line %d", i+1, line)
			f := strings.Fields(entry)
			if len(f) < 2 || len(f) > 3 {
				return nil, fmt.Errorf("%s: want \"TOKEN USER [TENANT]\", got %d words", where, len(f))
			}
			if len(f[0]) < 16 {
				return nil, fmt.Errorf("%s (user %s): the token is shorter than 16 characters", where, f[1])
			}
			if seen[f[0]] {
				return nil, fmt.Errorf("%s (user %s): the same token is listed twice", where, f[1])
			}
			seen[f[0]] = true
			if strings.Contains(f[1], "/") || len(f) == 3 && strings.Contains(f[2], "/") {
				return nil, fmt.Errorf("%s (user %s): user and tenant must not contain '/'", where, f[1])
			}
			t := Token{Token: Secret(f[0]), User: f[1]}
			if len(f) == 3 {
				t.Tenant = f[2]
			}
			out = append(out, t)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
