package approval

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Verdicts is what a per-call decision chose for each call of a batch, in
// the order of Approval.Calls: one byte per call, 'a' (approve: the call
// runs) or 'r' (reject: it does not, and its result says who declined it).
// Empty means every call as the decision's verb. The claim records it on
// the approval in the same atomic step that claims it (memstore, and the
// Redis claim script as the field "v"), so whichever replica runs the
// claimed calls, or reads the record later, knows which were approved.
type Verdicts string

// Verdict bytes.
const (
	VerdictApprove = 'a'
	VerdictReject  = 'r'
)

// Valid reports whether v is empty or holds exactly n verdict bytes.
func (v Verdicts) Valid(n int) bool {
	if v == "" {
		return true
	}
	if len(v) != n {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] != VerdictApprove && v[i] != VerdictReject {
			return false
		}
	}
	return true
}

// Approved reports whether call i runs under v (every call does when v is
// empty).
func (v Verdicts) Approved(i int) bool { return v == "" || i >= len(v) || v[i] == VerdictApprove }

// Mixed reports whether v approves some calls and rejects others.
func (v Verdicts) Mixed() bool {
	return strings.IndexByte(string(v), VerdictApprove) >= 0 && strings.IndexByte(string(v), VerdictReject) >= 0
}

// CallKey is how a per-call decision names call i (0-based) of calls: its
// CallID, or "#<n>" (n = i+1) for a call without one.
func CallKey(calls []Call, i int) string {
	if calls[i].CallID != "" {
		return calls[i].CallID
	}
	return "#" + strconv.Itoa(i+1)
}

// ErrCallVerdicts is the cause of a per-call decision that does not name
// each call of the approval exactly once with approve or reject.
var ErrCallVerdicts = errors.New("a per-call decision must name every call of the approval once, with approve or reject")

// VerdictsFor turns a per-call decision (call key -> verb; a key is a
// call's CallID, or "#<n>" for the n-th call, 1-based, which also names a
// call that has an id) into the Verdicts of calls. Every call must be named
// exactly once and nothing else; the error wraps ErrCallVerdicts.
func VerdictsFor(calls []Call, named map[string]Verb) (Verdicts, error) {
	if len(named) != len(calls) {
		return "", fmt.Errorf("%w: %d named, the approval has %d", ErrCallVerdicts, len(named), len(calls))
	}
	b := make([]byte, len(calls))
	for k, verb := range named {
		i := callIndex(calls, k)
		if i < 0 {
			return "", fmt.Errorf("%w: no call %q", ErrCallVerdicts, k)
		}
		if b[i] != 0 {
			return "", fmt.Errorf("%w: call %d named twice", ErrCallVerdicts, i+1)
		}
		switch verb {
		case Approve:
			b[i] = VerdictApprove
		case Reject:
			b[i] = VerdictReject
		default:
			return "", fmt.Errorf("%w: call %q: unknown verdict %q", ErrCallVerdicts, k, verb)
		}
	}
	return Verdicts(b), nil
}

// callIndex finds the call key k names: a call id first, then "#<n>".
func callIndex(calls []Call, k string) int {
	if k == "" {
		return -1
	}
	for i, c := range calls {
		if c.CallID == k {
			return i
		}
	}
	if n, err := strconv.Atoi(strings.TrimPrefix(k, "#")); err == nil && strings.HasPrefix(k, "#") && n >= 1 && n <= len(calls) &&
		strconv.Itoa(n) == k[1:] {
		return n - 1
	}
	return -1
}
