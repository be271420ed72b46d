package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

func init() {
	tests = append(tests,
		storeTest{"MayDecide", testMayDecide},
		storeTest{"MaySee", testMaySee},
	)
}

// Where a decision is taken from, for mayDecideCases: NewApproval's
// approvals are alice's, in chat "chat" of channel "test" (here); the
// approvers' chat of those with one (approve_in) is approvers; the steps
// of escalating are shown in leads (step 1, mode users: dave and alice)
// and oncall (step 2, mode chat).
var (
	here      = approval.Place{Channel: "test", ChatID: "chat"}
	elsewhere = approval.Place{Channel: "test", ChatID: "other-chat"}
	otherChan = approval.Place{Channel: "web", ChatID: "chat"} // the same chat id on another channel
	nowhere   = approval.Place{Channel: "test"}                // the platform named no chat
	approvers = approval.Place{Channel: "feishu", ChatID: "oc_approvers"}
	leads     = approval.Place{Channel: "dingtalk", ChatID: "cidleads"}
)

// The approver rules of mayDecideCases; "4" marks four eyes
// (NotRequester).
var (
	requesterRule = approval.ApproverRule{Mode: approval.ApproverRequester}
	bobCarol      = approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"bob", "carol"}}
	bobCarol4     = approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"bob", "carol"}, NotRequester: true}
	aliceBob4     = approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"alice", "bob"}, NotRequester: true}
	chatRule      = approval.ApproverRule{Mode: approval.ApproverChat}
	chatRule4     = approval.ApproverRule{Mode: approval.ApproverChat, NotRequester: true}
	twoOfBobCarol = approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"bob", "carol"}, Quorum: 2}
	twoInChat     = approval.ApproverRule{Mode: approval.ApproverChat, Quorum: 2}
)

// mayDecideCase is one decision on one approval, as the rule of
// approval/mayapprove.go answers it: NewApproval (alice's, in here) with
// rule, the approvers' chat approvers when in, and escalating's two steps,
// of which steps are taken first; then the people of votes approve (from
// here), each a vote; then (verb resolve) the approval is claimed and
// frozen; then actor takes verb from from.
type mayDecideCase struct {
	clause string // the clause of mayapprove.go the case is about
	name   string
	rule   approval.ApproverRule
	in     bool
	steps  int
	votes  []approval.UserID
	actor  approval.UserID
	from   approval.Place
	verb   approval.Verb
	want   approval.ClaimCode
}

const (
	allowed = approval.ClaimOK
	refused = approval.ClaimUnauthorized
)

