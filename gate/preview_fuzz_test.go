package gate

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// Bounds FuzzPreview holds Preview to, in runes: a summary is the tool's
// name, the argument and a size; a preview is at most a path, an excerpt
// (previewRunes and its last line), a remark and the other fields.
const (
	maxSummaryRunes = toolRunes + summaryRunes + 40
	maxPreviewRunes = pathRunes + previewRunes + lineRunes + descRunes + otherRunes + 100
)

// FuzzPreview: whatever the tool, input and language, Preview does not
// panic and returns valid UTF-8 within its bounds, a summary of one line
// without control or formatting characters, a preview without them but
// its line breaks; and the value after password= in a command, a file's
// content or any field never shows.
func FuzzPreview(f *testing.F) {
	for _, tt := range previewTests {
		f.Add(tt.tool, []byte(tt.input), tt.lang, "")
	}
	f.Add("Bash", []byte(`{"command":"`+strings.Repeat("长\\n", 3000)+`"}`), "en", "x\u202e\ny")
	f.Add("Write", []byte(`{"file_path":"/a","content":"-----BEGIN PRIVATE KEY-----\n"}`), "zh", "-----END PRIVATE KEY-----")
	f.Fuzz(func(t *testing.T, tool string, input []byte, lang, text string) {
		check := func(what string, summary, preview string) {
			t.Helper()
			if !utf8.ValidString(summary) || !utf8.ValidString(preview) {
				t.Fatalf("%s: invalid UTF-8: %q / %q", what, summary, preview)
			}
			if n := utf8.RuneCountInString(summary); n > maxSummaryRunes {
				t.Fatalf("%s: the summary is %d runes", what, n)
			}
			if n := utf8.RuneCountInString(preview); n > maxPreviewRunes {
				t.Fatalf("%s: the preview is %d runes", what, n)
			}
			for _, r := range summary {
				if invisible(r) || r == '\u2028' || r == '\u2029' {
					t.Fatalf("%s: the summary %q holds %U", what, summary, r)
				}
			}
			for _, r := range preview {
				if r != '\n' && invisible(r) || r == '\u2028' || r == '\u2029' {
					t.Fatalf("%s: the preview %q holds %U", what, preview, r)
				}
			}
		}
		s, p := Preview(tool, input, lang)
		check("fuzzed input", s, p)

		// The fuzzed text in each kind of field, then a password.
		secret := text + " password=SEKRETVALUE"
		for _, in := range []map[string]any{
			{"command": secret, "description": secret},
			{"file_path": "/a", "content": secret},
			{"file_path": "/a", "old_string": secret, "new_string": secret},
			{"file_path": "/a", "edits": []any{map[string]any{"old_string": text, "new_string": secret}}},
			{"url": secret, "x": []any{secret}},
		} {
			b, err := json.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			for _, tool := range []string{"Bash", "Write", "Edit", "MultiEdit", tool} {
				s, p := Preview(tool, b, lang)
				check(tool, s, p)
				if strings.Contains(s, "SEKRETVALUE") || strings.Contains(p, "SEKRETVALUE") {
					t.Fatalf("%s %s: the password shows: %q / %q", tool, b, s, p)
				}
			}
		}
	})
}

// TestInvisible: what the fuzz test checks for is what Preview removes.
func TestInvisible(t *testing.T) {
	for _, r := range []rune{0, '\t', '\r', '\x1b', 0x7f, 0x85, '\u200b', '\u200d', '\u202e', '\u2066', '\ufeff', '\u061c'} {
		if !invisible(r) {
			t.Errorf("%U is not invisible", r)
		}
	}
	for _, r := range []rune{'a', ' ', '长', '…', 'é'} {
		if invisible(r) || unicode.IsControl(r) {
			t.Errorf("%U is invisible", r)
		}
	}
}
