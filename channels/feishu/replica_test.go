package feishu

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
	"github.com/hitlbot/hitlbot/internal/hitltest"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

func TestMain(m *testing.M) { testredis.Main(m) }

// redisStore is a Redis store under a prefix of the test's own; call it
// once per test and give the result to every replica.
func redisStore(t *testing.T) approval.Store {
	t.Helper()
	client, prefix := testredis.Start(t)
	s, err := redisstore.New(client, redisstore.Options{Prefix: prefix, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// forgetCards empties the channel's memory of the cards it sent, as a
// restart (kill -9) of the process does.
func (g *rig) forgetCards() {
	g.ch.cards.mu.Lock()
	defer g.ch.cards.mu.Unlock()
	clear(g.ch.cards.cards)
}

// patchedTo counts the patches of messageID whose card contains sub.
func (g *rig) patchedTo(messageID, sub string) int {
	n := 0
	for _, c := range g.calls("patch") {
		if c.MessageID == messageID && strings.Contains(c.Content, sub) {
			n++
		}
	}
	return n
}

// refusedNamesApprovers clicks approve on ap's card as ou_mallory, whom
// its rule does not allow: the answer is a warning that names who may
// approve, and no card.
func (g *rig) refusedNamesApprovers(t *testing.T, ap *approval.Approval) {
	t.Helper()
	resp, _ := g.click(t, ap, "ou_mallory", buttonValue(ap, "approve"))
	if resp.Toast == nil || resp.Toast.Type != "warning" || !strings.Contains(resp.Toast.Content, ap.Approvers.DescribeIn("en")) {
		t.Fatalf("refused click: toast %+v, want it to name %q", resp.Toast, ap.Approvers.DescribeIn("en"))
	}
	if resp.Card != nil {
		t.Errorf("refused click answered with a card: %s", mustJSON(t, resp.Card.Data))
	}
}

// Two replicas (webhook mode, one app, one Redis): replica A gets the
// request and sends the card; the clicks land on replica B, which never
// saw the card. B answers as A would: a refused clicker is told who may
// approve, and the requester's click gets the executed card in the
// callback answer, not a bare toast.
func TestClickOnAnotherReplicaAnswersWithTheCard(t *testing.T) {
	fake := feishutest.New()
	defer fake.Close()
	opts := rigOptions{fake: fake, store: redisStore(t), tool: hitltest.NewTool("erase", approval.EffectDestructive), webhook: true}
	a := newRigWith(t, opts)
	b := newRigWith(t, opts)

	ap, _ := a.pending(t, "oc_replica_1", "ou_alice", "orders")
	msgID := ap.Cards[0].MessageID
	if _, ok := b.ch.cards.shown(msgID); ok {
		t.Fatal("replica B knows the card: the test does not test a miss")
	}

	b.refusedNamesApprovers(t, ap)
	if st := b.state(t, ap.ID); st != approval.StatePending {
		t.Fatalf("state after the refused click: %s", st)
	}

	resp, took := b.click(t, ap, "ou_alice", buttonValue(ap, "approve"))
	if took > 3*time.Second {
		t.Errorf("answered after %v", took)
	}
	if resp.Toast == nil || resp.Toast.Type != "success" || resp.Toast.Content != "Executed" {
		t.Fatalf("toast %+v", resp.Toast)
	}
	if resp.Card == nil || resp.Card.Type != "raw" {
		t.Fatalf("replica B answered the click without the card: %+v", resp)
	}
	// Exactly the card the sending replica answers: its pending card with
	// the outcome applied.
	ended, err := b.engine.Get(context.Background(), ap.ID)
	if err != nil || ended.Outcome == nil {
		t.Fatalf("record after the click: %+v %v", ended, err)
	}
	text := approval.DefaultOutcomeText("en")
	want := cards.FeishuOutcomeCard(cards.Pending(ap, text, "en"), *ended.Outcome, text, "en")
	if got, w := mustJSON(t, resp.Card.Data), mustJSON(t, want); got != w {
		t.Errorf("answered card\n got %s\nwant %s", got, w)
	}
	if card := mustJSON(t, resp.Card.Data); !strings.Contains(card, `"template":"green"`) || !strings.Contains(card, "erase done (run 1)") || strings.Contains(card, "behaviors") {
		t.Errorf("answered card %s", card)
	}
	eventually(t, "the card is patched to executed", func() bool { return b.patchedTo(msgID, `"template":"green"`) >= 1 })
	if n := opts.tool.Runs.Load(); n != 1 {
		t.Fatalf("tool ran %d times", n)
	}
	// Replica A, which waits for the outcome, learns it through the store.
	if st := a.state(t, ap.ID); st != approval.StateExecuted {
		t.Fatalf("state seen by A: %s", st)
	}
}

// After a restart the card's view is gone from memory: a click slower than
// the callback window is still answered with the processing card (built
// from the approval in the store), and the final patch is repeated after
// it, as on the process that sent the card.
func TestClickAfterRestartAnswersProcessing(t *testing.T) {
	g := newRig(t, func(c *Config, tool *hitltest.Tool) {
		c.CallbackWait = 300 * time.Millisecond
		tool.Gate = make(chan struct{})
	})
	ap, _ := g.pending(t, "oc_restart_1", "ou_alice", "slow")
	g.forgetCards()
	resp, _ := g.click(t, ap, "ou_alice", buttonValue(ap, "approve"))
	if resp.Toast == nil || resp.Toast.Type != "info" {
		t.Fatalf("toast %+v", resp.Toast)
	}
	if resp.Card == nil {
		t.Fatalf("no processing card in the answer: %+v", resp)
	}
	if c := mustJSON(t, resp.Card.Data); !strings.Contains(c, "Processing") || strings.Contains(c, "behaviors") || !strings.Contains(c, "slow") {
		t.Errorf("processing card %s", c)
	}
	close(g.erase.Gate)
	eventually(t, "the card is patched to executed, twice (after the processing answer)", func() bool {
		return g.patchedTo(ap.Cards[0].MessageID, `"template":"green"`) >= 2
	})
}

// A channel without Config.Views (`bot doctor` makes one) answers a click
// on a card it did not send (another replica's, or its own before a
// restart) with a toast only: the click is still decided, exactly once;
// a refused clicker is told who may approve in words of the engine's,
// and no answer carries a card, neither the final one nor, for a click
// slower than the callback window, the processing one.
func TestForeignClickWithoutViewsIsAToast(t *testing.T) {
	g := newRigWith(t, rigOptions{noViews: true}, func(c *Config, tool *hitltest.Tool) {
		c.CallbackWait = 300 * time.Millisecond
	})
	if g.cfg.Views != nil {
		t.Fatal("the channel has views: the test does not test their absence")
	}
	ap, _ := g.pending(t, "oc_noviews_1", "ou_alice", "orders")
	g.forgetCards()

	g.refusedNamesApprovers(t, ap)
	if st := g.state(t, ap.ID); st != approval.StatePending {
		t.Fatalf("state after the refused click: %s", st)
	}

	resp, _ := g.click(t, ap, "ou_alice", buttonValue(ap, "approve"))
	if resp.Toast == nil || resp.Toast.Type != "success" || resp.Toast.Content != "Executed" {
		t.Fatalf("requester's click: toast %+v", resp.Toast)
	}
	if resp.Card != nil {
		t.Errorf("the click was answered with a card without views: %s", mustJSON(t, resp.Card.Data))
	}
	if st := g.state(t, ap.ID); st != approval.StateExecuted {
		t.Fatalf("state %s", st)
	}
	if n := g.erase.Runs.Load(); n != 1 {
		t.Fatalf("tool ran %d times", n)
	}

	// Slower than the callback window: the processing answer is a toast
	// too, and the decision still runs once.
	g.erase.Gate = make(chan struct{})
	slow, _ := g.pending(t, "oc_noviews_2", "ou_alice", "slow")
	g.forgetCards()
	resp, _ = g.click(t, slow, "ou_alice", buttonValue(slow, "approve"))
	if resp.Toast == nil || resp.Toast.Type != "info" {
		t.Fatalf("slow click: toast %+v", resp.Toast)
	}
	if resp.Card != nil {
		t.Errorf("the slow click was answered with the processing card without views: %s", mustJSON(t, resp.Card.Data))
	}
	close(g.erase.Gate)
	eventually(t, "the slow approval is executed", func() bool { return g.state(t, slow.ID) == approval.StateExecuted })
	if n := g.erase.Runs.Load(); n != 2 {
		t.Fatalf("tool ran %d times", n)
	}
}

// Under the per_user scope the clicker's session is not the requester's:
// after a restart, the clicked card's view is found by the approval's id
// (bound to the clicked message), so a refused clicker is told who may
// approve and the card stays as it is, and the requester's answer carries
// the card.
func TestRefusedClickWithoutViewNamesApprovers(t *testing.T) {
	g := newRigWith(t, rigOptions{scope: channels.ScopePerUser})
	ap, _ := g.pending(t, "oc_peruser_1", "ou_alice", "orders")
	g.forgetCards()
	g.refusedNamesApprovers(t, ap)
	resp, _ := g.click(t, ap, "ou_alice", buttonValue(ap, "reject"))
	if resp.Toast == nil || resp.Card == nil || !strings.Contains(mustJSON(t, resp.Card.Data), "ou_alice") {
		t.Fatalf("requester's click: %+v", resp)
	}
	if st := g.state(t, ap.ID); st != approval.StateRejected {
		t.Fatalf("state %s", st)
	}
}

// Under per_user with the approver rule "chat", someone other than the
// requester approves a card this process no longer remembers: the answer
// carries the executed card, although the clicker's session has no
// pending approval.
func TestOtherApproverGetsTheCardUnderPerUser(t *testing.T) {
	g := newRigWith(t, rigOptions{scope: channels.ScopePerUser, approvers: approval.ApproverChat})
	ap, _ := g.pending(t, "oc_peruser_2", "ou_alice", "orders")
	g.forgetCards()
	resp, _ := g.click(t, ap, "ou_bob", buttonValue(ap, "approve"))
	if resp.Toast == nil || resp.Toast.Type != "success" {
		t.Fatalf("toast %+v", resp.Toast)
	}
	if resp.Card == nil || !strings.Contains(mustJSON(t, resp.Card.Data), `"template":"green"`) {
		t.Fatalf("bob's approving click was answered without the executed card: %+v", resp)
	}
	if st := g.state(t, ap.ID); st != approval.StateExecuted {
		t.Fatalf("state %s", st)
	}
}

// A click whose value names another approval than the session's pending
// one gets no card built from the wrong approval.
func TestClickOnUnknownCardGetsNoForeignCard(t *testing.T) {
	g := newRig(t)
	ap, _ := g.pending(t, "oc_foreign_1", "ou_alice", "orders")
	g.forgetCards()
	other := *ap
	other.ID = "ap_0123abcd_00112233445566778899aabbccddeeff"
	resp, _ := g.click(t, &other, "ou_alice", buttonValue(&other, "approve"))
	if resp.Card != nil || resp.Toast == nil || resp.Toast.Type != "error" {
		t.Fatalf("answer %+v", resp)
	}
	if st := g.state(t, ap.ID); st != approval.StatePending {
		t.Fatalf("state %s", st)
	}
	if _, ok := g.ch.cards.shown(ap.Cards[0].MessageID); ok {
		t.Error("a view was remembered for a click on an unknown approval")
	}
}
