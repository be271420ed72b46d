// Package storetest is the conformance suite every approval.Store passes.
// The memory store and the Redis store run the same tests, so a single-node
// deployment behaves exactly as a replicated one.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

// Harness builds stores for the suite.
type Harness struct {
	// New returns a fresh, empty store for one test, and a function that
	// moves the store's TTL clock forward (a fake clock for the memory
	// store; for Redis, TTLs are real, so it sleeps — tests keep d small).
	New func(t *testing.T) (approval.Store, func(d time.Duration))
}

// Run runs the whole suite.
func Run(t *testing.T, h Harness) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, adv := h.New(t)
			tc.fn(t, s, adv)
		})
	}
}

type storeTest struct {
	name string
	fn   func(t *testing.T, s approval.Store, advance func(time.Duration))
}

var tests = []storeTest{
	{"PutGet", testPutGet},
	{"PinnedCallsRoundTrip", testPinnedCalls},
	{"GetMissing", testGetMissing},
	{"PutDuplicate", testPutDuplicate},
	{"Supersede", testSupersede},
	{"ClaimApprove", testClaimApprove},
	{"ClaimTampered", testClaimTampered},
	{"ClaimMissing", testClaimMissing},
	{"ClaimLate", testClaimLate},
	{"Expire", testExpire},
	{"Reject", testReject},
	{"CompleteAndCache", testCompleteAndCache},
	{"CompleteErrors", testCompleteErrors},
	{"Cancel", testCancel},
	{"Latest", testLatest},
	{"Seen", testSeen},
	{"Forget", testForget},
	{"ClaimMark", testClaimMark},
	{"SeenAndPending", testSeenAndPending},
	{"Grants", testGrants},
	{"GrantsBySession", testGrantsBySession},
	{"GrantRevoke", testGrantRevoke},
	{"ChatPending", testChatPending},
	{"Subscribe", testSubscribe},
	{"AddCards", testAddCards},
	{"CardsRacingDecision", testCardsRacingDecision},
	{"ConcurrentClaims", testConcurrentClaims},
	{"ConcurrentPuts", testConcurrentPuts},
	{"DueIndex", testDueIndex},
	{"ResolveDoneAbandon", testResolveDone},
	{"ResolveRetry", testResolveRetry},
	{"ResolveRefused", testResolveRefused},
	{"ConcurrentResolutions", testConcurrentResolutions},
	{"ApproveInRoundTrip", testApproveInRoundTrip},
	{"ApproveInChatPending", testApproveInChatPending},
	{"EscalationRoundTrip", testStepRoundTrip(escalationSteps)},
	{"EscalateSteps", testStepSteps(escalationSteps)},
	{"EscalateLate", testStepLate(escalationSteps)},
	{"EscalateEnded", testStepEnded(escalationSteps)},
	{"ConcurrentEscalate", testStepConcurrent(escalationSteps)},
	{"EscalationChatPending", testEscalationChatPending},
	{"ReminderRoundTrip", testStepRoundTrip(reminderSteps)},
	{"RemindSteps", testStepSteps(reminderSteps)},
	{"RemindLate", testStepLate(reminderSteps)},
	{"RemindEnded", testStepEnded(reminderSteps)},
	{"ConcurrentRemind", testStepConcurrent(reminderSteps)},
	{"PrivacyRoundTrip", testPrivacyRoundTrip},
	{"StandingRoundTrip", testStandingRoundTrip},
	{"StandingRules", testStandingRules},
}

// T0 is the time the suite's approvals are created at.
var T0 = time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)

var sessionN atomic.Int64

// NewApproval returns a valid pending approval in a fresh session (or in
// session s when given), created at T0 and expiring 5 minutes later.
func NewApproval(t testing.TB, s ...approval.SessionKey) *approval.Approval {
	t.Helper()
	sess := approval.SessionKey(fmt.Sprintf("test:chat-%d-%d", time.Now().UnixNano(), sessionN.Add(1)))
	if len(s) > 0 {
		sess = s[0]
	}
	args, hash, err := approval.HashCall("sql_execute", []byte(`{"statement":"DELETE FROM orders WHERE id = 1","database":"demo"}`))
	if err != nil {
		t.Fatal(err)
	}
	return &approval.Approval{
		ID:             approval.NewID(sess),
		Session:        sess,
		Channel:        "test",
		ChatID:         "chat",
		Requester:      "alice",
		RequesterName:  "Alice 张",
		Approvers:      approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"bob", "carol"}},
		Calls:          []approval.Call{{Tool: "sql_execute", Args: args, PayloadSHA256: hash, Summary: "delete order 1", SummaryZH: "删除订单 1", CallID: "call-1"}},
		PayloadSHA256:  hash,
		Risk:           approval.RiskHigh,
		Summary:        "DELETE FROM orders WHERE id = 1",
		Preview:        "affects 1 row",
		Reason:         "HIGH risk (destructive)",
		ReasonZH:       "高风险（破坏性操作）",
		SummaryZH:      "DELETE FROM orders WHERE id = 1",
		PreviewZH:      "影响 1 行",
		About:          "Changes data in a SQL database",
		AboutZH:        "修改 SQL 数据库中的数据",
		CreatedAt:      T0,
		ExpiresAt:      T0.Add(5 * time.Minute),
		IdempotencyKey: "turn-1/call-1",
		State:          approval.StatePending,
		Trace:          "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func put(t *testing.T, s approval.Store, a *approval.Approval) *approval.Approval {
	t.Helper()
	old, err := s.Put(ctx(t), a, approval.Outcome{Content: "superseded by a newer request"})
	if err != nil {
		t.Fatalf("Put(%s): %v", a.ID, err)
	}
	return old
}

