package dingtalk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/open-dingtalk/dingtalk-stream-sdk-go/payload"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/dingtalk/dingtalktest"
)

// privacyRig is a rig on store whose HIGH calls (erase) only bob may
// approve, private in groups.
func privacyRig(t *testing.T, store approval.Store) *rig {
	t.Helper()
	pc := approval.DefaultPolicyConfig()
	pc.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverUsers, Users: []string{"bob"}}}
	pc.Privacy = map[string]approval.Privacy{"HIGH": approval.PrivacyGroup}
	return newRigPolicy(t, nil, store, nil, &pc)
}

// groupTexts returns what the robot said in the group cid (its
// sessionWebhook, the only one of these tests, and the group send).
func (g *rig) groupTexts(cid string) []string {
	var out []string
	for _, c := range g.fake.Calls("/robot/sendBySession") {
		b, _ := json.Marshal(c.Body)
		out = append(out, string(b))
	}
	for _, c := range g.fake.Calls("/v1.0/robot/groupMessages/send") {
		if c.Body["openConversationId"] == cid {
			out = append(out, fmt.Sprint(c.Body["msgParam"]))
		}
	}
	return out
}

// privateCards asks for "erase orders" as alice in the group cid_grp and
// returns the two deliveries: the one everyone sees, the private one.
func (g *rig) privateCards(t *testing.T) (public, private dingtalktest.Delivery) {
	t.Helper()
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid_grp", "alice", "erase orders", true))
	eventually(t, "two cards in the group", func() bool { return len(g.createdIn("cid_grp")) == 2 })
	for _, d := range g.fake.Deliveries() {
		if d.OpenSpaceID != "dtv1.card//IM_GROUP.cid_grp" {
			continue
		}
		if d.Recipients == nil {
			public = d
		} else {
			private = d
		}
	}
	return public, private
}

// TestPrivacyInGroupDingTalk, through the fake DingTalk and the real
// stream SDK, on both stores: alice asks for a HIGH call in a group that
// only bob may approve, private in groups. The card everyone sees holds
// the redacted line and no buttons; the card with the arguments and the
// buttons is delivered in the group to alice and bob only (recipients),
// not forwardable. bob approves on it; both cards end executed (the
// public one still redacted), the model's answer goes to alice by the
// robot's 1:1 send and the group reads one line.
func TestPrivacyInGroupDingTalk(t *testing.T) { bothStores(t, testPrivacyInGroupDingTalk) }

func testPrivacyInGroupDingTalk(t *testing.T, store approval.Store) {
	g := privacyRig(t, store)
	public, private := g.privateCards(t)
	id, _ := public.Params["approval_id"].(string)
	if public.OutTrackID != id || private.OutTrackID != id+"-private" {
		t.Fatalf("outTrackIds %q and %q for %s", public.OutTrackID, private.OutTrackID, id)
	}
	pub, _ := json.Marshal(public.Body)
	for _, secret := range []string{"orders", "erase", `"buttons":"true"`} {
		if strings.Contains(string(pub), secret) {
			t.Fatalf("the card everyone sees says %q: %s", secret, pub)
		}
	}
	if !strings.Contains(fmt.Sprint(public.Params["summary"]), "alice asked for a HIGH risk action · waiting for approval (only bob)") {
		t.Fatalf("the public card: %v", public.Params)
	}
	if !slices.Equal(private.Recipients, []string{"alice", "bob"}) || private.SupportForward {
		t.Fatalf("the private card goes to %v (forward %v), want alice and bob, not forwardable", private.Recipients, private.SupportForward)
	}
	if !strings.Contains(fmt.Sprint(private.Params["preview"]), "orders") || private.Params["buttons"] != "true" {
		t.Fatalf("the private card: %v", private.Params)
	}
	sha, _ := private.Params["payload_sha256"].(string)

	resp := ackResponse(t, g.fake.Push(payload.CardInstanceCallbackTopic, clickIn("cid_grp", id+"-private", "bob", "confirm", id, sha)))
	if resp["status"] != "executed" {
		t.Fatalf("bob's click: %v", resp)
	}
	eventually(t, "both cards ended executed", func() bool { return g.endedAs(t, id, "executed") && g.endedAs(t, id+"-private", "executed") })
	if n := g.erase.Runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
	for _, u := range g.fake.Calls("/v1.0/card/instances") {
		if u.Body["outTrackId"] != id {
			continue
		}
		if b, _ := json.Marshal(u.Body); strings.Contains(string(b), "orders") || strings.Contains(string(b), "erase done") {
			t.Fatalf("the public card was updated with the call's words: %s", b)
		}
	}

	eventually(t, "the answer sent to alice privately", func() bool {
		return slices.ContainsFunc(g.fake.DirectTexts("alice"), func(s string) bool { return strings.Contains(s, "summary: erase done") })
	})
	eventually(t, "the group told", func() bool {
		return slices.ContainsFunc(g.groupTexts("cid_grp"), func(s string) bool { return strings.Contains(s, "The answer was sent to alice privately.") })
	})
	for _, s := range g.groupTexts("cid_grp") {
		if strings.Contains(s, "erase done") || strings.Contains(s, "orders") {
			t.Fatalf("the group read %q", s)
		}
	}
	if n := len(g.fake.DirectTexts("bob")) + len(g.fake.DirectTexts("carol")); n != 0 {
		t.Fatalf("%d private messages to others than alice", n)
	}
}

