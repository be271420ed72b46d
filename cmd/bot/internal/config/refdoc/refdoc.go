// Package refdoc writes the configuration reference, docs/configuration.md
// and docs/configuration.zh-CN.md, from the one place the keys are
// described: the doc comments of the config structs (config.Config and the
// package structs it reuses). It walks the types as the loader reads them,
// reads each field's comment from the Go source, takes the defaults from
// defaults.yaml and the environment variables from config.Bindings, and the
// Chinese descriptions from zh.yaml beside this file, keyed by key path;
// zh.sum records the English comment each was translated from, so that a
// changed comment fails until its Chinese is updated (gen -zh-reviewed).
//
// Regenerate with `make docs` (go run ./cmd/bot/internal/config/refdoc/gen);
// the config package's TestReference fails while the files are stale.
package refdoc

//go:generate go run ./gen

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hitlbot/hitlbot/cmd/bot/internal/config"
)

// Files are the files Generate writes, relative to the module root.
const (
	FileEN = "docs/configuration.md"
	FileZH = "docs/configuration.zh-CN.md"
)

// Command is how to regenerate the files.
const Command = "make docs (go run ./cmd/bot/internal/config/refdoc/gen)"

const (
	defaultsFile = "cmd/bot/internal/config/defaults.yaml"
	// zhFile holds the Chinese description of every key.
	zhFile = "cmd/bot/internal/config/refdoc/zh.yaml"
	// SumFile holds, for every key, a fingerprint of the English comment
	// its Chinese description was written from: a comment that changes
	// makes Generate fail until the Chinese is updated and Sums recorded.
	SumFile = "cmd/bot/internal/config/refdoc/zh.sum"
)

// Reviewed is how to record that zh.yaml follows the comments again.
const Reviewed = "go run ./cmd/bot/internal/config/refdoc/gen -zh-reviewed"

// Generate returns the reference in English and in Chinese, by file name
// (FileEN, FileZH), from the Go source under root, the module's root
// directory. It fails when a field has no comment, when a comment's
// "Default X" disagrees with defaults.yaml, when zh.yaml lacks a key or
// holds one that no longer exists, or when a comment changed since its
// Chinese was written (SumFile).
func Generate(root string) (map[string][]byte, error) {
	keys, err := Keys(root)
	if err != nil {
		return nil, err
	}
	defaults, err := readDefaults(filepath.Join(root, defaultsFile))
	if err != nil {
		return nil, err
	}
	zhText, err := os.ReadFile(filepath.Join(root, zhFile))
	if err != nil {
		return nil, err
	}
	zh, err := readZH(zhText, keys)
	if err != nil {
		return nil, err
	}
	sums, err := os.ReadFile(filepath.Join(root, SumFile))
	if err != nil {
		return nil, err
	}
	if changed := changedSince(sums, keys); len(changed) > 0 {
		return nil, fmt.Errorf("refdoc: the English comments of these keys changed since their Chinese in %s was written: %s; update them there, then run %s",
			zhFile, strings.Join(changed, ", "), Reviewed)
	}
	envs := envOf()
	var problems []string
	for i := range keys {
		k := &keys[i]
		k.Default, k.HasDefault = defaultOf(*k, defaults)
		k.Env = envs.of(k.Path)
		if k.Env == nil && k.Type.Kind() == reflect.Map {
			k.Env = envs.of(k.Path + ".*") // a map of values, bound key by key
		}
		if k.Env != nil {
			k.Env.List = k.Type.Kind() == reflect.Slice
		}
		k.Secret = envs.secret[k.Path]
		if k.Secret && slices.ContainsFunc(keys, func(o Key) bool { return o.Path == k.Path+"_file" }) {
			k.SecretFile = k.Path + "_file"
		}
		k.Doc = clean(k.Comment, k.GoName, k.Fields)
		if p := checkDefault(*k, k.Comment, defaultInComment); p != "" {
			problems = append(problems, p)
		}
		if p := checkDefault(*k, zh[k.Path], defaultInZH); p != "" {
			problems = append(problems, "zh.yaml "+p)
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("refdoc: comments that disagree with %s:\n  %s", defaultsFile, strings.Join(problems, "\n  "))
	}
	return map[string][]byte{
		FileEN: render(keys, en, func(k Key) string { return k.Doc }),
		FileZH: render(keys, zhWords, func(k Key) string { return escape(zh[k.Path]) }),
	}, nil
}

// Keys lists every key of config.Config, in the order of the structs, with
// its comment read from the source under root.
func Keys(root string) ([]Key, error) {
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(mod)
	if m == nil {
		return nil, fmt.Errorf("refdoc: no module line in %s", filepath.Join(root, "go.mod"))
	}
	c := &comments{root: root, module: string(m[1]), pkgs: map[string]map[string]map[string]string{}}
	var keys []Key
	if err := c.walk(reflect.TypeFor[config.Config](), "", false, &keys); err != nil {
		return nil, fmt.Errorf("refdoc: %w", err)
	}
	return keys, nil
}

// fingerprint identifies an English comment, whatever its line breaks.
func fingerprint(comment string) string {
	h := sha256.Sum256([]byte(strings.Join(strings.Fields(comment), " ")))
	return fmt.Sprintf("%x", h[:6])
}

// Sums returns the content of SumFile for the comments as they are now:
// one line per key, "fingerprint path".
func Sums(keys []Key) []byte {
	var b strings.Builder
	b.WriteString("# Fingerprints of the English comments zh.yaml was written from (refdoc.SumFile).\n")
	b.WriteString("# Written by " + Reviewed + " once zh.yaml follows them; do not edit.\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %s\n", fingerprint(k.Comment), k.Path)
	}
	return []byte(b.String())
}

