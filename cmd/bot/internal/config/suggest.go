package config

import (
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
)

// keysAt returns the keys a YAML path may hold (nil when it holds free
// keys or no mapping): "approval.policy" → enabled, strict, …
func keysAt(path string) []string {
	t := reflect.TypeFor[Config]()
	if path != "" {
		for _, seg := range strings.Split(indexRE.ReplaceAllString(path, ".[]"), ".") {
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			switch {
			case seg == "[]" && t.Kind() == reflect.Slice:
				t = t.Elem()
			case t.Kind() == reflect.Map:
				t = t.Elem()
			case t.Kind() == reflect.Struct:
				fields := map[string]reflect.Type{}
				structKeys(t, fields)
				ft, ok := fields[seg]
				if !ok {
					return nil
				}
				t = ft
			default:
				return nil
			}
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	fields := map[string]reflect.Type{}
	structKeys(t, fields)
	out := make([]string, 0, len(fields))
	for k := range fields {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var indexRE = regexp.MustCompile(`\[\d+\]`)

// unknownKey is the message for an unknown key at path: with a suggestion
// when a known key at the same level is close.
func unknownKey(path string) string {
	parent, key := "", path
	if i := strings.LastIndex(path, "."); i >= 0 {
		parent, key = path[:i], path[i+1:]
	}
	if s := closest(key, keysAt(parent)); s != "" {
		return "unknown key (did you mean " + s + "?)"
	}
	if ps := elsewhere(parent, key); len(ps) > 0 {
		// A key that exists under another parent: written at the wrong level.
		return "unknown key here (did you mean " + strings.Join(ps, " or ") + "?)"
	}
	return "unknown key"
}

// closest returns the candidate nearest to s, if it is near enough to be a
// typo.
func closest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if d := distance(s, c); d < bestD && d <= max(1, len(c)/4) {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the edit distance of two strings, by bytes, counting a swap
// of neighbours as one edit (optimal string alignment).
func distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// checkEnv reports HITLBOT_ variables that name no key: a typo there would
// otherwise be ignored in silence. HITLBOT_TEST_* belong to the tests.
func checkEnv(ps *Problems) {
	known := map[string]bool{}
	var names []string
	for _, b := range Bindings() {
		known[b.Env] = true
		names = append(names, b.Env)
		if b.Alias != "" {
			known[b.Alias] = true
		}
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix) || strings.HasPrefix(name, EnvPrefix+"TEST_") || known[name] {
			continue
		}
		msg := "the environment variable " + name + " names no config key"
		if s := closest(name, names); s != "" {
			msg += " (did you mean " + s + "?)"
		}
		ps.add("", msg)
	}
}
