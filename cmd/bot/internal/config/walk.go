package config

import (
	"reflect"
	"strings"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

var (
	secretType   = reflect.TypeFor[Secret]()
	durationType = reflect.TypeFor[time.Duration]()
)

// EnvPrefix starts the name of every environment variable the loader reads.
const EnvPrefix = "HITLBOT_"

// Binding is one key that can be set from the environment.
type Binding struct {
	// Path is the key's YAML path, e.g. "model.openai.api_key".
	Path string
	// Env is the environment variable, e.g. "HITLBOT_MODEL_OPENAI_API_KEY".
	Env string
	// Alias is a second, shorter name read when Env is not set: the keys
	// under channels. also answer to HITLBOT_<CHANNEL>_…, e.g.
	// HITLBOT_FEISHU_APP_SECRET for HITLBOT_CHANNELS_FEISHU_APP_SECRET.
	// Empty when there is none.
	Alias string
	// Secret reports a Secret field (or a secret of a reused struct).
	Secret bool
}

// EnvName returns the environment variable of a YAML path: HITLBOT_ and the
// path upper-cased with dots as underscores.
func EnvName(path string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(path, ".", "_"))
}

// extraSecrets are secrets held as plain strings by the packages' own
// config structs (which cannot use Secret): the loader treats them as
// secrets (refused in the file, redacted in a dump).
var extraSecrets = map[string]bool{
	"model.openai.api_key":               true,
	"channels.dingtalk.client_secret":    true,
	"channels.feishu.app_secret":         true,
	"channels.feishu.encrypt_key":        true,
	"channels.feishu.verification_token": true,
}

// mapKeys lists the keys that are bindable from the environment in maps
// whose keys are a fixed vocabulary. Other maps (policy.tools, headers,
// rule args, …) have free keys and can be set in the file only.
func mapKeys(path string) []string {
	switch path {
	case "approval.policy.timeouts", "approval.policy.approvers":
		return []string{"low", "medium", "high"}
	case "approval.outcome_text":
		out := make([]string, len(approval.AllStatuses))
		for i, s := range approval.AllStatuses {
			out[i] = string(s)
		}
		return out
	}
	return nil
}

// Bindings returns every key of Config that can be set from the
// environment, in the order of the structs. Lists of objects
// (tools.http, tools.sql.databases, tools.shell.commands,
// model.rules.patterns) and maps with free keys (approval.policy.tools,
// model.openai.headers) are not among them: set those in the file. Lists of
// strings are bindable as comma-separated values.
func Bindings() []Binding {
	var out []Binding
	walkType(reflect.TypeFor[Config](), "", func(path string, t reflect.Type) {
		b := Binding{Path: path, Env: EnvName(path), Secret: t == secretType || extraSecrets[path]}
		if rest, ok := strings.CutPrefix(path, "channels."); ok {
			b.Alias = EnvName(rest)
		}
		out = append(out, b)
	})
	return out
}

// FieldKey returns a struct field's mapstructure key and whether it is
// squashed into its parent or skipped, as the loader reads it (the
// configuration reference, config/refdoc, walks the structs with it too).
func FieldKey(f reflect.StructField) (key string, squash, skip bool) {
	if !f.IsExported() {
		return "", false, true
	}
	tag := f.Tag.Get("mapstructure")
	name, opts, _ := strings.Cut(tag, ",")
	if name == "-" {
		return "", false, true
	}
	for _, o := range strings.Split(opts, ",") {
		if o == "squash" {
			return "", true, false
		}
	}
	if f.Anonymous && name == "" {
		return "", true, false
	}
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	return name, false, false
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// isScalar reports a type an environment string can decode into.
func isScalar(t reflect.Type) bool {
	if t == durationType || t == secretType {
		return true
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// walkType calls leaf for every env-bindable key under t.
func walkType(t reflect.Type, prefix string, leaf func(path string, t reflect.Type)) {
	switch {
	case isScalar(t):
		leaf(prefix, t)
		return
	case t.Kind() == reflect.Pointer && isScalar(t.Elem()):
		leaf(prefix, t.Elem())
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			key, squash, skip := FieldKey(f)
			switch {
			case skip:
			case squash:
				walkType(f.Type, prefix, leaf)
			default:
				walkType(f.Type, join(prefix, key), leaf)
			}
		}
	case reflect.Map:
		for _, k := range mapKeys(prefix) {
			walkType(t.Elem(), join(prefix, k), leaf)
		}
	case reflect.Slice:
		if isScalar(t.Elem()) {
			leaf(prefix, t)
		}
	}
}
