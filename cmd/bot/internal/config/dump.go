package config

import (
	"fmt"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Dump returns the config as YAML, keys in the order of the structs, with
// every secret shown as "<secret>": Secret fields, model.openai.api_key,
// model.openai.headers values, SQL DSNs, literal HTTP header values and a
// password in store.redis.url. It is what `bot check` prints.
func (c *Config) Dump() ([]byte, error) {
	n, err := toNode(reflect.ValueOf(*c), "")
	if err != nil {
		return nil, err
	}
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{n}}
	return yaml.Marshal(doc)
}

// redactPath reports whether the value at a normalised path ([] for list
// indexes, * for map keys) is a secret of a reused struct.
func redactPath(path string, v reflect.Value) (string, bool) {
	switch {
	case extraSecrets[path], path == "model.openai.headers.*", path == "tools.sql.databases[].dsn":
		if v.Kind() == reflect.String && v.String() == "" {
			return "", true
		}
		return Redacted, true
	case path == "tools.http[].headers.*":
		if s := v.String(); !strings.Contains(s, "${") {
			return Redacted, true
		}
	case path == "store.redis.url":
		if u, err := url.Parse(v.String()); err == nil && u.User != nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), "REDACTED")
				return strings.Replace(u.String(), "REDACTED", Redacted, 1), true
			}
		}
	}
	return "", false
}

func scalar(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

// fmtDuration drops the zero units of time.Duration.String: 5m, 168h, 1h30m.
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func toNode(v reflect.Value, path string) (*yaml.Node, error) {
	if s, ok := redactPath(path, v); ok {
		return scalar(s), nil
	}
	switch v.Type() {
	case secretType:
		return scalar(Secret(v.String()).show()), nil
	case durationType:
		return &yaml.Node{Kind: yaml.ScalarNode, Value: fmtDuration(time.Duration(v.Int()))}, nil
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
		}
		return toNode(v.Elem(), path)
	case reflect.Struct:
		m := &yaml.Node{Kind: yaml.MappingNode}
		if err := structInto(m, v, path); err != nil {
			return nil, err
		}
		return m, nil
	case reflect.Map:
		m := &yaml.Node{Kind: yaml.MappingNode}
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, k := range keys {
			val, err := toNode(v.MapIndex(k), path+".*")
			if err != nil {
				return nil, err
			}
			m.Content = append(m.Content, scalar(fmt.Sprint(k)), val)
		}
		if len(keys) == 0 {
			m.Style = yaml.FlowStyle
		}
		return m, nil
	case reflect.Slice, reflect.Array:
		s := &yaml.Node{Kind: yaml.SequenceNode}
		for i := 0; i < v.Len(); i++ {
			val, err := toNode(v.Index(i), path+"[]")
			if err != nil {
				return nil, err
			}
			s.Content = append(s.Content, val)
		}
		if v.Len() == 0 {
			s.Style = yaml.FlowStyle
		}
		return s, nil
	}
	n := &yaml.Node{}
	if err := n.Encode(v.Interface()); err != nil {
		return nil, fmt.Errorf("config: dump %s: %w", path, err)
	}
	return n, nil
}

func structInto(m *yaml.Node, v reflect.Value, path string) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		key, squash, skip := FieldKey(t.Field(i))
		switch {
		case skip:
		case squash:
			if err := structInto(m, v.Field(i), path); err != nil {
				return err
			}
		default:
			val, err := toNode(v.Field(i), join(path, key))
			if err != nil {
				return err
			}
			m.Content = append(m.Content, scalar(key), val)
		}
	}
	return nil
}
