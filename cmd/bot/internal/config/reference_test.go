package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/cmd/bot/internal/config"
	"github.com/hitlbot/hitlbot/cmd/bot/internal/config/refdoc"
)

const moduleRoot = "../../../.."

// TestReference checks that docs/configuration.md and
// docs/configuration.zh-CN.md are exactly what the generator writes from
// the struct comments, defaults.yaml and refdoc/zh.yaml now, and that
// they have a section for every key.
func TestReference(t *testing.T) {
	files, err := refdoc.Generate(moduleRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{refdoc.FileEN, refdoc.FileZH} {
		have, err := os.ReadFile(filepath.Join(moduleRoot, name))
		if err != nil {
			t.Fatalf("%v; run %s", err, refdoc.Command)
		}
		want := files[name]
		if string(have) != string(want) {
			t.Errorf("%s is not what the generator writes from the source (%s); regenerate it: %s", name, firstDiff(string(have), string(want)), refdoc.Command)
		}
		for _, p := range config.AllKeyPaths() {
			if !strings.Contains(string(want), "\n### `"+p+"`\n") && !strings.Contains(string(want), "\n## "+p+"\n") {
				t.Errorf("%s has no section for %s", name, p)
			}
		}
	}
}

// firstDiff says where two texts part.
func firstDiff(have, want string) string {
	h, w := strings.Split(have, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(h) && i < len(w); i++ {
		if h[i] != w[i] {
			return fmt.Sprintf("line %d is\n\t%s\nand should be\n\t%s\n", i+1, h[i], w[i])
		}
	}
	return fmt.Sprintf("the file has %d lines, the generator writes %d", len(h), len(w))
}