// changedSince lists the keys whose comment is not the one sums recorded
// (a key sums does not name included).
func changedSince(sums []byte, keys []Key) []string {
	recorded := map[string]string{}
	for _, line := range strings.Split(string(sums), "\n") {
		if f := strings.Fields(line); len(f) == 2 && !strings.HasPrefix(line, "#") {
			recorded[f[1]] = f[0]
		}
	}
	var out []string
	for _, k := range keys {
		if recorded[k.Path] != fingerprint(k.Comment) {
			out = append(out, k.Path)
		}
	}
	return out
}

// readZH reads the Chinese descriptions and checks they are exactly the keys.
func readZH(b []byte, keys []Key) (map[string]string, error) {
	var zh map[string]string
	if err := yaml.Unmarshal(b, &zh); err != nil {
		return nil, fmt.Errorf("refdoc: zh.yaml: %w", err)
	}
	var missing, extra []string
	known := map[string]bool{}
	for _, k := range keys {
		known[k.Path] = true
		if strings.TrimSpace(zh[k.Path]) == "" {
			missing = append(missing, k.Path)
		}
	}
	for p := range zh {
		if !known[p] {
			extra = append(extra, p)
		}
	}
	slices.Sort(extra)
	var msg []string
	if len(missing) > 0 {
		msg = append(msg, "zh.yaml has no Chinese description of: "+strings.Join(missing, ", "))
	}
	if len(extra) > 0 {
		msg = append(msg, "zh.yaml describes keys that do not exist: "+strings.Join(extra, ", "))
	}
	if len(msg) > 0 {
		return nil, fmt.Errorf("refdoc: %s", strings.Join(msg, "; "))
	}
	for p, s := range zh {
		zh[p] = strings.TrimSpace(s)
	}
	return zh, nil
}

// readDefaults reads defaults.yaml.
func readDefaults(file string) (map[string]any, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("refdoc: %s: %w", file, err)
	}
	return m, nil
}