// TestPrivacyTypedInGroupDingTalk: in the group, carol's /pending lists
// the private approval by its redacted line; bob's typed 确认 decides it,
// the answer to it (with the outcome) goes to bob privately and the
// group reads that it was decided; both cards end executed.
func TestPrivacyTypedInGroupDingTalk(t *testing.T) { bothStores(t, testPrivacyTypedInGroupDingTalk) }

func testPrivacyTypedInGroupDingTalk(t *testing.T, store approval.Store) {
	g := privacyRig(t, store)
	public, _ := g.privateCards(t)
	id, _ := public.Params["approval_id"].(string)

	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid_grp", "carol", "/pending", true))
	eventually(t, "/pending answered", func() bool {
		return slices.ContainsFunc(g.groupTexts("cid_grp"), func(s string) bool { return strings.Contains(s, "alice asked for a HIGH risk action") })
	})

	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid_grp", "bob", "确认", true))
	eventually(t, "both cards ended executed", func() bool { return g.endedAs(t, id, "executed") && g.endedAs(t, id+"-private", "executed") })
	a, err := g.engine.Get(context.Background(), approval.ID(id))
	if err != nil || a.DecidedBy != "bob" || a.DecidedVia != approval.SourceReply {
		t.Fatalf("decided by %q via %q: %v", a.DecidedBy, a.DecidedVia, err)
	}
	eventually(t, "bob told privately", func() bool {
		return slices.ContainsFunc(g.fake.DirectTexts("bob"), func(s string) bool { return strings.Contains(s, "Executed") })
	})
	eventually(t, "the group told it was decided", func() bool {
		return slices.ContainsFunc(g.groupTexts("cid_grp"), func(s string) bool { return strings.Contains(s, "the result was sent to bob privately") })
	})
	eventually(t, "the answer sent to alice privately", func() bool {
		return slices.ContainsFunc(g.fake.DirectTexts("alice"), func(s string) bool { return strings.Contains(s, "summary: erase done") })
	})
	for _, s := range g.groupTexts("cid_grp") {
		if strings.Contains(s, "erase done") || strings.Contains(s, "orders") {
			t.Fatalf("the group read %q", s)
		}
	}
}

// TestPrivacyOfAnExternalRequester: an external member (encrypted
// senderId) asks in a group for a call only bob may approve, private in
// groups. The whole card goes to bob alone: an encrypted id can be no
// recipient (recipients are staff ids under userIdType 1, doc
// create-and-deliver-cards) and no 1:1 send reaches it; the requester
// reads the redacted approval like everyone. bob approves it. A private
// approval nobody but external members may see is not shown at all.
func TestPrivacyOfAnExternalRequester(t *testing.T) {
	g := privacyRig(t, memstore.New(memstore.Options{}))
	ext := "$:LWCP_v1:$ext1"
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.ExternalMessage(nextID(), "cid_grp", "ext1", "erase orders", true))
	// The redacted approval everyone reads is a markdown message (an
	// external requester's approval has no buttons, openapi.go); the
	// whole card is the one card created.
	eventually(t, "the private card and the redacted message", func() bool {
		return len(g.createdIn("cid_grp")) == 1 && len(g.groupTexts("cid_grp")) > 0
	})
	private := g.fake.Deliveries()[0]
	for _, s := range g.groupTexts("cid_grp") {
		if strings.Contains(s, "orders") {
			t.Fatalf("the group read the call: %s", s)
		}
	}
	if !slices.Equal(private.Recipients, []string{"bob"}) {
		t.Fatalf("the private card goes to %v, want bob alone (no encrypted id)", private.Recipients)
	}
	if b, _ := json.Marshal(private.Body); strings.Contains(string(b), ext) {
		t.Fatalf("the private card names the encrypted id: %s", b)
	}
	id, _ := private.Params["approval_id"].(string)
	sha, _ := private.Params["payload_sha256"].(string)
	resp := ackResponse(t, g.fake.Push(payload.CardInstanceCallbackTopic, clickIn("cid_grp", id+"-private", "bob", "confirm", id, sha)))
	if resp["status"] != "executed" || g.erase.Runs.Load() != 1 {
		t.Fatalf("bob's click: %v, runs %d", resp, g.erase.Runs.Load())
	}

	refs, err := g.ch.ShowApprovalTo(context.Background(), channels.Target{Channel: Name, ChatID: "cid_grp"},
		[]approval.UserID{approval.UserID(ext)}, cards.View{ApprovalID: "ap_ext", Title: "Approval needed", Tool: "erase", PayloadSHA256: "abc", Requester: approval.UserID(ext)})
	if !errors.Is(err, errExternalOnly) || refs != nil {
		t.Fatalf("a card only an external member may see: refs %v, err %v", refs, err)
	}
}
