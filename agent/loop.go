package agent

import (
	"go.opentelemetry.io/otel/trace"

	"context"
	"errors"
	"github.com/hitlbot/hitlbot/internal/tracing"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/clock"
)

// LoopConfig wires a Loop.
type LoopConfig struct {
	// Model produces the assistant's messages.
	Model Model
	// Lang is the language of the loop's own notices (a model failure, a
	// slow turn, an unavailable store): "en" (default) or "zh".
	Lang string
	// Tools are the tools the model may call.
	Tools *Registry
	// Engine asks for and waits on approvals.
	Engine *approval.Engine
	// Tracer makes a turn's span (invoke_agent, the GenAI conventions)
	// and one execute_tool span per call the turn runs itself; an
	// approval's spans are the engine's, under the turn's. Nil:
	// tracing.Nop, nothing recorded.
	Tracer trace.Tracer
	// Policy returns the policy in force (it may be swapped by a reload;
	// an approval keeps the verdict it was created with).
	Policy func() *approval.Policy
	// History keeps conversations.
	History History
	// Locker serialises a session's turns across replicas that share
	// History: each turn, resumed ones included, holds the session's lock
	// (taken before a worker, and waited for at most TurnTimeout). A
	// session's turns on one replica are ordered by its queue anyway. Nil:
	// no lock, in-process ordering only (one replica).
	Locker SessionLocker
	// Speaker speaks in sessions.
	Speaker Speaker
	// Resumptions brings the outcomes of the approvals that end on this
	// replica (the engine's Ended listener); each that no Wait of this
	// replica takes resumes its turn (Resume). Nil: a queue nobody feeds
	// (only Resume does).
	Resumptions *Resumptions
	// Clock drives the slow-turn notice. Default: the wall clock.
	Clock clock.Clock
	// Logger receives operational logs. Default slog.Default().
	Logger *slog.Logger
	// SystemPrompt is sent first in every model request.
	SystemPrompt string
	// MaxToolRounds caps the model calls of one turn that ask for tools. Default 8.
	MaxToolRounds int
	// MaxHistory caps the messages kept per session. Default 60.
	MaxHistory int
	// TurnTimeout bounds one turn, approval waits included. Default 15m.
	TurnTimeout time.Duration
	// Retention is how long after its approval's expiry a suspended turn
	// is kept for its outcome to resume (store.retention). Default 7 days.
	Retention time.Duration
	// SlowNotice: a turn still working after this long says so once
	// (not while it waits for an approval: the card says that). Default 20s.
	SlowNotice time.Duration
	// Workers caps the sessions worked on at once (a session waiting for
	// an approval does not hold a worker). Default 32.
	Workers int
	// QueueSize caps the messages queued per session. Default 16.
	QueueSize int
}

// ErrBusy is returned by Submit when a session's queue is full.
var ErrBusy = errors.New("agent: too many messages waiting in this conversation")

// ErrClosed is returned by Submit after Close.
var ErrClosed = errors.New("agent: shutting down")

// Loop runs conversations: one worker per session handles its messages
// (and the resumptions of its turns) in order; sessions run in parallel up
// to Workers. With a Locker, a session's turns are also serialised with
// those of other replicas.
//
// Lifecycle: NewLoop (no I/O) -> Submit and Resume, from any goroutine ->
// Close (stops accepting work, ends the waits, waits for the turns).
type Loop struct {
	cfg    LoopConfig
	log    *slog.Logger
	tracer trace.Tracer
	words  words // what the loop says, in cfg.Lang
	sem    chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	queues map[approval.SessionKey][]job
	closed bool

	// idle hands a session to a goroutine whose worker finished its
	// queue and waits for another (run), so a session's worker need not
	// be a new goroutine, whose stack grows again, by copying, on every
	// turn; idlers counts the goroutines waiting there (at most Workers).
	idle   chan approval.SessionKey
	idlers atomic.Int32
}

// job is an entry of a session's queue: a message, or the outcome of an
// approval whose turn stopped waiting (resume set).
type job struct {
	in     Inbound
	resume *ended
}

// ended is an approval that ended, and how; waited reports that a Wait
// of this replica's engine takes the outcome (approval.EndListener).
type ended struct {
	a      *approval.Approval
	o      approval.Outcome
	waited bool
}

