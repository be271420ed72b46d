package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/internal/clock"
)

// Inbound is one user message for the agent.
type Inbound struct {
	// Session is the conversation (see docs/ARCHITECTURE.md: session key).
	Session approval.SessionKey
	// Channel, ChatID and ThreadID locate it on its platform.
	Channel  string
	ChatID   string
	ThreadID string
	// User is the sender; MessageID the platform's id of the message.
	User      approval.UserID
	MessageID string
	// Text is the message, mentions stripped.
	Text string
	// Done, when set, is called once with the turn's result.
	Done func(TurnResult)
}

// SayKind is the kind of something the agent says.
type SayKind string

// Kinds of things the agent says.
const (
	SayAnswer     SayKind = "answer"      // the model's reply
	SayNotice     SayKind = "notice"      // progress ("still working") or a problem, in plain words
	SayToolResult SayKind = "tool_result" // a tool ran; Text is its result
)

// Say is one thing the agent says in a session.
type Say struct {
	Kind    SayKind
	Text    string
	Tool    string          // SayToolResult: the tool
	Args    json.RawMessage // SayToolResult: its arguments
	IsError bool
}

// Speaker is what the agent needs of a channel: a way to speak in the
// session a message came from. The channels' router implements it.
type Speaker interface {
	Say(ctx context.Context, to Inbound, s Say) error
}

// Action is a tool call of a turn and what became of it.
type Action struct {
	Tool    string          `json:"tool"`
	Input   json.RawMessage `json:"input"`
	Result  string          `json:"result"`
	Status  approval.Status `json:"status"` // an outcome status (executed, failed, rejected, …), or invalid or pending
	IsError bool            `json:"is_error,omitempty"`
}

// TurnResult is the result of one turn.
type TurnResult struct {
	// Text is the final answer (or the notice that ended the turn).
	Text string
	// Actions are the tool calls of the turn.
	Actions []Action
	// Err is set when the turn failed; Text then holds a sentence safe to show.
	Err error
}

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
	// Policy returns the policy in force (it may be swapped by a reload;
	// an approval keeps the verdict it was created with).
	Policy func() *approval.Policy
	// History keeps conversations.
	History History
	// Locker serialises a session's turns across replicas that share
	// History: each turn, and each late update of a session's history,
	// holds the session's lock (taken before a worker, and waited for at
	// most TurnTimeout). A session's turns on one replica are ordered by
	// its queue anyway. Nil: no lock, in-process ordering only (one replica).
	Locker SessionLocker
	// Speaker speaks in sessions.
	Speaker Speaker
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

// Loop runs conversations: one worker per session handles its messages in
// order; sessions run in parallel up to Workers. With a Locker, a session's
// turns are also serialised with those of other replicas.
type Loop struct {
	cfg    LoopConfig
	log    *slog.Logger
	words  words // what the loop says, in cfg.Lang
	sem    chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	queues map[approval.SessionKey][]job
	closed bool
}

// job is an entry of a session's queue: a message, or the news that an
// approval the session awaits has ended.
type job struct {
	in Inbound
	// ended, when set, makes the job no message: record the outcome of an
	// approval that no turn waits on any more in the history.
	ended *ended
}

// ended is an approval's outcome that arrived after its turn stopped waiting.
type ended struct {
	id approval.ID
	o  approval.Outcome
}

// maxAwaiting caps Conversation.Awaiting. Every new approval of a session
// supersedes its pending one, so at most one of them is still open and the
// others are resolved at the next chance; the cap only bounds a store that
// stays unreachable.
const maxAwaiting = 16

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
	if cfg.SlowNotice <= 0 {
		cfg.SlowNotice = 20 * time.Second
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 32
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 16
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Loop{cfg: cfg, log: cfg.Logger, words: wordsFor(cfg.Lang), sem: make(chan struct{}, cfg.Workers), ctx: ctx, cancel: cancel,
		queues: map[approval.SessionKey][]job{}}, nil
}

