package channels

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/storetest"
)

// putPrivate stores a pending private approval of alice in the fake
// group chat c1 that only bob may approve, with its redacted card in the
// chat and its private card for bob.
func (g *rig) putPrivate(t *testing.T) *approval.Approval {
	t.Helper()
	a := storetest.NewApproval(t, "fake:c1")
	a.Channel, a.ChatID, a.Requester = "fake", "c1", "alice"
	a.Approvers = approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"bob"}}
	a.Privacy, a.Group = approval.PrivacyGroup, true
	a.CreatedAt = time.Now().UTC()
	a.ExpiresAt = a.CreatedAt.Add(approval.DefaultTimeout)
	a.Cards = []approval.CardRef{{Channel: "fake", ChatID: "c1", MessageID: "m_group"}, {Channel: "fake", ChatID: "p2p_bob", MessageID: "m_bob", Private: true}}
	if _, err := g.store.Put(context.Background(), a, approval.Outcome{Status: approval.StatusSuperseded}); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestPrivateViews: the router's views of a private approval
// (PendingView, which a page or a click without a card reference reads,
// and ApprovalView, which a click on a card reads) are redacted for a
// person who may not see it and on its chat's card, whole for its
// requester, its approver and on its private card.
func TestPrivateViews(t *testing.T) {
	g := newRig(t, nil)
	a := g.putPrivate(t)
	ctx := context.Background()
	for _, tc := range []struct {
		user     approval.UserID
		redacted bool
	}{{"carol", true}, {"", true}, {"alice", false}, {"bob", false}} {
		v, err := g.router.PendingView(ctx, Target{Channel: "fake", ChatID: "c1", UserID: tc.user})
		if err != nil || v == nil {
			t.Fatalf("PendingView for %q: %v, %v", tc.user, v, err)
		}
		if v.Redacted != tc.redacted || (tc.redacted && (v.Summary != "" || len(v.Calls) != 0 || v.Preview != "" || v.Approve != nil)) {
			t.Errorf("PendingView for %q: redacted %v, summary %q, %d calls", tc.user, v.Redacted, v.Summary, len(v.Calls))
		}
	}
	for _, tc := range []struct {
		msg      string
		redacted bool
	}{{"m_group", true}, {"m_bob", false}} {
		v, err := g.router.ApprovalView(ctx, "fake", a.ID, tc.msg)
		if err != nil || v == nil {
			t.Fatalf("ApprovalView of %s: %v, %v", tc.msg, v, err)
		}
		if v.Redacted != tc.redacted || (tc.redacted && v.Summary != "") || (!tc.redacted && !strings.Contains(v.Summary, "DELETE")) {
			t.Errorf("ApprovalView of %s: redacted %v, summary %q", tc.msg, v.Redacted, v.Summary)
		}
	}
}

// TestPrivateFailsClosed: a private approval on a channel that cannot
// show anything to some people only is not shown at all (the engine then
// cancels it), and its settle redacts the chat's card.
func TestPrivateFailsClosed(t *testing.T) {
	g := newRig(t, nil)
	a := g.putPrivate(t)
	ctx := context.Background()
	if refs, err := g.router.Show(ctx, a); !errors.Is(err, ErrNoPrivacy) || refs != nil {
		t.Fatalf("Show = %v, %v; want ErrNoPrivacy", refs, err)
	}
	if n := len(g.ch.shownCards()); n != 0 {
		t.Fatalf("%d cards shown", n)
	}
	o := approval.Outcome{Status: approval.StatusExecuted, DecidedBy: "bob", Content: "DELETE 1"}
	_ = g.router.Settle(ctx, a, o)
	got := g.ch.settledCards()
	if len(got) != 2 {
		t.Fatalf("%d cards settled", len(got))
	}
	for _, s := range got {
		if s.ref.Private == s.v.Redacted || (s.v.Redacted && (s.v.Result != "" || s.v.Summary != "")) || (!s.v.Redacted && s.v.Result != "DELETE 1") {
			t.Errorf("card %+v settled as redacted %v, result %q, summary %q", s.ref, s.v.Redacted, s.v.Result, s.v.Summary)
		}
	}
}
