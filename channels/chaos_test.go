package channels_test

// The chaos test of issue 7: 10,000 approvals across two replicas that share
// one real Redis, decided through the real routers with random double clicks,
// approve / reject races between different allowed users, typed 确认 / 取消
// replies, unauthorized and tampered clicks, and events re-delivered to
// either replica, during the decision and after it.
//
// Each replica is what cmd/bot builds: a redisstore.Store on its own go-redis
// client, an approval.Engine, a channels.Router with an agent.Loop bound to
// it, a chat channel (a fake that hands the card to the test the moment it is
// "sent"), and an audit.Log of its own writing to one shared Redis stream and
// to a JSON-lines file of its own. The tool is a counter in an agent registry
// (the real Dispatcher): it records every run per approval.
//
// What it asserts, per approval and in total:
//   - the tool ran at most once (zero duplicates), and exactly once iff the
//     approval ended executed: total runs == approvals executed;
//   - the approval ended in a terminal state, the one its plan allows
//     (executed when only approvals were valid, rejected when only
//     rejections were);
//   - the Wait on the requesting replica (and, for some, a second Wait on the
//     other replica) returned that final status;
//   - every answer to a click is consistent with the end: no error, a status
//     from the expected set, executed / rejected only when the approval ended
//     so, a re-delivered click after the end gets the final outcome;
//   - its card was shown once and settled exactly once, to the final status;
//   - the audit: both chains verify (audit.Verify) in the shared stream and in
//     each replica's file, the stream and the files hold the same records,
//     and there is exactly one write_request, one confirm and one execute per
//     executed approval, one reject per rejected one, and no other end.
//
// Time: the approvals run on chaosWorkers goroutines (about 41,000
// deliveries for 10,000 approvals). Measured on the 2-core machine of this
// repository with a local Redis, while other test runs shared it: 4-8 s in
// all without -race (the approvals themselves take 3-6.5 s), 22-35 s with
// -race (17-28 s, then about 5 s to drain, read back and verify the audit
// trails); the log line "chaos: ..." gives the figures of each run. A full
// 10,000 under -race therefore fits well inside a minute, so the default
// `go test -race ./...` runs all of them; -short runs 1,000 (about 3 s with
// -race). The whole run is bounded (chaosBudget, or the test's -timeout when
// that is shorter, and chaosStep for each wait): it fails rather than hangs.
//
// Reproducing: the seed drives the plan of every approval (which replica
// requests, who clicks or types what, how often, where each event is
// re-delivered, what comes late); it is printed on failure and can be set
// with HITLBOT_CHAOS_SEED (and the size with HITLBOT_CHAOS_N). The
// interleaving of the concurrent deliveries is up to the scheduler, so a
// seed replays the same plans, not the same timings.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

const (
	chaosN        = 10000           // approvals in a full run
	chaosShortN   = 1000            // approvals under -short
	chaosWorkers  = 48              // approvals in flight at once
	chaosBudget   = 4 * time.Minute // hard bound of the whole run
	chaosStep     = 30 * time.Second
	chaosChan     = "chaos"
	chaosMaxErrs  = 40 // failures reported in full; the rest are counted
	chaosMaxPlans = 5  // plans of failed approvals reported
)

var chaosQuiet = slog.New(slog.DiscardHandler)

// ---- the plan of one approval

// chaosEvent is one thing a person does: a click on a button (an event id)
// or a typed message (a message id).
type chaosEvent struct {
	id     string
	card   bool
	actor  approval.UserID
	verb   approval.Verb
	text   string // typed replies
	tamper bool   // a click carrying another payload hash
}

// chaosDelivery is one delivery of an event to a replica; the platform may
// deliver an event more than once, to either replica.
type chaosDelivery struct {
	ev      int
	replica int
	late    bool // after the approval's outcome reached its waiter
}

type chaosPlan struct {
	requester  int  // the replica that requests and waits
	waitOther  bool // the other replica waits too
	events     []chaosEvent
	deliveries []chaosDelivery
	// canApprove / canReject: some valid approve / reject is delivered
	// before the end.
	canApprove, canReject bool
}

var (
	chaosApproveTexts = []string{"确认", " 确认！", "ok", "同意", "Confirm"}
	chaosRejectTexts  = []string{"取消", "取消。", "cancel", "拒绝", "No"}
)

