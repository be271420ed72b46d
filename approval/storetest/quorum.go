package storetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

func init() {
	tests = append(tests,
		storeTest{"QuorumVotes", testQuorumVotes},
		storeTest{"QuorumVeto", testQuorumVeto},
		storeTest{"QuorumConcurrent", testQuorumConcurrent},
		storeTest{"QuorumVetoRacesLastVote", testQuorumVetoRacesLastVote},
		storeTest{"QuorumCardsAfterVote", testQuorumCardsAfterVote},
	)
}

// NewQuorum returns NewApproval whose rule needs quorum of the users
// listed (u1, u2, … un).
func NewQuorum(t testing.TB, quorum, n int) *approval.Approval {
	t.Helper()
	a := NewApproval(t)
	a.Approvers = approval.ApproverRule{Mode: approval.ApproverUsers, Quorum: quorum, NotRequester: true}
	for i := range n {
		a.Approvers.Users = append(a.Approvers.Users, approval.UserID(fmt.Sprintf("u%d", i+1)))
	}
	return a
}

// as is approve(a) by actor.
func as(a *approval.Approval, actor approval.UserID) approval.ClaimRequest {
	r := approve(a)
	r.Actor = actor
	return r
}

// testQuorumVotes: with 2 of 3, the first approve is a vote (still
// pending, the vote recorded with who, where, when and the comment); the
// same person again changes nothing; someone outside the rule is refused
// and counts for nothing; a long comment survives; the second person's
// approve claims, with both votes recorded in order; the rule's quorum
// survives the store.
func testQuorumVotes(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewQuorum(t, 2, 3)
	put(t, s, a)
	if got := get(t, s, a.ID); got.Approvers.Quorum != 2 || got.Approvers.Needed() != 2 || len(got.Votes) != 0 {
		t.Fatalf("stored rule %+v, votes %v", got.Approvers, got.Votes)
	}
	first := as(a, "u2")
	first.Comment = strings.Repeat("looks right; ", 20)
	r := claim(t, s, a.ID, first)
	if r.Code != approval.ClaimVoted || r.Ended || r.Approval.State != approval.StatePending {
		t.Fatalf("first approve = %s (ended %v, state %s), want voted and pending", r.Code, r.Ended, r.Approval.State)
	}
	want := approval.Vote{By: "u2", Via: approval.SourceCard, At: T0.Add(time.Minute), Comment: first.Comment}
	if len(r.Approval.Votes) != 1 || !sameVote(r.Approval.Votes[0], want) {
		t.Fatalf("votes after the first approve = %+v, want [%+v]", r.Approval.Votes, want)
	}
	if r := claim(t, s, a.ID, as(a, "u2")); r.Code != approval.ClaimVotedBefore || len(r.Approval.Votes) != 1 {
		t.Fatalf("the same person again = %s with %d votes, want voted_before with 1", r.Code, len(r.Approval.Votes))
	}
	if r := claim(t, s, a.ID, as(a, "mallory")); r.Code != approval.ClaimUnauthorized {
		t.Fatalf("someone outside the rule = %s, want unauthorized", r.Code)
	}
	tampered := as(a, "u3")
	tampered.PayloadSHA256 = strings.Repeat("0", 64)
	if r := claim(t, s, a.ID, tampered); r.Code != approval.ClaimTampered {
		t.Fatalf("a vote on another payload = %s, want tampered", r.Code)
	}
	got := wantState(t, s, a.ID, approval.StatePending)
	if len(got.Votes) != 1 {
		t.Fatalf("votes after refused attempts = %+v, want only u2's", got.Votes)
	}
	second := as(a, "u3")
	second.Now = T0.Add(2 * time.Minute)
	r = claim(t, s, a.ID, second)
	if r.Code != approval.ClaimOK || r.Ended || r.Approval.State != approval.StateClaimed || r.Approval.DecidedBy != "u3" {
		t.Fatalf("the approve that reaches the quorum = %s (state %s, by %s), want claimed by u3", r.Code, r.Approval.State, r.Approval.DecidedBy)
	}
	got = wantState(t, s, a.ID, approval.StateClaimed)
	if len(got.Votes) != 2 || got.Votes[0].By != "u2" || got.Votes[1].By != "u3" || !got.Votes[1].At.Equal(T0.Add(2*time.Minute)) {
		t.Fatalf("votes once claimed = %+v, want u2 then u3", got.Votes)
	}
	if r := claim(t, s, a.ID, as(a, "u1")); r.Code != approval.ClaimAlreadyClaimed {
		t.Fatalf("a third approve = %s, want already_claimed", r.Code)
	}
}

func sameVote(a, b approval.Vote) bool {
	return a.By == b.By && a.Via == b.Via && a.At.Equal(b.At) && a.Comment == b.Comment
}

// testQuorumVeto: after one vote of 2, any one allowed person's reject
// rejects; the requester may withdraw too, though the rule forbids them
// to approve.
func testQuorumVeto(t *testing.T, s approval.Store, _ func(time.Duration)) {
	for _, rejecter := range []approval.UserID{"u3", "alice"} {
		a := NewQuorum(t, 2, 3)
		put(t, s, a)
		if r := claim(t, s, a.ID, as(a, "alice")); r.Code != approval.ClaimUnauthorized {
			t.Fatalf("the requester's approve under high_needs_other = %s, want unauthorized", r.Code)
		}
		if r := claim(t, s, a.ID, as(a, "u1")); r.Code != approval.ClaimVoted {
			t.Fatalf("first approve = %s", r.Code)
		}
		rej := as(a, rejecter)
		rej.Intent = approval.IntentReject
		r := claim(t, s, a.ID, rej)
		if r.Code != approval.ClaimOK || !r.Ended || r.Approval.State != approval.StateRejected || r.Approval.DecidedBy != rejecter {
			t.Fatalf("%s's reject after a vote = %s (ended %v, state %s)", rejecter, r.Code, r.Ended, r.Approval.State)
		}
		if r := claim(t, s, a.ID, as(a, "u2")); r.Code != approval.ClaimAlreadyClaimed {
			t.Fatalf("an approve after the veto = %s, want already_claimed", r.Code)
		}
	}
}

