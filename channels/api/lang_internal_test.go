package api

import (
	"slices"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/words"
)

func TestAcceptLanguage(t *testing.T) {
	for _, tc := range []struct {
		hs   []string
		want words.Lang
		ok   bool
	}{
		{nil, "", false},
		{[]string{""}, "", false},
		{[]string{"zh"}, words.ZH, true},
		{[]string{"zh-CN"}, words.ZH, true},
		{[]string{"zh-Hans-CN;q=0.8"}, words.ZH, true},
		{[]string{"en-US,en;q=0.9"}, words.EN, true},
		{[]string{"fr-FR, zh-TW;q=0.7, en;q=0.3"}, words.ZH, true}, // the first acceptable tag
		{[]string{"en;q=0.3, zh;q=0.7"}, words.ZH, true},           // by weight
		{[]string{"en;q=0.5, zh;q=0.5"}, words.EN, true},           // equal weights: as sent
		{[]string{"en; q=0.2", "ZH ; Q=1"}, words.ZH, true},        // several header lines, spaces, case
		{[]string{"zh;q=0, en;q=0.1"}, words.EN, true},             // q=0: not acceptable
		{[]string{"zh;q=0"}, "", false},
		{[]string{"zh;q=abc, en"}, words.EN, true}, // a malformed weight: passed over
		{[]string{"zh;q=NaN"}, "", false},
		{[]string{"zh;q=2"}, "", false},
		{[]string{"*"}, "", false},
		{[]string{"fr, de;q=0.9, *;q=0.1"}, "", false},
		{[]string{"zhx, english"}, "", false},
	} {
		got, ok := acceptLanguage(tc.hs)
		if got != tc.want || ok != tc.ok {
			t.Errorf("acceptLanguage(%q) = %q, %v; want %q, %v", tc.hs, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzAcceptLanguage: any Accept-Language a client sends is read without
// a panic, and a language it picks is one the catalogue speaks, named in
// the header.
func FuzzAcceptLanguage(f *testing.F) {
	for _, s := range []string{"zh-CN,zh;q=0.9,en;q=0.8", "en-US", "fr, *;q=0.5", "zh;q=0", "en;q=abc, zh", ";;;,,,", "zh;q=NaN", "EN;Q=1.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		l, ok := acceptLanguage([]string{h})
		if !ok {
			return
		}
		if !slices.Contains(words.Langs, l) {
			t.Fatalf("acceptLanguage(%q) = %q, not a language of the catalogue", h, l)
		}
		if !strings.Contains(strings.ToLower(h), string(l)) {
			t.Fatalf("acceptLanguage(%q) = %q, which the header does not name", h, l)
		}
	})
}
