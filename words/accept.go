package words

import (
	"slices"
	"strconv"
	"strings"
)

// Accept returns the first language of the catalogue that the
// Accept-Language header values hs accept, by descending q weight (equal
// weights in the order sent). Tags Parse does not read ("*", "fr"), tags
// with q=0 and elements with a malformed weight are passed over.
func Accept(hs []string) (Lang, bool) {
	type tag struct {
		lang Lang
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
			if l, err := Parse(name); err == nil {
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

// Locale is the language of the process's locale: the first of LC_ALL,
// LC_MESSAGES and LANG that is set ("zh_CN.UTF-8" is Chinese), English
// when it names another language or none. getenv is os.Getenv.
func Locale(getenv func(string) string) Lang {
	for _, v := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		s := getenv(v)
		if s == "" {
			continue
		}
		s, _, _ = strings.Cut(s, ".") // zh_CN.UTF-8
		if l, err := Parse(s); err == nil {
			return l
		}
		return EN // set, and not a language of the catalogue (C, POSIX, fr_FR)
	}
	return EN
}
