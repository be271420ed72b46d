package api

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/hitlbot/hitlbot/agent"
)

// maxKeeping is how many resumed answers the API keeps at once by default
// (outbox.max).
const maxKeeping = 256

// outbox publishes what the outbound side hears (TurnEvent, ShowApproval,
// SettleApproval) to the requests in flight, per conversation in the
// order heard, without making its caller wait: the turn that says it, or
// the engine, never waits for the store.
//
// The one thing it writes is the answer of a resumed turn, kept with its
// approval's token entry (tokenLedger.keepResumed: a read of the approval
// and a write to the TokenStore). A worker of the conversation keeps it
// and then publishes the turn's end, and whatever the conversation says
// meanwhile waits behind it, in order: so a request that sees the resumed
// turn's end, or anything said after it, finds the answer kept, through
// GET /api/approvals/{id} and the conversation's next POST /agent/chat.
// A conversation with no answer being kept publishes at once.
//
// It is bounded: at most max answers are being kept at once (so at most
// max workers, one per conversation with an answer being kept); the end of
// one more resumed turn is published at once and its answer is not kept
// (logged; the conversation's history has it). close waits for the
// workers; after it, an answer is kept on the caller's path (the agent
// loop, shutting down after the channels, still ends turns), so no
// goroutine outlives Close.
type outbox struct {
	convs  *conversations
	tokens *tokenLedger
	log    *slog.Logger
	max    int

	// ctx ends the keeps in flight when close gives up waiting.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	queues  map[string][]outJob // chat id -> what waits there, the first being done
	keeping int                 // answers queued or being kept
	closed  bool
}

// outJob is one thing to publish, and the resumed answer to keep first
// (with the values of its caller's context: its trace).
type outJob struct {
	ctx  context.Context
	keep *agent.TurnResult
	ev   event
}

func newOutbox(convs *conversations, tokens *tokenLedger, log *slog.Logger) *outbox {
	ctx, cancel := context.WithCancel(context.Background())
	return &outbox{convs: convs, tokens: tokens, log: log, max: maxKeeping, ctx: ctx, cancel: cancel,
		queues: map[string][]outJob{}}
}

// say publishes e to the requests waiting in chat chatID once keep (when
// set: a resumed turn's result) is kept, and after everything said there
// before. It never waits for the store, except after close.
func (o *outbox) say(ctx context.Context, chatID string, keep *agent.TurnResult, e event) {
	o.mu.Lock()
	q, busy := o.queues[chatID]
	if keep != nil && !o.closed && o.keeping >= o.max {
		o.log.Warn("too many resumed answers are being kept; this one is not kept for the client (the conversation's history has it)",
			"approval_id", keep.Resumed, "keeping", o.keeping)
		keep = nil
	}
	switch {
	case !busy && keep == nil:
		// Nothing waits there: at once (under mu, so that nothing said
		// after it overtakes it).
		o.convs.publish(chatID, e)
		o.mu.Unlock()
		return
	case !busy && o.closed:
		// No worker may start any more: kept here, then published.
		o.mu.Unlock()
		o.tokens.keepResumed(context.WithoutCancel(ctx), *keep)
		o.convs.publish(chatID, e)
		return
	}
	o.queues[chatID] = append(q, outJob{ctx: context.WithoutCancel(ctx), keep: keep, ev: e})
	if keep != nil {
		o.keeping++
	}
	if !busy {
		o.wg.Add(1)
		go o.work(chatID)
	}
	o.mu.Unlock()
}

// work does the jobs of chat chatID in order until none is left.
func (o *outbox) work(chatID string) {
	defer o.wg.Done()
	for {
		o.mu.Lock()
		q := o.queues[chatID]
		if len(q) == 0 {
			delete(o.queues, chatID)
			o.mu.Unlock()
			return
		}
		j := q[0]
		o.mu.Unlock()
		if j.keep != nil {
			ctx, cancel := context.WithCancel(j.ctx)
			stop := context.AfterFunc(o.ctx, cancel)
			o.tokens.keepResumed(ctx, *j.keep)
			stop()
			cancel()
		}
		o.mu.Lock()
		o.convs.publish(chatID, j.ev)
		o.queues[chatID] = o.queues[chatID][1:]
		if j.keep != nil {
			o.keeping--
		}
		o.mu.Unlock()
	}
}

// close waits for the answers being kept and what waits behind them. If
// ctx ends first, the keeps in flight give up (what waits behind them is
// still published) and the error says so.
func (o *outbox) close(ctx context.Context) error {
	o.mu.Lock()
	o.closed = true
	idle := len(o.queues) == 0
	o.mu.Unlock()
	if idle {
		return nil
	}
	done := make(chan struct{})
	go func() {
		o.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		o.cancel()
		return fmt.Errorf("api: resumed answers were still being kept: %w", ctx.Err())
	}
}