// mayDecideCases cover every clause of the rule, for Claim (approve,
// reject) and Resolve (resolve, judged as an approve). testMayDecide runs
// them against a store and against the Go rule (AllowsIn, CountVote) on
// the record the store gives back, so memstore, redisstore's Lua and the
// Go rule answer alike.
var mayDecideCases = []mayDecideCase{
	{"1 nobody", "no actor, users", bobCarol, false, 0, nil, "", here, approval.Approve, refused},
	{"1 nobody", "no actor, chat, in the chat", chatRule, false, 0, nil, "", here, approval.Approve, refused},
	{"1 nobody", "no actor rejects, requester", requesterRule, false, 0, nil, "", here, approval.Reject, refused},
	{"1 nobody", "no actor resolves", bobCarol, false, 0, nil, "", here, approval.Resolve, refused},

	{"2 withdraw", "requester not listed rejects", bobCarol, false, 0, nil, "alice", here, approval.Reject, allowed},
	{"2 withdraw", "requester rejects from nowhere", bobCarol, false, 0, nil, "alice", nowhere, approval.Reject, allowed},
	{"2 withdraw", "requester under four eyes rejects", chatRule4, false, 0, nil, "alice", here, approval.Reject, allowed},
	{"2 withdraw", "requester rejects outside the approvers' chat", chatRule, true, 0, nil, "alice", here, approval.Reject, allowed},
	{"2 withdraw", "requester under four eyes rejects after the steps", bobCarol4, false, 2, nil, "alice", here, approval.Reject, allowed},
	{"2 withdraw", "requester vetoes a quorum", twoOfBobCarol, false, 0, []approval.UserID{"bob"}, "alice", here, approval.Reject, allowed},
	{"2 withdraw", "not a resolution", bobCarol, false, 0, nil, "alice", here, approval.Resolve, refused},

	{"3 four eyes", "requester in a chat rule", chatRule4, false, 0, nil, "alice", here, approval.Approve, refused},
	{"3 four eyes", "requester listed", aliceBob4, false, 0, nil, "alice", here, approval.Approve, refused},
	{"3 four eyes", "another listed", aliceBob4, false, 0, nil, "bob", here, approval.Approve, allowed},
	{"3 four eyes", "another in the chat", chatRule4, false, 0, nil, "bob", here, approval.Approve, allowed},
	{"3 four eyes", "requester listed in a step taken", bobCarol4, false, 1, nil, "alice", leads, approval.Approve, refused},
	{"3 four eyes", "requester in a chat step's chat", bobCarol4, false, 2, nil, "alice", oncall, approval.Approve, refused},
	{"3 four eyes", "requester resolves", chatRule4, false, 0, nil, "alice", here, approval.Resolve, refused},
	{"3 four eyes", "without it a step lets the requester in", bobCarol, false, 1, nil, "alice", leads, approval.Approve, allowed},

	{"4 rule requester", "the requester", requesterRule, false, 0, nil, "alice", here, approval.Approve, allowed},
	{"4 rule requester", "the requester from nowhere", requesterRule, false, 0, nil, "alice", nowhere, approval.Approve, allowed},
	{"4 rule requester", "the requester outside the approvers' chat", requesterRule, true, 0, nil, "alice", here, approval.Approve, allowed},
	{"4 rule requester", "another", requesterRule, false, 0, nil, "bob", here, approval.Approve, refused},
	{"4 rule requester", "another rejects", requesterRule, false, 0, nil, "bob", here, approval.Reject, refused},
	{"4 rule requester", "the requester resolves", requesterRule, false, 0, nil, "alice", here, approval.Resolve, allowed},
	{"4 rule users", "listed", bobCarol, false, 0, nil, "carol", here, approval.Approve, allowed},
	{"4 rule users", "listed, from elsewhere", bobCarol, false, 0, nil, "carol", elsewhere, approval.Approve, allowed},
	{"4 rule users", "listed, from nowhere", bobCarol, false, 0, nil, "carol", nowhere, approval.Approve, allowed},
	{"4 rule users", "listed rejects", bobCarol, false, 0, nil, "bob", here, approval.Reject, allowed},
	{"4 rule users", "listed resolves", bobCarol, false, 0, nil, "carol", here, approval.Resolve, allowed},
	{"4 rule users", "not listed", bobCarol, false, 0, nil, "mallory", here, approval.Approve, refused},
	{"4 rule users", "not listed rejects", bobCarol, false, 0, nil, "mallory", here, approval.Reject, refused},
	{"4 rule users", "not listed resolves", bobCarol, false, 0, nil, "mallory", here, approval.Resolve, refused},
	{"4 rule users", "the requester not listed", bobCarol, false, 0, nil, "alice", here, approval.Approve, refused},
	{"4 rule users", "the requester not listed resolves", bobCarol, false, 0, nil, "alice", here, approval.Resolve, refused},
	{"4 rule chat", "in the chat", chatRule, false, 0, nil, "mallory", here, approval.Approve, allowed},
	{"4 rule chat", "in the chat rejects", chatRule, false, 0, nil, "mallory", here, approval.Reject, allowed},
	{"4 rule chat", "in the chat resolves", chatRule, false, 0, nil, "carol", here, approval.Resolve, allowed},
	{"4 rule chat", "a forwarded card", chatRule, false, 0, nil, "mallory", elsewhere, approval.Approve, refused},
	{"4 rule chat", "a forwarded card rejects", chatRule, false, 0, nil, "mallory", elsewhere, approval.Reject, refused},
	{"4 rule chat", "a forwarded card resolves", chatRule4, false, 0, nil, "carol", elsewhere, approval.Resolve, refused},
	{"4 rule chat", "the chat id on another channel", chatRule, false, 0, nil, "mallory", otherChan, approval.Approve, refused},
	{"4 rule chat", "no chat named", chatRule, false, 0, nil, "mallory", nowhere, approval.Approve, refused},
	{"4 rule chat", "the requester, no chat named", chatRule, false, 0, nil, "alice", nowhere, approval.Approve, allowed},
	{"4 approvers' chat", "in it", chatRule, true, 0, nil, "bob", approvers, approval.Approve, allowed},
	{"4 approvers' chat", "in it rejects", chatRule, true, 0, nil, "bob", approvers, approval.Reject, allowed},
	{"4 approvers' chat", "in it resolves", chatRule, true, 0, nil, "carol", approvers, approval.Resolve, allowed},
	{"4 approvers' chat", "the requester's chat", chatRule, true, 0, nil, "bob", here, approval.Approve, refused},
	{"4 approvers' chat", "the requester's chat rejects", chatRule, true, 0, nil, "bob", here, approval.Reject, refused},
	{"4 approvers' chat", "the requester's chat resolves", chatRule, true, 0, nil, "carol", here, approval.Resolve, refused},
	{"4 approvers' chat", "its chat id on another channel", chatRule, true, 0, nil, "bob", approval.Place{Channel: "dingtalk", ChatID: approvers.ChatID}, approval.Approve, refused},
	{"4 approvers' chat", "no chat named", chatRule, true, 0, nil, "bob", approval.Place{Channel: approvers.Channel}, approval.Approve, refused},
	{"4 approvers' chat", "the requester from their chat", chatRule, true, 0, nil, "alice", here, approval.Approve, refused},
	{"4 approvers' chat", "the requester from nowhere", chatRule, true, 0, nil, "alice", nowhere, approval.Approve, refused},
	{"4 approvers' chat", "the requester in it", chatRule, true, 0, nil, "alice", approvers, approval.Approve, allowed},
	{"4 approvers' chat", "listed people anywhere", bobCarol, true, 0, nil, "bob", here, approval.Approve, allowed},

	{"5 steps", "a step's person before it", bobCarol4, false, 0, nil, "dave", leads, approval.Approve, refused},
	{"5 steps", "a step's person before it rejects", bobCarol4, false, 0, nil, "dave", leads, approval.Reject, refused},
	{"5 steps", "a step's person", bobCarol4, false, 1, nil, "dave", leads, approval.Approve, allowed},
	{"5 steps", "a step's person from elsewhere", bobCarol4, false, 1, nil, "dave", here, approval.Approve, allowed},
	{"5 steps", "a step's person from nowhere", bobCarol4, false, 1, nil, "dave", nowhere, approval.Approve, allowed},
	{"5 steps", "a step's person vetoes", bobCarol4, false, 1, nil, "dave", here, approval.Reject, allowed},
	{"5 steps", "a step's person resolves", bobCarol4, false, 1, nil, "dave", here, approval.Resolve, allowed},
	{"5 steps", "a step's person, rule requester", requesterRule, false, 2, nil, "dave", here, approval.Approve, allowed},
	{"5 steps", "a step's person, approvers' chat", chatRule, true, 1, nil, "dave", here, approval.Approve, allowed},
	{"5 steps", "in a chat step's chat before it", bobCarol4, false, 1, nil, "erin", oncall, approval.Approve, refused},
	{"5 steps", "in a chat step's chat", bobCarol4, false, 2, nil, "erin", oncall, approval.Approve, allowed},
	{"5 steps", "in a chat step's chat rejects", bobCarol4, false, 2, nil, "erin", oncall, approval.Reject, allowed},
	{"5 steps", "in a chat step's chat resolves", bobCarol4, false, 2, nil, "erin", oncall, approval.Resolve, allowed},
	{"5 steps", "outside a chat step's chat", bobCarol4, false, 2, nil, "erin", here, approval.Approve, refused},
	{"5 steps", "a chat step's chat id on another channel", bobCarol4, false, 2, nil, "erin", approval.Place{Channel: "dingtalk", ChatID: oncall.ChatID}, approval.Approve, refused},
	{"5 steps", "a chat step's channel, no chat named", bobCarol4, false, 2, nil, "erin", approval.Place{Channel: oncall.Channel}, approval.Approve, refused},
	{"5 steps", "a users step's chat is no chat step", bobCarol4, false, 2, nil, "erin", leads, approval.Approve, refused},

	{"6 nobody else", "after every step", bobCarol4, false, 2, nil, "mallory", elsewhere, approval.Approve, refused},

	{"quorum", "the first approve is a vote", twoOfBobCarol, false, 0, nil, "bob", here, approval.Approve, approval.ClaimVoted},
	{"quorum", "the same person again", twoOfBobCarol, false, 0, []approval.UserID{"bob"}, "bob", here, approval.Approve, approval.ClaimVotedBefore},
	{"quorum", "another person reaches it", twoOfBobCarol, false, 0, []approval.UserID{"bob"}, "carol", here, approval.Approve, allowed},
	{"quorum", "a step's person reaches it", twoOfBobCarol, false, 1, []approval.UserID{"bob"}, "dave", here, approval.Approve, allowed},
	{"quorum", "someone outside the rule counts for nothing", twoOfBobCarol, false, 0, []approval.UserID{"bob"}, "mallory", here, approval.Approve, refused},
	{"quorum", "a reject is a veto", twoOfBobCarol, false, 0, []approval.UserID{"bob"}, "carol", here, approval.Reject, allowed},
	{"quorum", "the voter vetoes", twoOfBobCarol, false, 0, []approval.UserID{"bob"}, "bob", here, approval.Reject, allowed},
	{"quorum", "chat: another in the chat reaches it", twoInChat, false, 0, []approval.UserID{"bob"}, "mallory", here, approval.Approve, allowed},
	{"quorum", "chat: the same person again", twoInChat, false, 0, []approval.UserID{"bob"}, "bob", here, approval.Approve, approval.ClaimVotedBefore},
	{"quorum", "chat: from elsewhere", twoInChat, false, 0, []approval.UserID{"bob"}, "mallory", elsewhere, approval.Approve, refused},
}

