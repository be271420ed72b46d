package approval

import (
	"errors"

	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/words"
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

// ErrKind is e's Kind: *Error is an errkind.Kinded.
func (e *Error) ErrKind() errkind.Kind { return e.Kind }

// KindOf returns the kind of err: errkind.Of, which reads approval.Error
// and audit.Error alike, so a failure of either package keeps its kind
// through the other (the first kind in the chain that is not Other).
func KindOf(err error) errkind.Kind { return errkind.Of(err) }

// ErrNotFound is returned (wrapped) when an approval does not exist.
var ErrNotFound = errors.New("approval not found")

// ErrUnavailable is returned (wrapped) when the store cannot be reached.
var ErrUnavailable = errors.New("approval store unavailable")

// ErrApproversUnreachable is returned (wrapped) by a Notifier that could
// not send the card to the approvers' chat of an approval (approve_in):
// the request fails and is cancelled, and UserMessageIn says so.
var ErrApproversUnreachable = errors.New("the approvers' chat could not be reached; nothing was asked")

// ErrNoPrivateView is returned (wrapped) by a channel that cannot show a
// private approval's whole card to any of the people who may see it (on
// DingTalk, members from outside the organisation are reached in the
// group only): nothing is shown, rather than the whole card to everyone,
// and UserMessageIn says why.
var ErrNoPrivateView = errors.New("nobody who may see this private approval can be shown it privately; nothing was asked")

// ErrQuorumUnreachable refuses a request whose approver rule leaves fewer
// people who may approve than its quorum (the requester taken out by
// high_needs_other): nothing is asked.
var ErrQuorumUnreachable = errors.New("too few people may approve this action to reach the quorum; nothing was asked")

// UserMessage returns a sentence about err that is safe to show in a chat,
// in English: UserMessageIn(err, "en"). Code that knows the language the
// user is spoken to in calls UserMessageIn.
func UserMessage(err error) string { return UserMessageIn(err, "en") }

// UserMessageIn returns a sentence about err that is safe to show in a
// chat, in lang ("zh" or "en"; anything else is English, as with
// DefaultOutcomeText), from the catalogue of package words: it never contains addresses, keys or internal
// detail. Channels pass their configured language.
func UserMessageIn(err error, lang string) string {
	k := words.ErrOther
	if errors.Is(err, ErrNoPrivateView) { // before the approvers' chat: it may wrap this
		return words.In(lang, words.ErrNoPrivateView)
	}
	if errors.Is(err, ErrApproversUnreachable) {
		return words.In(lang, words.ErrApproversUnreachable)
	}
	if ae := (*AnswerError)(nil); errors.As(err, &ae) {
		// An answer of the wrong type: which field and why.
		return ae.In(lang)
	}
	switch KindOf(err) {
	case errkind.NotFound:
		k = words.ErrNotFound
	case errkind.Permission:
		k = words.ErrPermission
	case errkind.Conflict:
		k = words.ErrConflict
	case errkind.Expired:
		k = words.ErrExpired
	case errkind.Unavailable:
		k = words.ErrUnavailable
	case errkind.Invalid:
		k = words.ErrInvalid
	}
	return words.In(lang, k)
}

var _ errkind.Kinded = (*Error)(nil)
