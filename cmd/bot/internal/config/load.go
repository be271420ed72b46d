package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

//go:embed defaults.yaml
var defaultsYAML []byte

// DefaultFile is the config file read when Options.File is empty and the
// file exists in the working directory.
const DefaultFile = "config.yaml"

// Options say where a config comes from.
type Options struct {
	// File is the YAML file. Empty: DefaultFile when it exists, else none
	// (the embedded defaults and the environment alone).
	File string
	// Overrides set keys above the file and the environment: the
	// command-line flags (-listen sets "server.listen", -data
	// "server.data_dir").
	Overrides map[string]any
}

// Load builds the config: the embedded defaults, then the file, then the
// environment (HITLBOT_…, one explicit binding per key: see Bindings), then
// Overrides. It reports every problem of reading and decoding, each at its
// YAML path: a malformed file, an unknown key, a value of the wrong type
// (a duration without a unit), a secret written in the file, a secret file
// that cannot be read. It does not Validate.
//
// On problems it still returns the config as far as it could be decoded,
// so that `bot check` can go on validating the rest.
func Load(opts Options) (*Config, error) {
	var ps Problems
	v := viper.NewWithOptions(viper.KeyDelimiter("."))
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(defaultsYAML)); err != nil {
		return nil, fmt.Errorf("config: embedded defaults: %w", err)
	}

	file := opts.File
	if file == "" {
		if _, err := os.Stat(DefaultFile); err == nil {
			file = DefaultFile
		}
	}
	var raw map[string]any // the file as written (keys keep their case)
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, Problems{{Msg: fmt.Sprintf("config file %s does not exist", file)}}
			}
			return nil, Problems{{Msg: fmt.Sprintf("config file: %v", err)}}
		}
		if err := yaml.Unmarshal(b, &raw); err != nil {
			return nil, Problems{{Msg: fmt.Sprintf("config file %s is not valid YAML: %v", file, err)}}
		}
		if raw != nil {
			// MergeConfigMap folds the keys of the map it is given in
			// place: give it a copy of its own.
			var layer map[string]any
			_ = yaml.Unmarshal(b, &layer)
			if err := v.MergeConfigMap(layer); err != nil {
				return nil, Problems{{Msg: fmt.Sprintf("config file %s: %v", file, err)}}
			}
		}
	}

	for _, b := range Bindings() {
		names := []string{b.Path, b.Env}
		if b.Alias != "" {
			names = append(names, b.Alias) // read when b.Env is not set
		}
		if err := v.BindEnv(names...); err != nil {
			return nil, fmt.Errorf("config: bind %s: %w", b.Env, err)
		}
	}
	for k, val := range opts.Overrides {
		v.Set(k, val)
	}

	cfg := &Config{file: file}
	settings := v.AllSettings()
	ps.addDecodeErr("", decode(settings, cfg))
	ps.inWords(settings)

	// Viper folds every key to lower case, also inside lists and free
	// maps. Where case matters (JSON schema keywords and property names,
	// template parameters, rule arguments, header names), the file's own
	// text is decoded again. These keys cannot come from the environment,
	// so the file is the only layer; their problems were reported above.
	preserveCase(raw, cfg)

	// Viper drops keys that hold nothing ("polcy: {}"): look for
	// unknown keys in the file's text too.
	unknownKeys(raw, reflect.TypeFor[Config](), "", &ps)
	checkFileSecrets(raw, &ps)
	checkEnv(&ps)
	resolveSecrets(cfg, &ps)
	if cfg.Audit.File == "" && cfg.Server.DataDir != "" {
		cfg.Audit.File = filepath.Join(cfg.Server.DataDir, "audit.jsonl")
	}
	return cfg, ps.Err()
}

// decoderConfig is the mapstructure setup of every decode: unknown keys are
// errors, durations need a unit, strings from the environment become
// numbers, booleans, durations and lists of strings.
func decoderConfig(out any) *mapstructure.DecoderConfig {
	return &mapstructure.DecoderConfig{
		Result:           out,
		ErrorUnused:      true,
		WeaklyTypedInput: true,
		TagName:          "mapstructure",
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			durationHook,
			mapstructure.StringToSliceHookFunc(","),
		),
	}
}

func decode(in any, out any) error {
	d, err := mapstructure.NewDecoder(decoderConfig(out))
	if err != nil {
		return err
	}
	return d.Decode(in)
}

