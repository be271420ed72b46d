package agent_test

import (
	"context"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
)

type declinedTest struct {
	name    string
	actor   approval.UserID // the harness's requester, who may decide
	comment string
	want    string // the model's tool message
}

var declinedTests = []declinedTest{
	{"with a reason", "alice", "用 orders_archive 表",
		"Not run: declined by alice: 用 orders_archive 表. Do not propose this same call again; ask the user what they want instead."},
	{"a reason ending in a full stop", "alice", "wrong table, use orders_archive.",
		"Not run: declined by alice: wrong table, use orders_archive. Do not propose this same call again; ask the user what they want instead."},
	{"a cleaned reason", "alice", "wrong\x1b[2J table\n",
		"Not run: declined by alice: wrong[2J table. Do not propose this same call again; ask the user what they want instead."},
	{"without a reason", "alice", "",
		"Not run: declined by alice. Do not propose this same call again; ask the user what they want instead."},
}

// TestDeclinedToldWhoAndWhy: the model's tool message for a rejected call
// says who declined it and the reason they gave (the outcome's Comment, as
// the engine cleaned it), and not to propose the call again; the turn's
// action says the same.
func TestDeclinedToldWhoAndWhy(t *testing.T) {
	for _, test := range declinedTests {
		t.Run(test.name, func(t *testing.T) {
			var reqs requests
			h := newHarness(t, recording(callThenSummarise(call("c1", "erase", "orders")), &reqs))
			ch := h.submit(t, "s1", "erase the orders")
			a := h.nextApproval(t)
			o, err := h.engine.Decide(context.Background(), a.ID, approval.Decision{Verb: approval.Reject, Actor: test.actor,
				Source: approval.SourceReply, PayloadSHA256: a.PayloadSHA256, Comment: test.comment})
			if err != nil || o.Status != approval.StatusRejected {
				t.Fatalf("decision = %+v, %v", o, err)
			}
			r := result(t, ch)
			if got := toolReplies(reqs.last())["c1"]; got != test.want {
				t.Fatalf("the model was told %q, want %q", got, test.want)
			}
			if len(r.Actions) != 1 || r.Actions[0].Result != test.want || r.Actions[0].Status != approval.StatusRejected {
				t.Fatalf("actions = %+v", r.Actions)
			}
		})
	}
}
