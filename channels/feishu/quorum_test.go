package feishu

import (
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
)

// TestQuorumOnFeishu, through the fake Feishu and the real SDK: HIGH needs
// 2 of ou_dba1, ou_dba2, ou_dba3. The card says so and offers no edit;
// the first DBA's click is answered with a toast that their approval
// counts, and the card is patched in place with "1/2 approved:" and a
// mention of ou_dba1 (the client shows the name), and its buttons; a second click by the same DBA counts for nothing;
// the second DBA's click runs the call once and the card ends executed
// with both votes.
func TestQuorumOnFeishu(t *testing.T) {
	pc := approval.DefaultPolicyConfig()
	pc.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverUsers, Users: []string{"ou_dba1", "ou_dba2", "ou_dba3"}, Quorum: 2}}
	g := newRigWith(t, rigOptions{policy: &pc})
	a, card := g.pending(t, "oc_ops", "ou_alice", "orders")
	js := mustJSON(t, card)
	if !strings.Contains(js, "only ou_dba1, ou_dba2, ou_dba3; 2 of them must approve") || strings.Contains(js, `"decision":"edit"`) {
		t.Fatalf("the pending card:\n%s", js)
	}

	resp, _ := g.click(t, a, "ou_dba1", buttonValue(a, "approve"))
	if resp.Toast == nil || !strings.Contains(resp.Toast.Content, "1/2 approved: ou_dba1") {
		t.Fatalf("the first DBA's click answered %+v", resp.Toast)
	}
	eventually(t, "the card patched with the progress", func() bool {
		for _, c := range g.calls("patch") {
			if c.MessageID == a.Cards[0].MessageID && strings.Contains(c.Content, `1/2 approved: \u003cat id=ou_dba1\u003e\u003c/at\u003e`) && strings.Contains(c.Content, `"decision":"approve"`) {
				return true
			}
		}
		return false
	})
	if resp, _ := g.click(t, a, "ou_dba1", buttonValue(a, "approve")); resp.Toast == nil || !strings.Contains(resp.Toast.Content, "already approved") {
		t.Fatalf("the same DBA again answered %+v", resp)
	}
	if n := g.erase.Runs.Load(); n != 0 {
		t.Fatalf("the call ran %d times on one approval of two", n)
	}

	g.click(t, a, "ou_dba2", buttonValue(a, "approve"))
	eventually(t, "executed", func() bool { return g.state(t, a.ID) == approval.StateExecuted })
	eventually(t, "the card ended with both votes", func() bool {
		ps := g.calls("patch")
		last := ps[len(ps)-1]
		return last.MessageID == a.Cards[0].MessageID && strings.Contains(last.Content, `2/2 approved: \u003cat id=ou_dba1\u003e\u003c/at\u003e, \u003cat id=ou_dba2\u003e\u003c/at\u003e`) &&
			!strings.Contains(last.Content, `"decision":"approve"`)
	})
	if n := g.erase.Runs.Load(); n != 1 {
		t.Fatalf("the call ran %d times, want once", n)
	}
}
