// Package randomid makes the random hex identifiers the channels give
// messages, requests, streams and cards ("wm_…", "req_…", "cli_…",
// "answer-…"). It is the one copy of the randomHex helper the web, API,
// DingTalk and CLI channels each had.
package randomid

import (
	"crypto/rand"
	"encoding/hex"
)

// Hex returns n random bytes from crypto/rand as 2n lowercase hex digits.
// crypto/rand.Read does not fail (since Go 1.24 it crashes the program
// rather than return an error), so neither does Hex.
func Hex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
