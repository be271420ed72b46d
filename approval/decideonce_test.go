package approval_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
)

// TestDecideOnce: one click event delivered many times at once, to both
// replicas: one decision, one run; every other delivery is a duplicate
// (first false) and decides nothing. A later click with another key
// decides as usual (already decided).
func TestDecideOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		f := newFixture(t, be)
		a := request(t, f.a)
		const n = 20
		var wg sync.WaitGroup
		var firsts atomic.Int64
		for i := range n {
			e := f.a
			if i%2 == 1 {
				e = f.b
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				o, first, err := e.DecideOnce(context.Background(), a.ID, decision(a, approval.Approve, "bob"), "evt:test:click-1", time.Minute)
				switch {
				case err != nil:
					t.Error(err)
				case first && o.Status != approval.StatusExecuted:
					t.Errorf("the first delivery: %+v", o)
				case first:
					firsts.Add(1)
				case o.Status != "":
					t.Errorf("a duplicate answered %+v, want nothing", o)
				}
			}()
		}
		wg.Wait()
		if firsts.Load() != 1 || f.tool.runs.Load() != 1 {
			t.Fatalf("%d deliveries of one click: %d taken, %d runs; want 1 and 1", n, firsts.Load(), f.tool.runs.Load())
		}
		o, first, err := f.b.DecideOnce(context.Background(), a.ID, decision(a, approval.Approve, "bob"), "evt:test:click-2", time.Minute)
		if err != nil || !first || o.Status != approval.StatusAlreadyDecided {
			t.Fatalf("another click = %+v, %v, %v; want already_decided", o, first, err)
		}
	})
}

// failingClaims is a store whose next claim runs but answers an error, as
// a claim whose reply was lost for good does.
type failingClaims struct {
	approval.Store
	fail atomic.Bool
}

func (s *failingClaims) Claim(ctx context.Context, id approval.ID, req approval.ClaimRequest) (approval.ClaimResult, error) {
	r, err := s.Store.Claim(ctx, id, req)
	if s.fail.CompareAndSwap(true, false) {
		return approval.ClaimResult{}, approval.E("test.Claim", errkind.Unavailable, id, errors.New("reply lost"))
	}
	return r, err
}

// markingFailingClaims is failingClaims on a store that marks in its
// claims (a MarkClaimer), keeping that.
type markingFailingClaims struct{ *failingClaims }

func (s markingFailingClaims) ForgetClaimMark(ctx context.Context, id approval.ID, key string) error {
	return s.Store.(approval.MarkClaimer).ForgetClaimMark(ctx, id, key)
}

// TestDecideOnceReleasesAFailedMark: a decision that fails (nothing
// decided as far as the caller knows) releases its mark, whether Seen or
// the claim set it, so the same click tried again is decided, not taken
// for a duplicate.
func TestDecideOnceReleasesAFailedMark(t *testing.T) {
	forEachBackend(t, func(t *testing.T, be backend) {
		var fc *failingClaims
		f := newFixture(t, be, func(s approval.Store) approval.Store {
			fc = &failingClaims{Store: s}
			if _, ok := s.(approval.MarkClaimer); ok {
				return markingFailingClaims{fc}
			}
			return fc
		})
		a := request(t, f.b)
		d := decision(a, approval.Approve, "bob")
		d.PayloadSHA256 = "0" // tampered: the claim changes nothing
		fc.fail.Store(true)
		if _, _, err := f.b.DecideOnce(context.Background(), a.ID, d, "evt:test:click-1", time.Minute); approval.KindOf(err) != errkind.Unavailable {
			t.Fatalf("the failing decision: %v", err)
		}
		d.PayloadSHA256 = a.PayloadSHA256
		o, first, err := f.b.DecideOnce(context.Background(), a.ID, d, "evt:test:click-1", time.Minute)
		if err != nil || !first || o.Status != approval.StatusExecuted || f.tool.runs.Load() != 1 {
			t.Fatalf("the same click again = %+v, first %v, %v, runs %d; want executed", o, first, err, f.tool.runs.Load())
		}
	})
}
