package audit

import (
	"errors"
	"fmt"

	"github.com/hitlbot/hitlbot/approval/errkind"
)

// Error is the error type of the audit package: the operation that failed,
// its kind (one of package errkind's, shared with approval.Error), where (a
// file line or a stream entry, when there is one), and the underlying error. A broken chain is not an Error but a *Break.
type Error struct {
	Op    string       // the operation, e.g. "audit.ReadFile"
	Kind  errkind.Kind // what kind of failure
	Line  int          // 1-based line of a file, when the error is about one
	Where string       // the file path or stream key (and entry id), when there is one
	Err   error        // the underlying error
}

func (e *Error) Error() string {
	s := e.Op
	if e.Where != "" {
		s += " " + e.Where
	}
	if e.Line > 0 {
		s += fmt.Sprintf(" line %d", e.Line)
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
func E(op string, kind errkind.Kind, err error) error {
	return &Error{Op: op, Kind: kind, Err: err}
}

// ErrKind is e's Kind: *Error is an errkind.Kinded.
func (e *Error) ErrKind() errkind.Kind { return e.Kind }

// KindOf returns the kind of err: errkind.Of, which reads approval.Error
// and audit.Error alike, so a failure of either package keeps its kind
// through the other (the first kind in the chain that is not Other).
func KindOf(err error) errkind.Kind { return errkind.Of(err) }

// ErrClosed is returned (wrapped) by a sink written after Close.
var ErrClosed = errors.New("audit: closed")

var _ errkind.Kinded = (*Error)(nil)