// newChaosPlan draws the plan of approval i from the seed alone.
func newChaosPlan(seed uint64, i int) chaosPlan {
	rng := rand.New(rand.NewPCG(seed, uint64(i)))
	p := chaosPlan{requester: rng.IntN(2), waitOther: rng.IntN(10) == 0}
	approvers := []approval.UserID{"alice", "bob"}
	k := rng.IntN(2)
	verb := approval.Approve
	if rng.IntN(3) == 0 {
		verb = approval.Reject
	}
	opposite := map[approval.Verb]approval.Verb{approval.Approve: approval.Reject, approval.Reject: approval.Approve}
	// The decision that always comes, by an allowed approver.
	p.action(rng, i, approvers[k], verb, false, false)
	if rng.IntN(2) == 0 { // a race: the other approver decides the other way
		p.action(rng, i, approvers[1-k], opposite[verb], false, false)
	}
	if rng.IntN(5) == 0 { // the requester withdraws (allowed: reject only)
		p.action(rng, i, "carol", approval.Reject, false, false)
	}
	if rng.IntN(8) == 0 { // the requester approves: not in the approver list
		p.action(rng, i, "carol", approval.Approve, false, false)
	}
	if rng.IntN(8) == 0 { // an outsider
		p.action(rng, i, "mallory", []approval.Verb{approval.Approve, approval.Reject}[rng.IntN(2)], false, false)
	}
	if rng.IntN(10) == 0 { // a click whose value was altered
		p.action(rng, i, approvers[rng.IntN(2)], approval.Approve, true, false)
	}
	if rng.IntN(8) == 0 { // a stale card clicked (or a reply typed) after the end
		p.action(rng, i, approvers[rng.IntN(2)], []approval.Verb{approval.Approve, approval.Reject}[rng.IntN(2)], false, true)
	}
	rng.Shuffle(len(p.deliveries), func(a, b int) { p.deliveries[a], p.deliveries[b] = p.deliveries[b], p.deliveries[a] })
	return p
}

// action adds one person's intention: a click (maybe a double click) or a
// typed reply (maybe sent twice), each event delivered once or more.
func (p *chaosPlan) action(rng *rand.Rand, i int, actor approval.UserID, verb approval.Verb, tamper, late bool) {
	card := tamper || rng.IntN(10) < 7
	events := 1
	if card && rng.IntN(10) < 3 || !card && rng.IntN(100) < 15 {
		events = 2 // a double click, or the same reply sent twice
	}
	for range events {
		ev := chaosEvent{card: card, actor: actor, verb: verb, tamper: tamper}
		if card {
			ev.id = fmt.Sprintf("click-%d-%d", i, len(p.events))
		} else {
			ev.id = fmt.Sprintf("msg-%d-%d", i, len(p.events))
			texts := chaosApproveTexts
			if verb == approval.Reject {
				texts = chaosRejectTexts
			}
			ev.text = texts[rng.IntN(len(texts))]
		}
		p.events = append(p.events, ev)
		n := len(p.events) - 1
		p.deliveries = append(p.deliveries, chaosDelivery{ev: n, replica: rng.IntN(2), late: late})
		extra := 0
		switch r := rng.IntN(10); {
		case r < 3:
			extra = 1
		case r < 4:
			extra = 2
		}
		for range extra {
			p.deliveries = append(p.deliveries, chaosDelivery{ev: n, replica: rng.IntN(2), late: late || rng.IntN(2) == 0})
		}
	}
	if tamper || late {
		return
	}
	switch {
	case actor == "alice" || actor == "bob":
		if verb == approval.Approve {
			p.canApprove = true
		} else {
			p.canReject = true
		}
	case actor == "carol" && verb == approval.Reject:
		p.canReject = true
	}
}

func (p *chaosPlan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "requester replica %d, wait other %v;", p.requester, p.waitOther)
	for _, d := range p.deliveries {
		ev := p.events[d.ev]
		kind := "click"
		if !ev.card {
			kind = fmt.Sprintf("typed %q", ev.text)
		}
		fmt.Fprintf(&b, " [%s %s %s %s -> r%d", ev.id, kind, ev.actor, ev.verb, d.replica)
		if ev.tamper {
			b.WriteString(" tampered")
		}
		if d.late {
			b.WriteString(" late")
		}
		b.WriteString("]")
	}
	return b.String()
}

