package errkind

import (
	"errors"
	"fmt"
	"testing"
)

func TestString(t *testing.T) {
	for k, want := range map[Kind]string{Other: "other", Invalid: "invalid", NotFound: "not_found",
		Unavailable: "unavailable", Internal: "internal", Closed: "closed", Closed + 1: "kind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("%d: %q, want %q", uint8(k), got, want)
		}
	}
}

type kinded struct {
	k   Kind
	err error
}

func (e kinded) Error() string { return "kinded" }
func (e kinded) ErrKind() Kind { return e.k }
func (e kinded) Unwrap() error { return e.err }

// TestOf: the first kind that is not Other, looking under an Other at what
// it wraps, through wrappers that are not Kinded; Other when none has one.
func TestOf(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		want Kind
	}{
		"nil":            {nil, Other},
		"plain":          {errors.New("x"), Other},
		"own":            {kinded{k: Expired}, Expired},
		"outer wins":     {kinded{k: Conflict, err: kinded{k: Invalid}}, Conflict},
		"under an Other": {kinded{k: Other, err: fmt.Errorf("w: %w", kinded{k: Closed})}, Closed},
		"Other all down": {kinded{k: Other, err: kinded{k: Other, err: errors.New("x")}}, Other},
		"in a join":      {errors.Join(errors.New("a"), kinded{k: Unavailable}), Unavailable},
	} {
		if got := Of(tc.err); got != tc.want {
			t.Errorf("%s: Of = %v, want %v", name, got, tc.want)
		}
	}
}
