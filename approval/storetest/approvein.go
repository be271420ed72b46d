package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

// approveIn is the approvers' chat of the suite's approve_in approvals:
// another channel and chat than the requester's (test/chat).
var approveIn = approval.Place{Channel: "feishu", ChatID: "oc_approvers"}

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

// approveInCases: the approver rule "chat" of an approval with an
// approvers' chat means that chat: a decision there is in chat, one in the
// requester's own chat is not, nor one in a chat of the same id on
// another channel. The requester may reject (withdraw) their own request
// from their chat, but approve it only from the approvers' chat.
var approveInCases = []struct {
	name   string
	actor  approval.UserID
	where  [2]string
	intent approval.Intent
	want   approval.ClaimCode
}{
	{"approvers' chat approves", "bob", [2]string{"feishu", "oc_approvers"}, approval.IntentApprove, approval.ClaimOK},
	{"approvers' chat rejects", "bob", [2]string{"feishu", "oc_approvers"}, approval.IntentReject, approval.ClaimOK},
	{"requester's chat is not the approvers'", "bob", [2]string{"test", "chat"}, approval.IntentApprove, approval.ClaimUnauthorized},
	{"requester's chat, reject", "bob", [2]string{"test", "chat"}, approval.IntentReject, approval.ClaimUnauthorized},
	{"same chat id, another channel", "bob", [2]string{"dingtalk", "oc_approvers"}, approval.IntentApprove, approval.ClaimUnauthorized},
	{"unknown chat", "bob", [2]string{"feishu", ""}, approval.IntentApprove, approval.ClaimUnauthorized},
	{"the requester rejects from their chat", "alice", [2]string{"test", "chat"}, approval.IntentReject, approval.ClaimOK},
	{"the requester may not approve from their chat", "alice", [2]string{"test", "chat"}, approval.IntentApprove, approval.ClaimUnauthorized},
	{"the requester approves from the approvers' chat", "alice", [2]string{"feishu", "oc_approvers"}, approval.IntentApprove, approval.ClaimOK},
}

// testApproveInClaim runs approveInCases through Claim: the atomic step
// judges the approvers' chat.
func testApproveInClaim(t *testing.T, s approval.Store, _ func(time.Duration)) {
	for _, c := range approveInCases {
		t.Run(c.name, func(t *testing.T) {
			a := NewApproval(t)
			a.Approvers = approval.ApproverRule{Mode: approval.ApproverChat}
			p := approveIn
			a.ApproveIn = &p
			put(t, s, a)
			res, err := s.Claim(ctx(t), a.ID, approval.ClaimRequest{Intent: c.intent, PayloadSHA256: a.PayloadSHA256, Actor: c.actor,
				Source: approval.SourceCard, Channel: c.where[0], ChatID: c.where[1], Now: T0.Add(time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			if res.Code != c.want {
				t.Fatalf("claim by %s in %v = %s, want %s", c.actor, c.where, res.Code, c.want)
			}
			if want := approval.StatePending; c.want == approval.ClaimUnauthorized && get(t, s, a.ID).State != want {
				t.Fatalf("an unauthorized claim changed the state to %s", get(t, s, a.ID).State)
			}
		})
	}
}

// testApproveInResolve: a frozen approval with an approvers' chat is
// resolved from that chat under the rule "chat", not from the requester's
// chat by another person.
func testApproveInResolve(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewApproval(t)
	a.Approvers = approval.ApproverRule{Mode: approval.ApproverChat}
	p := approveIn
	a.ApproveIn = &p
	put(t, s, a)
	res, err := s.Claim(ctx(t), a.ID, approval.ClaimRequest{Intent: approval.IntentApprove, PayloadSHA256: a.PayloadSHA256, Actor: "bob",
		Source: approval.SourceCard, Channel: p.Channel, ChatID: p.ChatID, Now: T0.Add(time.Second)})
	if err != nil || res.Code != approval.ClaimOK {
		t.Fatalf("claim = %+v, %v", res, err)
	}
	if _, err := s.Complete(ctx(t), a.ID, approval.StateFrozen, approval.Outcome{Status: approval.StatusFrozen}, 0); err != nil {
		t.Fatal(err)
	}
	req := approval.ResolveRequest{Resolution: approval.ResolveAbandon, PayloadSHA256: a.PayloadSHA256, Actor: "carol", Source: approval.SourceCard,
		Channel: "test", ChatID: "chat", Now: T0.Add(2 * time.Second), Outcome: approval.Outcome{Status: approval.StatusFailed}}
	if res, err := s.Resolve(ctx(t), a.ID, req); err != nil || res.Code != approval.ClaimUnauthorized {
		t.Fatalf("resolve from the requester's chat = %+v, %v; want unauthorized", res.Code, err)
	}
	req.Channel, req.ChatID = p.Channel, p.ChatID
	if res, err := s.Resolve(ctx(t), a.ID, req); err != nil || res.Code != approval.ClaimOK {
		t.Fatalf("resolve from the approvers' chat = %+v, %v; want claimed", res.Code, err)
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
