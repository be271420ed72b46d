// Package upstream checks, in tests, that a copy of a module's files in
// third_party/ is the module's own code with the changes its README names
// and no others.
package upstream

import (
	"bytes"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Dir is the module cache directory of module at the version go.mod
// requires, or a skip of t when the module is not downloaded (an offline
// machine with no module cache cannot build the copies' users either).
func Dir(t testing.TB, module string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Skipf("go list -m %s: %v (module not in the cache)", module, err)
	}
	return dir
}

// Same fails t for each file of files (names in the directory copy) that
// differs from the same file in upstream once each of edits is applied to
// the upstream text (old → new, each found at least once) and both are
// gofmt'd (an edited import moves where gofmt sorts it).
func Same(t testing.TB, upstream, copy string, files []string, edits map[string][][2]string) {
	t.Helper()
	for _, f := range files {
		want, err := os.ReadFile(filepath.Join(upstream, f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, e := range edits[f] {
			if !bytes.Contains(want, []byte(e[0])) {
				t.Errorf("%s: upstream no longer holds %q: take the copy again (third_party/README.md)", f, e[0])
			}
			want = bytes.ReplaceAll(want, []byte(e[0]), []byte(e[1]))
		}
		got, err := os.ReadFile(filepath.Join(copy, f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if want, err = format.Source(want); err != nil {
			t.Errorf("%s: the upstream text with the edits is not Go: %v", f, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s beyond the changes third_party/README.md names: take it again", filepath.Join(copy, f), filepath.Join(upstream, f))
		}
	}
}
