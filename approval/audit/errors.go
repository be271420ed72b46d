package audit

import (
	"errors"
	"fmt"
)

// ErrorKind classifies an error of this package. Do not reorder: new kinds go
// at the end.
type ErrorKind uint8

// Error kinds. The names match the kinds of the approval package.
const (
	KindOther       ErrorKind = iota // unclassified
	KindInvalid                      // a stored record or line is malformed
	KindUnavailable                  // a sink (file, Redis) failed or timed out; may succeed later
	KindClosed                       // the log or sink has been closed
)

var kindNames = [...]string{"other", "invalid", "unavailable", "closed"}

func (k ErrorKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Error is the error type of the audit package: the operation that failed,
// its kind, where (a file line or a stream entry, when there is one), and
// the underlying error. A broken chain is not an Error but a *Break.
type Error struct {
	Op    string    // the operation, e.g. "audit.ReadFile"
	Kind  ErrorKind // what kind of failure
	Line  int       // 1-based line of a file, when the error is about one
	Where string    // the file path or stream key (and entry id), when there is one
	Err   error     // the underlying error
}

func (e *Error) Error() string {
	s := e.Op
	if e.Where != "" {
		s += " " + e.Where
	}
	if e.Line > 0 {
		s += fmt.Sprintf(" line %d", e.Line)
	}
	if e.Kind != KindOther {
		s += ": " + e.Kind.String()
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// E builds an *Error.
func E(op string, kind ErrorKind, err error) error {
	return &Error{Op: op, Kind: kind, Err: err}
}

// KindOf returns the kind of the first *Error in err's chain, or KindOther.
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		if e.Kind == KindOther && e.Err != nil {
			return KindOf(e.Err)
		}
		return e.Kind
	}
	return KindOther
}

// ErrClosed is returned (wrapped) by a sink written after Close.
var ErrClosed = errors.New("audit: closed")

var _ error = (*Error)(nil)
