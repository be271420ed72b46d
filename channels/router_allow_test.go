package channels_test

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	. "github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/internal/clock"
)

const refusedEN = "Sorry, you are not allowed to use this assistant here."

// TestAllowListRefusesMessages: a sender or chat not in the channel's
// allow-list is refused before anything is marked or queued: the agent
// never sees the text, the sender is told once per interval, every refusal
// is counted; the allowed sender is served as before.
func TestAllowListRefusesMessages(t *testing.T) {
	start := time.Now()
	clk := clock.NewFake(start)
	m := &countingMetrics{inbound: make(chan string, 20), dedup: make(chan string, 20), refused: make(chan string, 20), decisions: make(chan approval.Status, 20)}
	var logs bytes.Buffer
	g := newRig(t, nil, func(c *RouterConfig) {
		c.Clock = clk
		c.Metrics = m
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		c.Allow = map[string]Allow{"fake": {Users: []string{"alice", "bob"}, Chats: []string{"c1", "c2"}}}
	})
	first := msg("mallory", "hello from mallory")
	g.send(t, first)
	g.send(t, msg("mallory", "again"))
	inOther := msg("alice", "from an unlisted chat")
	inOther.ChatID = "c9"
	g.send(t, inOther)
	g.barrier(t, "alice")
	ok := msg("bob", "from bob in c2")
	ok.ChatID = "c2"
	g.send(t, ok)
	eventually(t, "bob is answered", func() bool { return g.ch.hasText("answer", "echo: from bob in c2") })

	for _, text := range []string{"hello from mallory", "again", "from an unlisted chat"} {
		if g.model.Seen(text) != 0 {
			t.Errorf("the agent saw %q", text)
		}
	}
	// Told once for mallory in c1 (not for the second message), once for
	// alice in c9; each as a reply to the refused message.
	if n := g.ch.countText("notice", refusedEN); n != 2 {
		t.Fatalf("%d refusal notices, want 2: %v", n, g.ch.texts())
	}
	g.ch.mu.Lock()
	var to []Target
	for _, s := range g.ch.sent {
		if strings.Contains(s.out.Text, refusedEN) {
			to = append(to, s.to)
		}
	}
	g.ch.mu.Unlock()
	if to[0].ChatID != "c1" || to[0].UserID != "mallory" || to[0].ReplyTo != first.MessageID || to[1].ChatID != "c9" || to[1].UserID != "alice" {
		t.Fatalf("refusals sent to %+v", to)
	}
	if len(m.refused) != 3 {
		t.Fatalf("%d refusals counted, want 3", len(m.refused))
	}
	// A refused message marks nothing (a stranger cannot fill the store).
	if fresh, err := g.store.Seen(context.Background(), "msg:fake:"+first.MessageID, time.Minute); err != nil || !fresh {
		t.Fatalf("the refused message's id was marked: first %v, %v", fresh, err)
	}
	if !strings.Contains(logs.String(), `"user_id":"mallory"`) || !strings.Contains(logs.String(), `"chat_id":"c1"`) ||
		!strings.Contains(logs.String(), "allow-list") {
		t.Fatalf("the refusal is not logged with its channel, chat and user:\n%s", logs.String())
	}

	// After the interval, mallory is told again.
	clk.Advance(RefusalNoticeInterval)
	g.send(t, msg("mallory", "later"))
	if n := g.ch.countText("notice", refusedEN); n != 3 {
		t.Fatalf("%d refusal notices after the interval, want 3", n)
	}
	// In a direct chat every refused message is answered, as an error
	// (which ends the turn of a client that waits for an answer).
	g.ch.reset()
	for range 2 {
		d := msg("mallory", "direct")
		d.ChatType = "p2p"
		g.send(t, d)
	}
	g.ch.mu.Lock()
	sent := append([]fakeSent(nil), g.ch.sent...)
	g.ch.mu.Unlock()
	if len(sent) != 2 || !sent[0].out.IsError || !sent[1].out.IsError || !strings.Contains(sent[1].out.Text, refusedEN) {
		t.Fatalf("direct refusals %+v", sent)
	}
}