// ---- the parts around the replicas

// chaosTool is the approved tool: a counter of runs per approval (its
// argument n is the approval's index).
type chaosTool struct{ runs []atomic.Int32 }

func (t *chaosTool) Name() string        { return "chaos_op" }
func (t *chaosTool) Description() string { return "counts its runs" }
func (t *chaosTool) Schema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"n": {Type: "integer"}}, Required: []string{"n"}}
}
func (t *chaosTool) Effect(json.RawMessage) approval.Effect { return approval.EffectDestructive }
func (t *chaosTool) Preview(_ context.Context, args json.RawMessage) (string, error) {
	return "count " + string(args), nil
}
func (t *chaosTool) Run(_ context.Context, args json.RawMessage) (agent.Output, error) {
	var a struct {
		N int `json:"n"`
	}
	if err := json.Unmarshal(args, &a); err != nil || a.N < 0 || a.N >= len(t.runs) {
		return agent.Output{}, fmt.Errorf("%w: bad arguments %s", approval.ErrNotRun, args)
	}
	n := t.runs[a.N].Add(1)
	return agent.Output{Content: "run " + strconv.Itoa(int(n))}, nil
}

// chaosModel answers every message that is not a decision (a typed reply
// that came after the end) with a sentence.
type chaosModel struct{}

func (chaosModel) Complete(context.Context, agent.Request) (agent.Response, error) {
	return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "noted"}}, nil
}

// chaosWorld is the chat platform both replicas talk to.
type chaosWorld struct {
	mu      sync.Mutex
	shown   map[string]chan cards.View // chat id → the card shown there
	shows   map[approval.ID]int
	settled map[approval.ID][]cards.View
}

func (w *chaosWorld) expect(chat string) chan cards.View {
	ch := make(chan cards.View, 1)
	w.mu.Lock()
	w.shown[chat] = ch
	w.mu.Unlock()
	return ch
}

// chaosChannel is one replica's connection to the platform.
type chaosChannel struct {
	w       *chaosWorld
	replica int
}

func (c *chaosChannel) Name() string                                  { return chaosChan }
func (c *chaosChannel) Start(context.Context, channels.Handler) error { return nil }
func (c *chaosChannel) Close(context.Context) error                   { return nil }
func (c *chaosChannel) Ready() error                                  { return nil }
func (c *chaosChannel) Send(context.Context, channels.Target, channels.Outgoing) error {
	return nil
}

// ShowApproval hands the card to the test at once: people may click it
// before the engine has recorded it.
func (c *chaosChannel) ShowApproval(_ context.Context, to channels.Target, v cards.View) (approval.CardRef, error) {
	c.w.mu.Lock()
	c.w.shows[v.ApprovalID]++
	ch := c.w.shown[to.ChatID]
	delete(c.w.shown, to.ChatID)
	c.w.mu.Unlock()
	if ch != nil {
		ch <- v
	}
	return approval.CardRef{Channel: chaosChan, ChatID: to.ChatID, MessageID: fmt.Sprintf("card-r%d-%s", c.replica, v.ApprovalID)}, nil
}

func (c *chaosChannel) SettleApproval(_ context.Context, _ approval.CardRef, v cards.View) error {
	c.w.mu.Lock()
	c.w.settled[v.ApprovalID] = append(c.w.settled[v.ApprovalID], v)
	c.w.mu.Unlock()
	return nil
}

// chaosReplica is one bot process.
type chaosReplica struct {
	engine *approval.Engine
	router *channels.Router
	loop   *agent.Loop
	audit  *audit.Log
	file   string
}

