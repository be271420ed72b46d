package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

// testPrivacyRoundTrip: an approval's privacy rule and whether its chat
// is a group are kept, through Put and through an edit's claim; a private
// card stays private, also in the approval's own channel and chat, where
// a card is otherwise stored in its short form; an approval without
// privacy comes back without.
func testPrivacyRoundTrip(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewApproval(t)
	a.Privacy, a.Group = approval.PrivacyGroup, true
	own := approval.CardRef{Channel: a.Channel, ChatID: a.ChatID, MessageID: "om_group"}
	a.Cards = []approval.CardRef{own, {Channel: a.Channel, ChatID: a.ChatID, MessageID: "om_put_private", Private: true}}
	put(t, s, a)
	added := []approval.CardRef{
		{Channel: a.Channel, ChatID: a.ChatID, MessageID: "om_private_same_chat", Private: true},
		{Channel: a.Channel, ChatID: "ou_bob", MessageID: "om_private_bob", Private: true},
		{Channel: a.Channel, ChatID: a.ChatID, MessageID: "om_public_2"},
	}
	if _, err := s.AddCards(ctx(t), a.ID, added); err != nil {
		t.Fatal(err)
	}
	got := get(t, s, a.ID)
	if got.Privacy != approval.PrivacyGroup || !got.Group || !got.Private() {
		t.Fatalf("privacy %q group %v, want group and true", got.Privacy, got.Group)
	}
	want := append(slices.Clone(a.Cards), added...)
	if !slices.Equal(got.Cards, want) {
		t.Fatalf("cards = %+v, want %+v", got.Cards, want)
	}

	// An edit rewrites what never changes otherwise: privacy stays.
	ed := got.Clone()
	ed.Calls[0].Args = []byte(`{"database":"demo","statement":"DELETE FROM orders WHERE id = 2"}`)
	ed.Calls[0].PayloadSHA256 = approval.PayloadHash(ed.Calls[0].Tool, ed.Calls[0].Args)
	ed.PayloadSHA256 = approval.BatchHash(ed.Calls)
	res, err := s.Claim(ctx(t), a.ID, approval.ClaimRequest{Intent: approval.IntentApprove, Actor: "bob", Source: approval.SourceCard,
		PayloadSHA256: a.PayloadSHA256, Now: T0.Add(time.Second), Channel: a.Channel, ChatID: "ou_bob", Edited: ed})
	if err != nil || res.Code != approval.ClaimOK {
		t.Fatalf("claim of an edit: %+v, %v", res, err)
	}
	if got := get(t, s, a.ID); got.Privacy != approval.PrivacyGroup || !got.Group {
		t.Fatalf("after an edit: privacy %q group %v", got.Privacy, got.Group)
	}

	b := NewApproval(t)
	put(t, s, b)
	if got := get(t, s, b.ID); got.Privacy != "" || got.Group || got.Private() {
		t.Fatalf("an approval without privacy came back with %q, group %v", got.Privacy, got.Group)
	}
}