// TestAllowListRefusesDecisions: a person not in the allow-list can
// decide nothing, neither by a click nor by a typed reply, even where the
// approver rule ("anyone in the chat") would let them; an allowed one can.
func TestAllowListRefusesDecisions(t *testing.T) {
	m := &countingMetrics{inbound: make(chan string, 20), dedup: make(chan string, 20), refused: make(chan string, 20), decisions: make(chan approval.Status, 20)}
	g := newRig(t, nil, func(c *RouterConfig) {
		c.Metrics = m
		c.Allow = map[string]Allow{"fake": {Users: []string{"alice", "bob"}}}
	})
	ctx := context.Background()
	a, err := g.engine.Request(ctx, approval.Request{Session: "fake:c1", Channel: "fake", ChatID: "c1", Requester: "alice",
		Calls:   []approval.Call{{Tool: "erase", Args: []byte(`{"target":"orders"}`)}},
		Verdict: approval.Verdict{NeedsApproval: true, Risk: approval.RiskHigh, Approvers: approval.ApproverRule{Mode: approval.ApproverChat}}})
	if err != nil {
		t.Fatal(err)
	}
	click := CardAction{Channel: "fake", ChatID: "c1", MessageID: a.Cards[0].MessageID, EventID: "click-m", UserID: "mallory",
		ApprovalID: a.ID, Verb: approval.Approve, PayloadSHA256: a.PayloadSHA256}
	o, err := g.router.HandleCardAction(ctx, click)
	if err != nil || o.Status != approval.StatusUnauthorized || !strings.Contains(o.Content, refusedEN) || !o.IsError {
		t.Fatalf("mallory's click: %+v, %v", o, err)
	}
	g.send(t, msg("mallory", "确认"))
	g.drain()
	if st := g.state(t, a.ID); st != approval.StatePending || g.erase.Runs.Load() != 0 {
		t.Fatalf("after mallory: state %s, runs %d", st, g.erase.Runs.Load())
	}
	if len(m.decisions) != 0 || len(m.refused) != 2 {
		t.Fatalf("decisions %d, refusals %d", len(m.decisions), len(m.refused))
	}
	// The refused click marked nothing: its event id is not a duplicate.
	if fresh, err := g.store.Seen(ctx, "evt:fake:click-m", time.Minute); err != nil || !fresh {
		t.Fatalf("the refused click's event was marked: first %v, %v", fresh, err)
	}
	click.UserID, click.EventID = "bob", "click-b"
	if o, err := g.router.HandleCardAction(ctx, click); err != nil || o.Status != approval.StatusExecuted || g.erase.Runs.Load() != 1 {
		t.Fatalf("bob's click: %+v, %v, runs %d", o, err, g.erase.Runs.Load())
	}
}

func TestAllowListChineseAndValidation(t *testing.T) {
	g := newRig(t, nil, func(c *RouterConfig) {
		c.Lang = "zh"
		c.Allow = map[string]Allow{"fake": {Chats: []string{"c2"}}, "other": {}}
	})
	g.send(t, msg("alice", "你好"))
	if !g.ch.hasText("notice", "抱歉，你没有权限在这里使用此助手") {
		t.Fatalf("texts %v", g.ch.texts())
	}
	for _, bad := range []Allow{{Users: []string{"alice", ""}}, {Chats: []string{" oc_1"}}} {
		cfg := RouterConfig{Registry: g.reg, Presenter: g.pres, Decider: g.engine, Submitter: g.loop, Store: g.store, Allow: map[string]Allow{"feishu": bad}}
		if _, err := NewRouter(cfg); err == nil || !strings.Contains(err.Error(), "feishu") {
			t.Errorf("NewRouter with allow %+v: %v", bad, err)
		}
	}
}

// TestRefusalNoticesBounded: the memory of refusal notices is bounded;
// beyond it, a refusal is not answered until old entries lapse.
func TestRefusalNoticesBounded(t *testing.T) {
	var r Refusals
	now := time.Now()
	for i := range MaxRefusalNotices {
		if !r.Due(strconv.Itoa(i), now) {
			t.Fatalf("entry %d not due", i)
		}
	}
	if r.Due("one more", now) {
		t.Fatal("a notice beyond the bound was due")
	}
	if !r.Due("one more", now.Add(RefusalNoticeInterval)) || r.Len() != 1 {
		t.Fatalf("after the interval: %d entries", r.Len())
	}
}
