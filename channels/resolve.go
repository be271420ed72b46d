package channels

import "github.com/hitlbot/hitlbot/approval"

// wellFormedAction reports whether a click's value names a decision the
// engine takes: approve or reject without a resolution, or resolve (a
// frozen approval's 已完成 / 重试 / 放弃) with one of the three; always
// with a payload hash.
func wellFormedAction(a CardAction) bool {
	if a.PayloadSHA256 == "" {
		return false
	}
	switch a.Verb {
	case approval.Approve, approval.Reject:
		return a.Resolution == ""
	case approval.Resolve:
		return a.Resolution.Valid()
	}
	return false
}
