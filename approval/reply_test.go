package approval

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

type replyTest struct {
	in   string
	cfg  *ReplyConfig // nil: DefaultReplyConfig
	want Reply
}

// Custom configurations of the table.
var (
	customReplies = &ReplyConfig{
		Confirm: []string{"好", "行", "Go", "do it", "👍"},
		Cancel:  []string{"算了", "stop"},
	}
	confirmOnlyReplies = &ReplyConfig{Confirm: []string{"好"}} // cancel keeps its defaults
)

var replyTests = []replyTest{
	// Default confirm keywords.
	{"确认", nil, ReplyConfirm},
	{"执行", nil, ReplyConfirm},
	{"批准", nil, ReplyConfirm},
	{"同意", nil, ReplyConfirm},
	{"是", nil, ReplyConfirm},
	{"确认执行", nil, ReplyConfirm},
	{"confirm", nil, ReplyConfirm},
	{"yes", nil, ReplyConfirm},
	{"y", nil, ReplyConfirm},
	{"ok", nil, ReplyConfirm},
	{"approve", nil, ReplyConfirm},
	// Case, width and punctuation.
	{"OK", nil, ReplyConfirm},
	{"Yes!", nil, ReplyConfirm},
	{"YES", nil, ReplyConfirm},
	{"Y", nil, ReplyConfirm},
	{"Approve.", nil, ReplyConfirm},
	{"ＯＫ", nil, ReplyConfirm},
	{"ｙｅｓ", nil, ReplyConfirm},
	{"ＹＥＳ！", nil, ReplyConfirm},
	{"o\u212a", nil, ReplyConfirm}, // Kelvin sign folds to k
	{"确认！！", nil, ReplyConfirm},
	{"确认。", nil, ReplyConfirm},
	{"确认～", nil, ReplyConfirm},
	{"确认……", nil, ReplyConfirm},
	{"确认，", nil, ReplyConfirm},
	{"确认；", nil, ReplyConfirm},
	{"ok...", nil, ReplyConfirm},
	{"确认 。 ！", nil, ReplyConfirm},
	{"“确认”", nil, ReplyConfirm},
	{"!!确认", nil, ReplyConfirm},
	// Whitespace.
	{" 确认", nil, ReplyConfirm}, // DingTalk removed the mention
	{"  ok  ", nil, ReplyConfirm},
	{"\t确认\n", nil, ReplyConfirm},
	{"\u3000确认\u3000", nil, ReplyConfirm},
	{"\u200b确认", nil, ReplyConfirm},
	{"\ufeff确认", nil, ReplyConfirm},
	{"确\u200b认", nil, ReplyNone},
	{"确 认", nil, ReplyNone},
	// Mentions.
	{"@_user_1 确认", nil, ReplyConfirm},
	{"@_user_1 确认。", nil, ReplyConfirm},
	{"@_user_1 @_user_2 ok", nil, ReplyConfirm},
	{"确认@_user_1", nil, ReplyConfirm},
	{"@_user_1确认", nil, ReplyConfirm},
	{"@_all 取消", nil, ReplyCancel},
	{"@张三 确认", nil, ReplyConfirm},
	{"＠张三　确认", nil, ReplyConfirm},
	{"@bot yes", nil, ReplyConfirm},
	{"yes @bot", nil, ReplyConfirm},
	{"ok。@bob", nil, ReplyConfirm},
	{"@_user_1", nil, ReplyNone},
	{"@张三", nil, ReplyNone},
	{"@张三确认", nil, ReplyNone}, // the whole token is the mention
	{"ok@bob", nil, ReplyNone},
	{"确认@_allx", nil, ReplyNone},
	// Default cancel keywords.
	{"取消", nil, ReplyCancel},
	{"拒绝", nil, ReplyCancel},
	{"否", nil, ReplyCancel},
	{"不", nil, ReplyCancel},
	{"取消操作", nil, ReplyCancel},
	{"cancel", nil, ReplyCancel},
	{"no", nil, ReplyCancel},
	{"n", nil, ReplyCancel},
	{"reject", nil, ReplyCancel},
	{"deny", nil, ReplyCancel},
	{"NO!", nil, ReplyCancel},
	{"Cancel.", nil, ReplyCancel},
	{"ｎｏ", nil, ReplyCancel},
	{"@_user_1 不。", nil, ReplyCancel},
	// Negations of a confirm keyword cancel.
	{"不确认", nil, ReplyCancel},
	{"别执行", nil, ReplyCancel},
	{"不要执行", nil, ReplyCancel},
	{"不同意", nil, ReplyCancel},
	{"不批准", nil, ReplyCancel},
	{"没确认", nil, ReplyCancel},
	{"未确认", nil, ReplyCancel},
	{"勿执行", nil, ReplyCancel},
	{"不用确认执行", nil, ReplyCancel},
	{"不是", nil, ReplyCancel},
	{"不 确认", nil, ReplyCancel},
	{"不确认！", nil, ReplyCancel},
	{"@_user_1 不确认", nil, ReplyCancel},
	{"不@_user_1确认", nil, ReplyCancel},
	{"don't", nil, ReplyCancel},
	{"dont", nil, ReplyCancel},
	{"do not", nil, ReplyCancel},
	{"Don’t!", nil, ReplyCancel},
	{"DON'T approve", nil, ReplyCancel},
	{"do not confirm", nil, ReplyCancel},
	{"not ok", nil, ReplyCancel},
	{"No way", nil, ReplyCancel},
	{"never", nil, ReplyCancel},
	// A question is never a decision, whatever it asks about: a question
	// mark (half-width, full-width or another form) anywhere, a question
	// particle at the end, or a question phrase.
	{"确认？", nil, ReplyNone},
	{"确认?", nil, ReplyNone},
	{"确认 ?", nil, ReplyNone},
	{"确认 ？", nil, ReplyNone},
	{"确认？！", nil, ReplyNone},
	{"确认?。", nil, ReplyNone},
	{"？确认", nil, ReplyNone},
	{"确认吗？", nil, ReplyNone},
	{"确认吗", nil, ReplyNone},
	{"确认嗎", nil, ReplyNone},
	{"确认么", nil, ReplyNone},
	{"确认呢", nil, ReplyNone},
	{"确认嘛", nil, ReplyNone},
	{"确定吗", nil, ReplyNone},
	{"执行吗", nil, ReplyNone},
	{"执行？", nil, ReplyNone},
	{"可以吗", nil, ReplyNone},
	{"是吗", nil, ReplyNone},
	{"是？", nil, ReplyNone},
	{"是否执行", nil, ReplyNone},
	{"要不要执行", nil, ReplyNone},
	{"真的要执行吗", nil, ReplyNone},
	{"真的要执行吗？", nil, ReplyNone},
	{"同意?", nil, ReplyNone},
	{"批准？", nil, ReplyNone},
	{"确认执行?", nil, ReplyNone},
	{"@_user_1 确认？", nil, ReplyNone},
	{"ok?", nil, ReplyNone},
	{"ok?!", nil, ReplyNone},
	{"OK ?", nil, ReplyNone},
	{"ＯＫ？", nil, ReplyNone},
	{"yes?", nil, ReplyNone},
	{"yes？", nil, ReplyNone},
	{"ｙｅｓ？", nil, ReplyNone},
	{"Yes??", nil, ReplyNone},
	{"y?", nil, ReplyNone},
	{"Confirm?", nil, ReplyNone},
	{"approve?", nil, ReplyNone},
	{"¿yes", nil, ReplyNone},
	{"yes⁉", nil, ReplyNone},
	{"ok‽", nil, ReplyNone},
	{"确认❓", nil, ReplyNone},
	{"确认﹖", nil, ReplyNone},
	{"are you sure?", nil, ReplyNone},
	{"confirm, are you sure?", nil, ReplyNone},
	// ... and a question about cancelling does not cancel either.
	{"取消？", nil, ReplyNone},
	{"取消?", nil, ReplyNone},
	{"取消吗", nil, ReplyNone},
	{"no?", nil, ReplyNone},
	{"cancel?", nil, ReplyNone},
	{"不确认？", nil, ReplyNone},
	{"不确认吗", nil, ReplyNone},
	{"don't?", nil, ReplyNone},
	{"好？", customReplies, ReplyNone},
	{"好吗", customReplies, ReplyNone},
	{"好不好", customReplies, ReplyNone},
	{"行不行", customReplies, ReplyNone},
	{"do it?", customReplies, ReplyNone},
	{"算了？", customReplies, ReplyNone},
	// Other negations are not a decision.
	{"还没确认", nil, ReplyNone},
	{"先别执行", nil, ReplyNone},
	{"确认不", nil, ReplyNone},
	{"不不确认", nil, ReplyNone},
	{"不确认执行吧", nil, ReplyNone},
	{"不取消", nil, ReplyNone},
	{"别取消", nil, ReplyNone},
	{"don't cancel", nil, ReplyNone},
	{"not", nil, ReplyNone},
	{"i don't know", nil, ReplyNone},
	// A keyword inside another word, or with more text, is not a keyword.
	{"yesterday", nil, ReplyNone},
	{"nothing", nil, ReplyNone},
	{"look", nil, ReplyNone},
	{"不错", nil, ReplyNone},
	{"okay", nil, ReplyNone},
	{"yess", nil, ReplyNone},
	{"noon", nil, ReplyNone},
	{"n/a", nil, ReplyNone},
	{"y'all", nil, ReplyNone},
	{"确认删除订单吧", nil, ReplyNone},
	{"yes please", nil, ReplyNone},
	{"ok thanks", nil, ReplyNone},
	{"确认 确认", nil, ReplyNone},
	{"ok ok", nil, ReplyNone},
	{"yes no", nil, ReplyNone},
	{"是的", nil, ReplyNone},
	{"好的", nil, ReplyNone},
	// Nothing at all.
	{"", nil, ReplyNone},
	{"   ", nil, ReplyNone},
	{"\u3000", nil, ReplyNone},
	{"。", nil, ReplyNone},
	{"!!!", nil, ReplyNone},
	{"👍", nil, ReplyNone},
	{"ok\xff", nil, ReplyNone},
	{"请帮我查一下昨天的订单，然后确认一下是否已经发货", nil, ReplyNone},
	{"what is the status of order 42?", nil, ReplyNone},
	// Custom keywords replace the defaults.
	{"好", customReplies, ReplyConfirm},
	{"行！", customReplies, ReplyConfirm},
	{"GO", customReplies, ReplyConfirm},
	{"Do  it", customReplies, ReplyConfirm},
	{"👍", customReplies, ReplyConfirm},
	{"算了", customReplies, ReplyCancel},
	{"STOP.", customReplies, ReplyCancel},
	{"不好", customReplies, ReplyCancel},
	{"别 行", customReplies, ReplyCancel},
	{"don't do it", customReplies, ReplyCancel},
	{"not go", customReplies, ReplyCancel},
	{"确认", customReplies, ReplyNone},
	{"取消", customReplies, ReplyNone},
	{"不确认", customReplies, ReplyNone},
	{"yes", customReplies, ReplyNone},
	{"👍🏻", customReplies, ReplyNone},
	{"好", confirmOnlyReplies, ReplyConfirm},
	{"取消", confirmOnlyReplies, ReplyCancel},
	{"不好", confirmOnlyReplies, ReplyCancel},
	{"ok", confirmOnlyReplies, ReplyNone},
}