func newChaosReplica(t *testing.T, ctx context.Context, k int, opt *redis.Options, prefix, stream string, tool *chaosTool, w *chaosWorld) *chaosReplica {
	t.Helper()
	client := redis.NewClient(opt)
	t.Cleanup(func() { client.Close() })
	store, err := redisstore.New(client, redisstore.Options{Prefix: prefix, Retention: 10 * time.Minute, Logger: chaosQuiet})
	if err != nil {
		t.Fatal(err)
	}
	file := fmt.Sprintf("%s/audit-r%d.jsonl", t.TempDir(), k)
	fs, err := audit.NewFileSink(file, false)
	if err != nil {
		t.Fatal(err)
	}
	log := audit.NewLog(audit.LogConfig{Writer: fmt.Sprintf("replica%d-%s", k, audit.NewWriterID())}, nil, chaosQuiet,
		audit.NewRedisSink(client, stream, 0), fs)
	t.Cleanup(func() { log.Close(context.Background()) }) // no-op after the test's own Close

	reg := agent.NewRegistry()
	if err := reg.Register(tool); err != nil {
		t.Fatal(err)
	}
	pol, err := approval.NewPolicy(approval.DefaultPolicyConfig())
	if err != nil {
		t.Fatal(err)
	}
	// The stack as `bot serve` builds it (channels.Assemble). PollInterval
	// is long: every outcome must reach its waiter through the store's
	// pub/sub (or the requesting engine's early slot), not by a poll.
	as, err := channels.Assemble(channels.Parts{
		Engine: approval.EngineConfig{Store: store, Dispatcher: reg, Audit: log, Logger: chaosQuiet,
			ResultTTL: 10 * time.Minute, PollInterval: time.Hour},
		Loop: agent.LoopConfig{Model: chaosModel{}, Tools: reg, Policy: func() *approval.Policy { return pol },
			History: agent.NewMemoryHistory(), Logger: chaosQuiet, SlowNotice: time.Hour},
		Router: channels.RouterConfig{Store: store, Lang: "zh", Logger: chaosQuiet, MaxAge: -1, DedupTTL: 10 * time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	eng, loop, r := as.Engine, as.Loop, as.Router
	t.Cleanup(func() { loop.Close(context.Background()) })
	if err := as.Registry.Register(&chaosChannel{w: w, replica: k}); err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return &chaosReplica{engine: eng, router: r, loop: loop, audit: log, file: file}
}

// ---- the run

// chaosClick is the answer a router gave to one click delivery.
type chaosClick struct {
	d      chaosDelivery
	status approval.Status
	err    error
}

type chaosResult struct {
	id      approval.ID
	waited  approval.Status
	waitErr error
	other   approval.Status // the other replica's Wait, when planned
	clicks  []chaosClick
}

type chaosRun struct {
	ctx     context.Context
	reps    [2]*chaosReplica
	world   *chaosWorld
	plans   []chaosPlan
	results []chaosResult

	failMu  sync.Mutex
	fails   []string
	nfail   int
	failed  map[int]bool
	failIdx []int // the first approvals that failed, for their plans
}

func (c *chaosRun) fail(i int, format string, args ...any) {
	c.failMu.Lock()
	defer c.failMu.Unlock()
	c.nfail++
	msg := fmt.Sprintf(format, args...)
	if i >= 0 {
		msg = fmt.Sprintf("approval %d (%s): %s", i, c.results[i].id, msg)
		if !c.failed[i] && len(c.failIdx) < chaosMaxPlans {
			c.failed[i] = true
			c.failIdx = append(c.failIdx, i)
		}
	}
	if len(c.fails) < chaosMaxErrs {
		c.fails = append(c.fails, msg)
	}
}

// report says what failed, with the plans of the first approvals that did.
func (c *chaosRun) report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos: %d failure(s), the first %d:\n  %s", c.nfail, len(c.fails), strings.Join(c.fails, "\n  "))
	for _, i := range c.failIdx {
		fmt.Fprintf(&b, "\n  plan of approval %d: %s", i, c.plans[i].String())
	}
	return b.String()
}

func chaosRequest(i int, chat string) approval.Request {
	return approval.Request{
		Session:   approval.SessionKey(chaosChan + ":" + chat),
		Channel:   chaosChan,
		ChatID:    chat,
		Requester: "carol",
		Calls:     []approval.Call{{Tool: "chaos_op", Args: json.RawMessage(`{"n":` + strconv.Itoa(i) + `}`), CallID: "c1"}},
		Verdict: approval.Verdict{NeedsApproval: true, Risk: approval.RiskHigh, Timeout: 10 * time.Minute,
			Approvers: approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"alice", "bob"}}},
		Summary:        "count run " + strconv.Itoa(i),
		IdempotencyKey: "turn-" + strconv.Itoa(i),
	}
}

