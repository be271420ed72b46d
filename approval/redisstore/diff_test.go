package redisstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/approval/storetest"
	"github.com/hitlbot/hitlbot/internal/clock"
)

// TestSameAsMemstore drives the Redis store and the memory store with the
// same random sequence of operations and requires identical answers: every
// result, record and error kind, compared as JSON.
func TestSameAsMemstore(t *testing.T) {
	steps := 10000
	if testing.Short() {
		steps = 300
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 42))
	rs := newStore(t, redisstore.Options{})
	ms := memstore.New(memstore.Options{Clock: clock.NewFake(storetest.T0)})
	ctx := context.Background()

	sessions := make([]approval.SessionKey, 3)
	for i := range sessions {
		sessions[i] = storetest.NewApproval(t).Session
	}
	actors := []approval.UserID{"alice", "bob", "carol", "mallory", ""}
	rules := []approval.ApproverRule{
		{Mode: approval.ApproverRequester},
		{Mode: approval.ApproverChat},
		{Mode: approval.ApproverChat, NotRequester: true},
		{Mode: approval.ApproverUsers, Users: []approval.UserID{"bob", "carol"}},
		{Mode: approval.ApproverUsers, Users: []approval.UserID{"alice", "bob"}, NotRequester: true},
		{Mode: approval.ApproverUsers},
		{},
	}
	var puts []*approval.Approval
	var claimed []approval.ID // approved claims, for Complete to pick
	codes := map[string]int{} // claim codes and replays seen, for the log
	missing := approval.NewID(sessions[0])
	pickID := func() approval.ID {
		if rng.IntN(2) == 0 { // the pending approval of a session, if any
			if p, _ := ms.Pending(ctx, sessions[rng.IntN(len(sessions))]); p != nil {
				return p.ID
			}
		}
		switch n := rng.IntN(len(puts) + 2); {
		case n < len(puts):
			return puts[n].ID
		case n == len(puts):
			return missing
		}
		return "ap_bogus"
	}
	at := func() time.Time {
		return storetest.T0.Add(time.Duration(rng.IntN(12))*time.Minute + time.Duration(rng.IntN(3)-1))
	}
	outcome := func() approval.Outcome {
		n := rng.IntN(100)
		o := approval.Outcome{Content: fmt.Sprintf("text %d", n), IsError: rng.IntN(2) == 0}
		if n%2 == 0 {
			o.Detail = fmt.Sprintf("detail %d", n)
		}
		if rng.IntN(2) == 0 {
			o.Results = []approval.Result{{Tool: "t", Status: approval.StatusExecuted, Content: "r"}}
		} else if rng.IntN(2) == 0 {
			o.Results = []approval.Result{}
		}
		return o
	}
	same := func(step int, what string, m, r any) {
		t.Helper()
		mj, _ := json.Marshal(m)
		rj, _ := json.Marshal(r)
		if !bytes.Equal(mj, rj) {
			t.Fatalf("step %d (seed %d): %s differ\nmemstore: %s\n   redis: %s", step, seed, what, mj, rj)
		}
	}
	kind := func(err error) string {
		if err == nil {
			return ""
		}
		return approval.KindOf(err).String()
	}

	for step := range steps {
		switch op := rng.IntN(10); op {
		case 0, 1: // Put
			var a *approval.Approval
			if len(puts) > 0 && rng.IntN(10) == 0 {
				a = puts[rng.IntN(len(puts))].Clone() // a duplicate id
			} else {
				a = storetest.NewApproval(t, sessions[rng.IntN(len(sessions))])
				a.Approvers = rules[rng.IntN(len(rules))]
				a.Requester = actors[rng.IntN(3)]
				a.IdempotencyKey = []string{"", "k1", "k1", "k2"}[rng.IntN(4)]
				a.ChatID = []string{"chat", "chat", "c2", ""}[rng.IntN(4)]
				if rng.IntN(4) == 0 {
					a.Calls[0].Args = json.RawMessage(`{"statement":"DELETE FROM orders WHERE id = 2"}`)
					a.Calls[0].PayloadSHA256 = approval.PayloadHash("sql_execute", a.Calls[0].Args)
					a.PayloadSHA256 = a.Calls[0].PayloadSHA256
				}
				a.CreatedAt = storetest.T0.Add(time.Duration(step) * time.Millisecond)
				a.ExpiresAt = at().Add(2 * time.Minute)
				if rng.IntN(4) == 0 {
					a.Cards = []approval.CardRef{{Channel: "web", MessageID: "m0"}}
				}
				if rng.IntN(20) == 0 {
					a.State = approval.StateClaimed
				}
				if a.State == approval.StatePending {
					puts = append(puts, a)
				}
			}
			so := outcome()
			mo, merr := ms.Put(ctx, a.Clone(), so)
			ro, rerr := rs.Put(ctx, a.Clone(), so)
			same(step, "Put error", kind(merr), kind(rerr))
			same(step, "Put superseded", mo, ro)
		case 2, 3, 4: // Claim
			id := pickID()
			req := approval.ClaimRequest{
				Intent:  []approval.Intent{approval.IntentApprove, approval.IntentReject, approval.IntentExpire, "bogus"}[rng.IntN(4)],
				Actor:   actors[rng.IntN(len(actors))],
				Source:  approval.SourceCard,
				Comment: []string{"", "ok", "不确认"}[rng.IntN(3)],
				Now:     at(),
			}
			// where the decision comes from: mostly the approval's chat
			// (rule "chat"), sometimes another chat, channel or none
			req.Channel = []string{"test", "test", "test", "web"}[rng.IntN(4)]
			req.ChatID = []string{"chat", "chat", "c2", ""}[rng.IntN(4)]
			for _, a := range puts {
				if a.ID == id && rng.IntN(5) != 0 {
					req.PayloadSHA256 = a.PayloadSHA256
					if rng.IntN(2) == 0 {
						req.Actor = a.Requester // allowed by most rules
					}
				}
			}
			if rng.IntN(3) > 0 {
				n := rng.IntN(1000)
				req.Outcome = func(st approval.Status) approval.Outcome {
					return approval.Outcome{Content: fmt.Sprintf("%s: %d", st, n), Detail: fmt.Sprint(n), IsError: true, DecidedBy: "x"}
				}
			}
			mr, merr := ms.Claim(ctx, id, req)
			rr, rerr := rs.Claim(ctx, id, req)
			codes[string(mr.Code)]++
			if mr.Cached != nil {
				codes["replayed"]++
			}
			if mr.Code == approval.ClaimOK && !mr.Ended {
				claimed = append(claimed, id)
			}
			same(step, "Claim error", kind(merr), kind(rerr))
			same(step, fmt.Sprintf("Claim(%s, %s by %q)", id, req.Intent, req.Actor), mr, rr)
		case 5: // Complete
			id := pickID()
			if len(claimed) > 0 && rng.IntN(5) > 0 {
				id = claimed[rng.IntN(len(claimed))]
			}
			st := []approval.State{approval.StateExecuted, approval.StateExecuted, approval.StateFailed, approval.StateFrozen, approval.StateRejected}[rng.IntN(5)]
			ttl := []time.Duration{0, time.Hour, time.Hour}[rng.IntN(3)]
			o := outcome()
			mc, merr := ms.Complete(ctx, id, st, o, ttl)
			rc, rerr := rs.Complete(ctx, id, st, o, ttl)
			same(step, "Complete", []any{mc, kind(merr)}, []any{rc, kind(rerr)})
		case 6: // Cancel
			id := pickID()
			o, now := outcome(), at()
			ma, mok, merr := ms.Cancel(ctx, id, o, now)
			ra, rok, rerr := rs.Cancel(ctx, id, o, now)
			same(step, "Cancel", []any{ma, mok, kind(merr)}, []any{ra, rok, kind(rerr)})
		case 7: // AddCards
			id := pickID()
			cards := []approval.CardRef{{Channel: "feishu", ChatID: "oc", MessageID: fmt.Sprint("om_", step)}}
			if rng.IntN(2) == 0 {
				cards = append(cards, approval.CardRef{Channel: "dingtalk", MessageID: "t"})
			}
			ma, merr := ms.AddCards(ctx, id, cards)
			ra, rerr := rs.AddCards(ctx, id, cards)
			same(step, "AddCards", []any{ma, kind(merr)}, []any{ra, kind(rerr)})
		case 8: // Get
			id := pickID()
			ma, merr := ms.Get(ctx, id)
			ra, rerr := rs.Get(ctx, id)
			same(step, "Get", []any{ma, kind(merr)}, []any{ra, kind(rerr)})
		case 9: // Pending
			sess := sessions[rng.IntN(len(sessions))]
			ma, merr := ms.Pending(ctx, sess)
			ra, rerr := rs.Pending(ctx, sess)
			same(step, "Pending", []any{ma, kind(merr)}, []any{ra, kind(rerr)})
		}
	}
	t.Logf("claims: %v", codes)
	if !testing.Short() && (codes["replayed"] == 0 || codes["claimed"] == 0 || codes["unauthorized"] == 0 || codes["tampered"] == 0) {
		t.Errorf("the random walk missed a path: %v", codes)
	}
	// Finally every record, one by one.
	for _, a := range puts {
		ma, _ := ms.Get(ctx, a.ID)
		ra, _ := rs.Get(ctx, a.ID)
		same(steps, "final record", ma, ra)
	}
}

// lockedBuffer is an io.Writer for a slog handler used from two goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSubscribeBadMessages: messages that are not outcomes are logged (with
// an "err" attribute) and skipped; delivery goes on.
func TestSubscribeBadMessages(t *testing.T) {
	var logs lockedBuffer
	s, c := newStoreClient(t, redisstore.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	got := make(chan approval.ID, 10)
	if err := s.Subscribe(t.Context(), func(id approval.ID, o approval.Outcome) { got <- id }); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, m := range []string{"not json", `{"id":"bogus","outcome":{}}`, `{"id":1}`} {
		if err := c.Publish(ctx, redisstore.Channel(s), m).Err(); err != nil {
			t.Fatal(err)
		}
	}
	a := storetest.NewApproval(t)
	if _, err := s.Put(ctx, a, approval.Outcome{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Cancel(ctx, a.ID, approval.Outcome{}, storetest.T0); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-got:
		if id != a.ID {
			t.Fatalf("delivered %q, want %s", id, a.ID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no outcome delivered after bad messages")
	}
	if n := strings.Count(logs.String(), `"err":`); n != 3 {
		t.Fatalf("%d log lines with an err attribute, want 3:\n%s", n, logs.String())
	}
}
