package approval

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Reply is what a typed message means for a pending approval.
//
// A message is a decision only when, after NormalizeReply, the whole text
// is exactly one keyword (or a recognised negation of a confirm keyword,
// which cancels). Anything else is ReplyNone: the message goes to the
// agent's queue and the approval keeps waiting. A missed decision costs a
// retype; a wrong confirm runs a tool, so the parser errs towards none.
//
// A question is never a decision, neither a confirm nor a cancel: a text
// holding a question mark anywhere (? ？ and the other forms, see
// isQuestionMark), ending in a question particle (吗 么 嘛 呢) or holding a
// question phrase (是否, 要不要, …) is ReplyNone, so "确认？", "ok?" and
// "真的要执行吗" run nothing and "取消？" cancels nothing; the person is
// asking, not answering.
//
// ParseReason reads one more form: a cancel keyword first, then a reason
// ("取消 用 orders_archive 表", "cancel: wrong table"), a cancel whose
// reason becomes the decision's comment. Parse reads that as ReplyNone.
type Reply int

// Replies.
const (
	ReplyNone    Reply = iota // not a decision
	ReplyConfirm              // run the pending call
	ReplyCancel               // reject the pending call
)

var replyNames = [...]string{"none", "confirm", "cancel"}

// String returns "none", "confirm" or "cancel".
func (r Reply) String() string {
	if r >= 0 && int(r) < len(replyNames) {
		return replyNames[r]
	}
	return fmt.Sprintf("reply(%d)", int(r))
}

// ReplyConfig lists the keywords of typed replies (YAML section
// approval.replies). Keywords are compared after NormalizeReply, so case,
// full-width forms and surrounding punctuation do not matter. A keyword
// may hold spaces ("do it"); the whole message must equal it.
type ReplyConfig struct {
	// Confirm lists the keywords that approve the pending call. Empty
	// uses the defaults (确认 执行 批准 同意 是 确认执行 confirm yes y ok
	// approve). A keyword holding a negation marker (不 别 没 未 勿 莫 非
	// 无 甭, or the words no, not, never, dont, cannot or a word ending in
	// n't) is rejected, so 没问题 and "no problem" cannot be confirm words.
	Confirm []string `json:"confirm" mapstructure:"confirm"`
	// Cancel lists the keywords that reject the pending call. Empty uses
	// the defaults (取消 拒绝 否 不 取消操作 cancel no n reject deny).
	// Negations of a confirm keyword (不确认, don't approve) cancel
	// whatever this list holds. A keyword of either list that is a
	// question (it holds a question mark, ends in 吗 么 嘛 呢 or holds a
	// phrase such as 是否) is rejected: a question is never a decision.
	// A cancel keyword followed by a separator and a reason ("取消 表不对",
	// "cancel: wrong table") declines with that reason (ParseReason).
	Cancel []string `json:"cancel" mapstructure:"cancel"`
}

var (
	defaultConfirm = []string{"确认", "执行", "批准", "同意", "是", "确认执行", "confirm", "yes", "y", "ok", "approve"}
	defaultCancel  = []string{"取消", "拒绝", "否", "不", "取消操作", "cancel", "no", "n", "reject", "deny"}
)

// DefaultReplyConfig returns the default keywords. "确认执行" and "取消操作"
// are there because the web UI labels its buttons with them. "okay" is
// not a default: matching is exact, so add it if you want it.
func DefaultReplyConfig() ReplyConfig {
	return ReplyConfig{Confirm: slices.Clone(defaultConfirm), Cancel: slices.Clone(defaultCancel)}
}

// ReplyParser reads typed replies. It is immutable and safe for
// concurrent use.
type ReplyParser struct {
	words map[string]Reply // normalised keyword → ReplyConfirm or ReplyCancel
}