// one runs approval i: request it, deliver the events meant for the
// decision all at once from the moment its card is shown, wait for its
// outcome, then deliver the late ones.
func (c *chaosRun) one(i int) {
	p := &c.plans[i]
	res := &c.results[i]
	chat := "chat-" + strconv.Itoa(i)
	shown := c.world.expect(chat)
	rq := c.reps[p.requester]

	type reqResult struct {
		a   *approval.Approval
		err error
	}
	reqDone := make(chan reqResult, 1)
	go func() {
		a, err := rq.engine.Request(c.ctx, chaosRequest(i, chat))
		reqDone <- reqResult{a, err}
	}()
	var v cards.View
	select {
	case v = <-shown:
	case r := <-reqDone:
		if r.err != nil {
			c.fail(i, "Request: %v", r.err)
			return
		}
		v = <-shown // shown before Request returns
		reqDone <- r
	case <-time.After(chaosStep):
		c.fail(i, "the card was not shown within %v", chaosStep)
		return
	}
	res.id = v.ApprovalID

	deliver := func(d chaosDelivery, wg *sync.WaitGroup, start <-chan struct{}) {
		defer wg.Done()
		<-start
		ev := p.events[d.ev]
		r := c.reps[d.replica].router
		if !ev.card {
			err := r.HandleMessage(c.ctx, channels.Message{Channel: chaosChan, ChatID: chat, ChatType: "group",
				UserID: ev.actor, UserName: string(ev.actor), MessageID: ev.id, EventID: "ev-" + ev.id, Text: ev.text, CreatedAt: time.Now()})
			if err != nil {
				c.fail(i, "HandleMessage %s: %v", ev.id, err)
			}
			return
		}
		hash := v.PayloadSHA256
		if ev.tamper {
			hash = strings.Repeat("0", 64)
		}
		o, err := r.HandleCardAction(c.ctx, channels.CardAction{Channel: chaosChan, ChatID: chat, MessageID: "card-" + string(v.ApprovalID),
			EventID: ev.id, UserID: ev.actor, ApprovalID: v.ApprovalID, Verb: ev.verb, PayloadSHA256: hash})
		c.failMu.Lock()
		res.clicks = append(res.clicks, chaosClick{d: d, status: o.Status, err: err})
		c.failMu.Unlock()
	}
	burst := func(late bool) {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, d := range p.deliveries {
			if d.late == late {
				wg.Add(1)
				go deliver(d, &wg, start)
			}
		}
		close(start)
		wg.Wait()
	}

	early := make(chan struct{})
	go func() { burst(false); close(early) }()

	var r reqResult
	select {
	case r = <-reqDone:
	case <-time.After(chaosStep):
		c.fail(i, "Request did not return within %v", chaosStep)
		<-early
		return
	}
	if r.err != nil {
		c.fail(i, "Request: %v", r.err)
		<-early
		return
	}
	wctx, cancel := context.WithTimeout(c.ctx, chaosStep)
	defer cancel()
	var otherDone chan struct{}
	if p.waitOther {
		otherDone = make(chan struct{})
		go func() {
			defer close(otherDone)
			o, err := c.reps[1-p.requester].engine.Wait(wctx, r.a.ID)
			if err != nil {
				c.fail(i, "Wait on the other replica: %v", err)
			}
			res.other = o.Status
		}()
	}
	o, err := rq.engine.Wait(wctx, r.a.ID)
	res.waited, res.waitErr = o.Status, err
	<-early
	if otherDone != nil {
		<-otherDone
	}
	burst(true)
}

func chaosEnvInt(t *testing.T, name string, def uint64) uint64 {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, s, err)
	}
	return v
}

