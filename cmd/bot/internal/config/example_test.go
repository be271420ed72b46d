package config

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

const exampleFile = "../../../../config.yaml.example"

// allKeys lists every key name under t, in lists and maps too.
func allKeys(t reflect.Type, prefix string, out map[string]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == durationType || t == secretType {
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
				allKeys(f.Type, prefix, out)
			default:
				out[join(prefix, key)] = key
				allKeys(f.Type, join(prefix, key), out)
			}
		}
	case reflect.Map:
		allKeys(t.Elem(), prefix+".*", out)
	case reflect.Slice:
		allKeys(t.Elem(), prefix+"[]", out)
	}
}

// TestExample checks config.yaml.example: it loads and validates as it is,
// it is the zero config, and it mentions every key (commented or not).
func TestExample(t *testing.T) {
	exampleFile, err := filepath.Abs(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	c, err := Load(Options{File: exampleFile})
	if err != nil {
		t.Fatalf("the example does not load:\n%v", err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("the example does not validate:\n%v", err)
	}
	d, err := Load(Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.file = ""
	got, _ := c.Dump()
	want, _ := d.Dump()
	if string(got) != string(want) {
		t.Errorf("the example is not the zero config:\n--- example\n%s\n--- defaults\n%s", got, want)
	}

	text, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	allKeys(reflect.TypeFor[Config](), "", keys)
	for path, key := range keys {
		if !regexp.MustCompile(`(?m)^[\s#-]*(\{.*\b)?` + regexp.QuoteMeta(key) + `:`).Match(text) {
			t.Errorf("the example does not mention %s (%q)", path, key)
		}
	}
	for _, b := range Bindings() {
		if b.Secret && !strings.Contains(string(text), b.Env) {
			t.Errorf("the example does not name %s for the secret %s", b.Env, b.Path)
		}
	}
}
