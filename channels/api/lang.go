package api

import (
	"context"
	"net/http"

	"github.com/hitlbot/hitlbot/words"
)

// The API speaks each request in one language: the first tag of its
// Accept-Language header that the catalogue of package words speaks ("zh",
// "zh-CN", "en-US" …; tags in the order of their q weights, a tag with
// q=0 refused), else the configured Lang. Only the words change: error
// codes, statuses and field names are the same in every language. What
// other parts of hitlbot say into the conversation (the agent's answers,
// an outcome's text, a card's summary) is in their own language.

// langOf is the language of request r: its Accept-Language, else the
// configured one.
func (a *inbound) langOf(r *http.Request) words.Lang {
	if l, ok := acceptLanguage(r.Header.Values("Accept-Language")); ok {
		return l
	}
	return a.lang
}

// langKey is the key of a request's language in its context.
type langKey struct{}

// withLang returns ctx carrying the language of its request.
func withLang(ctx context.Context, l words.Lang) context.Context {
	return context.WithValue(ctx, langKey{}, l)
}

// langIn is the language ctx carries (withLang), else the configured one.
func (a *inbound) langIn(ctx context.Context) words.Lang {
	if l, ok := ctx.Value(langKey{}).(words.Lang); ok {
		return l
	}
	return a.lang
}

// acceptLanguage is words.Accept.
func acceptLanguage(hs []string) (words.Lang, bool) { return words.Accept(hs) }