// parserFor returns the parser of a table configuration, built once.
func parserFor(t testing.TB, cache map[*ReplyConfig]*ReplyParser, cfg *ReplyConfig) *ReplyParser {
	t.Helper()
	if p, ok := cache[cfg]; ok {
		return p
	}
	c := DefaultReplyConfig()
	if cfg != nil {
		c = *cfg
	}
	p, err := NewReplyParser(c)
	if err != nil {
		t.Fatalf("NewReplyParser(%+v): %v", c, err)
	}
	cache[cfg] = p
	return p
}

func TestParseReply(t *testing.T) {
	cache := map[*ReplyConfig]*ReplyParser{}
	for _, test := range replyTests {
		p := parserFor(t, cache, test.cfg)
		if got := p.Parse(test.in); got != test.want {
			cfg := "default"
			if test.cfg != nil {
				cfg = strings.Join(test.cfg.Confirm, ",") + "/" + strings.Join(test.cfg.Cancel, ",")
			}
			t.Errorf("%q (%s): got %v, want %v", test.in, cfg, got, test.want)
		}
	}
}

func TestParseReplyDefaultKeywords(t *testing.T) {
	p, err := NewReplyParser(ReplyConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultReplyConfig()
	for _, k := range cfg.Confirm {
		if got := p.Parse(k); got != ReplyConfirm {
			t.Errorf("%q: got %v, want %v", k, got, ReplyConfirm)
		}
		if m := negationMarker(k); m != "" {
			t.Errorf("default confirm keyword %q holds the negation %q", k, m)
		}
		for _, pre := range negationPrefixesZH {
			if got := p.Parse(pre + k); got != ReplyCancel {
				t.Errorf("%q: got %v, want %v", pre+k, got, ReplyCancel)
			}
		}
		for _, pre := range negationPrefixesEN {
			if got := p.Parse(pre + k); got != ReplyCancel {
				t.Errorf("%q: got %v, want %v", pre+k, got, ReplyCancel)
			}
		}
	}
	// Every keyword asked as a question is not a decision.
	for _, k := range append(slices.Clone(cfg.Confirm), cfg.Cancel...) {
		for _, q := range []string{k + "?", k + "？", k + " ?", k + "？！", k + "吗", k + "吗？", "真的要" + k + "吗", strings.ToUpper(k) + "?"} {
			if got := p.Parse(q); got != ReplyNone {
				t.Errorf("%q: got %v, want %v", q, got, ReplyNone)
			}
		}
	}
	for _, k := range cfg.Cancel {
		if got := p.Parse(k); got != ReplyCancel {
			t.Errorf("%q: got %v, want %v", k, got, ReplyCancel)
		}
		if got := p.Parse(strings.ToUpper(k) + "！"); got != ReplyCancel {
			t.Errorf("%q: got %v, want %v", strings.ToUpper(k)+"！", got, ReplyCancel)
		}
	}
}

func TestDefaultReplyConfigIsACopy(t *testing.T) {
	a := DefaultReplyConfig()
	a.Confirm[0] = "不确认"
	a.Cancel[0] = "ok"
	b := DefaultReplyConfig()
	if b.Confirm[0] != "确认" || b.Cancel[0] != "取消" {
		t.Fatalf("DefaultReplyConfig shares its slices: %v", b)
	}
	if _, err := NewReplyParser(ReplyConfig{}); err != nil {
		t.Fatalf("defaults changed by a caller: %v", err)
	}
}

func TestReplyString(t *testing.T) {
	for r, want := range map[Reply]string{ReplyNone: "none", ReplyConfirm: "confirm", ReplyCancel: "cancel", 7: "reply(7)", -1: "reply(-1)"} {
		if got := r.String(); got != want {
			t.Errorf("%d: got %q, want %q", int(r), got, want)
		}
	}
}

type newReplyParserTest struct {
	cfg  ReplyConfig
	errs []string // substrings of the error; none: no error
}

var newReplyParserTests = []newReplyParserTest{
	{ReplyConfig{}, nil},
	{DefaultReplyConfig(), nil},
	{ReplyConfig{Confirm: []string{"好"}}, nil},
	{ReplyConfig{Cancel: []string{"算了"}}, nil},
	{ReplyConfig{Confirm: []string{"ok", "OK", "ＯＫ！"}}, nil}, // repeats within a list are fine
	{ReplyConfig{Confirm: []string{"nothing", "know", "go on"}}, nil},
	{ReplyConfig{Cancel: []string{"不要", "不确认"}}, nil}, // a cancel keyword may hold a negation
	{ReplyConfig{Confirm: []string{"确认", ""}}, []string{`replies.confirm[1]: "" is empty`}},
	{ReplyConfig{Cancel: []string{"。！"}}, []string{`replies.cancel[0]: "。！" is empty`}},
	{ReplyConfig{Confirm: []string{"@bob"}}, []string{`replies.confirm[0]: "@bob" is empty`}},
	{ReplyConfig{Confirm: []string{"   "}}, []string{`replies.confirm[0]: "   " is empty`}},
	{ReplyConfig{Confirm: []string{"ok"}, Cancel: []string{"OK"}}, []string{`replies.cancel[0]: "OK" (normalised "ok") is also in replies.confirm`}},
	{ReplyConfig{Confirm: []string{"n"}}, []string{`replies.cancel[7]: "n" is also in replies.confirm`}},
	{ReplyConfig{Confirm: []string{"不确认"}}, []string{`replies.confirm[0]: "不确认" holds the negation "不"`}},
	{ReplyConfig{Confirm: []string{"没问题"}}, []string{`"没问题" holds the negation "没"`}},
	{ReplyConfig{Confirm: []string{"非常好"}}, []string{`"非常好" holds the negation "非"`}},
	{ReplyConfig{Confirm: []string{"Don't stop"}}, []string{`"Don't stop" (normalised "don't stop") holds the negation "don't"`}},
	{ReplyConfig{Confirm: []string{"no problem"}}, []string{`"no problem" holds the negation "no"`}},
	{ReplyConfig{Confirm: []string{"why not"}}, []string{`"why not" holds the negation "not"`}},
	{ReplyConfig{Confirm: []string{"isn't it"}}, []string{`"isn't it" holds the negation "isn't"`}},
	{ReplyConfig{Confirm: []string{"ok?"}}, []string{`replies.confirm[0]: "ok?" holds the question mark "?"`}},
	{ReplyConfig{Confirm: []string{"好吗"}}, []string{`replies.confirm[0]: "好吗" is a question ("吗")`}},
	{ReplyConfig{Confirm: []string{"可以？"}}, []string{`replies.confirm[0]: "可以？" (normalised "可以?") holds the question mark "？"`}},
	{ReplyConfig{Confirm: []string{"是否"}}, []string{`replies.confirm[0]: "是否" is a question ("是否")`}},
	{ReplyConfig{Cancel: []string{"算了吧？"}}, []string{`replies.cancel[0]: "算了吧？" (normalised "算了吧?") holds the question mark "？"`}},
	{ReplyConfig{Cancel: []string{"取消呢"}}, []string{`replies.cancel[0]: "取消呢" is a question ("呢")`}},
	{ReplyConfig{Confirm: []string{"好吧", "好嘞"}}, nil}, // 吧 softens an answer; it is not a question
	{ReplyConfig{Confirm: []string{"", "好", "别管"}, Cancel: []string{"好"}}, []string{
		`replies.confirm[0]: "" is empty`,
		`replies.confirm[2]: "别管" holds the negation "别"`,
		`replies.cancel[0]: "好" is also in replies.confirm`,
	}},
}

func TestNewReplyParser(t *testing.T) {
	for _, test := range newReplyParserTests {
		p, err := NewReplyParser(test.cfg)
		if len(test.errs) == 0 {
			if err != nil || p == nil {
				t.Errorf("%q/%q: got %v, want no error", test.cfg.Confirm, test.cfg.Cancel, err)
			}
			continue
		}
		if err == nil || p != nil {
			t.Errorf("%q/%q: got parser %v and no error, want %q", test.cfg.Confirm, test.cfg.Cancel, p, test.errs)
			continue
		}
		for _, want := range test.errs {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q/%q: got %q, want it to contain %q", test.cfg.Confirm, test.cfg.Cancel, err, want)
			}
		}
		if n := strings.Count(err.Error(), "\n") + 1; n != len(test.errs) {
			t.Errorf("%q/%q: got %d errors (%q), want %d", test.cfg.Confirm, test.cfg.Cancel, n, err, len(test.errs))
		}
	}
}

