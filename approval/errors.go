package approval

import (
	"errors"

	"github.com/hitlbot/hitlbot/approval/errkind"
)

// Error is the error type of the approval package: the operation that
// failed, its kind (one of package errkind's, shared with audit.Error), and
// the underlying error. Err is internal detail; the text safe to show a chat
// user comes from UserMessage.
type Error struct {
	Op   string       // the operation, e.g. "redisstore.Claim"
	Kind errkind.Kind // what kind of failure
	ID   ID           // the approval, when there is one
	Err  error        // the underlying error
}

func (e *Error) Error() string {
	s := e.Op
	if e.ID != "" {
		s += " " + string(e.ID)
	}
	if e.Kind != errkind.Other {
		s += ": " + e.Kind.String()
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// E builds an *Error.
func E(op string, kind errkind.Kind, id ID, err error) error {
	return &Error{Op: op, Kind: kind, ID: id, Err: err}
}

// KindOf returns the kind of the first *Error in err's chain, or errkind.Other.
func KindOf(err error) errkind.Kind {
	var e *Error
	if errors.As(err, &e) {
		if e.Kind == errkind.Other && e.Err != nil {
			return KindOf(e.Err)
		}
		return e.Kind
	}
	return errkind.Other
}

// ErrNotFound is returned (wrapped) when an approval does not exist.
var ErrNotFound = errors.New("approval not found")

// ErrUnavailable is returned (wrapped) when the store cannot be reached.
var ErrUnavailable = errors.New("approval store unavailable")

// UserMessage returns a sentence about err that is safe to show in a chat,
// in English: UserMessageIn(err, "en"). Code that knows the language the
// user is spoken to in calls UserMessageIn.
func UserMessage(err error) string { return UserMessageIn(err, "en") }

// UserMessageIn returns a sentence about err that is safe to show in a
// chat, in lang ("zh" or "en"; anything else is English, as with
// DefaultOutcomeText): it never contains addresses, keys or internal
// detail. Channels pass their configured language.
func UserMessageIn(err error, lang string) string {
	say := func(en, zh string) string {
		if lang == "zh" {
			return zh
		}
		return en
	}
	switch KindOf(err) {
	case errkind.NotFound:
		return say("That approval does not exist (or has been removed).", "找不到此审批（可能已被删除）。")
	case errkind.Permission:
		return say("You may not decide this approval.", "你无权处理此审批。")
	case errkind.Conflict:
		return say("This approval has already been decided.", "此审批已被处理。")
	case errkind.Expired:
		return say("This approval has expired.", "此审批已过期。")
	case errkind.Unavailable:
		return say("Approvals are temporarily unavailable; nothing was run. Please try again shortly.",
			"审批服务暂时不可用，未执行任何操作，请稍后再试。")
	case errkind.Invalid:
		return say("The request was not understood.", "无法理解此请求。")
	}
	return say("Something went wrong; nothing was run.", "出现了问题，未执行任何操作。")
}

var _ error = (*Error)(nil)
