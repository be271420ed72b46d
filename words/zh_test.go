package words

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/words/wordstest"
)

// apiFields are the HTTP API's field names and values (its JSON, its
// headers): identifiers a client sends as written, which the API's own
// sentences (the keys named API…) name in every language.
var apiFields = []string{"message", "confirmed", "decision", "calls", "resolution", "state", "token", "arguments",
	"Authorization", "Bearer", "bearer", "all", "pending", "executed", "rejected", "expired", "edit"}

// keyNames maps each key to its name, read from keys.go (the const block
// declares one key a line, in order, from none).
func keyNames(t *testing.T) map[Key]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "keys.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[Key]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		k := none
		for _, s := range g.Specs {
			for _, n := range s.(*ast.ValueSpec).Names {
				names[k] = n.Name
				k++
			}
		}
	}
	if names[numKeys] != "numKeys" {
		t.Fatalf("keys.go: the const block does not end at numKeys (%q)", names[numKeys])
	}
	return names
}

// TestChineseHasNoEnglish: every zh sentence of the catalogue is Chinese
// except names, code and values (wordstest.English); the API's sentences
// may name its fields.
func TestChineseHasNoEnglish(t *testing.T) {
	names := keyNames(t)
	for _, k := range Keys() {
		var extra []string
		if strings.HasPrefix(names[k], "API") {
			extra = apiFields
		}
		if w := wordstest.English(zh[k], extra...); len(w) > 0 {
			t.Errorf("%s: zh %q holds English %q", names[k], zh[k], w)
		}
	}
}

// TestEnglishFound: the check finds English words and leaves code and
// values alone, so TestChineseHasNoEnglish can fail.
func TestEnglishFound(t *testing.T) {
	for _, tc := range []struct {
		s     string
		names []string
		want  string
	}{
		{"sql_execute was rejected, so it did not run.", nil, "was rejected did not run"},
		{"INSERT done on demo: 1 row affected", nil, "done demo row affected"},
		{"sql_execute 已被拒绝，未执行。", nil, ""},
		{"INSERT 已在 demo 上执行：影响 1 行", nil, "demo"},
		{"INSERT 已在 demo 上执行：影响 1 行", []string{"demo"}, ""},
		{"用 /call <工具> <JSON 参数> 调用；/revoke all", nil, ""},
		{"参数 `path` 缺失，\"x y z\" 是值，用 /?token=abc 打开", nil, ""},
		{"中风险 — MEDIUM", nil, ""},
	} {
		got := strings.Join(wordstest.English(tc.s, tc.names...), " ")
		if got != tc.want {
			t.Errorf("English(%q) = %q, want %q", tc.s, got, tc.want)
		}
	}
}
