package storetest

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

// The conformance cases of Store.Resolve: a frozen approval settled by a
// person (done, retry, abandon).

// frozen puts a, claims it as bob and completes it as frozen with a long
// outcome (longer than a Redis record's 64-byte chunk, so a resolution
// must replace every chunk of it).
func frozen(t *testing.T, s approval.Store, a *approval.Approval) approval.Outcome {
	t.Helper()
	put(t, s, a)
	if r := claim(t, s, a.ID, approve(a)); r.Code != approval.ClaimOK {
		t.Fatalf("claim = %s", r.Code)
	}
	o := approval.Outcome{Status: approval.StatusFrozen, IsError: true, DecidedBy: "bob",
		Content: "The result is unknown: timed out after 2m0s " + strings.Repeat("x", 150),
		Detail:  "timed out after 2m0s " + strings.Repeat("x", 150),
		Results: []approval.Result{{Tool: "sql_execute", CallID: "call-1", Status: approval.StatusFrozen, IsError: true, Content: "timed out after 2m0s"}}}
	if _, err := s.Complete(ctx(t), a.ID, approval.StateFrozen, o, 0); err != nil {
		t.Fatal(err)
	}
	wantState(t, s, a.ID, approval.StateFrozen)
	return o
}

// resolveReq is carol's resolution r of a, taken in a's chat two minutes
// after T0.
func resolveReq(a *approval.Approval, r approval.Resolution) approval.ResolveRequest {
	return approval.ResolveRequest{Resolution: r, PayloadSHA256: a.PayloadSHA256, Actor: "carol", Source: approval.SourceCard,
		Comment: "checked the table", Channel: a.Channel, ChatID: a.ChatID, Now: T0.Add(2 * time.Minute),
		Outcome: approval.Outcome{Content: "Recorded as done by hand by carol: checked the table", Comment: "checked the table"}}
}

func resolve(t *testing.T, s approval.Store, id approval.ID, req approval.ResolveRequest) approval.ClaimResult {
	t.Helper()
	r, err := s.Resolve(ctx(t), id, req)
	if err != nil {
		t.Fatalf("Resolve(%s, %s): %v", id, req.Resolution, err)
	}
	return r
}

func testResolveDone(t *testing.T, s approval.Store, _ func(time.Duration)) {
	for _, tc := range []struct {
		r     approval.Resolution
		state approval.State
		st    approval.Status
	}{
		{approval.ResolveDone, approval.StateExecuted, approval.StatusExecuted},
		{approval.ResolveAbandon, approval.StateFailed, approval.StatusFailed},
	} {
		t.Run(string(tc.r), func(t *testing.T) {
			a := NewApproval(t)
			frozen(t, s, a)
			k := newSink()
			sctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if err := s.Subscribe(sctx, k.fn); err != nil {
				t.Fatal(err)
			}
			req := resolveReq(a, tc.r)
			res := resolve(t, s, a.ID, req)
			if res.Code != approval.ClaimOK || !res.Ended || res.Approval == nil {
				t.Fatalf("resolve = %+v, want claimed and ended", res)
			}
			got := wantState(t, s, a.ID, tc.state)
			if got.DecidedBy != "carol" || got.DecidedVia != approval.SourceCard || got.Comment != "checked the table" ||
				!got.DecidedAt.Equal(req.Now) {
				t.Fatalf("record decision = %q %q %q %v, want carol's resolution", got.DecidedBy, got.DecidedVia, got.Comment, got.DecidedAt)
			}
			o := got.Outcome
			if o == nil || o.Status != tc.st || o.Resolution != tc.r || o.DecidedBy != "carol" || o.Content != req.Outcome.Content ||
				o.Comment != "checked the table" || len(o.Results) != 0 || o.Detail != "" {
				t.Fatalf("record outcome = %+v, want the resolution's (the frozen one replaced whole)", o)
			}
			if pub := k.wait(t, a.ID); pub.Status != tc.st || pub.Resolution != tc.r {
				t.Fatalf("published %+v, want the resolution's outcome", pub)
			}
			if res.Approval.State != tc.state {
				t.Fatalf("result's record state = %s, want %s", res.Approval.State, tc.state)
			}
			// Once resolved, it is resolved: a second resolution (any) is refused.
			for _, r := range approval.Resolutions {
				if again := resolve(t, s, a.ID, resolveReq(a, r)); again.Code != approval.ClaimNotFrozen || again.Ended {
					t.Fatalf("second resolution %s = %+v, want not_frozen", r, again)
				}
			}
			wantState(t, s, a.ID, tc.state)
		})
	}
}

