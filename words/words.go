// Package words is the one catalogue of the sentences people read, in each
// language hitlbot speaks (English and Chinese): outcome texts, frozen
// causes, error messages, risk reasons, card labels, the router's notices,
// the agent's notices about a turn, and the channels' own prompts and
// replies. Code names a sentence by its Key and says it with Text in the
// language of the person it speaks to; nothing else in hitlbot holds a
// sentence in two languages.
//
// Sentences written for the model (the loop's replies to its tool calls,
// which only the model reads) are not people's words: they stay English,
// with the code that writes them.
//
// The package imports nothing of hitlbot, so every floor, approval
// included, may use it.
package words

import (
	"context"
	"fmt"
	"strings"
)

// Lang is a language hitlbot speaks. Its zero value is not a language;
// Text speaks English for it.
type Lang string

// The languages of the catalogue.
const (
	EN Lang = "en"
	ZH Lang = "zh"
)

// Langs are the languages of the catalogue, English first.
var Langs = []Lang{EN, ZH}

// Parse reads a configured language: "en" or "zh", with a region or
// script after a dash or underscore ("zh-CN", "zh_Hans", "en-US"), in any
// case. Anything else is an error.
func Parse(s string) (Lang, error) {
	base, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "-")
	base, _, _ = strings.Cut(base, "_")
	switch base {
	case "en":
		return EN, nil
	case "zh":
		return ZH, nil
	}
	return "", fmt.Errorf("unknown language %q (want zh or en)", s)
}

// Of is the language s names as Parse reads it, or English when s names
// none: the language of a config that was validated before, or of a
// caller that wants a sentence whatever it was given.
func Of(s string) Lang {
	if l, err := Parse(s); err == nil {
		return l
	}
	return EN
}

// Text says the sentence k in lang, with args formatted into it as by
// fmt.Sprintf (a sentence without args is returned as written). A
// sentence missing in lang is said in English; one missing in English too
// (a catalogue test forbids it) is said as its key's number, never as an
// empty string.
func Text(lang Lang, k Key, args ...any) string { return catalogue.text(lang, k, args...) }

// In is Text with the language given as configured ("zh", "en", "zh-CN"
// …; see Of).
func In(lang string, k Key, args ...any) string { return Text(Of(lang), k, args...) }

// book holds the sentences of each language.
type book map[Lang]map[Key]string

// catalogue is the book Text reads; nothing writes to it.
var catalogue = book{EN: en, ZH: zh}

func (b book) text(lang Lang, k Key, args ...any) string {
	s := b[lang][k]
	if s == "" {
		s = b[EN][k]
	}
	if s == "" {
		return fmt.Sprintf("(words %d)", int(k))
	}
	if len(args) == 0 {
		return s
	}
	return fmt.Sprintf(s, args...)
}

// langKey is the context key of a call's language.
type langKey struct{}

// WithLang is ctx carrying lang: the language of the person a call works
// for, so that what a tool says back (its result, its refusal) is in
// their language. The loop sets it for the calls of a turn, the approval
// engine for an approved call.
func WithLang(ctx context.Context, lang Lang) context.Context {
	return context.WithValue(ctx, langKey{}, lang)
}

// LangOf is the language ctx carries (WithLang), or English.
func LangOf(ctx context.Context) Lang {
	if l, ok := ctx.Value(langKey{}).(Lang); ok && l != "" {
		return l
	}
	return EN
}