// testMayDecide runs mayDecideCases. Each answer must be the case's, and
// what the Go rule answers on the record the store gives back just before
// the decision (AllowsIn; then CountVote for an approve); a refused
// decision (unauthorized, voted_before) changes nothing.
func testMayDecide(t *testing.T, s approval.Store, _ func(time.Duration)) {
	for _, c := range mayDecideCases {
		t.Run(c.clause+"/"+c.name, func(t *testing.T) {
			a := NewApproval(t)
			a.Approvers = c.rule
			a.Escalation = escalating(t).Escalation
			if c.in {
				p := approvers
				a.ApproveIn = &p
			}
			put(t, s, a)
			for i := range c.steps {
				if r := escalate(t, s, a.ID, T0.Add(a.Escalation[i].After)); r.Code != approval.EscalateTaken {
					t.Fatalf("step %d = %s", i, r.Code)
				}
			}
			for _, v := range c.votes {
				req := as(a, v)
				req.Channel, req.ChatID = here.Channel, here.ChatID
				if r := claim(t, s, a.ID, req); r.Code != approval.ClaimVoted {
					t.Fatalf("%s's vote = %s", v, r.Code)
				}
			}
			if c.verb == approval.Resolve {
				freeze(t, s, get(t, s, a.ID))
			}
			before := get(t, s, a.ID)
			verb := c.verb
			if verb == approval.Resolve {
				verb = approval.Approve
			}
			rule := refused
			if before.AllowsIn(c.actor, verb, c.from.Channel, c.from.ChatID) {
				rule = allowed
				if c.verb == approval.Approve {
					rule = before.Clone().CountVote(approval.Vote{By: c.actor})
				}
			}
			var got approval.ClaimCode
			if c.verb == approval.Resolve {
				req := resolveReq(a, approval.ResolveDone)
				req.Actor, req.Channel, req.ChatID = c.actor, c.from.Channel, c.from.ChatID
				got = resolve(t, s, a.ID, req).Code
			} else {
				req := approve(a)
				req.Intent = approval.IntentApprove
				if c.verb == approval.Reject {
					req.Intent = approval.IntentReject
				}
				req.Actor, req.Channel, req.ChatID, req.Now = c.actor, c.from.Channel, c.from.ChatID, T0.Add(3*time.Minute)
				got = claim(t, s, a.ID, req).Code
			}
			if got != c.want || rule != c.want {
				t.Fatalf("%s by %q from %v: the store says %s, the Go rule %s; want %s", c.verb, c.actor, c.from, got, rule, c.want)
			}
			if got == refused || got == approval.ClaimVotedBefore {
				after := get(t, s, a.ID)
				if after.State != before.State || len(after.Votes) != len(before.Votes) || after.DecidedBy != before.DecidedBy {
					t.Fatalf("a refused %s changed the record: state %s, votes %v, by %q", c.verb, after.State, after.Votes, after.DecidedBy)
				}
			}
		})
	}
}