func get(t *testing.T, s approval.Store, id approval.ID) *approval.Approval {
	t.Helper()
	a, err := s.Get(ctx(t), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return a
}

func claim(t *testing.T, s approval.Store, id approval.ID, req approval.ClaimRequest) approval.ClaimResult {
	t.Helper()
	if req.Now.IsZero() {
		req.Now = T0.Add(time.Minute)
	}
	if req.Outcome == nil {
		req.Outcome = func(st approval.Status) approval.Outcome {
			return approval.Outcome{Content: "text for " + string(st), Detail: "detail of " + string(st), IsError: true}
		}
	}
	r, err := s.Claim(ctx(t), id, req)
	if err != nil {
		t.Fatalf("Claim(%s, %s): %v", id, req.Intent, err)
	}
	return r
}

func approve(a *approval.Approval) approval.ClaimRequest {
	return approval.ClaimRequest{Intent: approval.IntentApprove, PayloadSHA256: a.PayloadSHA256, Actor: "bob", Source: approval.SourceCard, Comment: "ok",
		Channel: a.Channel, ChatID: a.ChatID}
}

func wantState(t *testing.T, s approval.Store, id approval.ID, want approval.State) *approval.Approval {
	t.Helper()
	a := get(t, s, id)
	if a.State != want {
		t.Fatalf("state of %s = %q, want %q", id, a.State, want)
	}
	return a
}

func testPutGet(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewApproval(t)
	if old := put(t, s, a); old != nil {
		t.Fatalf("Put returned superseded %v for a fresh session", old.ID)
	}
	got := get(t, s, a.ID)
	wantJSON, _ := json.Marshal(a)
	gotJSON, _ := json.Marshal(got)
	if string(wantJSON) != string(gotJSON) {
		t.Fatalf("Get after Put:\n got %s\nwant %s", gotJSON, wantJSON)
	}
	p, err := s.Pending(ctx(t), a.Session)
	if err != nil || p == nil || p.ID != a.ID {
		t.Fatalf("Pending = %v, %v; want %s", p, err, a.ID)
	}
	if err := s.Ping(ctx(t)); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

// testPinnedCalls: a batch with a call that pins its tool's definition
// (an MCP tool) comes back with the definition and the pinned hash.
func testPinnedCalls(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewApproval(t)
	args, _, err := approval.HashCall("fs__write_file", []byte(`{"path":"/srv/share/a.txt","content":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	pinned := approval.Call{Tool: "fs__write_file", Args: args, Definition: strings.Repeat("ab", 32), CallID: "call-2"}
	pinned.PayloadSHA256 = pinned.Hash()
	a.Calls = append(a.Calls, pinned)
	a.PayloadSHA256 = approval.BatchHash(a.Calls)
	put(t, s, a)
	got := get(t, s, a.ID)
	if len(got.Calls) != 2 || got.Calls[1].Definition != pinned.Definition || got.Calls[1].PayloadSHA256 != pinned.PayloadSHA256 ||
		got.Calls[1].PayloadSHA256 == approval.PayloadHash(pinned.Tool, pinned.Args) || got.PayloadSHA256 != a.PayloadSHA256 {
		t.Fatalf("calls after Put and Get: %+v", got.Calls)
	}
}

func testGetMissing(t *testing.T, s approval.Store, _ func(time.Duration)) {
	_, err := s.Get(ctx(t), approval.NewID("nowhere"))
	if approval.KindOf(err) != errkind.NotFound || !errors.Is(err, approval.ErrNotFound) {
		t.Fatalf("Get(missing) = %v, want errkind.NotFound wrapping ErrNotFound", err)
	}
	p, err := s.Pending(ctx(t), "nowhere:at-all")
	if p != nil || err != nil {
		t.Fatalf("Pending(empty session) = %v, %v; want nil, nil", p, err)
	}
}

func testPutDuplicate(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewApproval(t)
	put(t, s, a)
	if _, err := s.Put(ctx(t), a, approval.Outcome{}); approval.KindOf(err) != errkind.Conflict {
		t.Fatalf("second Put of %s = %v, want errkind.Conflict", a.ID, err)
	}
}

func testSupersede(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewApproval(t)
	put(t, s, a)
	other := NewApproval(t)
	put(t, s, other)
	b := NewApproval(t, a.Session)
	b.CreatedAt = T0.Add(time.Second)
	old := put(t, s, b)
	if old == nil || old.ID != a.ID || old.State != approval.StateSuperseded {
		t.Fatalf("Put(b) returned %+v, want a superseded", old)
	}
	if old.Outcome == nil || old.Outcome.Status != approval.StatusSuperseded || old.Outcome.Content != "superseded by a newer request" {
		t.Fatalf("superseded outcome = %+v", old.Outcome)
	}
	wantState(t, s, a.ID, approval.StateSuperseded)
	if p, _ := s.Pending(ctx(t), a.Session); p == nil || p.ID != b.ID {
		t.Fatalf("Pending = %v, want %s", p, b.ID)
	}
	if p, _ := s.Pending(ctx(t), other.Session); p == nil || p.ID != other.ID {
		t.Fatalf("another session's pending = %v, want %s", p, other.ID)
	}
	if r := claim(t, s, a.ID, approve(a)); r.Code != approval.ClaimSuperseded || r.Ended {
		t.Fatalf("Claim(superseded) = %s ended=%v, want superseded, not ended", r.Code, r.Ended)
	}
	if r := claim(t, s, b.ID, approve(b)); r.Code != approval.ClaimOK {
		t.Fatalf("Claim(b) = %s, want claimed", r.Code)
	}
	// A claimed approval is not pending: a new request does not supersede it.
	c := NewApproval(t, a.Session)
	if old := put(t, s, c); old != nil {
		t.Fatalf("Put(c) superseded %s, which was already claimed", old.ID)
	}
	wantState(t, s, b.ID, approval.StateClaimed)
}

func testClaimApprove(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewApproval(t)
	put(t, s, a)
	r := claim(t, s, a.ID, approve(a))
	if r.Code != approval.ClaimOK || r.Ended || r.Cached != nil {
		t.Fatalf("Claim = %+v, want claimed, not ended, nothing cached", r)
	}
	if r.Approval == nil || r.Approval.State != approval.StateClaimed || r.Approval.DecidedBy != "bob" || r.Approval.DecidedVia != approval.SourceCard || r.Approval.Comment != "ok" {
		t.Fatalf("claimed record = %+v", r.Approval)
	}
	got := wantState(t, s, a.ID, approval.StateClaimed)
	if !got.DecidedAt.Equal(T0.Add(time.Minute)) {
		t.Fatalf("DecidedAt = %v, want %v", got.DecidedAt, T0.Add(time.Minute))
	}
	if p, _ := s.Pending(ctx(t), a.Session); p != nil {
		t.Fatalf("Pending after claim = %s, want none", p.ID)
	}
	for _, intent := range []approval.Intent{approval.IntentApprove, approval.IntentReject, approval.IntentExpire} {
		req := approve(a)
		req.Intent = intent
		req.Now = a.ExpiresAt.Add(time.Hour)
		if r := claim(t, s, a.ID, req); r.Code != approval.ClaimAlreadyClaimed || r.Ended {
			t.Fatalf("second claim (%s) = %s ended=%v, want already_claimed", intent, r.Code, r.Ended)
		}
	}
}

func testClaimTampered(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewApproval(t)
	put(t, s, a)
	for _, h := range []string{"", "deadbeef", a.PayloadSHA256[:63] + "0"} {
		req := approve(a)
		req.PayloadSHA256 = h
		if r := claim(t, s, a.ID, req); r.Code != approval.ClaimTampered || r.Ended {
			t.Fatalf("Claim with hash %q = %s, want tampered", h, r.Code)
		}
		req.Intent = approval.IntentReject
		if r := claim(t, s, a.ID, req); r.Code != approval.ClaimTampered {
			t.Fatalf("reject with hash %q = %s, want tampered", h, r.Code)
		}
	}
	wantState(t, s, a.ID, approval.StatePending)
	if r := claim(t, s, a.ID, approve(a)); r.Code != approval.ClaimOK {
		t.Fatalf("Claim with the right hash after tampering = %s", r.Code)
	}
}

func testClaimMissing(t *testing.T, s approval.Store, _ func(time.Duration)) {
	id := approval.NewID("x")
	r := claim(t, s, id, approval.ClaimRequest{Intent: approval.IntentApprove, PayloadSHA256: "x"})
	if r.Code != approval.ClaimMissing || r.Approval != nil {
		t.Fatalf("Claim(missing) = %+v", r)
	}
}

func testClaimLate(t *testing.T, s approval.Store, _ func(time.Duration)) {
	for _, intent := range []approval.Intent{approval.IntentApprove, approval.IntentReject} {
		a := NewApproval(t)
		put(t, s, a)
		req := approve(a)
		req.Intent = intent
		req.Now = a.ExpiresAt // the deadline itself is too late
		r := claim(t, s, a.ID, req)
		if r.Code != approval.ClaimExpired || !r.Ended {
			t.Fatalf("%s at the deadline = %s ended=%v, want expired, ended", intent, r.Code, r.Ended)
		}
		got := wantState(t, s, a.ID, approval.StateExpired)
		if got.Outcome == nil || got.Outcome.Status != approval.StatusExpired || got.Outcome.Content != "text for expired" ||
			got.Outcome.Detail != "detail of expired" {
			t.Fatalf("expired outcome = %+v", got.Outcome)
		}
		if r := claim(t, s, a.ID, req); r.Code != approval.ClaimExpired || r.Ended {
			t.Fatalf("second late claim = %s ended=%v, want expired, not ended", r.Code, r.Ended)
		}
	}
}

func testExpire(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewApproval(t)
	put(t, s, a)
	exp := approval.ClaimRequest{Intent: approval.IntentExpire, Now: a.ExpiresAt.Add(-time.Millisecond)}
	if r := claim(t, s, a.ID, exp); r.Code != approval.ClaimNotYet || r.Ended {
		t.Fatalf("expire before the deadline = %s, want not_yet", r.Code)
	}
	wantState(t, s, a.ID, approval.StatePending)
	exp.Now = a.ExpiresAt
	if r := claim(t, s, a.ID, exp); r.Code != approval.ClaimExpired || !r.Ended {
		t.Fatalf("expire at the deadline = %s ended=%v, want expired, ended", r.Code, r.Ended)
	}
	got := wantState(t, s, a.ID, approval.StateExpired)
	if got.DecidedVia != approval.SourceSystem {
		t.Fatalf("expired DecidedVia = %q, want system", got.DecidedVia)
	}
	if p, _ := s.Pending(ctx(t), a.Session); p != nil {
		t.Fatalf("Pending after expiry = %s", p.ID)
	}
	if r := claim(t, s, a.ID, approve(a)); r.Code != approval.ClaimExpired {
		t.Fatalf("approve after expiry = %s, want expired", r.Code)
	}
	if r := claim(t, s, a.ID, exp); r.Code != approval.ClaimAlreadyClaimed || r.Ended {
		t.Fatalf("second expire = %s ended=%v, want already_claimed", r.Code, r.Ended)
	}
}

func testReject(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewApproval(t)
	put(t, s, a)
	req := approve(a)
	req.Intent = approval.IntentReject
	req.Comment = "not today"
	req.Outcome = func(st approval.Status) approval.Outcome {
		return approval.Outcome{Content: "declined: not today", Detail: "bob (\"not today\")", IsError: true, Comment: "not today"}
	}
	r := claim(t, s, a.ID, req)
	if r.Code != approval.ClaimOK || !r.Ended {
		t.Fatalf("reject = %s ended=%v, want claimed, ended", r.Code, r.Ended)
	}
	got := wantState(t, s, a.ID, approval.StateRejected)
	if got.Outcome == nil || got.Outcome.Status != approval.StatusRejected || got.Outcome.DecidedBy != "bob" || got.Comment != "not today" ||
		got.Outcome.Comment != "not today" || got.Outcome.Detail != `bob ("not today")` {
		t.Fatalf("rejected record = %+v outcome %+v", got, got.Outcome)
	}
	if r := claim(t, s, a.ID, approve(a)); r.Code != approval.ClaimAlreadyClaimed {
		t.Fatalf("approve after reject = %s, want already_claimed", r.Code)
	}
}

func testCompleteAndCache(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewApproval(t)
	put(t, s, a)
	claim(t, s, a.ID, approve(a))
	o := approval.Outcome{Status: approval.StatusExecuted, Content: "1 row affected",
		Results: []approval.Result{{Tool: "sql_execute", CallID: "call-1", Status: approval.StatusExecuted, Content: "1 row affected"}}}
	if _, err := s.Complete(ctx(t), a.ID, approval.StateExecuted, o, time.Hour); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	got := wantState(t, s, a.ID, approval.StateExecuted)
	if got.Outcome == nil || got.Outcome.Content != "1 row affected" || len(got.Outcome.Results) != 1 {
		t.Fatalf("outcome = %+v", got.Outcome)
	}
	// Same session, same idempotency key, same payload: the claim finds the cached result.
	b := NewApproval(t, a.Session)
	put(t, s, b)
	r := claim(t, s, b.ID, approve(b))
	if r.Code != approval.ClaimOK || r.Cached == nil || r.Cached.Content != "1 row affected" {
		t.Fatalf("claim of a repeated call = %+v, want the cached outcome", r)
	}
	// Different payload under the same key: nothing cached.
	c := NewApproval(t, a.Session)
	c.Calls[0].Args = json.RawMessage(`{"statement":"DELETE FROM orders WHERE id = 2"}`)
	c.Calls[0].PayloadSHA256 = approval.PayloadHash("sql_execute", c.Calls[0].Args)
	c.PayloadSHA256 = c.Calls[0].PayloadSHA256
	put(t, s, c)
	if r := claim(t, s, c.ID, approve(c)); r.Code != approval.ClaimOK || r.Cached != nil {
		t.Fatalf("claim with another payload = %+v, want no cached outcome", r)
	}
	// Another session with the same key: nothing cached (keys are per session).
	d := NewApproval(t)
	put(t, s, d)
	if r := claim(t, s, d.ID, approve(d)); r.Code != approval.ClaimOK || r.Cached != nil {
		t.Fatalf("claim in another session = %+v, want no cached outcome", r)
	}
	// Failed and frozen results are never cached.
	for _, st := range []approval.State{approval.StateFailed, approval.StateFrozen} {
		e := NewApproval(t)
		e.IdempotencyKey = "k-" + string(st)
		put(t, s, e)
		claim(t, s, e.ID, approve(e))
		if _, err := s.Complete(ctx(t), e.ID, st, approval.Outcome{Status: approval.StatusFailed, Detail: "why " + string(st)}, time.Hour); err != nil {
			t.Fatal(err)
		}
		if got := wantState(t, s, e.ID, st); got.Outcome == nil || got.Outcome.Detail != "why "+string(st) {
			t.Fatalf("%s outcome = %+v, want its detail kept", st, got.Outcome)
		}
		f := NewApproval(t, e.Session)
		f.IdempotencyKey = e.IdempotencyKey
		put(t, s, f)
		if r := claim(t, s, f.ID, approve(f)); r.Cached != nil {
			t.Fatalf("a %s result was cached", st)
		}
	}
}

func testCompleteErrors(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewApproval(t)
	put(t, s, a)
	if _, err := s.Complete(ctx(t), a.ID, approval.StateExecuted, approval.Outcome{}, 0); approval.KindOf(err) != errkind.Conflict {
		t.Fatalf("Complete(pending) = %v, want errkind.Conflict", err)
	}
	if _, err := s.Complete(ctx(t), approval.NewID("x"), approval.StateExecuted, approval.Outcome{}, 0); approval.KindOf(err) != errkind.NotFound {
		t.Fatalf("Complete(missing) = %v, want errkind.NotFound", err)
	}
	claim(t, s, a.ID, approve(a))
	if _, err := s.Complete(ctx(t), a.ID, approval.StateRejected, approval.Outcome{}, 0); approval.KindOf(err) != errkind.Invalid {
		t.Fatalf("Complete(claimed -> rejected) = %v, want errkind.Invalid", err)
	}
	if _, err := s.Complete(ctx(t), a.ID, approval.StateFrozen, approval.Outcome{Status: approval.StatusFrozen}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx(t), a.ID, approval.StateExecuted, approval.Outcome{}, 0); approval.KindOf(err) != errkind.Conflict {
		t.Fatalf("Complete twice = %v, want errkind.Conflict", err)
	}
}

func testCancel(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewApproval(t)
	put(t, s, a)
	got, ok, err := s.Cancel(ctx(t), a.ID, approval.Outcome{Content: "withdrawn"}, T0.Add(time.Second))
	if err != nil || !ok || got.State != approval.StateCancelled || got.Outcome == nil || got.Outcome.Status != approval.StatusCancelled {
		t.Fatalf("Cancel = %+v, %v, %v", got, ok, err)
	}
	if p, _ := s.Pending(ctx(t), a.Session); p != nil {
		t.Fatalf("Pending after cancel = %s", p.ID)
	}
	if _, ok, err := s.Cancel(ctx(t), a.ID, approval.Outcome{}, T0); ok || err != nil {
		t.Fatalf("second Cancel = %v, %v; want false, nil", ok, err)
	}
	if r := claim(t, s, a.ID, approve(a)); r.Code != approval.ClaimAlreadyClaimed {
		t.Fatalf("claim after cancel = %s", r.Code)
	}
	if _, _, err := s.Cancel(ctx(t), approval.NewID("x"), approval.Outcome{}, T0); approval.KindOf(err) != errkind.NotFound {
		t.Fatalf("Cancel(missing) = %v", err)
	}
	// The process cancels: the record says system and names nobody.
	if got.DecidedVia != approval.SourceSystem || got.DecidedBy != "" {
		t.Fatalf("a cancel by the process is recorded as by %q via %q", got.DecidedBy, got.DecidedVia)
	}
	// A person cancels: the record names them and where they cancelled.
	b := NewApproval(t)
	put(t, s, b)
	o := approval.Outcome{Content: "withdrawn: wrong table", Detail: "wrong table", DecidedBy: "acme/alice", DecidedVia: approval.SourceAPI}
	got, ok, err = s.Cancel(ctx(t), b.ID, o, T0.Add(time.Second))
	if err != nil || !ok || got.DecidedBy != "acme/alice" || got.DecidedVia != approval.SourceAPI {
		t.Fatalf("Cancel by a person = %+v, %v, %v", got, ok, err)
	}
	if rec, err := s.Get(ctx(t), b.ID); err != nil || rec.DecidedBy != "acme/alice" || rec.DecidedVia != approval.SourceAPI ||
		rec.Outcome == nil || rec.Outcome.DecidedBy != "acme/alice" || rec.Outcome.Detail != "wrong table" {
		t.Fatalf("Get after a person's cancel = %+v, %v", rec, err)
	}
}

// testLatest: the session's most recent approval is found whatever its
// state, also once it has ended (however it ended), until a newer one
// replaces it; a session that never had one has none.
func testLatest(t *testing.T, s approval.Store, _ func(time.Duration)) {
	latest := func(sess approval.SessionKey, wantID approval.ID, wantState approval.State) {
		t.Helper()
		got, err := s.Latest(ctx(t), sess)
		if err != nil {
			t.Fatalf("Latest(%s): %v", sess, err)
		}
		if wantID == "" {
			if got != nil {
				t.Fatalf("Latest(%s) = %s (%s), want none", sess, got.ID, got.State)
			}
			return
		}
		if got == nil || got.ID != wantID || got.State != wantState || got.Session != sess {
			t.Fatalf("Latest(%s) = %+v, want %s in state %s", sess, got, wantID, wantState)
		}
		if wantState.Terminal() && (got.Outcome == nil || got.DecidedAt.IsZero()) {
			t.Fatalf("Latest(%s): an ended approval without its outcome or end: %+v", sess, got)
		}
	}
	a := NewApproval(t)
	latest(a.Session, "", "")
	put(t, s, a)
	latest(a.Session, a.ID, approval.StatePending)

	// Expired.
	claim(t, s, a.ID, approval.ClaimRequest{Intent: approval.IntentExpire, Now: a.ExpiresAt})
	latest(a.Session, a.ID, approval.StateExpired)
	if p, _ := s.Pending(ctx(t), a.Session); p != nil {
		t.Fatalf("Pending after expiry = %s", p.ID)
	}
	// Cancelled.
	b := NewApproval(t, a.Session)
	put(t, s, b)
	latest(a.Session, b.ID, approval.StatePending)
	if _, ok, err := s.Cancel(ctx(t), b.ID, approval.Outcome{Content: "withdrawn"}, T0.Add(time.Second)); !ok || err != nil {
		t.Fatalf("Cancel = %v, %v", ok, err)
	}
	latest(a.Session, b.ID, approval.StateCancelled)
	// Rejected.
	c := NewApproval(t, a.Session)
	put(t, s, c)
	rej := approve(c)
	rej.Intent = approval.IntentReject
	claim(t, s, c.ID, rej)
	latest(a.Session, c.ID, approval.StateRejected)
	// Claimed, then executed.
	d := NewApproval(t, a.Session)
	put(t, s, d)
	claim(t, s, d.ID, approve(d))
	latest(a.Session, d.ID, approval.StateClaimed)
	if p, _ := s.Pending(ctx(t), a.Session); p != nil {
		t.Fatalf("Pending of a claimed approval = %s", p.ID)
	}
	if _, err := s.Complete(ctx(t), d.ID, approval.StateExecuted, approval.Outcome{Status: approval.StatusExecuted, Content: "1 row"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	latest(a.Session, d.ID, approval.StateExecuted)
	// Superseded: the newer one is the latest; the superseded one, found
	// through the newer one's claim, is not.
	e, f := NewApproval(t, a.Session), NewApproval(t, a.Session)
	put(t, s, e)
	put(t, s, f)
	latest(a.Session, f.ID, approval.StatePending)
	wantState(t, s, e.ID, approval.StateSuperseded)
	// An ended approval's pointer does not make it pending again, nor does
	// it stop a new one from being put and decided.
	claim(t, s, f.ID, approval.ClaimRequest{Intent: approval.IntentExpire, Now: f.ExpiresAt})
	g := NewApproval(t, a.Session)
	if old := put(t, s, g); old != nil {
		t.Fatalf("Put after an ended approval superseded %s", old.ID)
	}
	if r := claim(t, s, g.ID, approve(g)); r.Code != approval.ClaimOK {
		t.Fatalf("claim of a new approval after an ended one = %s", r.Code)
	}
	// Other sessions are not touched.
	latest(NewApproval(t).Session, "", "")
}

// testSeen: a mark is new once, then seen while it lives, and new again
// once its TTL has passed. What must still live has a long TTL and what
// must have ended a short one set just before the clock moves, so no
// assertion depends on how fast the store answers (the Redis harness
// moves the clock by sleeping).
func testSeen(t *testing.T, s approval.Store, advance func(time.Duration)) {
	key := fmt.Sprintf("feishu:ev-%d", time.Now().UnixNano())
	for i, want := range []bool{true, false, false} {
		got, err := s.Seen(ctx(t), key, time.Minute)
		if err != nil || got != want {
			t.Fatalf("Seen #%d = %v, %v; want %v", i, got, err, want)
		}
	}
	if got, _ := s.Seen(ctx(t), key+"-other", time.Minute); !got {
		t.Fatal("Seen of another key = false")
	}
	short := key + "-short"
	if got, _ := s.Seen(ctx(t), short, 150*time.Millisecond); !got {
		t.Fatal("Seen of a new key = false")
	}
	advance(300 * time.Millisecond)
	if got, _ := s.Seen(ctx(t), short, time.Minute); !got {
		t.Fatal("Seen after the mark expired = false, want true")
	}
	if got, _ := s.Seen(ctx(t), key, time.Minute); got {
		t.Fatal("Seen of a mark that lives = true, want false")
	}
}

// testSeenAndPending checks approval.CheckInbound (the store's own
// SeenAndPending where it has one) against the store's Seen and Pending.
func testSeenAndPending(t *testing.T, s approval.Store, _ func(time.Duration)) {
	is := inbound{s}
	a := NewApproval(t)
	key := fmt.Sprintf("msg:test:%d", time.Now().UnixNano())
	c := is.SeenAndPending(ctx(t), []string{key, key + "-evt"}, time.Minute, a.Session)
	if c.SeenErr != nil || c.PendingErr != nil || len(c.First) != 2 || !c.First[0] || !c.First[1] || c.Pending != nil {
		t.Fatalf("first check = %+v", c)
	}
	put(t, s, a)
	// The message redelivered with a new event id: a duplicate by its
	// message id; the pending approval is read all the same.
	c = is.SeenAndPending(ctx(t), []string{key, key + "-evt2"}, time.Minute, a.Session)
	if c.SeenErr != nil || c.PendingErr != nil || c.First[0] || !c.First[1] || c.Pending == nil || c.Pending.ID != a.ID {
		t.Fatalf("second check = %+v", c)
	}
	if first, err := s.Seen(ctx(t), key+"-evt2", time.Minute); first || err != nil {
		t.Fatalf("Seen of a key SeenAndPending marked = %v, %v", first, err)
	}
	// No keys, and a TTL of zero: only the lookup; nothing is marked.
	c = is.SeenAndPending(ctx(t), nil, time.Minute, a.Session)
	if len(c.First) != 0 || c.Pending == nil || c.PendingErr != nil {
		t.Fatalf("lookup only = %+v", c)
	}
	for range 2 {
		c = is.SeenAndPending(ctx(t), []string{key + "-nottl"}, 0, "test:nobody")
		if !c.First[0] || c.Pending != nil || c.PendingErr != nil {
			t.Fatalf("ttl 0 = %+v", c)
		}
	}
	claim(t, s, a.ID, approve(a))
	if c = is.SeenAndPending(ctx(t), nil, time.Minute, a.Session); c.Pending != nil {
		t.Fatalf("a claimed approval is still pending: %+v", c.Pending)
	}
}

// inbound calls approval.CheckInbound on its store.
type inbound struct{ s approval.Store }

func (i inbound) SeenAndPending(ctx context.Context, keys []string, ttl time.Duration, sess approval.SessionKey) approval.InboundCheck {
	return approval.CheckInbound(ctx, i.s, keys, ttl, sess)
}

// testClaimMark (a MarkClaimer only): a claim given a de-duplication mark
// sets it; a concurrent or later claim with the same mark is a duplicate
// that changes nothing, and one exactly wins; ForgetClaimMark lets the same
// mark decide again.
func testClaimMark(t *testing.T, s approval.Store, _ func(time.Duration)) {
	mc, ok := s.(approval.MarkClaimer)
	if !ok {
		t.Skip("not a MarkClaimer")
	}
	a := NewApproval(t)
	if _, err := s.Put(ctx(t), a, approval.Outcome{}); err != nil {
		t.Fatal(err)
	}
	key := fmt.Sprintf("evt:test:%d", time.Now().UnixNano())
	req := approval.ClaimRequest{Intent: approval.IntentApprove, PayloadSHA256: a.PayloadSHA256, Actor: "bob", Source: approval.SourceCard,
		Now: T0.Add(time.Minute), Mark: key, MarkTTL: time.Minute}
	const n = 20
	codes := make(chan approval.ClaimCode, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.Claim(ctx(t), a.ID, req)
			if err != nil {
				t.Error(err)
			}
			codes <- r.Code
		}()
	}
	wg.Wait()
	close(codes)
	count := map[approval.ClaimCode]int{}
	for c := range codes {
		count[c]++
	}
	if count[approval.ClaimOK] != 1 || count[approval.ClaimDuplicate] != n-1 {
		t.Fatalf("%d claims with one mark: %v, want one claimed, the rest duplicate", n, count)
	}
	if err := mc.ForgetClaimMark(ctx(t), a.ID, key); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Claim(ctx(t), a.ID, req); err != nil || r.Code != approval.ClaimAlreadyClaimed {
		t.Fatalf("claim after ForgetClaimMark = %+v, %v; want already_claimed", r, err)
	}
}

func testForget(t *testing.T, s approval.Store, _ func(time.Duration)) {
	key := fmt.Sprintf("evt:test:%d", time.Now().UnixNano())
	if err := s.Forget(ctx(t), key); err != nil {
		t.Fatalf("Forget of an unknown key: %v", err)
	}
	for _, k := range []string{key, key + "-other"} {
		if first, err := s.Seen(ctx(t), k, time.Minute); !first || err != nil {
			t.Fatalf("Seen(%s) = %v, %v", k, first, err)
		}
	}
	g := approval.Grant{Session: approval.SessionKey(key), User: "u", Tool: "t", PayloadSHA256: "h", ExpiresAt: time.Now().Add(time.Minute)}
	if err := s.PutGrant(ctx(t), g, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(ctx(t), g.Key()); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(ctx(t), key); err != nil {
		t.Fatal(err)
	}
	if first, err := s.Seen(ctx(t), key, time.Minute); !first || err != nil {
		t.Fatalf("Seen after Forget = %v, %v; want true", first, err)
	}
	if first, _ := s.Seen(ctx(t), key, time.Minute); first {
		t.Fatal("Seen after Forget did not mark the key again")
	}
	if first, _ := s.Seen(ctx(t), key+"-other", time.Minute); first {
		t.Fatal("Forget removed the mark of another key")
	}
	if got, err := s.GrantFor(ctx(t), g.Session, g.Key()); got == nil || err != nil {
		t.Fatalf("Forget removed a grant with the same key: %v, %v", got, err)
	}
}

type sink struct {
	mu  sync.Mutex
	got map[approval.ID]approval.Outcome
	c   chan struct{}
}

func newSink() *sink {
	return &sink{got: map[approval.ID]approval.Outcome{}, c: make(chan struct{}, 100)}
}

func (k *sink) fn(id approval.ID, o approval.Outcome) {
	k.mu.Lock()
	k.got[id] = o
	k.mu.Unlock()
	k.c <- struct{}{}
}

func (k *sink) wait(t *testing.T, id approval.ID) approval.Outcome {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		k.mu.Lock()
		o, ok := k.got[id]
		k.mu.Unlock()
		if ok {
			return o
		}
		select {
		case <-k.c:
		case <-deadline:
			t.Fatalf("no outcome published for %s", id)
		}
	}
}

func testSubscribe(t *testing.T, s approval.Store, _ func(time.Duration)) {
	sub1, sub2 := newSink(), newSink()
	c1, cancel1 := context.WithCancel(ctx(t))
	if err := s.Subscribe(c1, sub1.fn); err != nil {
		t.Fatal(err)
	}
	if err := s.Subscribe(ctx(t), sub2.fn); err != nil {
		t.Fatal(err)
	}
	// Completed.
	a := NewApproval(t)
	put(t, s, a)
	claim(t, s, a.ID, approve(a))
	if _, err := s.Complete(ctx(t), a.ID, approval.StateExecuted, approval.Outcome{Status: approval.StatusExecuted, Content: "done"}, 0); err != nil {
		t.Fatal(err)
	}
	for _, k := range []*sink{sub1, sub2} {
		if o := k.wait(t, a.ID); o.Status != approval.StatusExecuted || o.Content != "done" {
			t.Fatalf("published %+v", o)
		}
	}
	// Rejected, expired, superseded, cancelled.
	b := NewApproval(t)
	put(t, s, b)
	req := approve(b)
	req.Intent = approval.IntentReject
	claim(t, s, b.ID, req)
	c := NewApproval(t)
	put(t, s, c)
	claim(t, s, c.ID, approval.ClaimRequest{Intent: approval.IntentExpire, Now: c.ExpiresAt})
	d := NewApproval(t)
	put(t, s, d)
	put(t, s, NewApproval(t, d.Session))
	e := NewApproval(t)
	put(t, s, e)
	if _, _, err := s.Cancel(ctx(t), e.ID, approval.Outcome{}, T0); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[approval.ID]approval.Status{b.ID: approval.StatusRejected, c.ID: approval.StatusExpired, d.ID: approval.StatusSuperseded, e.ID: approval.StatusCancelled} {
		o := sub2.wait(t, id)
		if o.Status != want {
			t.Fatalf("published status for %s = %s, want %s", id, o.Status, want)
		}
		if id == b.ID && o.Detail != "detail of rejected" {
			t.Fatalf("published rejection %+v, want its detail", o)
		}
	}
	// After cancelling its context, the first subscriber hears nothing more.
	cancel1()
	time.Sleep(50 * time.Millisecond) // let an unsubscribe travel; absence cannot be observed otherwise
	f := NewApproval(t)
	put(t, s, f)
	if _, _, err := s.Cancel(ctx(t), f.ID, approval.Outcome{}, T0); err != nil {
		t.Fatal(err)
	}
	sub2.wait(t, f.ID)
	time.Sleep(50 * time.Millisecond)
	sub1.mu.Lock()
	_, heard := sub1.got[f.ID]
	sub1.mu.Unlock()
	if heard {
		t.Fatal("a cancelled subscription still received outcomes")
	}
}

func testAddCards(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewApproval(t)
	put(t, s, a)
	cards := []approval.CardRef{{Channel: "feishu", ChatID: "oc_1", MessageID: "om_1"}, {Channel: "dingtalk", MessageID: string(a.ID)}}
	if _, err := s.AddCards(ctx(t), a.ID, cards[:1]); err != nil {
		t.Fatal(err)
	}
	rec, err := s.AddCards(ctx(t), a.ID, cards[1:])
	if err != nil {
		t.Fatal(err)
	}
	if rec != nil {
		t.Fatalf("AddCards on a pending approval answered %+v, want nil", rec)
	}
	got := get(t, s, a.ID)
	if len(got.Cards) != 2 || got.Cards[0] != cards[0] || got.Cards[1] != cards[1] {
		t.Fatalf("cards = %+v, want %+v", got.Cards, cards)
	}
	if _, err := s.AddCards(ctx(t), approval.NewID("x"), cards); approval.KindOf(err) != errkind.NotFound {
		t.Fatalf("AddCards(missing) = %v", err)
	}
}

// testCardsRacingDecision covers a card whose send outlasts the decision:
// a card recorded after the claim is returned by Complete, and a card
// recorded after the approval ended comes back with the terminal record,
// so that whoever holds it can settle it.
func testCardsRacingDecision(t *testing.T, s approval.Store, _ func(time.Duration)) {
	late := approval.CardRef{Channel: "feishu", ChatID: "oc_1", MessageID: "om_late"}

	a := NewApproval(t)
	put(t, s, a)
	claim(t, s, a.ID, approve(a))
	if rec, err := s.AddCards(ctx(t), a.ID, []approval.CardRef{late}); err != nil || rec != nil {
		t.Fatalf("AddCards on a claimed approval = %+v, %v; want nil (Complete returns its cards)", rec, err)
	}
	cards, err := s.Complete(ctx(t), a.ID, approval.StateExecuted, approval.Outcome{Status: approval.StatusExecuted, Content: "done"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(cards) != 1 || cards[0] != late {
		t.Fatalf("Complete returned cards %+v, want the one added after the claim", cards)
	}

	b := NewApproval(t)
	put(t, s, b)
	req := approve(b)
	req.Intent = approval.IntentReject
	if r := claim(t, s, b.ID, req); r.Code != approval.ClaimOK || len(r.Approval.Cards) != 0 {
		t.Fatalf("reject = %+v", r)
	}
	rec, err := s.AddCards(ctx(t), b.ID, []approval.CardRef{late})
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != approval.StateRejected || rec.Outcome == nil || rec.Outcome.Status != approval.StatusRejected {
		t.Fatalf("AddCards after the reject answered %s / %+v, want rejected with its outcome", rec.State, rec.Outcome)
	}
	if len(rec.Cards) != 1 || rec.Cards[0] != late {
		t.Fatalf("AddCards after the reject answered cards %+v", rec.Cards)
	}
}

func testConcurrentClaims(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewApproval(t)
	put(t, s, a)
	const n = 200
	var wg sync.WaitGroup
	var ok, other atomic.Int64
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := approve(a)
			if i%2 == 1 {
				req.Intent = approval.IntentReject
			}
			req.Now = T0.Add(time.Minute)
			r, err := s.Claim(context.Background(), a.ID, req)
			switch {
			case err != nil:
				t.Error(err)
			case r.Code == approval.ClaimOK:
				ok.Add(1)
			case r.Code == approval.ClaimAlreadyClaimed:
				other.Add(1)
			default:
				t.Errorf("claim = %s", r.Code)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || other.Load() != n-1 {
		t.Fatalf("%d claims succeeded and %d were refused; want 1 and %d", ok.Load(), other.Load(), n-1)
	}
}

func testConcurrentPuts(t *testing.T, s approval.Store, _ func(time.Duration)) {
	first := NewApproval(t)
	const n = 50
	ids := make([]approval.ID, n)
	var wg sync.WaitGroup
	var superseded atomic.Int64
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := NewApproval(t, first.Session)
			ids[i] = a.ID
			old, err := s.Put(context.Background(), a, approval.Outcome{})
			if err != nil {
				t.Error(err)
			}
			if old != nil {
				superseded.Add(1)
			}
		}()
	}
	wg.Wait()
	pendingN := 0
	for _, id := range ids {
		if get(t, s, id).State == approval.StatePending {
			pendingN++
		}
	}
	if pendingN != 1 || superseded.Load() != n-1 {
		t.Fatalf("%d pending and %d superseded after %d puts in one session; want 1 and %d", pendingN, superseded.Load(), n, n-1)
	}
}

func testDueIndex(t *testing.T, s approval.Store, _ func(time.Duration)) {
	// Other tests share the store (Redis): look only at this test's ids.
	mine := map[approval.ID]int{}
	var ids []approval.ID
	for i, d := range []time.Duration{3 * time.Minute, time.Minute, 2 * time.Minute} {
		a := NewApproval(t)
		a.ExpiresAt = T0.Add(d)
		put(t, s, a)
		mine[a.ID] = i
		ids = append(ids, a.ID)
	}
	due := func(now time.Time) []approval.ID {
		t.Helper()
		all, err := s.Due(ctx(t), now, 0)
		if err != nil {
			t.Fatal(err)
		}
		var out []approval.ID
		for _, id := range all {
			if _, ok := mine[id]; ok {
				out = append(out, id)
			}
		}
		return out
	}
	if got := due(T0.Add(30 * time.Second)); len(got) != 0 {
		t.Fatalf("due before any expiry: %v", got)
	}
	got := due(T0.Add(2 * time.Minute))
	if len(got) != 2 || got[0] != ids[1] || got[1] != ids[2] {
		t.Fatalf("due at 2m = %v, want [%s %s] (earliest first)", got, ids[1], ids[2])
	}
	if err := s.Undue(ctx(t), ids[1]); err != nil {
		t.Fatal(err)
	}
	if got := due(T0.Add(time.Hour)); len(got) != 2 || got[0] != ids[2] || got[1] != ids[0] {
		t.Fatalf("due after Undue = %v", got)
	}
	if err := s.Undue(ctx(t)); err != nil {
		t.Fatal(err)
	}
}