// durationHook parses durations ("5m", "1h30m") and refuses a bare
// number, which mapstructure would take as nanoseconds (30 would be 30ns);
// 0 is accepted.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if to != durationType {
		return data, nil
	}
	switch from.Kind() {
	case reflect.String:
		s := strings.TrimSpace(reflect.ValueOf(data).String())
		if s == "" {
			return time.Duration(0), nil
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not a duration: write one such as \"30s\", \"5m\" or \"1h30m\"", s)
		}
		return d, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		if reflect.ValueOf(data).IsZero() {
			return time.Duration(0), nil
		}
		return nil, fmt.Errorf("%v has no unit: write a duration such as \"30s\", \"5m\" or \"1h30m\"", data)
	}
	return data, nil
}

// lookup walks a raw YAML map by keys, case-insensitively.
func lookup(m map[string]any, keys ...string) (any, bool) {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		found := false
		for mk, mv := range mm {
			if strings.EqualFold(mk, k) {
				cur, found = mv, true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return cur, true
}

// preserveCase decodes again, from the file's own text, the parts whose
// keys are case-sensitive.
func preserveCase(raw map[string]any, cfg *Config) {
	if raw == nil {
		return
	}
	again := func(target any, keys ...string) {
		if sub, ok := lookup(raw, keys...); ok && sub != nil {
			fresh := reflect.New(reflect.TypeOf(target).Elem())
			if decode(sub, fresh.Interface()) == nil {
				reflect.ValueOf(target).Elem().Set(fresh.Elem())
			}
		}
	}
	again(&cfg.Tools.HTTP, "tools", "http")
	again(&cfg.Tools.Shell.Commands, "tools", "shell", "commands")
	again(&cfg.Model.Rules.Patterns, "model", "rules", "patterns")
	again(&cfg.Model.OpenAI.Headers, "model", "openai", "headers")
	// Tool patterns: Bash(rm *), Read(*.go); viper would fold them to
	// lower case and split them at dots.
	again(&cfg.Agents, "agents")
}

// checkFileSecrets refuses secrets written in the file itself.
func checkFileSecrets(raw map[string]any, ps *Problems) {
	if raw == nil {
		return
	}
	for _, b := range Bindings() {
		if !b.Secret {
			continue
		}
		val, ok := lookup(raw, strings.Split(b.Path, ".")...)
		if !ok || val == nil || fmt.Sprint(val) == "" {
			continue
		}
		ps.add(b.Path, fmt.Sprintf("a secret must not be written in the config file: set the environment variable %s, or %s_file to a file that holds it", b.Env, b.Path))
	}
	if u, ok := lookup(raw, "store", "redis", "url"); ok {
		if s, _ := u.(string); s != "" {
			if pu, err := url.Parse(s); err == nil && pu.User != nil {
				if _, has := pu.User.Password(); has {
					ps.add("store.redis.url", "the URL holds a password, which must not be written in the config file: leave it out of the URL and set HITLBOT_STORE_REDIS_PASSWORD (or store.redis.password_file)")
				}
			}
		}
	}
	if dbs, ok := lookup(raw, "tools", "sql", "databases"); ok {
		list, _ := dbs.([]any)
		for i, d := range list {
			m, _ := d.(map[string]any)
			dsn, _ := lookup(m, "dsn")
			driver, _ := lookup(m, "driver")
			if s, _ := dsn.(string); s != "" {
				switch strings.ToLower(fmt.Sprint(driver)) {
				case "sqlite", "sqlite3":
				default:
					ps.add(fmt.Sprintf("tools.sql.databases[%d].dsn", i), "a DSN that can hold a password must not be written in the config file: set dsn_env to the name of an environment variable that holds it, or dsn_file to a file (in the file, dsn is accepted for sqlite only)")
				}
			}
		}
	}
}

// readSecretFile reads a secret file, trimmed of surrounding white space.
func readSecretFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return s, nil
}

// resolveSecrets fills secrets from their *_file (and dsn_env) siblings.
func resolveSecrets(cfg *Config, ps *Problems) {
	fromFile := func(path string, s *Secret, file string) {
		if file == "" {
			return
		}
		if *s != "" {
			ps.add(path, fmt.Sprintf("set either %s (from the environment) or %s_file, not both", path, path))
			return
		}
		v, err := readSecretFile(file)
		if err != nil {
			ps.add(path+"_file", err.Error())
			return
		}
		*s = Secret(v)
	}
	fromFile("store.redis.password", &cfg.Store.Redis.Password, cfg.Store.Redis.PasswordFile)
	fromFile("channels.web.tokens", &cfg.Channels.Web.Tokens, cfg.Channels.Web.TokensFile)
	fromFile("channels.api.tokens", &cfg.Channels.API.Tokens, cfg.Channels.API.TokensFile)
	fromFile("tracing.headers", &cfg.Tracing.Headers, cfg.Tracing.HeadersFile)
	plain := func(path string, s *string, file string) {
		if file == "" {
			return
		}
		if *s != "" {
			ps.add(path, fmt.Sprintf("set either %s (from the environment) or %s_file, not both", path, path))
			return
		}
		v, err := readSecretFile(file)
		if err != nil {
			ps.add(path+"_file", err.Error())
			return
		}
		*s = v
	}
	plain("channels.dingtalk.client_secret", &cfg.Channels.DingTalk.ClientSecret, cfg.Channels.DingTalk.ClientSecretFile)
	fs := &cfg.Channels.Feishu
	plain("channels.feishu.app_secret", &fs.AppSecret, fs.AppSecretFile)
	plain("channels.feishu.encrypt_key", &fs.EncryptKey, fs.EncryptKeyFile)
	plain("channels.feishu.verification_token", &fs.VerificationToken, fs.VerificationTokenFile)

	for i := range cfg.Tools.SQL.Databases {
		d := &cfg.Tools.SQL.Databases[i]
		path := fmt.Sprintf("tools.sql.databases[%d]", i)
		n := 0
		for _, s := range []string{d.DSN, d.DSNEnv, d.DSNFile} {
			if s != "" {
				n++
			}
		}
		if n > 1 {
			ps.add(path, "set one of dsn, dsn_env and dsn_file")
			continue
		}
		switch {
		case d.DSNEnv != "":
			v, ok := os.LookupEnv(d.DSNEnv)
			if !ok || strings.TrimSpace(v) == "" {
				ps.add(path+".dsn_env", fmt.Sprintf("the environment variable %s is not set", d.DSNEnv))
				continue
			}
			d.DSN = v
		case d.DSNFile != "":
			v, err := readSecretFile(d.DSNFile)
			if err != nil {
				ps.add(path+".dsn_file", err.Error())
				continue
			}
			d.DSN = v
		}
	}
}

// Check loads and validates: every problem of both, each at its path (a
// key that failed to load is not reported again by validation). The config
// is nil only when the file could not be read at all.
func Check(opts Options) (*Config, Problems) {
	cfg, err := Load(opts)
	var ps Problems
	if err != nil {
		if !errors.As(err, &ps) {
			ps = Problems{{Msg: err.Error()}}
		}
	}
	if cfg == nil {
		return nil, ps
	}
	var vs Problems
	if verr := cfg.Validate(); verr != nil {
		errors.As(verr, &vs)
	}
	for _, p := range vs {
		if !ps.Has(p.Path) {
			ps = append(ps, p)
		}
	}
	return cfg, ps
}

// unknownKeys reports the keys of a raw YAML value that t has no field
// for, unless already reported.
func unknownKeys(raw any, t reflect.Type, path string, ps *Problems) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := raw.(map[string]any)
		if !ok {
			return
		}
		fields := map[string]reflect.Type{}
		structKeys(t, fields)
		for k, v := range m {
			lk := strings.ToLower(k)
			ft, ok := fields[lk]
			if !ok {
				if p := join(path, lk); !ps.Has(p) {
					ps.add(p, unknownKey(p))
				}
				continue
			}
			unknownKeys(v, ft, join(path, lk), ps)
		}
	case reflect.Map:
		if m, ok := raw.(map[string]any); ok {
			for k, v := range m {
				unknownKeys(v, t.Elem(), join(path, strings.ToLower(k)), ps)
			}
		}
	case reflect.Slice:
		if l, ok := raw.([]any); ok {
			for i, v := range l {
				unknownKeys(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i), ps)
			}
		}
	}
}

// structKeys collects the keys of a struct, squashed fields included.
func structKeys(t reflect.Type, into map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		key, squash, skip := FieldKey(f)
		switch {
		case skip:
		case squash:
			structKeys(f.Type, into)
		default:
			into[key] = f.Type
		}
	}
}
