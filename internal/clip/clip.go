// Package clip shortens text for places that show one line of it: a card's
// summary, a notice, an error detail in a log. It is the one copy of the
// helpers the agent, the cards and the channels each had.
package clip

import "strings"

// Ellipsis is what Runes appends to text it cut.
const Ellipsis = "…"

// FirstLine returns s up to its first newline ("\n"), or all of s when it
// has none. It never shortens the line itself; see Runes.
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Runes returns s when it has at most n runes, and otherwise its first n
// runes followed by Ellipsis. It never splits a rune. n <= 0 cuts
// everything: the result is Ellipsis for a non-empty s.
func Runes(s string, n int) string {
	if len(s) <= n { // n bytes hold at most n runes
		return s
	}
	if n < 0 {
		n = 0
	}
	count := 0
	for i := range s {
		if count == n {
			return s[:i] + Ellipsis
		}
		count++
	}
	return s
}
