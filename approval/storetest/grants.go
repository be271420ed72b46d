package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

// grantSession returns a session key no other test uses.
func grantSession(name string) approval.SessionKey {
	return approval.SessionKey(fmt.Sprintf("test:grants-%s-%d:ou_x", name, time.Now().UnixNano()))
}

// newGrant returns a grant of session for tool, approved by by at at,
// which put with ttl ends ttl from now.
func newGrant(sess approval.SessionKey, tool, hash string, by approval.UserID, at time.Time, ttl time.Duration) grantTTL {
	return grantTTL{approval.Grant{Session: sess, User: "ou_req", Tool: tool, PayloadSHA256: hash, Summary: "summary of " + tool,
		ApprovalID: approval.NewID(sess), ApprovedBy: by, ApprovedAt: at.UTC(), ExpiresAt: time.Now().Add(ttl).UTC()}, ttl}
}

// grantTTL is a grant and the TTL to put it with.
type grantTTL struct {
	approval.Grant
	ttl time.Duration
}

func putGrants(t *testing.T, s approval.Store, gs ...grantTTL) {
	t.Helper()
	for _, g := range gs {
		if err := s.PutGrant(ctx(t), g.Grant, g.ttl); err != nil {
			t.Fatal(err)
		}
	}
}

// testGrants: a grant is found by its key with who approved it and when,
// not by another key or in another session, and is gone after its expiry.
func testGrants(t *testing.T, s approval.Store, advance func(time.Duration)) {
	sess := grantSession("one")
	at := time.Now().Add(-4 * time.Minute).Truncate(time.Millisecond)
	g := newGrant(sess, "tasks_add", "h1", "ou_zhang", at, time.Minute)
	if got, err := s.GrantFor(ctx(t), sess, g.Key()); got != nil || err != nil {
		t.Fatalf("GrantFor before PutGrant = %+v, %v", got, err)
	}
	putGrants(t, s, g)
	got, err := s.GrantFor(ctx(t), sess, g.Key())
	if err != nil || got == nil {
		t.Fatalf("GrantFor after PutGrant = %+v, %v", got, err)
	}
	if got.ApprovedBy != "ou_zhang" || !got.ApprovedAt.Equal(at) || got.ApprovalID != g.ApprovalID || got.Tool != "tasks_add" ||
		got.Summary != g.Summary || got.User != "ou_req" || got.PayloadSHA256 != "h1" {
		t.Fatalf("GrantFor = %+v, want %+v", got, g.Grant)
	}
	other := g
	other.PayloadSHA256 = "h2"
	if got, _ := s.GrantFor(ctx(t), sess, other.Key()); got != nil {
		t.Fatal("GrantFor of another payload found a grant")
	}
	if got, _ := s.GrantFor(ctx(t), grantSession("else"), g.Key()); got != nil {
		t.Fatal("GrantFor in another session found a grant")
	}
	// A grant already expired is not recorded.
	dead := newGrant(sess, "tasks_done", "h3", "ou_zhang", at, -time.Second)
	putGrants(t, s, dead)
	if got, _ := s.GrantFor(ctx(t), sess, dead.Key()); got != nil {
		t.Fatal("an expired grant was recorded")
	}
	// g again with a short window, just before the clock moves: gone
	// after it (what lives has long windows, so no assertion depends on
	// how fast the store answers; the Redis harness sleeps).
	g = newGrant(sess, "tasks_add", "h1", "ou_zhang", at, 400*time.Millisecond)
	putGrants(t, s, g)
	advance(800 * time.Millisecond)
	if got, _ := s.GrantFor(ctx(t), sess, g.Key()); got != nil {
		t.Fatal("GrantFor after the window found the grant")
	}
	if gs, err := s.Grants(ctx(t), sess); len(gs) != 0 || err != nil {
		t.Fatalf("Grants after the window = %+v, %v", gs, err)
	}
}

