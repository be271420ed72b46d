package errkind

import "testing"

func TestString(t *testing.T) {
	for k, want := range map[Kind]string{Other: "other", Invalid: "invalid", NotFound: "not_found",
		Unavailable: "unavailable", Internal: "internal", Closed: "closed", Closed + 1: "kind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("%d: %q, want %q", uint8(k), got, want)
		}
	}
}