// TestChaosTwoReplicas is the chaos test of issue 7 (see the top of the file).
func TestChaosTwoReplicas(t *testing.T) {
	n := chaosN
	if testing.Short() {
		n = chaosShortN
	}
	n = int(chaosEnvInt(t, "HITLBOT_CHAOS_N", uint64(n)))
	seed := chaosEnvInt(t, "HITLBOT_CHAOS_SEED", uint64(time.Now().UnixNano()))
	t.Logf("chaos: seed %d, %d approvals (HITLBOT_CHAOS_SEED=%d HITLBOT_CHAOS_N=%d to replay the plans)", seed, n, seed, n)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("chaos: FAILED with seed %d: rerun with HITLBOT_CHAOS_SEED=%d HITLBOT_CHAOS_N=%d", seed, seed, n)
		}
	})

	budget := chaosBudget
	if dl, ok := t.Deadline(); ok && time.Until(dl)-15*time.Second < budget {
		budget = time.Until(dl) - 15*time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	engCtx, stopEngines := context.WithCancel(context.Background())
	defer stopEngines()

	base, prefix := testredis.Start(t)
	bc, ok := base.(*redis.Client)
	if !ok {
		t.Fatalf("testredis gave a %T, want a *redis.Client", base)
	}
	// Each replica gets a client of its own on the same server, database and
	// credentials (a fresh Options: a copied one shares go-redis internals).
	bo := bc.Options()
	opt := redis.Options{Network: bo.Network, Addr: bo.Addr, Username: bo.Username, Password: bo.Password, DB: bo.DB,
		TLSConfig: bo.TLSConfig, PoolSize: 4 * chaosWorkers, PoolTimeout: chaosStep, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	stream := prefix + "{audit}:stream"

	tool := &chaosTool{runs: make([]atomic.Int32, n)}
	world := &chaosWorld{shown: map[string]chan cards.View{}, shows: map[approval.ID]int{}, settled: map[approval.ID][]cards.View{}}
	c := &chaosRun{ctx: ctx, world: world, plans: make([]chaosPlan, n), results: make([]chaosResult, n), failed: map[int]bool{}}
	for k := range c.reps {
		c.reps[k] = newChaosReplica(t, engCtx, k, &opt, prefix, stream, tool, world)
	}
	deliveries := 0
	for i := range c.plans {
		c.plans[i] = newChaosPlan(seed, i)
		deliveries += len(c.plans[i].deliveries)
	}

	// Run the approvals on chaosWorkers goroutines.
	began := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range chaosWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				c.one(i)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)
	if ctx.Err() != nil {
		c.fail(-1, "the run did not finish within its budget of %v (%d of %d approvals started)", budget, min(int(next.Load()), n), n)
	}

	// Let the typed decisions and agent turns in flight finish.
	for k, r := range c.reps {
		if err := r.router.Close(ctx); err != nil {
			c.fail(-1, "replica %d: router Close: %v", k, err)
		}
		if err := r.loop.Close(ctx); err != nil {
			c.fail(-1, "replica %d: loop Close: %v", k, err)
		}
	}

	// The final state of every approval, read through the other replica's
	// store than the requester's.
	final := make([]*approval.Approval, n)
	var gnext atomic.Int64
	var gwg sync.WaitGroup
	for range chaosWorkers {
		gwg.Add(1)
		go func() {
			defer gwg.Done()
			for {
				i := int(gnext.Add(1)) - 1
				if i >= n {
					return
				}
				if c.results[i].id == "" {
					continue
				}
				a, err := c.reps[1-c.plans[i].requester].engine.Get(context.WithoutCancel(ctx), c.results[i].id)
				if err != nil {
					c.fail(i, "Get: %v", err)
					continue
				}
				final[i] = a
			}
		}()
	}
	gwg.Wait()

	// The audit trails: everything appended is written before they close.
	for k, r := range c.reps {
		cctx, ccancel := context.WithTimeout(context.Background(), chaosStep)
		if err := r.audit.Close(cctx); err != nil {
			c.fail(-1, "replica %d: audit Close: %v", k, err)
		}
		ccancel()
	}
	stopEngines()

	settledAt := time.Since(began)

	counts := c.check(n, tool, final)
	c.checkAudit(base, stream, final)

	t.Logf("chaos: %d approvals, %d deliveries in %v (%.0f approvals/s): %v; tool runs %d; drained and read back at %v, checked at %v",
		n, deliveries, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), counts, chaosRuns(tool),
		settledAt.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	if c.nfail > 0 {
		t.Error(c.report())
	}
}

func chaosRuns(tool *chaosTool) int64 {
	var s int64
	for i := range tool.runs {
		s += int64(tool.runs[i].Load())
	}
	return s
}