// defaultOf returns the key's default as YAML would write it: from
// defaults.yaml, else the zero value of its type. The bool reports
// whether defaults.yaml names it.
func defaultOf(k Key, defaults map[string]any) (string, bool) {
	if !strings.ContainsAny(k.Path, "[*") {
		var cur any = defaults
		found := true
		for _, p := range strings.Split(k.Path, ".") {
			m, ok := cur.(map[string]any)
			if !ok {
				found = false
				break
			}
			if cur, ok = m[p]; !ok {
				found = false
				break
			}
		}
		if found {
			switch v := cur.(type) {
			case map[string]any:
			case []any:
				if len(v) == 0 {
					return "", true
				}
			case string:
				return v, true
			case nil:
				return "", true
			default:
				return fmt.Sprint(v), true
			}
		}
	}
	t := k.Type
	if t.Kind() == reflect.Pointer {
		return "-", false // unset
	}
	switch {
	case t == durationType:
		return "0s", false
	case t.Kind() == reflect.Bool:
		return "false", false
	case isNumber(t):
		return "0", false
	}
	return "", false
}

func isNumber(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// defaultInComment finds "Default X" in a comment (not "Default: words").
var defaultInComment = regexp.MustCompile(`\bDefault ("?)([^\s"(),;]+?)"?(?:[.,;:)](?:\s|$)|\s|$)`)

// defaultInZH finds "默认 X" in a Chinese description.
var defaultInZH = regexp.MustCompile(`默认 ("?)([^\s"(),;，。；（）：]+?)"?(?:[，。；（：]|[.,;:)](?:\s|$)|\s|$)`)

// checkDefault reports a description whose "Default X" (re) is not the
// value of defaults.yaml, for the keys defaults.yaml sets to something.
func checkDefault(k Key, text string, re *regexp.Regexp) string {
	if !k.HasDefault || k.Default == "" {
		return ""
	}
	m := re.FindStringSubmatch(text)
	if m == nil {
		return ""
	}
	said := m[2]
	if same(said, k.Default, k.Type) {
		return ""
	}
	return fmt.Sprintf("%s: the text says the default is %s, defaults.yaml %s", k.Path, said, k.Default)
}

func same(a, b string, t reflect.Type) bool {
	if a == b {
		return true
	}
	if t == durationType {
		da, ea := time.ParseDuration(a)
		db, eb := time.ParseDuration(b)
		return ea == nil && eb == nil && da == db
	}
	if isNumber(t) {
		fa, ea := strconv.ParseFloat(a, 64)
		fb, eb := strconv.ParseFloat(b, 64)
		return ea == nil && eb == nil && fa == fb
	}
	return false
}

// envs are the environment variables of the keys (config.Bindings).
type envs struct {
	byPath map[string]config.Binding
	order  []config.Binding
	secret map[string]bool
}

func envOf() envs {
	e := envs{byPath: map[string]config.Binding{}, secret: map[string]bool{}}
	for _, b := range config.Bindings() {
		e.byPath[b.Path] = b
		e.order = append(e.order, b)
		if b.Secret {
			e.secret[b.Path] = true
		}
	}
	return e
}

// Env is how the environment sets a key.
type Env struct {
	// Name is the variable; for a map with a fixed vocabulary of keys, *
	// stands for one of Keys, upper-cased.
	Name string
	// Alias is the shorter name read when Name is not set.
	Alias string
	// Keys are the map keys * stands for.
	Keys []string
	// List reports a list of strings: comma-separated.
	List bool
}

func (e envs) of(path string) *Env {
	if b, ok := e.byPath[path]; ok {
		return &Env{Name: b.Env, Alias: b.Alias}
	}
	if !strings.Contains(path, ".*") || strings.Contains(path, "[]") {
		return nil
	}
	// a map with a fixed vocabulary: the bindings of path with * as a key.
	re := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(path), `\*`, `([a-z_]+)`) + "$")
	var out *Env
	for _, b := range e.order {
		m := re.FindStringSubmatch(b.Path)
		if m == nil {
			continue
		}
		if out == nil {
			out = &Env{Name: config.EnvName(path)}
			if b.Alias != "" {
				rest, _ := strings.CutPrefix(path, "channels.")
				out.Alias = config.EnvName(rest)
			}
		}
		out.Keys = append(out.Keys, m[1])
	}
	return out
}
