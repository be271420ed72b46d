package approval

import (
	"strings"
	"testing"
	"unicode/utf8"
)

type replyReasonTest struct {
	in     string
	cfg    *ReplyConfig // nil: DefaultReplyConfig
	want   Reply
	reason string
}

var replyReasonTests = []replyReasonTest{
	// A cancel keyword first, then a reason, in both languages.
	{"取消 用 orders_archive 表", nil, ReplyCancel, "用 orders_archive 表"},
	{"取消：表不对", nil, ReplyCancel, "表不对"},
	{"取消:表不对", nil, ReplyCancel, "表不对"},
	{"取消，表不对，用 orders_archive", nil, ReplyCancel, "表不对，用 orders_archive"},
	{"取消, wrong table", nil, ReplyCancel, "wrong table"},
	{"取消。今天不删", nil, ReplyCancel, "今天不删"},
	{"取消、明天再说", nil, ReplyCancel, "明天再说"},
	{"取消 — 等审计结束", nil, ReplyCancel, "等审计结束"},
	{"拒绝 不对，限制太大", nil, ReplyCancel, "不对，限制太大"},
	{"不，换一张表", nil, ReplyCancel, "换一张表"},
	{"否：先备份", nil, ReplyCancel, "先备份"},
	{"取消操作 表错了", nil, ReplyCancel, "表错了"},
	{"取消 执行计划有问题", nil, ReplyCancel, "执行计划有问题"}, // 执行 glued to more text is no confirm
	{"取消 不对", nil, ReplyCancel, "不对"},
	{"cancel: wrong table, use orders_archive", nil, ReplyCancel, "wrong table, use orders_archive"},
	{"cancel wrong table", nil, ReplyCancel, "wrong table"},
	{"Cancel: Use ORDERS_Archive", nil, ReplyCancel, "Use ORDERS_Archive"}, // as written, not folded
	{"CANCEL - not today", nil, ReplyCancel, "not today"},
	{"reject: the limit is 1000, want 10", nil, ReplyCancel, "the limit is 1000, want 10"},
	{"Reject, wrong customer", nil, ReplyCancel, "wrong customer"},
	{"deny: not during the freeze", nil, ReplyCancel, "not during the freeze"},
	{"no, wrong table", nil, ReplyCancel, "wrong table"},
	{"n wrong table", nil, ReplyCancel, "wrong table"},
	{"ＣＡＮＣＥＬ：ｗｒｏｎｇ", nil, ReplyCancel, "ｗｒｏｎｇ"},
	{"取消：用 orders_archive 表。", nil, ReplyCancel, "用 orders_archive 表。"},
	// Mentions before the keyword go; placeholders in the reason too.
	{"@_user_1 取消 wrong table", nil, ReplyCancel, "wrong table"},
	{"@hitlbot 取消，表不对", nil, ReplyCancel, "表不对"},
	{"@_user_1 取消 wrong table @_user_1", nil, ReplyCancel, "wrong table"},
	{"  \u3000取消\u3000\u3000表不对  ", nil, ReplyCancel, "表不对"},
	{"取消 ask @bob first", nil, ReplyCancel, "ask @bob first"},
	// A mention inside the keyword: the normal form is the reason.
	{"取@_user_1消 表不对", nil, ReplyCancel, "表不对"},
	// The reason is cleaned (control characters, secrets) and cut.
	{"取消 token=sk-abcdefghijklmnopqrstuvwx1234 leaked", nil, ReplyCancel, "token=[REDACTED] leaked"},
	{"cancel: bad\u202e\x07 args", nil, ReplyCancel, "bad args"},
	// Custom keywords.
	{"算了 明天再说", customReplies, ReplyCancel, "明天再说"},
	{"stop: wrong host", customReplies, ReplyCancel, "wrong host"},
	{"取消 表不对", customReplies, ReplyNone, ""},
	// Plain decisions stay what Parse says, with no reason.
	{"取消", nil, ReplyCancel, ""},
	{"取消。", nil, ReplyCancel, ""},
	{"cancel!", nil, ReplyCancel, ""},
	{"不要确认", nil, ReplyCancel, ""},
	{"不 确认", nil, ReplyCancel, ""},
	{"don't approve", nil, ReplyCancel, ""},
	{"确认", nil, ReplyConfirm, ""},
	{"ok", nil, ReplyConfirm, ""},
	// Never a reason: a confirm keyword first ...
	{"确认 用 orders_archive 表", nil, ReplyNone, ""},
	{"确认，表没错", nil, ReplyNone, ""},
	{"ok, but cancel it if slow", nil, ReplyNone, ""},
	{"yes no", nil, ReplyNone, ""},
	// ... a negated confirm followed by text ...
	{"不 确认，表错了", nil, ReplyNone, ""},
	{"no, ok", nil, ReplyNone, ""},
	// ... a question ...
	{"取消吗？", nil, ReplyNone, ""},
	{"取消吗", nil, ReplyNone, ""},
	{"取消，为什么要删全部？", nil, ReplyNone, ""},
	{"取消 是不是更好", nil, ReplyNone, ""},
	{"cancel? wrong table", nil, ReplyNone, ""},
	{"cancel, why?", nil, ReplyNone, ""},
	// ... a keyword glued to more text, or repeated ...
	{"取消订单 42", nil, ReplyNone, ""},
	{"取消这个", nil, ReplyNone, ""},
	{"不取消", nil, ReplyNone, ""},
	{"不 取消", nil, ReplyNone, ""},
	{"取消 取消", nil, ReplyNone, ""},
	{"no cancel", nil, ReplyNone, ""},
	{"nothing to see", nil, ReplyNone, ""},
	{"noon meeting", nil, ReplyNone, ""},
	{"n/a here", nil, ReplyNone, ""},
	{"取消 -", nil, ReplyNone, ""},
	// ... a phrase that agrees.
	{"no problem, go ahead", nil, ReplyNone, ""},
	{"No worries", nil, ReplyNone, ""},
	{"no rush", nil, ReplyNone, ""},
	// Anything else.
	{"", nil, ReplyNone, ""},
	{"请帮我取消 订单", nil, ReplyNone, ""},
	{"what is the status of order 42?", nil, ReplyNone, ""},
}