// Submit queues a message for its session's worker.
func (l *Loop) Submit(in Inbound) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	q, running := l.queues[in.Session]
	if len(q) >= l.cfg.QueueSize {
		return ErrBusy
	}
	l.queues[in.Session] = append(q, job{in: in})
	if !running {
		l.wg.Add(1)
		go l.work(in.Session)
	}
	return nil
}

// submitEnded queues the recording of an approval's late outcome in the
// session's worker, so that it never races a turn over the history. It is
// not refused by a full queue (it is small and no message).
func (l *Loop) submitEnded(in Inbound, id approval.ID, o approval.Outcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return // the next turn resolves it from the store
	}
	in.Done = nil
	q, running := l.queues[in.Session]
	l.queues[in.Session] = append(q, job{in: in, ended: &ended{id: id, o: o}})
	if !running {
		l.wg.Add(1)
		go l.work(in.Session)
	}
}

// follow waits, beyond the turn that stopped waiting, for an approval that
// is still open, and records its outcome in the history when it comes. It
// ends with the loop; then the next turn resolves the approval instead.
func (l *Loop) follow(in Inbound, id approval.ID, log *slog.Logger) {
	// The caller is a turn, itself counted in l.wg, so Add cannot race Close's Wait.
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		o, err := l.cfg.Engine.Wait(l.ctx, id)
		if err != nil {
			if l.ctx.Err() == nil {
				log.Warn("following the approval failed; the next turn will resolve it", "approval_id", id, "err", err)
			}
			return
		}
		l.submitEnded(in, id, o)
	}()
}

// work handles a session's queue until it is empty.
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
		if j.ended != nil {
			l.recordEnded(j.in, j.ended)
			continue
		}
		res := l.turn(j.in)
		if j.in.Done != nil {
			j.in.Done(res)
		}
	}
}

