package feishu

import (
	"context"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
)

// cardPairs are two cards of one approval that are two messages: Feishu
// keeps one message per uuid for an hour (feishutest.UUIDWindow), so
// each pair must carry two uuids, and each card posted again (a retry)
// the same one.
var cardPairs = []struct {
	name         string
	first, other channels.Target
	view         func(v cards.View) cards.View
}{
	{"an escalation step's card in the on-call chat", channels.Target{ChatID: "oc_team"}, channels.Target{ChatID: "oc_oncall"},
		func(v cards.View) cards.View { v.Step = 1; return v }},
	{"a second escalation step in the same chat", channels.Target{ChatID: "oc_oncall"}, channels.Target{ChatID: "oc_oncall"},
		func(v cards.View) cards.View { v.Step = 2; return v }},
	{"a private approval's redacted card in the requester's chat", channels.Target{ChatID: "oc_ops"}, channels.Target{ChatID: "oc_group"},
		func(v cards.View) cards.View { v.Redacted = true; return v }},
	{"the requester's status card of approve_in", channels.Target{ChatID: "oc_ops"}, channels.Target{ChatID: "oc_alice_p2p"},
		func(v cards.View) cards.View { v.WaitsIn = "the approvers' chat"; return v }},
	{"the same card in another chat", channels.Target{ChatID: "oc_a"}, channels.Target{ChatID: "oc_b"},
		func(v cards.View) cards.View { return v }},
}

func TestCardsOfOneApprovalAreDistinctMessages(t *testing.T) {
	for _, tc := range cardPairs {
		t.Run(tc.name, func(t *testing.T) {
			fake := feishutest.New()
			defer fake.Close()
			ch, err := New(testConfig(fake), quiet)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			v := cards.View{ApprovalID: approval.ID("ap_uuid1"), Title: "erase", Tool: "erase", Approvers: "anyone", Summary: "erase orders"}
			first, err := ch.ShowApproval(ctx, tc.first, v)
			if err != nil {
				t.Fatal(err)
			}
			other, err := ch.ShowApproval(ctx, tc.other, tc.view(v))
			if err != nil {
				t.Fatal(err)
			}
			if first.MessageID == other.MessageID || len(fake.Deduplicated()) != 0 {
				t.Fatalf("the second card was not sent: Feishu answered the first message %s (deduplicated %+v)", first.MessageID, fake.Deduplicated())
			}
			again, err := ch.ShowApproval(ctx, tc.other, tc.view(v))
			if err != nil {
				t.Fatal(err)
			}
			if again.MessageID != other.MessageID {
				t.Fatalf("a retry of the same card sent another message %s, want %s", again.MessageID, other.MessageID)
			}
		})
	}
}