func TestParseReason(t *testing.T) {
	cache := map[*ReplyConfig]*ReplyParser{}
	for _, test := range replyReasonTests {
		p := parserFor(t, cache, test.cfg)
		got, reason := p.ParseReason(test.in)
		if got != test.want || reason != test.reason {
			t.Errorf("%q: got %v %q, want %v %q", test.in, got, reason, test.want, test.reason)
		}
	}
}

// TestParseReasonKeepsParse: every text of the Parse table reads the same
// through ParseReason, and with no reason.
func TestParseReasonKeepsParse(t *testing.T) {
	cache := map[*ReplyConfig]*ReplyParser{}
	for _, test := range replyTests {
		p := parserFor(t, cache, test.cfg)
		if got, reason := p.ParseReason(test.in); got != test.want || reason != "" {
			t.Errorf("%q: got %v %q, want %v and no reason", test.in, got, reason, test.want)
		}
	}
}

// TestParseReasonEveryCancelKeyword: each default cancel keyword leads a
// reason, in either case, after any separator; no confirm keyword does.
func TestParseReasonEveryCancelKeyword(t *testing.T) {
	p, err := NewReplyParser(ReplyConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultReplyConfig()
	for _, k := range cfg.Cancel {
		for _, sep := range []string{" ", "：", ":", ", ", "，", "; ", " - "} {
			for _, kk := range []string{k, strings.ToUpper(k)} {
				in := kk + sep + "wrong table"
				if got, reason := p.ParseReason(in); got != ReplyCancel || reason != "wrong table" {
					t.Errorf("%q: got %v %q, want cancel %q", in, got, reason, "wrong table")
				}
			}
		}
	}
	for _, k := range cfg.Confirm {
		for _, sep := range []string{" ", "：", ", "} {
			in := k + sep + "wrong table"
			if got, reason := p.ParseReason(in); got != ReplyNone || reason != "" {
				t.Errorf("%q: got %v %q, want none", in, got, reason)
			}
		}
	}
}

func TestParseReasonLong(t *testing.T) {
	p, _ := NewReplyParser(ReplyConfig{})
	got, reason := p.ParseReason("取消 " + strings.Repeat("表", 2*MaxNoteRunes))
	if got != ReplyCancel || utf8.RuneCountInString(reason) != MaxNoteRunes+1 || !strings.HasSuffix(reason, "…") {
		t.Errorf("got %v, a reason of %d runes", got, utf8.RuneCountInString(reason))
	}
}
