package approval

import (
	"slices"
	"testing"
)

// TestActionStatuses: the two action statuses are apart from the outcome
// vocabulary (no outcome_text, no card), and pending is not an ended one.
func TestActionStatuses(t *testing.T) {
	for _, st := range []Status{StatusInvalid, StatusPending} {
		if slices.Contains(AllStatuses, st) {
			t.Errorf("%s is in AllStatuses", st)
		}
	}
	if StatusPending.Final() {
		t.Error("pending is final")
	}
	if !StatusInvalid.Final() || !StatusExecuted.Final() || StatusMissing.Final() {
		t.Error("Final changed for invalid, executed or missing")
	}
}
