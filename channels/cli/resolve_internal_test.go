package cli

import (
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
)

// FuzzParseResolution: the answer to the resolve prompt is a resolution
// only when its first word names one; the note is the rest, trimmed; no
// choice has no note. Seeds are the documented forms.
func FuzzParseResolution(f *testing.F) {
	for _, s := range []string{"d", "done rows gone", "R", "retry", "a not needed", "放弃", "重试 再来", "已完成 已核对", "", " ", "x", "dd", "retry\tnow", "d\u00a0x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		r, note := parseResolution(line)
		if r == "" {
			if note != "" {
				t.Fatalf("%q: no choice but a note %q", line, note)
			}
			return
		}
		if !r.Valid() || note != strings.TrimSpace(note) {
			t.Fatalf("%q: %q, %q", line, r, note)
		}
		word, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		want := map[string]approval.Resolution{"d": approval.ResolveDone, "done": approval.ResolveDone, "已完成": approval.ResolveDone,
			"r": approval.ResolveRetry, "retry": approval.ResolveRetry, "重试": approval.ResolveRetry,
			"a": approval.ResolveAbandon, "abandon": approval.ResolveAbandon, "放弃": approval.ResolveAbandon}[strings.ToLower(word)]
		if r != want {
			t.Fatalf("%q read as %q, want %q", line, r, want)
		}
	})
}
