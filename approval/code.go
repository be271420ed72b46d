package approval

import (
	"context"
	"crypto/sha256"
	"slices"
)

// codeAlphabet is what a short code is written with: lowercase letters
// and digits.
const codeAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// CodeLen is the length of an approval's short code.
const CodeLen = 4

// maxCodeTries is how many candidate codes an approval has: the first
// one free among the older approvals of its chat is its code.
const maxCodeTries = 8

// ShortCode returns candidate k (0, 1, …) of approval id's short code: 4
// lowercase letters or digits derived from the id alone, so every replica
// derives the same. Candidate 0 is the code unless an older approval
// pending in the same chat has it (see Codes).
func ShortCode(id ID, k int) string {
	var sum [32]byte
	if k == 0 {
		sum = sha256.Sum256([]byte(id))
	} else {
		sum = sha256.Sum256(append([]byte(id), '#', byte('0'+k)))
	}
	var b [CodeLen]byte
	for i := range b {
		b[i] = codeAlphabet[int(sum[i])%len(codeAlphabet)]
	}
	return string(b[:])
}

// Codes gives each approval pending in one chat its short code: in order
// of creation (oldest first, as Store.ChatPending returns them), the first
// candidate (ShortCode k = 0, 1, …) that no older one has taken. An older
// approval's code never changes when a newer one comes; every replica that
// reads the same list assigns the same codes.
func Codes(as []*Approval) map[ID]string {
	sorted := append([]*Approval(nil), as...)
	SortByCreation(sorted)
	out := make(map[ID]string, len(sorted))
	taken := map[string]bool{}
	for _, a := range sorted {
		code := ShortCode(a.ID, 0)
		for k := 0; k < maxCodeTries; k++ {
			if c := ShortCode(a.ID, k); !taken[c] {
				code = c
				break
			}
		}
		taken[code] = true
		out[a.ID] = code
	}
	return out
}

// CodeIn is a's code among waiting, the approvals pending in its chat
// (Store.ChatPending), a counted among them when the list misses it (it
// was read before a was stored, or a has just ended).
func CodeIn(waiting []*Approval, a *Approval) string {
	if !slices.ContainsFunc(waiting, func(w *Approval) bool { return w.ID == a.ID }) {
		waiting = append(slices.Clone(waiting), a)
	}
	return Codes(waiting)[a.ID]
}

// ChatCoder is implemented by a store that can tell an approval's short
// code in its chat (its approvers' chat when it has one: DecidesIn) more cheaply than by reading every approval pending
// there (redisstore: one round trip when the approval is the chat's only
// one). ChatCode must answer what CodeIn of ChatPending answers.
type ChatCoder interface {
	ChatCode(ctx context.Context, a *Approval) (string, error)
}

// ByCode returns the approvals of as that code names: the one whose code
// (Codes) it is; else those it is a candidate of (a card shown while an
// older approval held the first candidate still names its approval after
// that one ended). More than one means it is ambiguous.
func ByCode(as []*Approval, code string) []*Approval {
	codes := Codes(as)
	var out []*Approval
	for _, a := range as {
		if codes[a.ID] == code {
			return []*Approval{a}
		}
	}
	for _, a := range as {
		for k := 0; k < maxCodeTries; k++ {
			if ShortCode(a.ID, k) == code {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// ValidCode reports whether s has the form of a short code.
func ValidCode(s string) bool {
	if len(s) != CodeLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
