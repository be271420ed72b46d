package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

// testApproveInRoundTrip: an approval's approvers' chat (ApproveIn) is
// kept, and an approval without one comes back without one.
func testApproveInRoundTrip(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewApproval(t)
	a.ApproveIn = &approval.Place{Channel: "dingtalk", ChatID: fmt.Sprintf("cid%d==", time.Now().UnixNano())}
	put(t, s, a)
	got := get(t, s, a.ID)
	if got.ApproveIn == nil || *got.ApproveIn != *a.ApproveIn {
		t.Fatalf("ApproveIn = %+v, want %+v", got.ApproveIn, a.ApproveIn)
	}
	if got.Channel != a.Channel || got.ChatID != a.ChatID || got.Session != a.Session {
		t.Fatalf("the requester's chat changed: %s %s %s", got.Channel, got.ChatID, got.Session)
	}
	d := NewApproval(t)
	d.ApproveIn = &approval.Place{Channel: "feishu", Direct: true}
	put(t, s, d)
	if got := get(t, s, d.ID); got.ApproveIn == nil || *got.ApproveIn != *d.ApproveIn {
		t.Fatalf("a direct ApproveIn = %+v, want %+v", got.ApproveIn, d.ApproveIn)
	}
	b := NewApproval(t)
	put(t, s, b)
	if got := get(t, s, b.ID); got.ApproveIn != nil {
		t.Fatalf("ApproveIn of an approval without one = %+v", got.ApproveIn)
	}
}

// testApproveInChatPending: an approval with an approvers' chat is listed
// by ChatPending in that chat (for /pending, 确认 <code> and a bare 确认
// there), not in the requester's chat.
func testApproveInChatPending(t *testing.T, s approval.Store, _ func(time.Duration)) {
	mine := fmt.Sprintf("chat-%d", time.Now().UnixNano())
	theirs := approval.Place{Channel: "feishu", ChatID: "oc_" + mine}
	a := NewApproval(t, approval.SessionKey("test:"+mine))
	a.ChatID = mine
	a.ApproveIn = &theirs
	put(t, s, a)
	got, err := s.ChatPending(ctx(t), theirs.Channel, theirs.ChatID)
	if err != nil || len(got) != 1 || got[0].ID != a.ID {
		t.Fatalf("ChatPending of the approvers' chat = %v, %v; want %s", ids(got), err, a.ID)
	}
	if got[0].ApproveIn == nil || *got[0].ApproveIn != theirs {
		t.Fatalf("ChatPending's record has ApproveIn %+v", got[0].ApproveIn)
	}
	if got, err := s.ChatPending(ctx(t), "test", mine); err != nil || len(got) != 0 {
		t.Fatalf("ChatPending of the requester's chat = %v, %v; want none", ids(got), err)
	}
	// Another approval of the approvers' chat's own: the codes are of
	// that chat, and a store's ChatCode answers what CodeIn of its
	// ChatPending answers.
	own := NewApproval(t, approval.SessionKey(theirs.Channel+":"+theirs.ChatID))
	own.Channel, own.ChatID = theirs.Channel, theirs.ChatID
	own.CreatedAt = a.CreatedAt.Add(time.Second)
	put(t, s, own)
	if cc, ok := s.(approval.ChatCoder); ok {
		waiting, err := s.ChatPending(ctx(t), theirs.Channel, theirs.ChatID)
		if err != nil || len(waiting) != 2 {
			t.Fatalf("ChatPending of the approvers' chat = %v, %v; want 2", ids(waiting), err)
		}
		for _, x := range []*approval.Approval{a, own} {
			got, err := cc.ChatCode(ctx(t), x)
			if want := approval.CodeIn(waiting, x); err != nil || got != want {
				t.Fatalf("ChatCode(%s) = %q, %v; want %q", x.ID, got, err, want)
			}
		}
	}
	if _, ok, err := s.Cancel(ctx(t), a.ID, approval.Outcome{}, T0.Add(time.Second)); err != nil || !ok {
		t.Fatalf("cancel = %v, %v", ok, err)
	}
	if got, err := s.ChatPending(ctx(t), theirs.Channel, theirs.ChatID); err != nil || len(got) != 1 || got[0].ID != own.ID {
		t.Fatalf("ChatPending of the approvers' chat once ended = %v, %v; want the chat's own", ids(got), err)
	}
}