// check asserts what each approval's end must be; it returns how many ended
// in each state.
func (c *chaosRun) check(n int, tool *chaosTool, final []*approval.Approval) map[approval.State]int {
	counts := map[approval.State]int{}
	executed := 0
	c.world.mu.Lock()
	defer c.world.mu.Unlock()
	for i := range n {
		p, res, a := &c.plans[i], &c.results[i], final[i]
		runs := tool.runs[i].Load()
		if runs > 1 {
			c.fail(i, "the tool ran %d times", runs)
		}
		if a == nil {
			if runs > 0 {
				c.fail(i, "the tool ran %d times for an approval that cannot be read", runs)
			}
			continue
		}
		counts[a.State]++
		if !a.State.Terminal() || a.Outcome == nil {
			c.fail(i, "ended in state %s (outcome %v), not a terminal state", a.State, a.Outcome)
			continue
		}
		st := a.Outcome.Status
		switch a.State {
		case approval.StateExecuted:
			executed++
			if runs != 1 {
				c.fail(i, "executed, but the tool ran %d times", runs)
			}
			if !p.canApprove || st != approval.StatusExecuted {
				c.fail(i, "executed (status %s) though no valid approval was planned", st)
			}
		case approval.StateRejected:
			if runs != 0 {
				c.fail(i, "rejected, but the tool ran %d times", runs)
			}
			if !p.canReject || st != approval.StatusRejected {
				c.fail(i, "rejected (status %s) though no valid rejection was planned", st)
			}
		default:
			c.fail(i, "ended %s (status %s); only executed or rejected can happen here", a.State, st)
		}
		if res.waitErr != nil || res.waited != st {
			c.fail(i, "the Wait on the requesting replica returned %q, %v; the approval ended %s", res.waited, res.waitErr, st)
		}
		if p.waitOther && res.other != st {
			c.fail(i, "the Wait on the other replica returned %q; the approval ended %s", res.other, st)
		}
		// Clicks: an event delivered before the end may win, lose
		// (already_decided) or be refused; a late delivery of an event that
		// had come before gets the final outcome; a fresh late click is
		// already decided (or, re-delivered at once, the final outcome).
		early := map[int]bool{}
		for _, d := range p.deliveries {
			if !d.late {
				early[d.ev] = true
			}
		}
		for _, cl := range res.clicks {
			ev := p.events[cl.d.ev]
			switch {
			case cl.err != nil:
				c.fail(i, "click %s on replica %d: error %v", ev.id, cl.d.replica, cl.err)
			case cl.status == approval.StatusExecuted || cl.status == approval.StatusRejected:
				if cl.status != st {
					c.fail(i, "click %s on replica %d answered %s; the approval ended %s", ev.id, cl.d.replica, cl.status, st)
				}
			case cl.d.late && early[cl.d.ev]:
				c.fail(i, "late re-delivery of click %s on replica %d answered %s, want the final %s", ev.id, cl.d.replica, cl.status, st)
			case cl.status == approval.StatusAlreadyDecided:
			case cl.status == approval.StatusUnauthorized:
				if (ev.actor == "alice" || ev.actor == "bob" || ev.actor == "carol" && ev.verb == approval.Reject) || cl.d.late {
					c.fail(i, "click %s by %s (%s) answered unauthorized", ev.id, ev.actor, ev.verb)
				}
			case cl.status == approval.StatusTampered:
				if !ev.tamper || cl.d.late {
					c.fail(i, "click %s answered tampered", ev.id)
				}
			default:
				c.fail(i, "click %s on replica %d answered %q", ev.id, cl.d.replica, cl.status)
			}
		}
		// The card: shown once, settled once, to the final status.
		if got := c.world.shows[a.ID]; got != 1 {
			c.fail(i, "the card was shown %d times", got)
		}
		settled := c.world.settled[a.ID]
		if len(settled) != 1 {
			c.fail(i, "the card was settled %d times, want once", len(settled))
		}
		for _, v := range settled {
			if !v.Final || v.Status != st {
				c.fail(i, "the card was settled to final=%v status %s; the approval ended %s", v.Final, v.Status, st)
			}
		}
	}
	if total := chaosRuns(tool); total != int64(executed) {
		c.fail(-1, "the tool ran %d times in all; %d approvals ended executed", total, executed)
	}
	return counts
}

