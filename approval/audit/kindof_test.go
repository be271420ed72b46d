package audit_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

// TestKindOfSeesApprovalErrors: audit.KindOf finds the kind of an
// approval.Error as well as of its own, whichever wraps the other, and an
// audit.Error of kind Other defers to what it wraps.
func TestKindOfSeesApprovalErrors(t *testing.T) {
	conflict := approval.E("redisstore.Claim", errkind.Conflict, "ap_1", nil)
	for name, tc := range map[string]struct {
		err  error
		want errkind.Kind
	}{
		"approval error":             {conflict, errkind.Conflict},
		"fmt-wrapped approval error": {fmt.Errorf("append: %w", conflict), errkind.Conflict},
		"under an audit Other":       {audit.E("audit.Log.Append", errkind.Other, conflict), errkind.Conflict},
		"audit's kind first":         {audit.E("audit.Log.Append", errkind.Unavailable, conflict), errkind.Unavailable},
		"audit under approval Other": {approval.E("engine.Decide", errkind.Other, "ap_1", audit.E("audit.FileSink.Append", errkind.Closed, audit.ErrClosed)), errkind.Closed},
		"neither":                    {errors.New("plain"), errkind.Other},
	} {
		if got := audit.KindOf(tc.err); got != tc.want {
			t.Errorf("%s: audit.KindOf = %v, want %v", name, got, tc.want)
		}
		if got := approval.KindOf(tc.err); got != tc.want {
			t.Errorf("%s: approval.KindOf = %v, want %v", name, got, tc.want)
		}
	}
}