// testGrantsBySession: Grants lists one session's live grants, oldest
// approval first, and a grant put again under the same key replaces the
// first.
func testGrantsBySession(t *testing.T, s approval.Store, advance func(time.Duration)) {
	sess, other := grantSession("list"), grantSession("other")
	now := time.Now().Truncate(time.Millisecond)
	a := newGrant(sess, "tasks_add", "ha", "ou_a", now.Add(-3*time.Minute), time.Minute)
	b := newGrant(sess, "tasks_done", "hb", "ou_b", now.Add(-2*time.Minute), time.Minute)
	c := newGrant(sess, "tasks_add", "hc", "ou_c", now.Add(-time.Minute), time.Minute)
	x := newGrant(other, "tasks_add", "ha", "ou_a", now, time.Minute)
	putGrants(t, s, c, x, b, a)
	gs, err := s.Grants(ctx(t), sess)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 3 || gs[0].Key() != a.Key() || gs[1].Key() != b.Key() || gs[2].Key() != c.Key() {
		t.Fatalf("Grants = %+v, want a, b, c", gs)
	}
	if gs[1].ApprovedBy != "ou_b" || !gs[1].ApprovedAt.Equal(b.ApprovedAt) {
		t.Fatalf("Grants[1] = %+v, want %+v", gs[1], b.Grant)
	}
	// The same key again: replaced, not listed twice.
	a2 := a
	a2.ApprovedBy, a2.ApprovedAt = "ou_a2", now
	putGrants(t, s, a2)
	gs, _ = s.Grants(ctx(t), sess)
	if len(gs) != 3 || gs[2].Key() != a.Key() || gs[2].ApprovedBy != "ou_a2" {
		t.Fatalf("Grants after replacing a = %+v", gs)
	}
	// c put again with a short window just before the clock moves.
	c.ttl, c.ExpiresAt = 300*time.Millisecond, time.Now().Add(300*time.Millisecond).UTC()
	putGrants(t, s, c)
	advance(600 * time.Millisecond)
	gs, _ = s.Grants(ctx(t), sess)
	if len(gs) != 2 || gs[0].Key() != b.Key() || gs[1].Key() != a.Key() {
		t.Fatalf("Grants after c expired = %+v, want b, a", gs)
	}
	if xs, _ := s.Grants(ctx(t), other); len(xs) != 1 || xs[0].Session != other {
		t.Fatalf("Grants of the other session = %+v", xs)
	}
}

// testGrantRevoke: Revoke by key removes exactly those grants, Revoke with
// no key removes the session's others, and neither touches another
// session's.
func testGrantRevoke(t *testing.T, s approval.Store, _ func(time.Duration)) {
	sess, other := grantSession("revoke"), grantSession("keep")
	now := time.Now()
	a := newGrant(sess, "tasks_add", "ha", "ou_a", now.Add(-2*time.Minute), time.Minute)
	b := newGrant(sess, "tasks_add", "hb", "ou_a", now.Add(-time.Minute), time.Minute)
	c := newGrant(sess, "tasks_done", "hc", "ou_a", now, time.Minute)
	x := newGrant(other, "tasks_add", "ha", "ou_a", now, time.Minute)
	putGrants(t, s, a, b, c, x)
	n, err := s.Revoke(ctx(t), sess, b.Key(), "no such key")
	if n != 1 || err != nil {
		t.Fatalf("Revoke(b) = %d, %v; want 1", n, err)
	}
	if got, _ := s.GrantFor(ctx(t), sess, b.Key()); got != nil {
		t.Fatal("a revoked grant is still found")
	}
	if gs, _ := s.Grants(ctx(t), sess); len(gs) != 2 || gs[0].Key() != a.Key() || gs[1].Key() != c.Key() {
		t.Fatalf("Grants after Revoke(b) = %+v", gs)
	}
	if n, err := s.Revoke(ctx(t), sess, b.Key()); n != 0 || err != nil {
		t.Fatalf("Revoke(b) again = %d, %v; want 0", n, err)
	}
	if n, err := s.Revoke(ctx(t), sess); n != 2 || err != nil {
		t.Fatalf("Revoke(all) = %d, %v; want 2", n, err)
	}
	if gs, _ := s.Grants(ctx(t), sess); len(gs) != 0 {
		t.Fatalf("Grants after Revoke(all) = %+v", gs)
	}
	if got, _ := s.GrantFor(ctx(t), sess, a.Key()); got != nil {
		t.Fatal("Revoke(all) left a grant")
	}
	if got, _ := s.GrantFor(ctx(t), other, x.Key()); got == nil {
		t.Fatal("Revoke touched another session's grant")
	}
}