// testQuorumConcurrent: 3 of 12, every allowed person approving at once
// (each twice): exactly one approve claims, exactly two others are votes,
// every other attempt is refused (voted_before or already_claimed), and
// the record holds exactly three distinct votes.
func testQuorumConcurrent(t *testing.T, s approval.Store, _ func(time.Duration)) {
	const quorum, people = 3, 12
	a := NewQuorum(t, quorum, people)
	put(t, s, a)
	var wg sync.WaitGroup
	var claimed, voted, refused atomic.Int64
	for i := range 2 * people {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := as(a, approval.UserID(fmt.Sprintf("u%d", i%people+1)))
			req.Now = T0.Add(time.Minute)
			r, err := s.Claim(context.Background(), a.ID, req)
			switch {
			case err != nil:
				t.Error(err)
			case r.Code == approval.ClaimOK:
				claimed.Add(1)
			case r.Code == approval.ClaimVoted:
				voted.Add(1)
			case r.Code == approval.ClaimVotedBefore || r.Code == approval.ClaimAlreadyClaimed:
				refused.Add(1)
			default:
				t.Errorf("claim = %s", r.Code)
			}
		}()
	}
	wg.Wait()
	if claimed.Load() != 1 || voted.Load() != quorum-1 || refused.Load() != 2*people-quorum {
		t.Fatalf("claimed %d, voted %d, refused %d; want 1, %d, %d", claimed.Load(), voted.Load(), refused.Load(), quorum-1, 2*people-quorum)
	}
	got := wantState(t, s, a.ID, approval.StateClaimed)
	seen := map[approval.UserID]bool{}
	for _, v := range got.Votes {
		seen[v.By] = true
	}
	if len(got.Votes) != quorum || len(seen) != quorum || !seen[got.DecidedBy] || got.Votes[quorum-1].By != got.DecidedBy {
		t.Fatalf("votes %+v, decided by %s: want %d distinct, the last the claimer", got.Votes, got.DecidedBy, quorum)
	}
}

// testQuorumVetoRacesLastVote: one vote of 2 in, then the last approve and
// a reject at once, many times over: exactly one of them wins each time,
// and the record's state is that one's.
func testQuorumVetoRacesLastVote(t *testing.T, s approval.Store, _ func(time.Duration)) {
	for range 25 {
		a := NewQuorum(t, 2, 3)
		put(t, s, a)
		claim(t, s, a.ID, as(a, "u1"))
		var wg sync.WaitGroup
		codes := make([]approval.ClaimCode, 2)
		for i, req := range []approval.ClaimRequest{as(a, "u2"), func() approval.ClaimRequest {
			r := as(a, "u3")
			r.Intent = approval.IntentReject
			return r
		}()} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req.Now = T0.Add(time.Minute)
				r, err := s.Claim(context.Background(), a.ID, req)
				if err != nil {
					t.Error(err)
					return
				}
				codes[i] = r.Code
			}()
		}
		wg.Wait()
		got := get(t, s, a.ID)
		switch {
		case codes[0] == approval.ClaimOK && codes[1] == approval.ClaimAlreadyClaimed:
			if got.State != approval.StateClaimed || len(got.Votes) != 2 {
				t.Fatalf("the approve won, but the record is %s with %d votes", got.State, len(got.Votes))
			}
		case codes[1] == approval.ClaimOK && codes[0] == approval.ClaimAlreadyClaimed:
			if got.State != approval.StateRejected || len(got.Votes) != 1 {
				t.Fatalf("the veto won, but the record is %s with %d votes", got.State, len(got.Votes))
			}
		default:
			t.Fatalf("approve %s, reject %s: want exactly one claimed", codes[0], codes[1])
		}
	}
}

// testQuorumCardsAfterVote: a card recorded while the approval is pending
// comes back as nil, unless a vote came in before it: then AddCards
// answers the pending record with its votes and every card, so the caller
// shows the votes on the new card.
func testQuorumCardsAfterVote(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewQuorum(t, 2, 3)
	put(t, s, a)
	first := approval.CardRef{Channel: "feishu", ChatID: "oc_1", MessageID: "om_1"}
	if rec, err := s.AddCards(ctx(t), a.ID, []approval.CardRef{first}); err != nil || rec != nil {
		t.Fatalf("AddCards before any vote = %+v, %v; want nil", rec, err)
	}
	claim(t, s, a.ID, as(a, "u1"))
	late := approval.CardRef{Channel: "dingtalk", ChatID: "cid", MessageID: "late"}
	rec, err := s.AddCards(ctx(t), a.ID, []approval.CardRef{late})
	if err != nil {
		t.Fatal(err)
	}
	if rec == nil || rec.State != approval.StatePending || len(rec.Votes) != 1 || len(rec.Cards) != 2 || rec.Cards[1] != late {
		t.Fatalf("AddCards after a vote = %+v; want the pending record with its vote and both cards", rec)
	}
}
