package channels_test

import (
	"context"
	"sync"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	. "github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

// cmdLog names the round trips of a client: a command by its name, a
// pipeline as "pipeline".
type cmdLog struct{ rec *testredis.Recorder }

func (l *cmdLog) take() []string {
	var got []string
	for _, t := range l.rec.Take() {
		if t.Pipeline {
			got = append(got, "pipeline")
		} else {
			got = append(got, t.Names[0])
		}
	}
	return got
}

// TestCardClickRoundTripsOnRedis: on Redis a click's de-duplication mark
// rides in the claim script, so a click that approves costs two round
// trips (claim, complete), not three; the same event again is a duplicate
// (the claim finds its mark) and runs nothing; the mark does not stop
// another click.
func TestCardClickRoundTripsOnRedis(t *testing.T) {
	c, prefix := testredis.Start(t)
	log := &cmdLog{rec: testredis.Record(c)}
	store, err := redisstore.New(c, redisstore.Options{Prefix: prefix, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	g := newRig(t, store)
	ctx := context.Background()
	warm := g.pendingApproval(t, "warm") // loads the scripts
	click := CardAction{Channel: "fake", ChatID: "c1", EventID: "click-warm", UserID: "alice", ApprovalID: warm.ID,
		Verb: approval.Approve, PayloadSHA256: warm.PayloadSHA256}
	if o, err := g.router.HandleCardAction(ctx, click); err != nil || o.Status != approval.StatusExecuted {
		t.Fatalf("warm-up click: %+v, %v", o, err)
	}
	g.barrier(t, "alice") // the warm-up turn has ended

	a := g.pendingApproval(t, "orders")
	eventually(t, "its card is recorded", func() bool {
		r, err := g.engine.Get(ctx, a.ID)
		return err == nil && len(r.Cards) == 1
	})
	click.EventID, click.ApprovalID, click.PayloadSHA256 = "click-1", a.ID, a.PayloadSHA256
	log.take()
	if o, err := g.router.HandleCardAction(ctx, click); err != nil || o.Status != approval.StatusExecuted {
		t.Fatalf("click: %+v, %v", o, err)
	}
	// (The complete may be a pipeline: it carries the removal of the
	// approval from its chat's index.) The waiting turn then claims the
	// outcome (a set: Engine.ClaimResume) and answers.
	eventually(t, "the waiting turn answers", func() bool { return g.ch.countText("answer", "summary") == 2 })
	if got := log.take(); len(got) != 3 || got[0] != "evalsha" || (got[1] != "evalsha" && got[1] != "pipeline") || got[2] != "set" {
		t.Fatalf("an approving click sent %v, want two round trips (the claim with its mark, the complete), then the waiting turn's claim", got)
	}
	if o, err := g.router.HandleCardAction(ctx, click); err != nil || o.Status != approval.StatusExecuted || g.erase.Runs.Load() != 2 {
		t.Fatalf("the same click again: %+v, %v, runs %d; want the final outcome and no run", o, err, g.erase.Runs.Load())
	}
	click.EventID = "click-2"
	if o, err := g.router.HandleCardAction(ctx, click); err != nil || o.Status != approval.StatusAlreadyDecided {
		t.Fatalf("another click: %+v, %v; want already_decided", o, err)
	}
}

// TestCardClickDuplicatesOnRedis: one click event delivered many times at
// once, to two routers sharing the store: one decision, one run; the
// others answer as a duplicate does.
func TestCardClickDuplicatesOnRedis(t *testing.T) {
	c, prefix := testredis.Start(t)
	store, err := redisstore.New(c, redisstore.Options{Prefix: prefix, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ga, gb := newReplicas(t, store)
	a := ga.pendingApproval(t, "orders")
	click := CardAction{Channel: "fake", ChatID: "c1", EventID: "click-1", UserID: "alice", ApprovalID: a.ID,
		Verb: approval.Approve, PayloadSHA256: a.PayloadSHA256}
	const n = 20
	var wg sync.WaitGroup
	statuses := make(chan approval.Status, n)
	for i := range n {
		g := ga
		if i%2 == 1 {
			g = gb
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := g.router.HandleCardAction(context.Background(), click)
			if err != nil {
				t.Error(err)
			}
			statuses <- o.Status
		}()
	}
	wg.Wait()
	close(statuses)
	count := map[approval.Status]int{}
	for st := range statuses {
		count[st]++
	}
	if runs := ga.erase.Runs.Load() + gb.erase.Runs.Load(); runs != 1 || count[approval.StatusExecuted]+count[approval.StatusAlreadyDecided] != n {
		t.Fatalf("%d deliveries of one click: runs %d, statuses %v", n, runs, count)
	}
}