// checkAudit verifies both replicas' chains in the shared stream and in
// their files, and counts the records of each approval.
func (c *chaosRun) checkAudit(client redis.UniversalClient, stream string, final []*approval.Approval) {
	ctx, cancel := context.WithTimeout(context.Background(), chaosStep)
	defer cancel()
	recs, err := audit.ReadStream(ctx, client, stream, 0)
	if err != nil {
		c.fail(-1, "reading the audit stream: %v", err)
		return
	}
	if err := audit.Verify(recs); err != nil {
		c.fail(-1, "audit stream: Verify: %v", err)
	}
	recs = audit.Dedupe(recs)
	byWriter := map[string][]audit.Record{}
	for _, r := range recs {
		byWriter[r.Writer] = append(byWriter[r.Writer], r)
	}
	if len(byWriter) != len(c.reps) {
		c.fail(-1, "the audit stream holds %d writers, want %d", len(byWriter), len(c.reps))
	}
	for k, rep := range c.reps {
		frecs, err := audit.ReadFile(rep.file)
		if err != nil {
			c.fail(-1, "replica %d: reading the audit file: %v", k, err)
			continue
		}
		if err := audit.Verify(frecs); err != nil {
			c.fail(-1, "replica %d: audit file: Verify: %v", k, err)
		}
		frecs = audit.Dedupe(frecs)
		w := rep.audit.Writer()
		seq, head := rep.audit.Head()
		srecs := byWriter[w]
		switch {
		case uint64(len(frecs)) != seq || uint64(len(srecs)) != seq:
			c.fail(-1, "replica %d: the file holds %d records, the stream %d, the chain's head is seq %d", k, len(frecs), len(srecs), seq)
		case seq > 0 && (frecs[seq-1].Hash != head || srecs[seq-1].Hash != head):
			c.fail(-1, "replica %d: the newest record in the file or the stream is not the chain's head", k)
		default:
			for j := range frecs {
				if frecs[j].Hash != srecs[j].Hash {
					c.fail(-1, "replica %d: record seq %d differs between the file and the stream", k, frecs[j].Seq)
					break
				}
			}
		}
	}

	index := map[string]int{}
	for i, a := range final {
		if a != nil {
			index[string(a.ID)] = i
		}
	}
	perApproval := make([]map[audit.Event]int, len(final))
	for _, r := range recs {
		i, ok := index[r.ApprovalID]
		if !ok {
			c.fail(-1, "audit record %s (writer %s, seq %d) names an unknown approval %q", r.Event, r.Writer, r.Seq, r.ApprovalID)
			continue
		}
		if perApproval[i] == nil {
			perApproval[i] = map[audit.Event]int{}
		}
		perApproval[i][r.Event]++
		switch r.Event {
		case audit.EventUnauthorized:
			if r.Actor != "mallory" && r.Actor != "carol" {
				c.fail(i, "audit: unauthorized record for %s", r.Actor)
			}
		case audit.EventTampered:
			if !c.hasTamper(i) {
				c.fail(i, "audit: tampered record without a tampered click")
			}
		}
	}
	for i, a := range final {
		if a == nil {
			continue
		}
		got := perApproval[i]
		want := map[audit.Event]int{audit.EventWriteRequest: 1}
		switch a.State {
		case approval.StateExecuted:
			want[audit.EventConfirm], want[audit.EventExecute] = 1, 1
		case approval.StateRejected:
			want[audit.EventReject] = 1
		}
		for _, ev := range []audit.Event{audit.EventWriteRequest, audit.EventConfirm, audit.EventReject, audit.EventExecute,
			audit.EventExecuteFailed, audit.EventExecuteUnknown, audit.EventReplay, audit.EventExpire, audit.EventSupersede, audit.EventCancel} {
			if got[ev] != want[ev] {
				c.fail(i, "audit: %d %s record(s), want %d (state %s; all: %v)", got[ev], ev, want[ev], a.State, sortedEvents(got))
			}
		}
	}
}

func (c *chaosRun) hasTamper(i int) bool {
	for _, ev := range c.plans[i].events {
		if ev.tamper {
			return true
		}
	}
	return false
}

func sortedEvents(m map[audit.Event]int) string {
	var s []string
	for ev, n := range m {
		s = append(s, fmt.Sprintf("%s=%d", ev, n))
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}
