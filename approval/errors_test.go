package approval

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

// TestUserMessageIn: every error kind has a sentence in each language, the
// Chinese ones in Chinese, the English ones without Chinese, different
// kinds say different things, and none leaks the error's detail.
func TestUserMessageIn(t *testing.T) {
	secret := errors.New("dial tcp 10.0.0.7:6379: redis://:hunter2@cache")
	kinds := []errkind.Kind{errkind.Other, errkind.Invalid, errkind.NotFound, errkind.Permission, errkind.Conflict, errkind.Expired, errkind.Unavailable, errkind.Internal}
	for _, lang := range []string{"en", "zh"} {
		seen := map[string]errkind.Kind{}
		for _, k := range kinds {
			err := fmt.Errorf("wrapped: %w", E("test.Op", k, "ap_1", secret))
			msg := UserMessageIn(err, lang)
			switch {
			case msg == "":
				t.Errorf("%s, %v: empty", lang, k)
			case lang == "zh" && !hasHan(msg), lang == "en" && hasHan(msg):
				t.Errorf("%s, %v: %q is in the wrong language", lang, k, msg)
			case strings.Contains(msg, "hunter2") || strings.Contains(msg, "10.0.0.7") || strings.Contains(msg, "ap_1"):
				t.Errorf("%s, %v: %q leaks detail", lang, k, msg)
			}
			// Other and Internal share the generic sentence.
			if prev, dup := seen[msg]; dup && !(k == errkind.Internal && prev == errkind.Other) {
				t.Errorf("%s: %v and %v both say %q", lang, prev, k, msg)
			}
			seen[msg] = k
		}
	}
	down := E("test", errkind.Unavailable, "", ErrUnavailable)
	if got := UserMessageIn(down, "zh"); got != "审批服务暂时不可用，未执行任何操作，请稍后再试。" {
		t.Errorf("zh unavailable: %q", got)
	}
	if got := UserMessageIn(down, "en"); !strings.Contains(got, "temporarily unavailable; nothing was run") {
		t.Errorf("en unavailable: %q", got)
	}
	// A private approval the platform cannot show privately to anyone who
	// may see it says so, also wrapped in the approvers' chat's failure.
	noView := fmt.Errorf("%w: %w", ErrApproversUnreachable, fmt.Errorf("dingtalk: show approval ap_1 privately: %w", ErrNoPrivateView))
	if got := UserMessageIn(noView, "zh"); !strings.Contains(got, "无法把它私下展示") || strings.Contains(got, "ap_1") {
		t.Errorf("zh no private view: %q", got)
	}
	if got := UserMessageIn(noView, "en"); !strings.Contains(got, "cannot show it privately") {
		t.Errorf("en no private view: %q", got)
	}
	// UserMessage is the English sentence; an unknown language is English.
	for _, k := range kinds {
		err := E("test", k, "", nil)
		if UserMessage(err) != UserMessageIn(err, "en") || UserMessageIn(err, "fr") != UserMessageIn(err, "en") || UserMessageIn(err, "") != UserMessageIn(err, "en") {
			t.Errorf("%v: UserMessage %q, fr %q, en %q", k, UserMessage(err), UserMessageIn(err, "fr"), UserMessageIn(err, "en"))
		}
	}
}

// TestKindOfSeesAuditErrors: approval.KindOf finds the kind of an
// audit.Error, bare, wrapped by fmt, or under an approval.Error of kind
// Other (an engine operation that failed because its audit sink did), and
// UserMessageIn says so; an approval.Error with a kind of its own wins over
// the audit error under it.
func TestKindOfSeesAuditErrors(t *testing.T) {
	sinkDown := audit.E("audit.RedisSink.Append", errkind.Unavailable, errors.New("dial tcp: refused"))
	for name, tc := range map[string]struct {
		err  error
		want errkind.Kind
	}{
		"bare":                  {sinkDown, errkind.Unavailable},
		"fmt-wrapped":           {fmt.Errorf("decide: %w", sinkDown), errkind.Unavailable},
		"under an Other":        {E("engine.Decide", errkind.Other, "ap_1", sinkDown), errkind.Unavailable},
		"closed sink":           {E("engine.Decide", errkind.Other, "ap_1", fmt.Errorf("audit: %w", audit.E("audit.FileSink.Append", errkind.Closed, audit.ErrClosed))), errkind.Closed},
		"approval's kind first": {E("engine.Decide", errkind.Conflict, "ap_1", sinkDown), errkind.Conflict},
		"neither":               {errors.New("plain"), errkind.Other},
	} {
		if got := KindOf(tc.err); got != tc.want {
			t.Errorf("%s: KindOf = %v, want %v", name, got, tc.want)
		}
	}
	if got, want := UserMessageIn(fmt.Errorf("x: %w", sinkDown), "en"), UserMessageIn(E("op", errkind.Unavailable, "", nil), "en"); got != want {
		t.Errorf("UserMessageIn(audit unavailable) = %q, want the unavailable sentence %q", got, want)
	}
}
