// Package errkind is the one set of error kinds of hitlbot's approval
// packages: approval.Error and audit.Error both classify their failures with
// a Kind from here, so a kind means the same thing (and has the same value)
// wherever it is found. It is a package of its own because audit cannot
// import approval (approval imports audit).
//
// Of is the one KindOf: it reads the kind of an approval.Error and of an
// audit.Error alike (both are a Kinded), so either package's KindOf sees the
// other's errors.
//
// A kind tells a caller what to tell a user and whether to retry; the
// operation and the underlying error stay in the package's own Error type.
package errkind

import (
	"errors"
	"fmt"
)

// Kind classifies an error. Do not reorder: new kinds go at the end.
type Kind uint8

// Kinds.
const (
	Other       Kind = iota // unclassified
	Invalid                 // the input (or a stored record) is malformed
	NotFound                // no such approval
	Permission              // the actor may not do this
	Conflict                // the state does not allow it (already decided, superseded)
	Expired                 // too late
	Unavailable             // a dependency (the store, an audit sink) is down or timed out; may succeed later
	Internal                // a bug or an unexpected state
	Closed                  // the thing (an audit log or sink) has been closed
)

var names = [...]string{"other", "invalid", "not_found", "permission", "conflict", "expired", "unavailable", "internal", "closed"}

func (k Kind) String() string {
	if int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Kinded is an error that carries a Kind: approval.Error and audit.Error.
type Kinded interface {
	error
	ErrKind() Kind
}

// Of returns the kind of the first Kinded error in err's chain whose kind is
// not Other, looking under a Kinded of kind Other at what it wraps (an
// operation that failed because another did keeps that one's kind); Other
// when there is none.
func Of(err error) Kind {
	var k Kinded
	for errors.As(err, &k) {
		if kind := k.ErrKind(); kind != Other {
			return kind
		}
		err = errors.Unwrap(k)
		if err == nil {
			break
		}
	}
	return Other
}
