package approval

import "testing"

// TestTextInIsWithText: TextIn answers what With(lang).Text answers, for
// every status (and one that is none), with and without overrides.
func TestTextInIsWithText(t *testing.T) {
	texts := []OutcomeText{nil, {}, {StatusExecuted: "Done!", StatusRejected: ""}, {StatusExpired: "过期了", "nonsense": "x"}}
	statuses := append(append([]Status(nil), AllStatuses...), "nonsense", "")
	for _, text := range texts {
		for _, lang := range []string{"", "en", "zh", "zh-CN", "fr"} {
			for _, st := range statuses {
				if got, want := text.TextIn(lang, st), text.With(lang).Text(st); got != want {
					t.Errorf("%v.TextIn(%q, %q) = %q, want %q", text, lang, st, got, want)
				}
			}
		}
	}
}
