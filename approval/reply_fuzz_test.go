package approval

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// negatedTexts are negations of a confirm keyword: a text holding one of
// them is never a confirm, whatever surrounds it.
var negatedTexts = []string{"不确认", "别执行", "不要执行", "don't", "do not"}

func FuzzParseReply(f *testing.F) {
	for _, test := range replyTests {
		f.Add(test.in)
	}
	for _, test := range normalizeReplyTests {
		f.Add(test.in)
	}
	for _, test := range replyReasonTests {
		f.Add(test.in)
	}
	parsers := make([]*ReplyParser, 0, 2)
	for _, cfg := range []ReplyConfig{{}, *customReplies} {
		p, err := NewReplyParser(cfg)
		if err != nil {
			f.Fatal(err)
		}
		parsers = append(parsers, p)
	}
	f.Fuzz(func(t *testing.T, text string) {
		n := NormalizeReply(text)
		if nn := NormalizeReply(n); nn != n {
			t.Fatalf("%q: NormalizeReply is not idempotent: %q, then %q", text, n, nn)
		}
		if !utf8.ValidString(n) || strings.HasPrefix(n, " ") || strings.HasSuffix(n, " ") || strings.Contains(n, "  ") {
			t.Fatalf("%q: normalised to %q", text, n)
		}
		for i, p := range parsers {
			got := p.Parse(text)
			if again := p.Parse(text); again != got {
				t.Fatalf("%q (parser %d): got %v, then %v", text, i, got, again)
			}
			// (A question mark in a mention is dropped with the mention; the
			// text is still a question, checked below.)
			if ofNormal := p.Parse(n); ofNormal != got && !strings.ContainsFunc(text, isQuestionMark) {
				t.Fatalf("%q (parser %d): got %v, but %v for its normal form %q", text, i, got, ofNormal, n)
			}
			// A question is never a decision: no text holding a question
			// mark (? ？ or another form) or ending in a question particle
			// confirms or cancels.
			if got != ReplyNone {
				if j := strings.IndexFunc(text, isQuestionMark); j >= 0 {
					t.Fatalf("%q (parser %d): got %v, but it holds the question mark %q", text, i, got, []rune(text[j:])[0])
				}
				if strings.ContainsAny(text, "?？") {
					t.Fatalf("%q (parser %d): got %v, but it holds a question mark", text, i, got)
				}
				if q := questionMarker(n); q != "" {
					t.Fatalf("%q (parser %d): got %v, but its normal form %q is a question (%q)", text, i, got, n, q)
				}
			}
			checkReason(t, p, i, text, got)
			if got != ReplyConfirm {
				continue
			}
			for _, neg := range negatedTexts {
				if strings.Contains(text, neg) {
					t.Fatalf("%q (parser %d): got %v, but it holds %q", text, i, got, neg)
				}
			}
			if m := negationMarker(n); m != "" {
				t.Fatalf("%q (parser %d): got %v, but its normal form %q holds %q", text, i, got, n, m)
			}
		}
	})
}

// checkReason checks ParseReason against Parse's reply got: it reads every
// decision of Parse alike and with no reason, and adds only cancels with a
// reason, of texts that start with a cancel keyword and are no question.
// So a non-empty reason only ever comes with ReplyCancel, and never for a
// text Parse reads as ReplyConfirm.
func checkReason(t *testing.T, p *ReplyParser, i int, text string, got Reply) {
	t.Helper()
	r, reason := p.ParseReason(text)
	if again, againReason := p.ParseReason(text); again != r || againReason != reason {
		t.Fatalf("%q (parser %d): got %v %q, then %v %q", text, i, r, reason, again, againReason)
	}
	if got != ReplyNone {
		if r != got || reason != "" {
			t.Fatalf("%q (parser %d): Parse says %v, ParseReason %v %q", text, i, got, r, reason)
		}
		return
	}
	if r == ReplyNone && reason == "" {
		return
	}
	if r != ReplyCancel || reason == "" {
		t.Fatalf("%q (parser %d): Parse says none, ParseReason %v %q (want none, or cancel with a reason)", text, i, r, reason)
	}
	if !utf8.ValidString(reason) || utf8.RuneCountInString(reason) > MaxNoteRunes+1 || reason != strings.TrimSpace(reason) {
		t.Fatalf("%q (parser %d): reason %q", text, i, reason)
	}
	if strings.ContainsFunc(text, isQuestionMark) {
		t.Fatalf("%q (parser %d): a cancel with the reason %q, but it holds a question mark", text, i, reason)
	}
	n := NormalizeReply(text)
	if q := questionMarker(n); q != "" {
		t.Fatalf("%q (parser %d): a cancel with the reason %q, but its normal form %q is a question (%q)", text, i, reason, n, q)
	}
	if p.leading(n, ReplyCancel) == "" || p.leading(n, ReplyConfirm) != "" {
		t.Fatalf("%q (parser %d): a cancel with the reason %q, but its normal form %q does not start with a cancel keyword alone", text, i, reason, n)
	}
}
