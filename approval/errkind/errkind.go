// Package errkind is the one set of error kinds of hitlbot's approval
// packages: approval.Error and audit.Error both classify their failures with
// a Kind from here, so a kind means the same thing (and has the same value)
// wherever it is found. It is a package of its own because audit cannot
// import approval (approval imports audit).
//
// A kind tells a caller what to tell a user and whether to retry; the
// operation and the underlying error stay in the package's own Error type.
package errkind

import "fmt"

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