// recordEnded appends the outcome of an approval that ended after its turn
// stopped waiting (and of any other awaited approval that has ended) to
// the session's history.
func (l *Loop) recordEnded(in Inbound, e *ended) {
	log := l.log.With("channel", in.Channel, "chat_id", in.ChatID, "approval_id", e.id)
	unlock, err := l.lockSession(in.Session)
	if err != nil {
		if l.ctx.Err() == nil {
			log.Warn("taking the conversation's lock to record an approval's outcome failed; the next turn will", "err", err)
		}
		return
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(l.ctx, time.Minute)
	defer cancel()
	if err := l.acquire(ctx); err != nil {
		return
	}
	defer l.release()
	conv, err := l.cfg.History.Load(ctx, in.Session)
	if err != nil {
		log.Warn("loading history to record an approval's outcome failed; the next turn will", "err", err)
		return
	}
	if !l.resolveAwaiting(ctx, &conv, map[approval.ID]approval.Outcome{e.id: e.o}) {
		return
	}
	conv.Trim(l.cfg.MaxHistory)
	if err := l.cfg.History.Save(context.WithoutCancel(ctx), in.Session, conv); err != nil {
		log.Error("saving history failed", "err", err)
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

func (l *Loop) acquire(ctx context.Context) error {
	select {
	case l.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *Loop) release() { <-l.sem }

// Close stops accepting messages, ends waits, and waits (bounded by ctx)
// for the turns in flight. Pending approvals stay in the store.
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

// turnState is the working state of one turn.
type turnState struct {
	in       Inbound
	conv     Conversation
	result   TurnResult
	declined map[string]bool // tool + "\x00" + payload hash the user declined in this turn
	id       string
	waiting  chan bool // tells the slow-notice watcher when an approval wait starts/ends
	// open are the approvals the turn stopped waiting for while they were
	// still open (its deadline passed); the turn ends saying so.
	open []approval.ID
}

// signalWaiting tells the slow-notice watcher that an approval wait starts
// or ends; it never blocks (a watcher that has already spoken has left).
func (ts *turnState) signalWaiting(w bool) {
	select {
	case ts.waiting <- w:
	default:
	}
}

func (l *Loop) turn(in Inbound) TurnResult {
	log := l.log.With("channel", in.Channel, "chat_id", in.ChatID, "user_id", in.User, "msg_id", in.MessageID)
	// The session's lock first: waiting for another replica's turn
	// occupies no worker. It is held until the history is saved.
	unlock, err := l.lockSession(in.Session)
	if err != nil {
		return l.lockFailed(in, err, log)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(l.ctx, l.cfg.TurnTimeout)
	defer cancel()
	if err := l.acquire(ctx); err != nil {
		return TurnResult{Err: err, Text: l.words.shuttingDown}
	}
	held := true
	defer func() {
		if held {
			l.release()
		}
	}()
	ts := &turnState{in: in, declined: map[string]bool{}, id: in.MessageID, waiting: make(chan bool, 4)}
	if ts.id == "" {
		ts.id = randomID()
	}

	conv, err := l.cfg.History.Load(ctx, in.Session)
	if err != nil {
		log.Error("loading history failed", "err", err)
		return l.fail(ctx, ts, err, "I could not load this conversation; please try again shortly.")
	}
	ts.conv = conv
	l.resolveAwaiting(ctx, &ts.conv, nil)
	ts.conv.Messages = append(ts.conv.Messages, Message{Role: RoleUser, Content: in.Text})

	stopSlow := l.watchSlow(ctx, ts)
	defer stopSlow()

	specs := l.specs()
	for round := 0; ; round++ {
		if round == l.cfg.MaxToolRounds {
			ts.result.Text = fmt.Sprintf(l.words.maxRounds, round)
			l.say(ctx, in, Say{Kind: SayNotice, Text: ts.result.Text})
			break
		}
		msgs := ts.conv.Messages
		if l.cfg.SystemPrompt != "" {
			msgs = append([]Message{{Role: RoleSystem, Content: l.cfg.SystemPrompt}}, msgs...)
		}
		resp, err := l.cfg.Model.Complete(ctx, Request{Messages: msgs, Tools: specs})
		if err != nil && l.ctx.Err() != nil {
			// The loop is closing (shutdown, the end of `bot chat`): the
			// turn was stopped, the model did not fail. As at any
			// shutdown, the turn says nothing.
			log.Info("turn stopped by shutdown while the model was answering", "err", err)
			ts.result.Err, ts.result.Text = err, l.words.shuttingDown
			break
		}
		if err != nil {
			log.Warn("model request failed", "err", err)
			public := l.words.modelFailed
			var me *ModelError
			if errors.As(err, &me) {
				public = me.Public
			} else if errors.Is(err, context.DeadlineExceeded) {
				public = l.words.tooLong
			}
			ts.result.Err = err
			ts.result.Text = public
			l.say(ctx, in, Say{Kind: SayNotice, Text: public, IsError: true})
			break
		}
		msg := resp.Message
		msg.Role = RoleAssistant
		for i := range msg.ToolCalls {
			if msg.ToolCalls[i].ID == "" {
				msg.ToolCalls[i].ID = fmt.Sprintf("call_%s_%d_%d", ts.id, round, i)
			}
		}
		ts.conv.Messages = append(ts.conv.Messages, forHistory(msg))
		if len(msg.ToolCalls) == 0 {
			ts.result.Text = msg.Content
			l.say(ctx, in, Say{Kind: SayAnswer, Text: msg.Content})
			break
		}
		held = l.handleCalls(ctx, ts, msg.ToolCalls, log)
		if !held {
			// The turn gave up its worker and could not get it back (shutdown).
			break
		}
		if len(ts.open) > 0 {
			// The deadline passed while an approval was open. It stays
			// open and may still run: say so, not that the work stopped.
			ts.result.Text = l.words.stillWaiting
			ts.conv.Messages = append(ts.conv.Messages, Message{Role: RoleAssistant, Content: l.words.stillWaiting})
			l.say(ctx, in, Say{Kind: SayNotice, Text: l.words.stillWaiting})
			break
		}
	}
	if l.ctx.Err() == nil {
		// Approvals this turn superseded have ended: record them now.
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		l.resolveAwaiting(rctx, &ts.conv, nil)
		rcancel()
	}
	ts.conv.Trim(l.cfg.MaxHistory)
	if err := l.cfg.History.Save(context.WithoutCancel(ctx), in.Session, ts.conv); err != nil {
		log.Error("saving history failed", "err", err)
	}
	return ts.result
}

// lockFailed ends a turn whose session lock could not be taken: the loop
// shuts down, another replica kept the session for longer than a turn
// lasts, or the lock's store failed. Nothing of the turn was done, and the
// sender is told (except at shutdown, when no turn says anything).
func (l *Loop) lockFailed(in Inbound, err error, log *slog.Logger) TurnResult {
	if l.ctx.Err() != nil {
		return TurnResult{Err: err, Text: l.words.shuttingDown}
	}
	public := l.words.unavailable
	if errors.Is(err, context.DeadlineExceeded) {
		log.Warn("gave up waiting for the conversation's lock (another replica kept it for longer than a turn lasts)", "err", err)
		public = l.words.busy
	} else {
		log.Error("taking the conversation's lock failed", "err", err)
	}
	l.say(l.ctx, in, Say{Kind: SayNotice, Text: public, IsError: true})
	return TurnResult{Err: err, Text: public}
}

func (l *Loop) fail(ctx context.Context, ts *turnState, err error, public string) TurnResult {
	l.say(ctx, ts.in, Say{Kind: SayNotice, Text: public, IsError: true})
	return TurnResult{Err: err, Text: public}
}

func (l *Loop) say(ctx context.Context, in Inbound, s Say) {
	if err := l.cfg.Speaker.Say(context.WithoutCancel(ctx), in, s); err != nil {
		l.log.Warn("sending to the chat failed", "channel", in.Channel, "chat_id", in.ChatID, "err", err)
	}
}

// watchSlow says once that the turn is still working, unless it ends or
// waits for an approval first.
func (l *Loop) watchSlow(ctx context.Context, ts *turnState) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := l.cfg.Clock.NewTimer(l.cfg.SlowNotice)
		defer func() { t.Stop() }()
		for {
			select {
			case <-done:
				return
			case w := <-ts.waiting:
				t.Stop()
				if !w {
					t = l.cfg.Clock.NewTimer(l.cfg.SlowNotice)
				}
			case <-t.C():
				l.say(ctx, ts.in, Say{Kind: SayNotice, Text: l.words.stillWorking})
				return
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}

func (l *Loop) specs() []ToolSpec {
	tools := l.cfg.Tools.Tools()
	out := make([]ToolSpec, len(tools))
	for i, t := range tools {
		out[i] = ToolSpec{Name: t.Name(), Description: t.Description(), Schema: t.Schema()}
	}
	return out
}

// prepared is one tool call after validation and policy.
type prepared struct {
	call     ToolCall
	tool     Tool
	args     json.RawMessage
	hash     string
	verdict  approval.Verdict
	preview  string
	assessed bool // preview was made by the tool's Assess
	// reply (what the model is told), status and isError are the call's
	// answer, set by answer.
	reply   string
	status  approval.Status
	isError bool
}

// answer records the call's answer: the action's status, whether it is an
// error, and what the model is told.
func (p *prepared) answer(st approval.Status, isError bool, reply string) {
	p.status, p.isError, p.reply = st, isError, reply
}

// handleCalls answers every tool call of one assistant message, in order:
// invalid and declined calls at once, calls the policy lets through by
// running them, and the rest as one (batch) approval. It reports whether
// the turn still holds its worker.
func (l *Loop) handleCalls(ctx context.Context, ts *turnState, calls []ToolCall, log *slog.Logger) bool {
	policy := l.cfg.Policy()
	ps := make([]*prepared, len(calls))
	var batch []*prepared
	for i, c := range calls {
		p := &prepared{call: c, args: c.Args}
		ps[i] = p
		t, err := l.cfg.Tools.Validate(c.Name, c.Args)
		if err != nil {
			p.answer(approval.StatusInvalid, true, "Error: "+err.Error()+". The call was not run; fix the arguments and try again.")
			continue
		}
		p.tool = t
		args, hash, err := approval.HashCall(c.Name, c.Args)
		if err != nil {
			p.answer(approval.StatusInvalid, true, "Error: "+err.Error())
			continue
		}
		p.args, p.hash = args, hash
		if ts.declined[c.Name+"\x00"+hash] {
			p.answer(approval.StatusRejected, true, "Not run: the user already declined this exact call in this turn. Do not propose it again; ask what they want instead.")
			continue
		}
		conf := c.Confidence
		if conf <= 0 {
			conf = 1
		}
		var blast approval.Blast
		if as, ok := t.(Assessor); ok {
			blast, p.preview = as.Assess(ctx, args)
			p.assessed = true
		}
		v, err := l.cfg.Engine.Evaluate(ctx, policy, approval.CallInfo{Session: ts.in.Session, User: ts.in.User, Tool: c.Name, Effect: t.Effect(args), Hash: hash, Confidence: conf, Blast: blast})
		if err != nil {
			log.Error("policy evaluation failed; not running the call", "tool", c.Name, "err", err)
			p.answer(approval.StatusFailed, true, l.words.notRun+approval.UserMessageIn(err, l.cfg.Lang))
			continue
		}
		p.verdict = v
		if !v.NeedsApproval {
			res, err := l.cfg.Tools.Dispatch(ctx, approval.Call{Tool: c.Name, Args: args, CallID: c.ID})
			switch {
			case err != nil && errors.Is(err, approval.ErrNotRun):
				p.answer(approval.StatusFailed, true, "Error: "+err.Error())
			case err != nil:
				log.Error("tool failed with an unknown effect", "tool", c.Name, "err", err)
				p.answer(approval.StatusFrozen, true, "The tool failed and its effect is unknown; do not retry it automatically.")
			default:
				p.answer(res.Status, res.IsError, res.Content)
			}
			l.say(ctx, ts.in, Say{Kind: SayToolResult, Tool: c.Name, Args: args, Text: p.reply, IsError: p.isError})
			continue
		}
		batch = append(batch, p)
	}
	held := true
	if len(batch) > 0 {
		held = l.approve(ctx, ts, batch, log)
	}
	for _, p := range ps {
		ts.conv.Messages = append(ts.conv.Messages, Message{Role: RoleTool, ToolCallID: p.call.ID, Name: p.call.Name, Content: p.reply, Status: p.status})
		ts.result.Actions = append(ts.result.Actions, Action{Tool: p.call.Name, Input: p.args, Result: p.reply, Status: p.status, IsError: p.isError})
	}
	return held
}

// approve asks for one approval covering the batch, waits for it, and
// turns its outcome into each call's reply.
func (l *Loop) approve(ctx context.Context, ts *turnState, batch []*prepared, log *slog.Logger) bool {
	v := batch[0].verdict
	calls := make([]approval.Call, len(batch))
	var summaries, previews, reasons, reasonsZH []string
	for i, p := range batch {
		if p.verdict.Risk > v.Risk {
			v.Risk, v.Approvers, v.Timeout = p.verdict.Risk, p.verdict.Approvers, p.verdict.Timeout
		}
		v.Grantable = v.Grantable && p.verdict.Grantable
		if !p.assessed {
			preview, err := p.tool.Preview(ctx, p.args)
			if err != nil {
				preview = "(no preview: " + err.Error() + ")"
			}
			p.preview = preview
		}
		preview := p.preview
		calls[i] = approval.Call{Tool: p.call.Name, Args: p.args, Summary: firstLine(preview), CallID: p.call.ID}
		summaries = append(summaries, p.call.Name+": "+firstLine(preview))
		previews = append(previews, preview)
		reasons = append(reasons, p.verdict.Reason)
		reasonsZH = append(reasonsZH, p.verdict.ReasonZH)
	}
	v.Reason = strings.Join(dedupe(reasons), "; ")
	v.ReasonZH = strings.Join(dedupe(reasonsZH), "；")
	keys := make([]string, len(batch))
	for i, p := range batch {
		keys[i] = p.call.ID
	}
	a, err := l.cfg.Engine.Request(ctx, approval.Request{
		Session: ts.in.Session, Channel: ts.in.Channel, ChatID: ts.in.ChatID, Requester: ts.in.User,
		Calls: calls, Verdict: v,
		Summary:        strings.Join(summaries, "\n"),
		Preview:        strings.Join(previews, "\n\n"),
		IdempotencyKey: ts.id + "/" + strings.Join(keys, ","),
	})
	if err != nil {
		log.Error("requesting approval failed; not running the calls", "err", err)
		for _, p := range batch {
			p.answer(approval.StatusFailed, true, l.words.notRun+approval.UserMessageIn(err, l.cfg.Lang))
		}
		l.say(ctx, ts.in, Say{Kind: SayNotice, Text: approval.UserMessageIn(err, l.cfg.Lang), IsError: true})
		return true
	}
	// Record what is awaited before blocking, so a restart can resolve it.
	ts.conv.Awaiting = append(ts.conv.Awaiting, a.ID)
	if n := len(ts.conv.Awaiting); n > maxAwaiting {
		log.Warn("too many approvals awaited; forgetting the oldest", "approval_id", ts.conv.Awaiting[0])
		ts.conv.Awaiting = append([]approval.ID(nil), ts.conv.Awaiting[n-maxAwaiting:]...)
	}
	if err := l.cfg.History.Save(ctx, ts.in.Session, withPlaceholders(ts.conv, batch, a.ID)); err != nil {
		log.Warn("saving history before the approval wait failed", "approval_id", a.ID, "err", err)
	}
	ts.signalWaiting(true)
	l.release() // waiting is not work: let other sessions use the worker
	o, werr := l.cfg.Engine.Wait(ctx, a.ID)
	reacquired := l.acquire(l.ctx) == nil
	ts.signalWaiting(false)
	if werr != nil {
		log.Warn("stopped waiting for the approval", "approval_id", a.ID, "err", werr)
		for _, p := range batch {
			p.answer(approval.StatusPending, true, "Not run yet: still waiting for a person's approval ("+string(a.ID)+"). The outcome will be recorded when it comes.")
		}
		if l.ctx.Err() == nil {
			// Not a shutdown: the turn ran out of time. Keep following
			// the approval, so its outcome is recorded when it comes.
			ts.open = append(ts.open, a.ID)
			l.follow(ts.in, a.ID, log)
		}
		return reacquired
	}
	ts.conv.Awaiting = without(ts.conv.Awaiting, a.ID)
	l.applyOutcome(ts, batch, o)
	return reacquired
}

// without returns ids without id.
func without(ids []approval.ID, id approval.ID) []approval.ID {
	var out []approval.ID
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}

// withPlaceholders returns conv with provisional tool replies for the
// batch, so that a history saved mid-wait is valid on its own.
func withPlaceholders(conv Conversation, batch []*prepared, id approval.ID) Conversation {
	c := conv
	c.Messages = append([]Message(nil), conv.Messages...)
	for _, p := range batch {
		c.Messages = append(c.Messages, Message{Role: RoleTool, ToolCallID: p.call.ID, Name: p.call.Name,
			Content: "Not run yet: waiting for a person's approval (" + string(id) + ").", Status: approval.StatusPending})
	}
	return c
}

// applyOutcome turns an approval's outcome into the replies of its calls.
// Each call that ran and succeeded is shown in the chat as a tool result.
func (l *Loop) applyOutcome(ts *turnState, batch []*prepared, o approval.Outcome) {
	calls := make([]approval.Call, len(batch))
	for i, p := range batch {
		calls[i] = approval.Call{Tool: p.call.Name, CallID: p.call.ID}
	}
	for i, co := range callOutcomes(o, calls, false, l.cfg.Engine.Text()) {
		p := batch[i]
		p.answer(co.status, co.isError, co.reply)
		if o.Status == approval.StatusRejected {
			ts.declined[p.call.Name+"\x00"+p.hash] = true
		}
		if co.ran {
			l.say(context.Background(), ts.in, Say{Kind: SayToolResult, Tool: p.call.Name, Args: p.args, Text: p.reply, IsError: p.isError})
		}
	}
}

// callOutcome is what became of one call of an ended approval.
type callOutcome struct {
	status  approval.Status
	reply   string // what the model is told
	isError bool
	ran     bool // the tool ran and succeeded (executed or replayed)
}

// callOutcomes says what became of each call of an ended approval. When
// the calls were dispatched (executed, failed, frozen, replayed), each call
// gets its own result: a batch can hold a call that ran beside one that
// failed. An approval that ended without running (rejected, expired,
// superseded, cancelled) applies to every call. late words the replies for
// an update recorded after the turn that asked. text is the engine's words:
// a reply says the status in its own words, then only what the engine's
// content adds to its status sentence (see detail).
func callOutcomes(o approval.Outcome, calls []approval.Call, late bool, text approval.OutcomeText) []callOutcome {
	byID := map[string]approval.Result{}
	for _, r := range o.Results {
		if r.CallID != "" {
			byID[r.CallID] = r
		}
	}
	dispatched := false
	switch o.Status {
	case approval.StatusExecuted, approval.StatusReplayed, approval.StatusFailed, approval.StatusFrozen:
		dispatched = true
	}
	frozenSeen := false
	out := make([]callOutcome, len(calls))
	for i, c := range calls {
		r, ok := byID[c.CallID]
		if !ok && len(o.Results) == len(calls) && (o.Results[i].CallID == "" || o.Results[i].CallID == c.CallID) {
			r, ok = o.Results[i], true
		}
		if dispatched && ok {
			st := r.Status
			if st == "" {
				st = o.Status
			}
			switch st {
			case approval.StatusExecuted, approval.StatusReplayed:
				out[i] = callOutcome{status: st, reply: r.Content, isError: r.IsError, ran: !r.IsError}
			case approval.StatusFailed:
				out[i] = callOutcome{status: st, reply: "Failed: " + r.Content, isError: true}
			case approval.StatusFrozen:
				if frozenSeen {
					// The engine stops a batch at its first call of unknown effect.
					out[i] = callOutcome{status: st, isError: true,
						reply: "Not run: an earlier call of this batch has an unknown effect, so this one was stopped; do not retry it automatically."}
				} else {
					frozenSeen = true
					out[i] = callOutcome{status: st, isError: true, reply: frozenReply(detail(r.Content, st, text))}
				}
			default:
				out[i] = callOutcome{status: st, reply: "Not run: " + r.Content, isError: true}
			}
			continue
		}
		co := callOutcome{status: o.Status, isError: o.IsError}
		switch o.Status {
		case approval.StatusExecuted, approval.StatusReplayed:
			co.reply, co.ran = o.Content, !o.IsError
		case approval.StatusRejected:
			co.reply = "Not run: the user declined it (" + detail(o.Content, o.Status, text) + ")."
			if !late {
				co.reply += " Do not propose the same call again in this turn."
			}
		case approval.StatusExpired:
			co.reply = "Not run: the approval expired before anyone decided."
		case approval.StatusFrozen:
			co.reply = frozenReply(detail(o.Content, o.Status, text))
		case approval.StatusFailed:
			co.reply = "Failed: " + detail(o.Content, o.Status, text)
		case approval.StatusSuperseded:
			co.reply = "Not run: a newer request in this conversation replaced it."
		case approval.StatusCancelled:
			co.reply = "Not run: the approval was withdrawn."
		default:
			co.reply = "Not run: " + o.Content
		}
		out[i] = co
	}
	return out
}

// frozenReply tells the model that a call's effect is unknown, once, and
// why (the engine's cause, in words safe to show), when known.
func frozenReply(cause string) string {
	reply := "The result is unknown and the action is frozen (it may or may not have taken effect); do not retry it."
	if cause != "" {
		reply += " Cause: " + cause
	}
	return reply
}

// detail is what content adds to the status sentence of st in the engine's
// words: the engine words an outcome that did not execute "<sentence>:
// <detail>" (a frozen one "The result is unknown; …: timed out after 2m0s"),
// and the model is told the status once, in the loop's words.
func detail(content string, st approval.Status, text approval.OutcomeText) string {
	rest, ok := strings.CutPrefix(content, text.Text(st))
	switch {
	case ok && rest == "":
		return ""
	case ok && strings.HasPrefix(rest, ":"):
		return strings.TrimSpace(rest[1:])
	}
	return content
}

// resolveAwaiting settles the approvals conv awaits (see
// Conversation.Awaiting): each that has ended gets an update appended to
// the history, so the model knows, and is no longer awaited. known holds
// outcomes already in hand. It reports whether conv changed.
func (l *Loop) resolveAwaiting(ctx context.Context, conv *Conversation, known map[approval.ID]approval.Outcome) bool {
	if len(conv.Awaiting) == 0 {
		return false
	}
	var keep []approval.ID
	changed := false
	for _, id := range conv.Awaiting {
		a, err := l.cfg.Engine.Get(ctx, id)
		o, ok := known[id]
		switch {
		case err == nil && a.State.Terminal() && a.Outcome != nil:
			o, ok = *a.Outcome, true
		case err != nil && approval.KindOf(err) == errkind.NotFound:
			a = nil
			if !ok {
				conv.Messages = append(conv.Messages, Message{Role: RoleSystem, Content: fmt.Sprintf(
					"Update on the earlier approval %s: its record is no longer kept, so its outcome is unknown; do not assume its calls ran.", id)})
				changed = true
				continue
			}
		case err != nil:
			a = nil
		}
		if !ok {
			keep = append(keep, id) // still open, or the store is unreachable
			continue
		}
		conv.Messages = append(conv.Messages, Message{Role: RoleSystem, Content: describeEnded(id, a, o, l.cfg.Engine.Text())})
		changed = true
	}
	if changed {
		conv.Awaiting = keep
	}
	return changed
}

// describeEnded words an update on an approval that ended after its turn:
// the tool replies of that turn were placeholders.
func describeEnded(id approval.ID, a *approval.Approval, o approval.Outcome, text approval.OutcomeText) string {
	var calls []approval.Call
	if a != nil {
		calls = a.Calls
	} else {
		for _, r := range o.Results {
			calls = append(calls, approval.Call{Tool: r.Tool, CallID: r.CallID})
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Update on the earlier approval %s (the tool replies above that said it was waiting are out of date): %s.", id, o.Status)
	if len(calls) == 0 {
		if o.Content != "" {
			b.WriteString(" " + o.Content)
		}
		return b.String()
	}
	for i, co := range callOutcomes(o, calls, true, text) {
		fmt.Fprintf(&b, "\n- %s", calls[i].Tool)
		if calls[i].CallID != "" {
			fmt.Fprintf(&b, " (call %s)", calls[i].CallID)
		}
		fmt.Fprintf(&b, ", %s: %s", co.status, co.reply)
	}
	return b.String()
}

// forHistory returns msg with tool-call arguments that are not valid JSON
// replaced by {} (the tool's reply says what was wrong), so the history can
// be stored and sent back to the model.
func forHistory(msg Message) Message {
	copied := false
	for i, c := range msg.ToolCalls {
		if !json.Valid(c.Args) {
			if !copied {
				msg.ToolCalls = append([]ToolCall(nil), msg.ToolCalls...)
				copied = true
			}
			msg.ToolCalls[i].Args = json.RawMessage(`{}`)
		}
	}
	return msg
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

func dedupe(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
