package channels

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/clock"
)

// lastNotice returns the last notice sent, and whether it was an error.
func (f *fakeChannel) lastNotice() (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.sent) - 1; i >= 0; i-- {
		if f.sent[i].out.Kind == OutNotice {
			return f.sent[i].out.Text, f.sent[i].out.IsError
		}
	}
	return "", false
}

// expire lets a's expiry pass on the engine's clock and sweeps it, then
// waits for the turn that waited on it to end.
func (g *rig) expire(t *testing.T, clk *clock.Fake, a *approval.Approval) {
	t.Helper()
	clk.Advance(a.ExpiresAt.Sub(clk.Now()) + time.Second)
	if n, err := g.engine.Sweep(context.Background()); err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v", n, err)
	}
	if st := g.state(t, a.ID); st != approval.StateExpired {
		t.Fatalf("state %s", st)
	}
	eventually(t, "the waiting turn ends", func() bool { return g.ch.hasText("answer", "summary: ") })
}

// TestLateReplyAfterExpiry: a typed 确认 (or 取消) that comes after the
// approval expired is answered "expired", as a late click is; it does not
// reach the agent. On both stores (the session pointer outlives the end).
func TestLateReplyAfterExpiry(t *testing.T) {
	forEachDedupStore(t, func(t *testing.T, store approval.Store) {
		clk := clock.NewFake(time.Now())
		g := newRigClock(t, store, clk)
		a := g.pendingApproval(t, "orders")
		g.expire(t, clk, a)
		for _, text := range []string{"确认", "取消"} {
			g.ch.reset()
			g.send(t, msg("alice", text))
			if got, isErr := g.ch.lastNotice(); got != "The approval expired; nothing was run" || !isErr {
				t.Fatalf("a late %s was answered %q (error %v); texts %v", text, got, isErr, g.ch.texts())
			}
		}
		g.barrier(t, "alice")
		if g.model.Seen("确认") != 0 || g.model.Seen("取消") != 0 || g.erase.Runs.Load() != 0 {
			t.Fatalf("the late replies reached the agent (%d, %d) or ran the tool (%d)", g.model.Seen("确认"), g.model.Seen("取消"), g.erase.Runs.Load())
		}
		// Long after the end it is a message like any other.
		ended, err := g.engine.Get(context.Background(), a.ID)
		if err != nil {
			t.Fatal(err)
		}
		later := msg("alice", "确认")
		later.CreatedAt = ended.DecidedAt.Add(DefaultLateReplyWindow + time.Second)
		g.send(t, later)
		eventually(t, "the agent reads the 确认", func() bool { return g.model.Seen("确认") == 1 })
	})
}

// TestLateReplyWords: a late reply is told how the session's last
// approval ended: withdrawn, declined, or already decided (with what came
// of it); in Chinese too.
func TestLateReplyWords(t *testing.T) {
	for _, tt := range []struct {
		name, lang string
		end        func(g *rig, a *approval.Approval)
		want       string
	}{
		{"cancelled", "en", func(g *rig, a *approval.Approval) {
			if _, err := g.engine.Cancel(context.Background(), a.ID, "alice", approval.SourceAPI, "not needed"); err != nil {
				t.Fatal(err)
			}
		}, "The approval was withdrawn; nothing was run"},
		{"rejected", "en", func(g *rig, a *approval.Approval) { g.send(t, msg("alice", "取消")); g.drain() }, "Declined; nothing was run"},
		{"executed", "en", func(g *rig, a *approval.Approval) { g.send(t, msg("alice", "确认")); g.drain() }, "This approval has already been decided: Executed"},
		{"executed, zh", "zh", func(g *rig, a *approval.Approval) { g.send(t, msg("alice", "确认")); g.drain() }, "此审批已被处理：已执行"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := newRig(t, nil, func(c *RouterConfig) { c.Lang = tt.lang })
			a := g.pendingApproval(t, "orders")
			tt.end(g, a)
			eventually(t, "the waiting turn ends", func() bool { return g.ch.hasText("answer", "summary: ") })
			g.ch.reset()
			g.send(t, msg("alice", "ok"))
			if got, isErr := g.ch.lastNotice(); got != tt.want || !isErr {
				t.Fatalf("a late ok was answered %q (error %v), want %q", got, isErr, tt.want)
			}
			g.barrier(t, "alice")
			if g.model.Seen("ok") != 0 {
				t.Fatal("the late ok reached the agent")
			}
		})
	}
}

// TestReplyWithoutApprovalGoesToAgent: a 确认 in a session that never
// had an approval, or one written before the session's last approval was
// created (an old message), is a message for the agent.
func TestReplyWithoutApprovalGoesToAgent(t *testing.T) {
	g := newRig(t, nil)
	g.send(t, msg("alice", "确认"))
	eventually(t, "the agent reads the 确认", func() bool { return g.model.Seen("确认") == 1 })

	a := g.pendingApproval(t, "orders")
	g.send(t, msg("alice", "取消"))
	g.drain()
	eventually(t, "the waiting turn ends", func() bool { return g.ch.hasText("answer", "summary: ") })
	old := msg("alice", "确认")
	old.CreatedAt = a.CreatedAt.Add(-time.Minute)
	g.send(t, old)
	eventually(t, "the agent reads the old 确认", func() bool { return g.model.Seen("确认") == 2 })
}

// cancelFirst cancels the approval just before the claim of a decision:
// the typed reply loses a race with a cancel.
type cancelFirst struct{ approval.Store }

func (c cancelFirst) Claim(ctx context.Context, id approval.ID, req approval.ClaimRequest) (approval.ClaimResult, error) {
	if req.Intent != approval.IntentExpire {
		if _, _, err := c.Store.Cancel(ctx, id, approval.Outcome{Status: approval.StatusCancelled}, req.Now); err != nil {
			return approval.ClaimResult{}, err
		}
	}
	return c.Store.Claim(ctx, id, req)
}

// TestTypedReplyLosesRaceWithCancel: a typed 确认 that found the approval
// pending, but whose claim came after a cancel, is told "withdrawn", not
// "already decided"; nothing runs.
func TestTypedReplyLosesRaceWithCancel(t *testing.T) {
	forEachDedupStore(t, func(t *testing.T, store approval.Store) {
		g := newRig(t, cancelFirst{store})
		a := g.pendingApproval(t, "orders")
		g.send(t, msg("alice", "确认"))
		g.drain()
		if st := g.state(t, a.ID); st != approval.StateCancelled || g.erase.Runs.Load() != 0 {
			t.Fatalf("state %s, runs %d", st, g.erase.Runs.Load())
		}
		if got, _ := g.ch.lastNotice(); !strings.HasPrefix(got, "The approval was withdrawn; nothing was run") {
			t.Fatalf("the losing 确认 was told %q; texts %v", got, g.ch.texts())
		}
	})
}
