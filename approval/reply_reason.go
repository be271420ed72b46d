package approval

import (
	"strings"
	"unicode/utf8"

	"github.com/hitlbot/hitlbot/internal/redact"
)

// ParseReason says what text means for a pending approval, as Parse, and
// reads a reason given with a cancel: "取消 用 orders_archive 表",
// "取消：表不对", "cancel: wrong table", "reject, not today". Every
// configured cancel keyword may lead; a confirm keyword never does.
//
// A text Parse reads as a decision is that decision, with no reason
// ("不要确认" is a plain cancel). Otherwise the text is ReplyCancel with a
// reason only when, after NormalizeReply, it starts with a cancel keyword
// (the longest that fits) followed by a separator (a space or one of
// : , ; 、 。 ! . ~ - — –, full-width forms included) and a reason, and
//
//   - it is not a question (a question mark anywhere, a question particle
//     at the end, a question phrase anywhere: "取消吗？", "cancel, why?");
//   - it does not start with a confirm keyword (followed by a separator or
//     nothing) nor with a phrase that agrees ("no problem", "no worries");
//   - the reason does not start with a keyword of either list followed by
//     a separator or nothing ("不 确认", "取消 取消", "no, ok", "不 取消":
//     a contradiction or a retyped keyword is no reason).
//
// Anything else is ReplyNone (the text goes to the agent), so a cancel
// keyword glued to more text ("取消订单 42") is not a decision. The reason
// is the rest of the text as written (case and full-width forms kept;
// Feishu mention placeholders dropped), cleaned by redact.Clean and cut to
// MaxNoteRunes. It is non-empty exactly when the reply is a cancel read
// from a keyword and a reason.
func (p *ReplyParser) ParseReason(text string) (Reply, string) {
	if r := p.Parse(text); r != ReplyNone {
		return r, ""
	}
	if strings.ContainsFunc(text, isQuestionMark) {
		return ReplyNone, ""
	}
	n := NormalizeReply(text)
	if questionMarker(n) != "" || agrees(n) || p.leading(n, ReplyConfirm) != "" {
		return ReplyNone, ""
	}
	k := p.leading(n, ReplyCancel)
	if k == "" {
		return ReplyNone, ""
	}
	rest := strings.TrimLeftFunc(n[len(k):], isReasonSep)
	if rest == "" || p.leading(rest, ReplyConfirm) != "" || p.leading(rest, ReplyCancel) != "" {
		return ReplyNone, ""
	}
	reason := reasonAfter(text, k)
	if reason == "" {
		// A mention inside the keyword: the normal form is all there is.
		reason = rest
	}
	reason = redact.Clean(reason, MaxNoteRunes)
	if reason == "" {
		return ReplyNone, ""
	}
	return ReplyCancel, reason
}

// agreeing lists phrases that start with a cancel keyword and agree:
// a text starting with one (followed by a separator or nothing) is never a
// cancel with a reason.
var agreeing = []string{"no problem", "no problems", "no prob", "no probs", "no worries", "no worry",
	"no doubt", "no rush", "no hurry", "no big deal", "no matter"}

// agrees reports whether the normalised text n starts with an agreeing
// phrase.
func agrees(n string) bool {
	for _, a := range agreeing {
		if atBoundary(n, a) {
			return true
		}
	}
	return false
}

// leading returns the longest keyword of kind r that the normalised text n
// starts with, followed by a separator or nothing; "" if none.
func (p *ReplyParser) leading(n string, r Reply) string {
	best := ""
	for k, kr := range p.words {
		if kr == r && len(k) > len(best) && atBoundary(n, k) {
			best = k
		}
	}
	return best
}

// atBoundary reports whether n starts with k followed by a separator or
// nothing.
func atBoundary(n, k string) bool {
	if !strings.HasPrefix(n, k) {
		return false
	}
	if len(n) == len(k) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(n[len(k):])
	return isReasonSep(r)
}

// isReasonSep reports whether r (folded: full-width forms are ASCII) may
// stand between a cancel keyword and its reason.
func isReasonSep(r rune) bool {
	return r == ' ' || r == '-' || r == '—' || r == '–' || isTrimPunct(r)
}

// foldOne is the fold NormalizeReply applies to one rune of the raw text.
func foldOne(r rune) rune {
	if r < utf8.RuneSelf {
		switch {
		case 'A' <= r && r <= 'Z':
			return r + 'a' - 'A'
		case r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == '\r':
			return ' '
		}
		return r
	}
	return foldRune(r)
}

// reasonAfter returns what follows the normalised keyword k at the start of
// the raw text, as written: it skips what NormalizeReply trims or removes
// before the keyword (spaces, punctuation, mentions), matches k rune by
// rune (folded), then drops the separators after it and every Feishu
// mention placeholder, and collapses runs of spaces. It returns "" when the
// raw text does not follow k (a mention inside the keyword).
func reasonAfter(text, k string) string {
	i := skipLead(text)
	var buf [utf8.UTFMax]byte
	for j := 0; j < len(k); {
		if i >= len(text) {
			return ""
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		f := foldOne(r)
		if f == ' ' {
			if k[j] != ' ' {
				return ""
			}
			j++
			for i < len(text) {
				r, size := utf8.DecodeRuneInString(text[i:])
				if foldOne(r) != ' ' {
					break
				}
				i += size
			}
			continue
		}
		e := buf[:utf8.EncodeRune(buf[:], f)]
		if !strings.HasPrefix(k[j:], string(e)) {
			return ""
		}
		j += len(e)
	}
	rest := strings.TrimLeftFunc(text[i:], func(r rune) bool { return isReasonSep(foldOne(r)) })
	var b strings.Builder
	for j := 0; j < len(rest); {
		if rest[j] == '@' {
			if n := placeholderLen([]byte(rest[j:])); n > 0 {
				j += n
				b.WriteByte(' ')
				continue
			}
		}
		b.WriteByte(rest[j])
		j++
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// skipLead returns the length of what NormalizeReply drops from the start
// of text: spaces, trimmed punctuation and mentions.
func skipLead(text string) int {
	i := 0
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		f := foldOne(r)
		switch {
		case f == ' ' || isTrimPunct(f):
			i += size
		case r == '@':
			if n := placeholderLen([]byte(text[i:])); n > 0 {
				i += n
				continue
			}
			next, _ := utf8.DecodeRuneInString(text[i+1:])
			if i+1 >= len(text) || foldOne(next) == ' ' {
				return i
			}
			for i < len(text) {
				r, size := utf8.DecodeRuneInString(text[i:])
				if foldOne(r) == ' ' {
					break
				}
				i += size
			}
		default:
			return i
		}
	}
	return i
}