type normalizeReplyTest struct {
	in, want string
}

var normalizeReplyTests = []normalizeReplyTest{
	{"", ""},
	{"  确认  ", "确认"},
	{"ＯＫ", "ok"},
	{"Ｈｅｌｌｏ，Ｗｏｒｌｄ！", "hello,world"},
	{"@_user_1 确认。", "确认"},
	{"a  b\t\nc", "a b c"},
	{"确认！！", "确认"},
	{"确认……", "确认"},
	{"确认 。 ！", "确认"},
	{"!!确认", "确认"},
	{"。，确认", "确认"},
	{"\u3000确认\u3000", "确认"},
	{"\u00a0ok\u2003", "ok"},
	{"n/a", "n/a"},
	{"y'all", "y'all"},
	{"Don’t", "don't"},
	{"DON＇T", "don't"},
	{"@张三 @李四 好的", "好的"},
	{"确认@_user_12", "确认"},
	{"@_user_1@_user_2确认", "确认"},
	{"@_all,确认", "确认"}, // the comma is leading punctuation once the mention is gone
	{"x@_allx", "x@_allx"},
	{"x@_all", "x"},
	{"x@_user_", "x@_user_"},
	{"@_user_1_user_1 x", "x"},
	{"ok@bob", "ok@bob"},
	{"ok。@bob", "ok"},
	{"确认 @", "确认 @"},
	{"@", "@"},
	{"İ", "i"},
	{"ſ", "s"},
	{"ΣΑΣ", "σασ"},
	{"o\u212a", "ok"},
	{"ok\xff", "ok\ufffd"},
	{"确\u200b认", "确 认"},
	{"Do  It", "do it"},
	{"确认？", "确认?"},
	{"  ok ?! ", "ok ?"},
	{"？确认。", "?确认"},
}

