package api

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

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
func (a *API) langOf(r *http.Request) words.Lang {
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
func (a *API) langIn(ctx context.Context) words.Lang {
	if l, ok := ctx.Value(langKey{}).(words.Lang); ok {
		return l
	}
	return a.lang
}

// acceptLanguage returns the first language of the catalogue that the
// Accept-Language header values hs accept, by descending q weight (equal
// weights in the order sent). Tags words.Parse does not read ("*", "fr"),
// tags with q=0 and elements with a malformed weight are passed over.
func acceptLanguage(hs []string) (words.Lang, bool) {
	type tag struct {
		lang words.Lang
		q    float64
	}
	var tags []tag
	for _, h := range hs {
		for _, el := range strings.Split(h, ",") {
			name, params, _ := strings.Cut(el, ";")
			q, ok := weight(params)
			if !ok || q <= 0 {
				continue
			}
			if l, err := words.Parse(name); err == nil {
				tags = append(tags, tag{l, q})
			}
		}
	}
	if len(tags) == 0 {
		return "", false
	}
	slices.SortStableFunc(tags, func(x, y tag) int {
		switch {
		case x.q > y.q:
			return -1
		case x.q < y.q:
			return 1
		}
		return 0
	})
	return tags[0].lang, true
}

// weight reads the q parameter of an Accept-Language element's parameters
// (";q=0.8"); without one the weight is 1.
func weight(params string) (float64, bool) {
	for _, p := range strings.Split(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || !(0 <= q && q <= 1) { // NaN too
			return 0, false
		}
		return q, true
	}
	return 1, true
}
