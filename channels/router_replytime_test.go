package channels_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	. "github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/internal/clock"
)

// TestReplyOlderThanApprovalIsNotADecision: a typed 确认 written before
// the pending approval existed (a replayed or long-delayed message: here
// a day old, on a process that has run for two days) does not decide it;
// it reaches the agent like any text, and the sender is told that an
// approval waits. The same 确认 written after the approval was created
// decides it.
func TestReplyOlderThanApprovalIsNotADecision(t *testing.T) {
	var logs bytes.Buffer
	g := newRig(t, nil, func(c *RouterConfig) {
		c.Clock = clock.NewFake(time.Now().Add(-48 * time.Hour)) // the process started two days ago
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	a := g.pendingApproval(t, "orders")
	old := msg("alice", "确认")
	old.CreatedAt = a.CreatedAt.Add(-24 * time.Hour)
	g.send(t, old)
	g.drain()
	if st := g.state(t, a.ID); st != approval.StatePending || g.erase.Runs.Load() != 0 {
		t.Fatalf("an old 确认 decided: state %s, runs %d", st, g.erase.Runs.Load())
	}
	if !g.ch.hasText("notice", "An approval is waiting") {
		t.Fatalf("texts %v", g.ch.texts())
	}
	if !strings.Contains(logs.String(), "written before the pending approval") || !strings.Contains(logs.String(), `"created_at"`) ||
		!strings.Contains(logs.String(), `"approval_created_at"`) {
		t.Fatalf("the old reply is not logged with both times:\n%s", logs.String())
	}
	// A fresh 确认 decides; the old one then reaches the agent (it was
	// queued behind the turn that waited for the approval).
	g.send(t, msg("alice", "确认"))
	g.drain()
	if st := g.state(t, a.ID); st != approval.StateExecuted || g.erase.Runs.Load() != 1 {
		t.Fatalf("state %s, runs %d", st, g.erase.Runs.Load())
	}
	eventually(t, "the old 确认 reaches the agent", func() bool { return g.model.Seen("确认") == 1 })
}

// TestReplyWithinClockSkewDecides: the platform's clock may be behind
// ours by up to approval.reply_clock_skew; a reply that seems written that
// little before the approval decides it. A message without a create time
// is taken as written when it arrives.
func TestReplyWithinClockSkewDecides(t *testing.T) {
	for _, tt := range []struct {
		name    string
		skew    time.Duration
		created func(a *approval.Approval) time.Time
		decides bool
	}{
		{"3s before, default skew", 0, func(a *approval.Approval) time.Time { return a.CreatedAt.Add(-3 * time.Second) }, true},
		{"6s before, default skew", 0, func(a *approval.Approval) time.Time { return a.CreatedAt.Add(-6 * time.Second) }, false},
		{"6s before, skew 10s", 10 * time.Second, func(a *approval.Approval) time.Time { return a.CreatedAt.Add(-6 * time.Second) }, true},
		{"after", 0, func(a *approval.Approval) time.Time { return a.CreatedAt.Add(time.Second) }, true},
		{"unknown: the time it arrives", 0, func(*approval.Approval) time.Time { return time.Time{} }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := newRig(t, nil, func(c *RouterConfig) { c.ReplyClockSkew = tt.skew })
			a := g.pendingApproval(t, "orders")
			m := msg("alice", "确认")
			m.CreatedAt = tt.created(a)
			g.send(t, m)
			g.drain()
			want := approval.StatePending
			if tt.decides {
				want = approval.StateExecuted
			}
			if st := g.state(t, a.ID); st != want {
				t.Fatalf("state %s, want %s", st, want)
			}
		})
	}
}