// NewReplyParser builds a parser from cfg. An empty list takes its
// defaults. It reports every bad keyword, each by its list, index and
// text: a keyword that is empty after normalisation, a confirm keyword
// holding a negation, and a keyword in both lists (compared normalised).
// Repeats within one list are allowed.
func NewReplyParser(cfg ReplyConfig) (*ReplyParser, error) {
	if len(cfg.Confirm) == 0 {
		cfg.Confirm = defaultConfirm
	}
	if len(cfg.Cancel) == 0 {
		cfg.Cancel = defaultCancel
	}
	p := &ReplyParser{words: make(map[string]Reply, len(cfg.Confirm)+len(cfg.Cancel))}
	var errs []error
	add := func(field string, list []string, r Reply) {
		for i, k := range list {
			n := NormalizeReply(k)
			name := fmt.Sprintf("%q", k)
			if n != k {
				name += fmt.Sprintf(" (normalised %q)", n)
			}
			if n == "" {
				errs = append(errs, fmt.Errorf("replies.%s[%d]: %q is empty after normalisation", field, i, k))
				continue
			}
			if j := strings.IndexFunc(k, isQuestionMark); j >= 0 {
				q, _ := utf8.DecodeRuneInString(k[j:])
				errs = append(errs, fmt.Errorf("replies.%s[%d]: %s holds the question mark %q and can never be a decision (a question is never one)", field, i, name, string(q)))
				continue
			}
			if q := questionMarker(n); q != "" {
				errs = append(errs, fmt.Errorf("replies.%s[%d]: %s is a question (%q) and can never be a decision", field, i, name, q))
				continue
			}
			if m := negationMarker(n); r == ReplyConfirm && m != "" {
				errs = append(errs, fmt.Errorf("replies.%s[%d]: %s holds the negation %q and can never confirm", field, i, name, m))
				continue
			}
			if prev, ok := p.words[n]; ok && prev != r {
				errs = append(errs, fmt.Errorf("replies.%s[%d]: %s is also in replies.%s", field, i, name, prev))
				continue
			}
			p.words[n] = r
		}
	}
	add("confirm", cfg.Confirm, ReplyConfirm)
	add("cancel", cfg.Cancel, ReplyCancel)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// Parse says what text means for a pending approval. After NormalizeReply
// the whole text must be one keyword; a confirm keyword preceded by a
// negation (不确认, 别执行, 不要执行, 没确认, don't approve, not ok) and the
// bare refusals don't, dont, do not, no way and never are ReplyCancel.
// "Not yet" forms (还没确认, 先别执行), questions (确认？, ok?, 确认吗,
// 取消？; see Reply) and everything else are ReplyNone.
func (p *ReplyParser) Parse(text string) Reply {
	// Before normalising, which trims a trailing question mark as it trims
	// any punctuation.
	if strings.ContainsFunc(text, isQuestionMark) {
		return ReplyNone
	}
	var buf [128]byte
	b := appendNormalized(buf[:0], text)
	if len(b) == 0 || questionMarker(string(b)) != "" {
		return ReplyNone
	}
	if r, ok := p.words[string(b)]; ok {
		return r
	}
	if p.negatedConfirm(b) {
		return ReplyCancel
	}
	return ReplyNone
}

// Negations that cancel when they are the whole text.
var negationIdioms = []string{"don't", "dont", "do not", "no way", "never"}

// Prefixes that turn a confirm keyword into a refusal. Chinese ones may be
// followed by one space; English ones end with it. "Not yet" forms (还没,
// 尚未, 先别, 先不) are left out on purpose: they ask to wait, not to cancel,
// so they stay ReplyNone.
var (
	negationPrefixesZH = []string{"不要", "不用", "不必", "不需要", "无需", "无须", "不准", "不许", "不能", "不可", "不予", "没有", "不", "别", "別", "没", "沒", "未", "勿", "莫", "甭"}
	negationPrefixesEN = []string{"don't ", "dont ", "do not ", "not ", "never "}
)

// negatedConfirm reports whether the normalised text b is a refusal: a
// negation idiom, or a negation prefix followed by a confirm keyword.
func (p *ReplyParser) negatedConfirm(b []byte) bool {
	for _, s := range negationIdioms {
		if string(b) == s {
			return true
		}
	}
	for _, pre := range negationPrefixesZH {
		if len(b) > len(pre) && string(b[:len(pre)]) == pre {
			rest := b[len(pre):]
			if rest[0] == ' ' {
				rest = rest[1:]
			}
			if p.words[string(rest)] == ReplyConfirm {
				return true
			}
		}
	}
	for _, pre := range negationPrefixesEN {
		if len(b) > len(pre) && string(b[:len(pre)]) == pre && p.words[string(b[len(pre):])] == ReplyConfirm {
			return true
		}
	}
	return false
}

// isQuestionMark reports whether r is a question mark: ? and its
// full-width (？), small (﹖) and vertical (︖) forms, the inverted (¿),
// Arabic (؟), Greek (U+037E) and reversed (⸮) ones, ⁇ ⁈ ⁉ ‽, and the
// emoji ❓ ❔.
func isQuestionMark(r rune) bool {
	switch r {
	case '?', '？', '﹖', '︖', '¿', '؟', '\u037e', '⸮', '⁇', '⁈', '⁉', '‽', '❓', '❔':
		return true
	}
	return false
}

// Question particles end a Chinese question (确认吗, 执行么, 是嘛, 取消呢);
// 吧 is not one of them: it softens an answer (好吧, 执行吧) more often than
// it asks. Question phrases ask wherever they stand (是否执行, 要不要执行,
// 行不行).
var (
	questionParticles = []string{"吗", "嗎", "么", "麼", "嘛", "呢"}
	questionPhrases   = []string{"是否", "是不是", "要不要", "能不能", "可不可以", "可以不可以", "行不行", "好不好", "对不对", "對不對", "有没有", "有沒有", "真的要"}
)

// questionMarker returns the particle or phrase that makes the normalised
// text s a question, or "". (A question mark is looked for in the raw text,
// since normalising trims it from the ends.)
func questionMarker(s string) string {
	for _, q := range questionParticles {
		if strings.HasSuffix(s, q) {
			return q
		}
	}
	for _, q := range questionPhrases {
		if strings.Contains(s, q) {
			return q
		}
	}
	return ""
}

// Negation markers: a confirm keyword may hold none of them, so no
// configuration can make a negated text a confirm.
const negationRunes = "不别別没沒未勿莫非无無甭"

var negationWords = []string{"no", "not", "never", "dont", "cannot"}

// negationMarker returns the first negation marker in the normalised text
// s, or "". English markers count only as whole words (runs of ASCII
// letters, digits and apostrophes), so "nothing" and "know" are not
// negations but "no", "don't" and "isn't" are.
func negationMarker(s string) string {
	if i := strings.IndexAny(s, negationRunes); i >= 0 {
		_, size := utf8.DecodeRuneInString(s[i:])
		return s[i : i+size]
	}
	for i := 0; i < len(s); {
		if !isWordByte(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isWordByte(s[j]) {
			j++
		}
		w := s[i:j]
		if slices.Contains(negationWords, w) || strings.HasSuffix(w, "n't") {
			return w
		}
		i = j
	}
	return ""
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '\'' || 'A' <= c && c <= 'Z'
}

// NormalizeReply returns the form of text that keywords are matched
// against. In order:
//
//   - full-width ASCII (U+FF01..U+FF5E) becomes ASCII and every Unicode
//     space (U+3000 included) and zero-width space becomes a space; curly
//     apostrophes become '; letters are case folded (simple Unicode
//     folding, so "ＯＫ", "OK" and "oK" with a Kelvin sign are all "ok");
//   - Feishu mention placeholders "@_user_<n>" and "@_all" are removed
//     wherever they are, then plain "@name" mentions: an @ that starts
//     the text or follows a space or punctuation, with everything up to
//     the next space;
//   - runs of spaces become one space, and spaces and punctuation
//     (. , ! ; : ~ ' " 。 、 … ⋯ ｡ ､ “ ” 「 」 『 』) are trimmed from both
//     ends (DingTalk leaves a leading space where it removed the mention).
//     A question mark is not trimmed: the normal form of a question is
//     still a question (see Reply).
//
// Punctuation inside the text stays, so "n/a" and "y'all" are not "n" or
// "y". NormalizeReply is idempotent.
func NormalizeReply(text string) string {
	var buf [128]byte
	return string(appendNormalized(buf[:0], text))
}

// appendNormalized writes the normalised text into dst[:0] and returns it.
func appendNormalized(dst []byte, s string) []byte {
	b := dst[:0]
	// Fold runes.
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case 'A' <= c && c <= 'Z':
				c += 'a' - 'A'
			case c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r':
				c = ' '
			}
			b = append(b, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		b = utf8.AppendRune(b, foldRune(r))
		i += size
	}
	// Remove mentions.
	w := 0
	for i := 0; i < len(b); {
		if b[i] == '@' {
			if n := placeholderLen(b[i:]); n > 0 {
				i += n
				continue
			}
			if i+1 < len(b) && b[i+1] != ' ' && mentionMayStart(b[:w]) {
				for i < len(b) && b[i] != ' ' {
					i++
				}
				continue
			}
		}
		b[w] = b[i]
		w++
		i++
	}
	b = b[:w]
	// Collapse spaces; trim spaces and punctuation at the start.
	w = 0
	space := false
	for i := 0; i < len(b); {
		r, size := rune(b[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(b[i:])
		}
		switch {
		case r == ' ':
			space = true
		case w == 0 && isTrimPunct(r):
		default:
			if space && w > 0 {
				b[w] = ' '
				w++
			}
			space = false
			w += copy(b[w:], b[i:i+size])
		}
		i += size
	}
	b = b[:w]
	// Trim spaces and punctuation at the end.
	for len(b) > 0 {
		r, size := utf8.DecodeLastRune(b)
		if r != ' ' && !isTrimPunct(r) {
			break
		}
		b = b[:len(b)-size]
	}
	return b
}

// foldRune maps one non-ASCII rune: spaces to ' ', full-width ASCII to
// ASCII, curly apostrophes to ', and then a case fold to the lower case of
// the smallest rune of its case orbit. The result is a fixed point.
func foldRune(r rune) rune {
	switch {
	case r == '\u200b' || r == '\u2060' || r == '\ufeff' || r == '\u180e' || unicode.IsSpace(r):
		return ' '
	case r == '\u2018' || r == '\u2019' || r == '\u02bc' || r == '\u2032':
		return '\''
	case 0xFF01 <= r && r <= 0xFF5E:
		r -= 0xFEE0
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return r
	}
	f := caseFold(r)
	if f != r {
		f = caseFold(f) // ToLower may leave the orbit (U+0130 İ → i)
	}
	return f
}

// caseFold returns the lower case of the smallest rune in r's case orbit,
// so all the runes that EqualFold treats as one map to one rune.
func caseFold(r rune) rune {
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return unicode.ToLower(m)
}

// placeholderLen returns the length of the Feishu mention placeholder
// ("@_user_<digits>" or "@_all") at the start of b, or 0. A placeholder
// must not run on into a word character: "@_allx" is not one.
func placeholderLen(b []byte) int {
	n := 0
	switch {
	case len(b) > 7 && string(b[:7]) == "@_user_":
		n = 7
		for n < len(b) && '0' <= b[n] && b[n] <= '9' {
			n++
		}
		if n == 7 {
			return 0
		}
	case len(b) >= 5 && string(b[:5]) == "@_all":
		n = 5
	default:
		return 0
	}
	if n < len(b) && (isWordByte(b[n]) && b[n] != '\'' || b[n] == '_') {
		return 0
	}
	return n
}

// mentionMayStart reports whether an @ written after out starts a plain
// mention: at the start, or after a space or punctuation.
func mentionMayStart(out []byte) bool {
	if len(out) == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRune(out)
	return r == ' ' || isTrimPunct(r)
}

// isTrimPunct reports whether r is punctuation trimmed from the ends of a
// reply (after folding, so full-width forms are already ASCII).
func isTrimPunct(r rune) bool {
	switch r {
	case '.', ',', '!', ';', ':', '~', '\'', '"',
		'。', '、', '…', '⋯', '｡', '､', '“', '”', '「', '」', '『', '』':
		return true
	}
	return false
}
