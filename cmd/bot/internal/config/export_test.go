package config

import "reflect"

// AllKeyPaths lists every key path of Config (allKeys), for the tests of
// package config_test.
func AllKeyPaths() []string {
	keys := map[string]string{}
	allKeys(reflect.TypeFor[Config](), "", keys)
	out := make([]string, 0, len(keys))
	for p := range keys {
		out = append(out, p)
	}
	return out
}