// freeze claims a (stored, pending, one approval decides) by someone the
// Go rule lets approve it, and completes it frozen.
func freeze(t *testing.T, s approval.Store, a *approval.Approval) {
	t.Helper()
	for _, who := range []approval.UserID{"alice", "bob", "carol", "dave", "erin"} {
		for _, p := range []approval.Place{here, approvers, oncall} {
			if !a.AllowsIn(who, approval.Approve, p.Channel, p.ChatID) {
				continue
			}
			req := as(a, who)
			req.Channel, req.ChatID = p.Channel, p.ChatID
			if r := claim(t, s, a.ID, req); r.Code != approval.ClaimOK {
				t.Fatalf("claim by %s from %v to freeze it = %s", who, p, r.Code)
			}
			o := approval.Outcome{Status: approval.StatusFrozen, IsError: true, Content: "The result is unknown"}
			if _, err := s.Complete(ctx(t), a.ID, approval.StateFrozen, o, 0); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("nobody may approve %+v", a.Approvers)
}

// mayseeCase is one person's view of an approval: NewApproval (alice's)
// with rule, privacy, group and escalating's steps, of which steps are
// taken; may says whether viewer may see it whole.
type mayseeCase struct {
	name    string
	rule    approval.ApproverRule
	privacy approval.Privacy
	group   bool
	steps   int
	viewer  approval.UserID
	may     bool
}

// mayseeCases cover who may see an approval (MaySee, Viewers), asked of
// the record each store gives back: the store keeps everything the rule
// reads (privacy, group, rule, steps taken).
var mayseeCases = []mayseeCase{
	{"not private: anyone", bobCarol, approval.PrivacyNone, true, 0, "mallory", true},
	{"privacy group in a 1:1 chat: anyone", bobCarol, approval.PrivacyGroup, false, 0, "mallory", true},
	{"rule chat is never private", chatRule, approval.PrivacyGroup, true, 0, "mallory", true},
	{"private: the requester", bobCarol, approval.PrivacyGroup, true, 0, "alice", true},
	{"private: the requester under four eyes", bobCarol4, approval.PrivacyGroup, true, 0, "alice", true},
	{"private: listed", bobCarol, approval.PrivacyGroup, true, 0, "carol", true},
	{"private: not listed", bobCarol, approval.PrivacyGroup, true, 0, "mallory", false},
	{"private: the whole chat", bobCarol, approval.PrivacyGroup, true, 0, "", false},
	{"private, rule requester: another", requesterRule, approval.PrivacyGroup, true, 0, "bob", false},
	{"private: a step's person before it", bobCarol, approval.PrivacyGroup, true, 0, "dave", false},
	{"private: a step's person", bobCarol, approval.PrivacyGroup, true, 1, "dave", true},
	{"private: someone in a chat step's chat", bobCarol, approval.PrivacyGroup, true, 2, "erin", false},
}

// testMaySee runs mayseeCases; Viewers of a private approval lists
// exactly those MaySee allows among its candidates.
func testMaySee(t *testing.T, s approval.Store, _ func(time.Duration)) {
	for _, c := range mayseeCases {
		t.Run(c.name, func(t *testing.T) {
			a := NewApproval(t)
			a.Approvers, a.Privacy, a.Group = c.rule, c.privacy, c.group
			a.Escalation = escalating(t).Escalation
			put(t, s, a)
			for i := range c.steps {
				if r := escalate(t, s, a.ID, T0.Add(a.Escalation[i].After)); r.Code != approval.EscalateTaken {
					t.Fatalf("step %d = %s", i, r.Code)
				}
			}
			got := get(t, s, a.ID)
			if got.MaySee(c.viewer) != c.may {
				t.Fatalf("MaySee(%q) = %v, want %v", c.viewer, !c.may, c.may)
			}
			if got.Private() && c.viewer != "" && slices.Contains(got.Viewers(), c.viewer) != c.may {
				t.Fatalf("Viewers = %v; %q among them: want %v", got.Viewers(), c.viewer, c.may)
			}
		})
	}
}