// NewLoop checks cfg and returns a loop ready for Submit.
func NewLoop(cfg LoopConfig) (*Loop, error) {
	if cfg.Model == nil || cfg.Tools == nil || cfg.Engine == nil || cfg.Policy == nil || cfg.History == nil || cfg.Speaker == nil {
		return nil, errors.New("agent.NewLoop: Model, Tools, Engine, Policy, History and Speaker are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxToolRounds <= 0 {
		cfg.MaxToolRounds = 8
	}
	if cfg.MaxHistory <= 0 {
		cfg.MaxHistory = 60
	}
	if cfg.TurnTimeout <= 0 {
		cfg.TurnTimeout = 15 * time.Minute
	}
	if cfg.Retention <= 0 {
		cfg.Retention = 7 * 24 * time.Hour
	}
	if cfg.SlowNotice <= 0 {
		cfg.SlowNotice = 20 * time.Second
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 32
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 16
	}
	if cfg.Resumptions == nil {
		cfg.Resumptions = NewResumptions()
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loop{cfg: cfg, log: cfg.Logger, tracer: tracing.Or(cfg.Tracer), words: wordsFor(cfg.Lang), sem: make(chan struct{}, cfg.Workers), ctx: ctx, cancel: cancel,
		queues: map[approval.SessionKey][]job{}, idle: make(chan approval.SessionKey)}
	l.wg.Add(1)
	go l.listen()
	return l, nil
}

// listen hands every outcome that comes through cfg.Resumptions to
// Resume, until the loop closes, except those a Wait of this replica
// takes: the turn waiting there claims the outcome itself (approve), so
// nothing here needs to. (A resolution of a frozen approval always goes
// on: a turn stops waiting at frozen.)
func (l *Loop) listen() {
	defer l.wg.Done()
	r := l.cfg.Resumptions
	for {
		for _, e := range r.take() {
			if e.waited && e.o.Resolution == "" {
				continue
			}
			if e.a.IsElicitation() {
				// An MCP server's question, asked while a tool ran
				// (Engine.Elicit): no turn waits on it in the history;
				// the tool's call took its answer, or was told cancel.
				continue
			}
			l.Resume(e.a, e.o)
		}
		select {
		case <-r.wake:
		case <-l.ctx.Done():
			r.close()
			return
		}
	}
}

// Submit queues a message for its session's worker.
func (l *Loop) Submit(in Inbound) error {
	in.Resumed = ""
	return l.enqueue(job{in: in}, l.cfg.QueueSize)
}

// Resume continues, with its outcome, the turn that asked for approval a.
// It is called on the replica where the approval ended (the engine's Ended
// listener, Resumptions, brings it there once the approval's cards are
// settled, unless a Wait there takes it), and returns at once.
//
// The resumption is queued in the session like a message, so it keeps its
// order with the messages that came meanwhile and holds the session's
// lock like any turn. Under that lock it claims the continuation
// (Engine.ClaimResume): the turn that waits for the outcome claims it too,
// and it holds the session's lock while it waits, so while it lives it
// claims first and the resumption finds the claim taken and does nothing.
// Exactly one of them goes on, whichever replicas try (resume).
func (l *Loop) Resume(a *approval.Approval, o approval.Outcome) {
	in := Inbound{Session: a.Session, Channel: a.Channel, ChatID: a.ChatID, User: a.Requester, UserName: a.RequesterName, Resumed: a.ID, Group: a.Group}
	// Not refused by a queue full of messages: an outcome is not lost to
	// a chatty session. The extra room bounds a store that replays.
	if err := l.enqueue(job{in: in, resume: &ended{a: a, o: o}}, l.cfg.QueueSize+maxSuspended); err != nil && !errors.Is(err, ErrClosed) {
		l.log.Warn("too much queued in the conversation; the approval's outcome is recorded at its next turn",
			"channel", a.Channel, "chat_id", a.ChatID, "approval_id", a.ID, "status", o.Status)
	}
}

// enqueue adds j to its session's queue (at most limit entries), starting
// the session's worker when none runs.
func (l *Loop) enqueue(j job, limit int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	s := j.in.Session
	q, running := l.queues[s]
	if len(q) >= limit {
		return ErrBusy
	}
	l.queues[s] = append(q, j)
	if !running {
		l.wg.Add(1)
		select {
		case l.idle <- s: // a goroutine waiting in run takes it
		default:
			go l.run(s)
		}
	}
	return nil
}

// run is the goroutine of a session's worker (work): when the session's
// queue is empty it waits, as long as the loop runs and unless Workers
// goroutines wait already, to be the worker of the next session that
// needs one (enqueue).
func (l *Loop) run(s approval.SessionKey) {
	for {
		l.work(s)
		if l.idlers.Add(1) > int32(cap(l.sem)) {
			l.idlers.Add(-1)
			return
		}
		select {
		case s = <-l.idle:
			l.idlers.Add(-1)
		case <-l.ctx.Done():
			l.idlers.Add(-1)
			return
		}
	}
}

// work handles a session's queue until it is empty. Every turn, resumed
// or not, ends with a turn_ended event.
func (l *Loop) work(s approval.SessionKey) {
	defer l.wg.Done()
	for {
		l.mu.Lock()
		q := l.queues[s]
		if len(q) == 0 {
			delete(l.queues, s)
			l.mu.Unlock()
			return
		}
		j := q[0]
		l.queues[s] = q[1:]
		l.mu.Unlock()
		to, res, ran := j.in, TurnResult{}, true
		if j.resume != nil {
			to, res, ran = l.resume(j.in, j.resume.a, j.resume.o)
		} else {
			res = l.turn(j.in)
		}
		if ran {
			res.Resumed = to.Resumed
			l.say(l.ctx, to, Say{Kind: SayTurnEnded, Result: &res, Private: res.private})
		}
	}
}

// lockSession takes the session's lock across replicas (nothing without
// a Locker). The wait ends with the loop, or after TurnTimeout: the turn of
// another replica that holds the lock normally ends within that.
func (l *Loop) lockSession(s approval.SessionKey) (unlock func(), err error) {
	if l.cfg.Locker == nil {
		return func() {}, nil
	}
	ctx, cancel := context.WithTimeout(l.ctx, l.cfg.TurnTimeout)
	defer cancel()
	return l.cfg.Locker.Lock(ctx, s)
}

// acquire takes a worker, unless ctx ends first (or has ended: a free
// worker does not win over a closing loop).
func (l *Loop) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case l.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *Loop) release() { <-l.sem }

// Close stops accepting messages, ends waits, and waits (bounded by ctx)
// for the turns in flight. Pending approvals stay in the store, and the
// turns that waited for them stay suspended in the history: their
// outcomes resume them on whichever replica sees them end.
func (l *Loop) Close(ctx context.Context) error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.cancel()
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *Loop) say(ctx context.Context, in Inbound, s Say) {
	if err := l.cfg.Speaker.Say(context.WithoutCancel(ctx), in, s); err != nil {
		l.log.Warn("sending to the chat failed", "channel", in.Channel, "chat_id", in.ChatID, "kind", s.Kind, "err", err)
	}
}
