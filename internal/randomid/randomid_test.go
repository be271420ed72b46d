package randomid

import (
	"regexp"
	"testing"
)

func TestHex(t *testing.T) {
	hexDigits := regexp.MustCompile(`^[0-9a-f]*$`)
	for _, n := range []int{0, 1, 8, 16} {
		s := Hex(n)
		if len(s) != 2*n || !hexDigits.MatchString(s) {
			t.Fatalf("Hex(%d) = %q, want %d lowercase hex digits", n, s, 2*n)
		}
	}
	// Two 16-byte draws colliding would mean the source is not random.
	if a, b := Hex(16), Hex(16); a == b {
		t.Fatalf("Hex(16) gave %q twice", a)
	}
}
