package web

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/clip"
	"github.com/hitlbot/hitlbot/words"
)

// callsMalformed is the protocol error of a user.response whose calls are
// not a per-call decision (for client programs: English, like the other
// errors of malformed frames).
const callsMalformed = `user.response content.calls needs confirmed true and every call_id of the confirmation's card once, each "approve" or "reject"`

// editsMalformed is the protocol error of a user.response whose edits are
// malformed (for client programs, as callsMalformed).
const editsMalformed = `user.response content.edits needs confirmed true, no calls, and an object of call key ("#1" for one call, else a call_id) -> new arguments (an object)`

// editRefusal says to the person, in lang, why the engine refused their
// edit: the approval needs several approvers, or the arguments were
// refused, with the cause approval.ErrEdit's error gives after it (the
// tool's own words on the person's input, cut to 300 runes); any other
// error as approval.UserMessageIn says it. Never the engine's Go text.
func editRefusal(err error, lang string) string {
	if errors.Is(err, approval.ErrQuorumNoEdit) {
		return words.In(lang, words.QuorumNoEdit)
	}
	if ae := (*approval.AnswerError)(nil); errors.As(err, &ae) {
		// An answer of the wrong type to an MCP server's question.
		return ae.In(lang)
	}
	if !errors.Is(err, approval.ErrEdit) {
		return approval.UserMessageIn(err, lang)
	}
	cause := err.Error()
	if _, after, ok := strings.Cut(cause, approval.ErrEdit.Error()+": "); ok {
		cause = after
	}
	return words.In(lang, words.APIEditInvalid, clip.Runes(cause, 300))
}

// responseEdits reports whether a user.response's edits, if any, are well
// formed: with confirmed true, without calls, each value an object.
func responseEdits(rc responseContent) bool {
	if rc.Edits == nil {
		return true
	}
	if rc.Confirmed == nil || !*rc.Confirmed || rc.Calls != nil || len(rc.Edits) == 0 {
		return false
	}
	for _, v := range rc.Edits {
		var m map[string]json.RawMessage
		if json.Unmarshal(v, &m) != nil || m == nil {
			return false
		}
	}
	return true
}

// responseCalls reads a user.response's per-call decision: nil without
// calls; not ok when calls comes with confirmed false or holds a value
// other than approve or reject. Whether it names every call once is the
// engine's check (approval.VerdictsFor), answered with the same error.
func responseCalls(rc responseContent) (map[string]approval.Verb, bool) {
	if rc.Calls == nil {
		return nil, true
	}
	if rc.Confirmed == nil || !*rc.Confirmed {
		return nil, false
	}
	out := make(map[string]approval.Verb, len(rc.Calls))
	for k, v := range rc.Calls {
		switch approval.Verb(v) {
		case approval.Approve, approval.Reject:
			out[k] = approval.Verb(v)
		default:
			return nil, false
		}
	}
	return out, true
}
