package config

import (
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// mapstructure's messages for a value of the wrong type, as it words them:
// "cannot parse value as 'int64': strconv.ParseInt: invalid syntax" and
// "expected type 'bool', got unconvertible type '[]interface {}'".
var (
	cannotParse   = regexp.MustCompile(`^cannot parse (?:'[^']*' |value )?as '([^']+)'(?:: strconv\.\w+: (?:parsing "(?:[^"\\]|\\.)*": )?(invalid syntax|value out of range))?`)
	unconvertible = regexp.MustCompile(`^expected type '([^']+)', got unconvertible type '([^']+)'`)
)

// inWords rewrites each problem that is a type error of the decoder in
// words, with the value as written (settings: what was decoded, viper's
// AllSettings): `"yes" is not true or false (write true or false)`
// instead of "strconv.ParseBool: invalid syntax".
func (ps Problems) inWords(settings map[string]any) {
	for i, p := range ps {
		if m := cannotParse.FindStringSubmatch(p.Msg); m != nil {
			shown := "this value"
			if v, ok := valueAt(settings, p.Path); ok {
				shown = strconv.Quote(fmt.Sprint(v))
			}
			ps[i].Msg = shown + " " + isNot(m[1], m[2] == "value out of range")
			continue
		}
		if m := unconvertible.FindStringSubmatch(p.Msg); m != nil {
			ps[i].Msg = "must be " + want(m[1]) + ", not " + kindOf(m[2])
		}
	}
}

// isNot says what a value that did not parse as the Go type typ is not.
func isNot(typ string, outOfRange bool) string {
	switch {
	case typ == "bool":
		return "is not true or false (write true or false)"
	case outOfRange:
		return "is out of range for " + want(typ)
	}
	return "is not " + want(typ)
}

// want names the Go type typ as a value of YAML.
func want(typ string) string {
	switch {
	case typ == "bool":
		return "true or false"
	case strings.HasPrefix(typ, "int"):
		return "a whole number"
	case strings.HasPrefix(typ, "uint"):
		return "a whole number, 0 or more"
	case strings.HasPrefix(typ, "float"):
		return "a number"
	case typ == "string":
		return "text"
	case strings.HasPrefix(typ, "[]"):
		return "a list"
	case strings.HasPrefix(typ, "map"), strings.Contains(typ, "struct"):
		return "a mapping of keys"
	}
	return "a " + typ
}

// kindOf names the Go type of a decoded YAML value.
func kindOf(typ string) string {
	switch {
	case strings.HasPrefix(typ, "[]"):
		return "a list"
	case strings.HasPrefix(typ, "map"):
		return "a mapping of keys"
	case typ == "string":
		return "text"
	case typ == "bool":
		return "true or false"
	}
	return "a number"
}

// valueAt is the value at a YAML path ("a.b[2].c") of settings.
func valueAt(settings map[string]any, path string) (any, bool) {
	var cur any = settings
	for _, seg := range strings.Split(indexRE.ReplaceAllStringFunc(path, func(s string) string { return "." + s }), ".") {
		if seg == "" {
			continue
		}
		if strings.HasPrefix(seg, "[") {
			n, err := strconv.Atoi(strings.Trim(seg, "[]"))
			l, ok := cur.([]any)
			if err != nil || !ok || n >= len(l) {
				return nil, false
			}
			cur = l[n]
			continue
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[strings.ToLower(seg)]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// elsewhere returns the known paths, under another parent than parent,
// that end in key: where a key written at the wrong level belongs
// ("feishu" at the top: "channels.feishu"). The config's mappings are
// walked through structs only (free maps and lists are not), nearest
// first.
func elsewhere(parent, key string) []string {
	var out []string
	var walk func(t reflect.Type, path string, depth int)
	walk = func(t reflect.Type, path string, depth int) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || depth > 4 {
			return
		}
		fields := map[string]reflect.Type{}
		structKeys(t, fields)
		for k, ft := range fields {
			p := join(path, k)
			if k == key && path != parent {
				out = append(out, p)
			}
			walk(ft, p, depth+1)
		}
	}
	walk(reflect.TypeFor[Config](), "", 0)
	sort.Slice(out, func(i, j int) bool {
		if a, b := strings.Count(out[i], "."), strings.Count(out[j], "."); a != b {
			return a < b
		}
		return out[i] < out[j]
	})
	return out
}
