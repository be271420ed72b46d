package dingtalk

import (
	"context"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
)

// grantClicks are the params of a MEDIUM card's buttons (the template's
// 仅本次 / 本会话允许 add grant to 确认's params) and the grant the click
// reaches the router with; an unknown grant decides nothing.
var grantClicks = []struct {
	grant  any // nil: no grant param (an older template's 确认)
	want   approval.GrantChoice
	decide bool
}{
	{"once", approval.GrantOnce, true},
	{"session", approval.GrantSession, true},
	{nil, approval.GrantUnset, true},
	{"forever", "", false},
}

func TestGrantClick(t *testing.T) {
	for _, tc := range grantClicks {
		h := &scriptedHandler{out: approval.Outcome{Status: approval.StatusExecuted}}
		c, _ := newUnit(t, h, nil)
		req := cardRequest("bob", "confirm")
		if tc.grant != nil {
			req.CardActionData.CardPrivateData.Params["grant"] = tc.grant
		}
		if _, err := c.in.onCardCallback(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		h.mu.Lock()
		var got []approval.GrantChoice
		for _, a := range h.got {
			got = append(got, a.Grant)
		}
		h.mu.Unlock()
		if !tc.decide {
			if len(got) != 0 {
				t.Errorf("grant %v: decided %v", tc.grant, got)
			}
			continue
		}
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("grant %v: reached the router as %v, want %q", tc.grant, got, tc.want)
		}
	}
}