func TestNormalizeReply(t *testing.T) {
	for _, test := range normalizeReplyTests {
		if got := NormalizeReply(test.in); got != test.want {
			t.Errorf("%q: got %q, want %q", test.in, got, test.want)
		}
		if got := NormalizeReply(test.want); got != test.want {
			t.Errorf("%q: normalising the normal form gives %q", test.want, got)
		}
	}
}

// TestNormalizeReplyLong covers texts longer than the stack buffer.
func TestNormalizeReplyLong(t *testing.T) {
	in := strings.Repeat("@_user_1 ", 40) + strings.Repeat("确认", 30) + strings.Repeat("！", 20)
	if got, want := NormalizeReply(in), strings.Repeat("确认", 30); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	p, _ := NewReplyParser(ReplyConfig{})
	if got := p.Parse(strings.Repeat(" ", 500) + "确认" + strings.Repeat("。", 100)); got != ReplyConfirm {
		t.Errorf("padded 确认: got %v, want %v", got, ReplyConfirm)
	}
}

// TestFoldRuneFixedPoint checks every rune: folding is stable, so
// NormalizeReply is idempotent, and it never yields ASCII upper case.
func TestFoldRuneFixedPoint(t *testing.T) {
	for r := rune(utf8.RuneSelf); r <= utf8.MaxRune; r++ {
		if 0xD800 <= r && r <= 0xDFFF {
			continue
		}
		f := foldRune(r)
		if f < utf8.RuneSelf {
			if 'A' <= f && f <= 'Z' || f != ' ' && f < ' ' {
				t.Errorf("foldRune(%U) = %U", r, f)
			}
			continue
		}
		if g := foldRune(f); g != f {
			t.Errorf("foldRune(%U) = %U, but foldRune(%U) = %U", r, f, f, g)
		}
	}
}

func TestParseReplyConcurrent(t *testing.T) {
	p, err := NewReplyParser(ReplyConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for _, test := range replyTests {
				if test.cfg != nil {
					continue
				}
				if got := p.Parse(test.in); got != test.want {
					t.Errorf("%q: got %v, want %v", test.in, got, test.want)
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkParseReply(b *testing.B) {
	p, err := NewReplyParser(ReplyConfig{})
	if err != nil {
		b.Fatal(err)
	}
	for _, bm := range []struct{ name, in string }{
		{"keyword", "确认"},
		{"mention", "@_user_1 确认。"},
		{"negation", "不要执行"},
		{"sentence", "请帮我查一下昨天的订单，然后确认一下是否已经发货"},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Parse(bm.in)
			}
		})
	}
}
