package words

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestEveryKeyInEveryLanguage: each key has a sentence in each language,
// and no language holds a sentence for a key that does not exist.
func TestEveryKeyInEveryLanguage(t *testing.T) {
	for _, l := range Langs {
		c := catalogue[l]
		if c == nil {
			t.Fatalf("%s: no catalogue", l)
		}
		for _, k := range Keys() {
			if strings.TrimSpace(c[k]) == "" {
				t.Errorf("%s: key %d (en %q) has no sentence", l, k, en[k])
			}
		}
		for k := range c {
			if !k.Valid() {
				t.Errorf("%s: sentence %q under key %d, which is not a key", l, c[k], k)
			}
		}
	}
}

// verb matches a fmt verb with its flags, index, width and precision.
var verb = regexp.MustCompile(`%[-+# 0]*(\[\d+\])?(\d+|\*)?(\.(\d+|\*)?)?[a-zA-Z%]`)

func verbs(s string) []string {
	var vs []string
	for _, v := range verb.FindAllString(s, -1) {
		if v != "%%" {
			vs = append(vs, v)
		}
	}
	return vs
}

// args lists which verb formats which argument, "<n>:<verb without its
// index>", sorted: fmt's explicit argument indexes ("%[2]s") let a
// language put the arguments in its own order ("affects %[1]s in %[2]s",
// "影响 %[2]s 中的 %[1]s"); a verb without one takes the argument after the
// previous verb's, as in fmt.
func args(s string) []string {
	var as []string
	n := 1
	for _, v := range verbs(s) {
		if m := argIndex.FindStringSubmatch(v); m != nil {
			n, _ = strconv.Atoi(m[1])
			v = argIndex.ReplaceAllString(v, "")
		}
		as = append(as, strconv.Itoa(n)+":"+v)
		n++
	}
	slices.Sort(as)
	return as
}

var argIndex = regexp.MustCompile(`\[(\d+)\]`)

// TestVerbsAgree: every language formats a key's arguments with the same
// verbs, each argument with the verb it has in English (in the same order
// unless explicit indexes reorder them), so one call says the same thing
// in each.
func TestVerbsAgree(t *testing.T) {
	for _, k := range Keys() {
		want := args(en[k])
		for _, l := range Langs[1:] {
			if got := args(catalogue[l][k]); !slices.Equal(got, want) {
				t.Errorf("key %d: %s has verbs %q, en %q (en %q, %s %q)", k, l, got, want, en[k], l, catalogue[l][k])
			}
		}
	}
}

// TestArgsReordered: explicit indexes may reorder arguments, never change
// which verb formats which.
func TestArgsReordered(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"affects %[1]s in %[2]s", "影响 %[2]s 中的 %[1]s", true},
		{"%s and %d", "%[1]s 和 %[2]d", true},
		{"%s and %d", "%[2]d 和 %[1]s", true},
		{"%s and %d", "%d 和 %s", false},
		{"%[1]s in %[2]s", "%[1]s 中 %[1]s", false},
		{"%s", "%s %s", false},
	} {
		if got := slices.Equal(args(tc.a), args(tc.b)); got != tc.same {
			t.Errorf("%q vs %q: same = %v, want %v (%q, %q)", tc.a, tc.b, got, tc.same, args(tc.a), args(tc.b))
		}
	}
}

func TestVerbsFound(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want []string
	}{
		{"plain", nil},
		{"100%% sure", nil},
		{"%s and %d", []string{"%s", "%d"}},
		{"low (%.2f < %.2f)", []string{"%.2f", "%.2f"}},
		{"%[2]s then %-5v", []string{"%[2]s", "%-5v"}},
	} {
		if got := verbs(tc.s); !slices.Equal(got, tc.want) {
			t.Errorf("verbs(%q) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct {
		name string
		lang Lang
		key  Key
		args []any
		want string
	}{
		{"outcome en", EN, OutcomeExpired, nil, "The approval expired; nothing was run"},
		{"outcome zh", ZH, OutcomeExpired, nil, "审批已过期，未执行"},
		{"rows en", EN, ReasonRows, []any{37, 20}, "affects 37 rows, more than 20"},
		{"rows zh", ZH, ReasonRows, []any{37, 20}, "影响 37 行，超过 20 行"},
		{"confidence zh", ZH, ReasonLowConfidence, []any{0.5, 0.85}, "置信度低（0.50 < 0.85）"},
		{"stale en", EN, FrozenStale, []any{"bob", "2026-01-02T03:04:05Z", "3m10s"},
			"the replica running it stopped: approved by bob at 2026-01-02T03:04:05Z, but no result was recorded within 3m10s; it is not run again"},
		{"batch zh", ZH, CardBatchOf, []any{3}, "（3 个操作）"},
		{"no language is English", "", ErrExpired, nil, "This approval has expired."},
		{"unknown language is English", Lang("fr"), ErrExpired, nil, "This approval has expired."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Text(tc.lang, tc.key, tc.args...); got != tc.want {
				t.Errorf("Text(%q, %d, %v) = %q, want %q", tc.lang, tc.key, tc.args, got, tc.want)
			}
		})
	}
}

// TestMissingFallsBack: a sentence missing in a language at run time is
// said in English, and one missing everywhere is never empty.
func TestMissingFallsBack(t *testing.T) {
	b := book{EN: {OutcomeExecuted: "Executed", ReasonRows: "affects %d rows, more than %d"}, ZH: {}}
	if got := b.text(ZH, OutcomeExecuted); got != "Executed" {
		t.Errorf("missing zh: got %q, want the English", got)
	}
	if got := b.text(ZH, ReasonRows, 3, 2); got != "affects 3 rows, more than 2" {
		t.Errorf("missing zh, with args: got %q", got)
	}
	if got := b.text(ZH, none); got == "" {
		t.Error("the zero key: got an empty string")
	}
	if got := b.text(ZH, OutcomeFailed); got == "" {
		t.Error("missing everywhere: got an empty string")
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Lang
		ok   bool
	}{
		{"en", EN, true},
		{"zh", ZH, true},
		{"zh-CN", ZH, true},
		{"zh_Hans", ZH, true},
		{" ZH ", ZH, true},
		{"en-US", EN, true},
		{"", "", false},
		{"fr", "", false},
		{"zhx", "", false},
	} {
		got, err := Parse(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("Parse(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
		if of := Of(tc.in); tc.ok && of != tc.want || !tc.ok && of != EN {
			t.Errorf("Of(%q) = %q", tc.in, of)
		}
	}
	if got := In("zh-CN", CardTitle); got != "需要确认" {
		t.Errorf("In(zh-CN, CardTitle) = %q", got)
	}
}