func testResolveRetry(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewApproval(t)
	frozenOutcome := frozen(t, s, a)
	if err := s.Undue(ctx(t), a.ID); err != nil { // as the sweeper does once an approval ended
		t.Fatal(err)
	}
	for round := range 2 {
		req := resolveReq(a, approval.ResolveRetry)
		req.Now = T0.Add(time.Duration(2+round) * time.Minute)
		res := resolve(t, s, a.ID, req)
		if res.Code != approval.ClaimOK || res.Ended {
			t.Fatalf("round %d: retry = %+v, want claimed, not ended", round, res)
		}
		got := wantState(t, s, a.ID, approval.StateClaimed)
		if got.Outcome != nil || got.DecidedBy != "carol" || !got.DecidedAt.Equal(req.Now) {
			t.Fatalf("round %d: retried record = outcome %+v by %q at %v, want claimed by carol at %v without an outcome",
				round, got.Outcome, got.DecidedBy, got.DecidedAt, req.Now)
		}
		// Back in the expiry index: a retry whose run never ends is
		// found by the sweeper.
		due, err := s.Due(ctx(t), req.Now, 100)
		if err != nil {
			t.Fatal(err)
		}
		if !contains(due, a.ID) {
			t.Fatalf("round %d: Due = %v, want %s back in the index", round, due, a.ID)
		}
		// No decision takes a running retry, nor a second resolution.
		if r := claim(t, s, a.ID, approve(a)); r.Code != approval.ClaimAlreadyClaimed {
			t.Fatalf("round %d: claim of a running retry = %s", round, r.Code)
		}
		if r := resolve(t, s, a.ID, resolveReq(a, approval.ResolveDone)); r.Code != approval.ClaimNotFrozen {
			t.Fatalf("round %d: resolution of a running retry = %s", round, r.Code)
		}
		// The retry freezes again (round 0), or executes (round 1).
		if round == 0 {
			fo := frozenOutcome
			fo.Resolution, fo.DecidedBy = approval.ResolveRetry, "carol"
			if _, err := s.Complete(ctx(t), a.ID, approval.StateFrozen, fo, 0); err != nil {
				t.Fatal(err)
			}
			if o := wantState(t, s, a.ID, approval.StateFrozen).Outcome; o == nil || o.Resolution != approval.ResolveRetry {
				t.Fatalf("frozen again: outcome %+v", o)
			}
			continue
		}
		o := approval.Outcome{Status: approval.StatusExecuted, Content: "1 row deleted", Resolution: approval.ResolveRetry, DecidedBy: "carol",
			Results: []approval.Result{{Tool: "sql_execute", CallID: "call-1", Status: approval.StatusExecuted, Content: "1 row deleted"}}}
		if _, err := s.Complete(ctx(t), a.ID, approval.StateExecuted, o, time.Hour); err != nil {
			t.Fatal(err)
		}
		if got := wantState(t, s, a.ID, approval.StateExecuted).Outcome; got == nil || got.Content != "1 row deleted" || got.Resolution != approval.ResolveRetry {
			t.Fatalf("retried outcome = %+v", got)
		}
	}
}

func contains(ids []approval.ID, id approval.ID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func testResolveRefused(t *testing.T, s approval.Store, _ func(time.Duration)) {
	// Missing: an unknown id, a malformed one.
	if r := resolve(t, s, approval.NewID("test:nobody"), resolveReq(NewApproval(t), approval.ResolveDone)); r.Code != approval.ClaimMissing {
		t.Fatalf("unknown id: %s", r.Code)
	}
	if r := resolve(t, s, "ap_nope", resolveReq(NewApproval(t), approval.ResolveDone)); r.Code != approval.ClaimMissing {
		t.Fatalf("malformed id: %s", r.Code)
	}
	// Not frozen: pending, claimed, executed.
	p := NewApproval(t)
	put(t, s, p)
	if r := resolve(t, s, p.ID, resolveReq(p, approval.ResolveRetry)); r.Code != approval.ClaimNotFrozen || r.Approval == nil {
		t.Fatalf("pending: %+v", r)
	}
	wantState(t, s, p.ID, approval.StatePending)
	claim(t, s, p.ID, approve(p))
	if r := resolve(t, s, p.ID, resolveReq(p, approval.ResolveDone)); r.Code != approval.ClaimNotFrozen {
		t.Fatalf("claimed: %s", r.Code)
	}
	if _, err := s.Complete(ctx(t), p.ID, approval.StateExecuted, approval.Outcome{Status: approval.StatusExecuted, Content: "ok"}, 0); err != nil {
		t.Fatal(err)
	}
	if r := resolve(t, s, p.ID, resolveReq(p, approval.ResolveAbandon)); r.Code != approval.ClaimNotFrozen {
		t.Fatalf("executed: %s", r.Code)
	}

	// Who may resolve: mayDecideCases (verb resolve). A refused
	// resolution changes nothing: here, the payload hash the resolver saw.
	a := NewApproval(t)
	fo := frozen(t, s, a)
	req := resolveReq(a, approval.ResolveDone)
	req.PayloadSHA256 = strings.Repeat("0", 64)
	if r := resolve(t, s, a.ID, req); r.Code != approval.ClaimTampered {
		t.Fatalf("wrong hash: %s", r.Code)
	}
	got := wantState(t, s, a.ID, approval.StateFrozen)
	if got.DecidedBy != "bob" || got.Outcome == nil || got.Outcome.Content != fo.Content {
		t.Fatalf("a refused resolution changed the record: by %q, outcome %+v", got.DecidedBy, got.Outcome)
	}
}

func testConcurrentResolutions(t *testing.T, s approval.Store, _ func(time.Duration)) {
	a := NewApproval(t)
	frozen(t, s, a)
	const n = 60
	var wg sync.WaitGroup
	var ok, other atomic.Int64
	var winner atomic.Value
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := resolveReq(a, approval.Resolutions[i%3])
			r, err := s.Resolve(context.Background(), a.ID, req)
			switch {
			case err != nil:
				t.Error(err)
			case r.Code == approval.ClaimOK:
				ok.Add(1)
				winner.Store(req.Resolution)
			case r.Code == approval.ClaimNotFrozen:
				other.Add(1)
			default:
				t.Errorf("resolve = %s", r.Code)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1 || other.Load() != n-1 {
		t.Fatalf("%d resolutions won and %d were refused; want 1 and %d", ok.Load(), other.Load(), n-1)
	}
	want := winner.Load().(approval.Resolution).ResolvedState()
	wantState(t, s, a.ID, want)
}