// testChatPending: ChatPending lists the approvals pending in one chat,
// whatever their sessions, oldest first; an approval that ends leaves the
// list; another chat's and another channel's are not in it.
func testChatPending(t *testing.T, s approval.Store, _ func(time.Duration)) {
	chat := fmt.Sprintf("chat-%d", time.Now().UnixNano())
	now := time.Now().UTC()
	mk := func(user string, channel, chatID string, age time.Duration) *approval.Approval {
		a := NewApproval(t, approval.SessionKey(channel+":"+chatID+":"+user))
		a.Channel, a.ChatID = channel, chatID
		a.CreatedAt, a.ExpiresAt = now.Add(-age), now.Add(5*time.Minute)
		if _, err := s.Put(ctx(t), a, approval.Outcome{}); err != nil {
			t.Fatal(err)
		}
		return a
	}
	if got, err := s.ChatPending(ctx(t), "test", chat); len(got) != 0 || err != nil {
		t.Fatalf("ChatPending of an empty chat = %v, %v", got, err)
	}
	b := mk("ou_b", "test", chat, time.Minute)
	a := mk("ou_a", "test", chat, 2*time.Minute)
	c := mk("ou_c", "test", chat, 0)
	mk("ou_a", "test", chat+"-other", time.Minute)
	mk("ou_a", "other", chat, time.Minute)
	got, err := s.ChatPending(ctx(t), "test", chat)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].ID != a.ID || got[1].ID != b.ID || got[2].ID != c.ID {
		t.Fatalf("ChatPending = %v, want a, b, c", ids(got))
	}
	if got[1].Requester != b.Requester || got[1].Summary != b.Summary || got[1].State != approval.StatePending {
		t.Fatalf("ChatPending[1] = %+v", got[1])
	}
	res, err := s.Claim(ctx(t), b.ID, approval.ClaimRequest{Intent: approval.IntentReject, PayloadSHA256: b.PayloadSHA256, Actor: "bob", Source: approval.SourceReply, Now: now})
	if err != nil || res.Code != approval.ClaimOK {
		t.Fatalf("reject b = %+v, %v", res, err)
	}
	if got, _ := s.ChatPending(ctx(t), "test", chat); len(got) != 2 || got[0].ID != a.ID || got[1].ID != c.ID {
		t.Fatalf("ChatPending after b ended = %v, want a, c", ids(got))
	}
	// A store's ChatCode answers what CodeIn of ChatPending answers:
	// in a chat of several approvals, and for the only one of its chat.
	if cc, ok := s.(approval.ChatCoder); ok {
		lone := mk("ou_d", "test", chat+"-lone", 0)
		for _, x := range []*approval.Approval{a, c, lone} {
			waiting, err := s.ChatPending(ctx(t), x.Channel, x.ChatID)
			if err != nil {
				t.Fatal(err)
			}
			got, err := cc.ChatCode(ctx(t), x)
			if want := approval.CodeIn(waiting, x); err != nil || got != want {
				t.Fatalf("ChatCode(%s) = %q, %v; want %q", x.ID, got, err, want)
			}
		}
	}
}

func ids(as []*approval.Approval) []approval.ID {
	out := make([]approval.ID, len(as))
	for i, a := range as {
		out[i] = a.ID
	}
	return out
}
