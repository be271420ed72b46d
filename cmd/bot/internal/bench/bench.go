// Package bench drives the real approval engine, agent loop and router
// under load and reports what a full approval round trip costs: `bot bench`.
//
// Two instances (replicas) share one store — the memory store, or a Redis
// named by a URL with one client per instance — so every decision crosses
// from one replica to the other:
//
//   - mode engine: N approvals at concurrency C; each is requested on
//     instance A, waited on by A, decided on instance B; a trivial tool runs.
//   - mode agent: N conversations at concurrency C through the real agent
//     loop with a scripted model (the first turn asks for one tool call that
//     needs approval, the second answers "done"); the decision arrives
//     through instance B's router as a card action; the tool is a counter
//     that must run exactly N times. The two instances share one history and
//     one session lock (in process), as replicas share them in Redis.
//   - mode resume: the same conversations, but instance A's loop is closed
//     once every card is out (its waiters are gone, as when a replica dies),
//     and each decision on B resumes its turn there: the figures are from
//     the click to the resumed turn's answer in the chat.
//
// Each run prints one JSON object: round trips per second, p50 and p99 of
// the decision-to-wake step, Redis round trips per approval (counted with a
// go-redis hook: a pipeline is one, a new connection's handshake none), Redis and process bytes per pending approval (with
// Pending approvals held open while measured: process bytes count the heap
// and the stack of the goroutine blocked in Wait, heap bytes the heap
// alone), and the tool's run count next to N.
//
// With Hold, that many approvals are kept pending (each with a blocked
// Wait on instance A, ten to a chat) while the measured run goes on, so
// the figures show whether the cost of one approval grows with the load
// of the store; the run fails if any of them is no longer pending at its
// end.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
)

// Config is one benchmark run.
type Config struct {
	// Mode is "engine", "agent", "resume" or "mcp".
	Mode string
	// RedisURL names the Redis to use; empty uses the memory store.
	RedisURL string
	// N is the number of approvals (engine) or conversations (agent).
	N int
	// C is how many run at once.
	C int
	// Pending is how many approvals are held open while memory is measured
	// (0 skips the measurement).
	Pending int
	// Hold is how many approvals are kept pending, each with a blocked
	// Wait, spread over Hold/10 chats, during the measured run (0: none).
	Hold int
	// NoAutoPipeline sends each store command in a round trip of its own
	// (redisstore.Options.NoAutoPipeline; bot serve's
	// store.redis.auto_pipeline: false).
	NoAutoPipeline bool
	// ByCall itemises the Redis round trips per approval by the call
	// that sent each (Result.RedisRoundTripsByCall); finding the caller
	// costs a stack walk per round trip, so it is off unless asked for. It
	// sends each command alone (NoAutoPipeline), so that each is named.
	ByCall bool
}

// Result is what a run prints.
type Result struct {
	Mode             string  `json:"mode"`
	Store            string  `json:"store"`
	N                int     `json:"n"`
	C                int     `json:"c"`
	ToolRuns         int64   `json:"tool_runs"`
	Seconds          float64 `json:"seconds"`
	RoundTripsPerSec float64 `json:"round_trips_per_sec"`
	P50Ms            float64 `json:"p50_ms"`
	P99Ms            float64 `json:"p99_ms"`
	// The figures below are always printed: 0 when not measured (no
	// Redis with the memory store; -pending 0 for the memory figures).
	// RedisRoundTripsPerApproval counts what went over the wire: a command
	// sent alone, a pipeline, and a batch of the auto-pipeliner (which
	// carries commands of several conversations) each count one.
	RedisRoundTripsPerApproval float64 `json:"redis_round_trips_per_approval"`
	// RedisRoundTripsByCall (Config.ByCall) splits the round trips per
	// approval by who sent them: "<store method> <- <engine or loop
	// function>" (e.g. "Seen <- Engine.ClaimResume").
	RedisRoundTripsByCall map[string]float64 `json:"redis_round_trips_by_call,omitempty"`
	// ProcessCPUMicrosPerApproval and RedisCPUMicrosPerApproval are the
	// CPU time (user + system) this process and the Redis server spent
	// per approval while the round trips ran; on a machine where both
	// share the cores, their sum bounds round_trips_per_sec. The Redis
	// figure is the whole server's (INFO cpu): run against a Redis
	// nothing else uses.
	ProcessCPUMicrosPerApproval float64 `json:"process_cpu_us_per_approval"`
	RedisCPUMicrosPerApproval   float64 `json:"redis_cpu_us_per_approval"`
	// ProcessAllocsPerApproval and ProcessAllocBytesPerApproval are the
	// heap allocations this process made per approval while the round
	// trips ran (runtime.MemStats Mallocs and TotalAlloc): unlike the CPU
	// figures, other load on the machine does not move them.
	ProcessAllocsPerApproval     float64 `json:"process_allocs_per_approval"`
	ProcessAllocBytesPerApproval float64 `json:"process_alloc_bytes_per_approval"`
	Hold                         int     `json:"hold"`
	Pending                      int     `json:"pending"`
	RedisBytesPerPending         float64 `json:"redis_bytes_per_pending"`
	ProcessBytesPerPending       float64 `json:"process_bytes_per_pending"`
	ProcessHeapBytesPerPending   float64 `json:"process_heap_bytes_per_pending"`
	Errors                       int64   `json:"errors"`
}

// counter is a go-redis hook counting round trips: one per command sent
// alone, one per pipeline. The handshake of a connection the pool dials
// (HELLO, CLIENT SETINFO, CLIENT MAINT_NOTIFICATIONS) is not counted: it
// is paid once per connection, not per approval, and how many connections
// a run dials depends on its concurrency and the scheduler, so a count
// with it is not a property of the approval path.
type counter struct {
	n atomic.Int64
	// byCall, when not nil, counts the round trips by caller (callerOf).
	mu     sync.Mutex
	byCall map[string]int64
}

// add counts one round trip.
func (c *counter) add() {
	if c.byCall == nil {
		c.n.Add(1)
		return
	}
	who := callerOf()
	c.mu.Lock()
	c.n.Add(1)
	c.byCall[who]++
	c.mu.Unlock()
}

// read returns the count so far and, itemised, the counts by caller,
// which add up to it.
func (c *counter) read() tally {
	c.mu.Lock()
	defer c.mu.Unlock()
	return tally{n: c.n.Load(), byCall: maps.Clone(c.byCall)}
}

// callerOf names the caller of a round trip from the stack: the Store
// method that sent it, the first function above it outside the store
// (of the engine, mostly) and the first outside the approval package
// too (the agent loop's, the router's), when that is another
// ("Seen <- approval.Engine.ClaimResume <- agent.Loop.claim").
func callerOf() string {
	const store, engine = "github.com/hitlbot/hitlbot/approval/redisstore", "github.com/hitlbot/hitlbot/approval"
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	var who []string
	for more := true; more && len(who) < 3; {
		var f runtime.Frame
		f, more = frames.Next()
		pkg, fn := splitFunc(f.Function)
		if i := strings.Index(fn, ".func"); i > 0 {
			fn = fn[:i] // a closure counts as its function
		}
		fn = strings.NewReplacer("(*", "", ")", "").Replace(fn)
		switch {
		case len(who) == 0:
			if pkg == store && strings.HasPrefix(fn, "Store.") {
				who = append(who, strings.TrimPrefix(fn, "Store."))
			}
		case pkg == store || !strings.HasPrefix(pkg, "github.com/hitlbot/"):
		case len(who) == 1:
			who = append(who, path.Base(pkg)+"."+fn)
		case pkg != engine:
			who = append(who, path.Base(pkg)+"."+fn)
		}
	}
	if len(who) == 0 {
		return "?"
	}
	return strings.Join(who, " <- ")
}

// splitFunc splits a runtime function name into its package path and
// the rest ("(*Store).Seen", "(*Loop).claim.func1").
func splitFunc(full string) (pkg, fn string) {
	slash := strings.LastIndex(full, "/")
	dot := strings.Index(full[slash+1:], ".")
	if dot < 0 {
		return full, ""
	}
	return full[:slash+1+dot], full[slash+2+dot:]
}

// handshake reports whether cmd is part of go-redis's connection
// handshake; the store never sends HELLO or CLIENT itself.
func handshake(cmd redis.Cmder) bool {
	n := cmd.Name()
	return n == "hello" || n == "client"
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !handshake(cmd) {
			c.add()
		}
		return next(ctx, cmd)
	}
}
func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if slices.ContainsFunc(cmds, func(c redis.Cmder) bool { return !handshake(c) }) {
			c.add()
		}
		return next(ctx, cmds)
	}
}

// nopAudit drops audit records: the benchmark measures the approval path,
// and the audit trail writes asynchronously in batches anyway.
type nopAudit struct{}

func (nopAudit) Append(audit.Record) {}

// counterTool counts its runs; it is the trivial tool of both modes.
type counterTool struct{ runs atomic.Int64 }

func (t *counterTool) Dispatch(context.Context, approval.Call) (approval.Result, error) {
	t.runs.Add(1)
	return approval.Result{Content: "ok"}, nil
}

func (t *counterTool) Name() string        { return "bench_op" }
func (t *counterTool) Description() string { return "a counter" }

// counterSchema is counterTool's schema, built once as every tool of the
// bot keeps its own (the agent loop asks for it on every round).
var counterSchema = &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"n": {Type: "integer"}}}

func (t *counterTool) Schema() *jsonschema.Schema             { return counterSchema }
func (t *counterTool) Effect(json.RawMessage) approval.Effect { return approval.EffectDestructive }
func (t *counterTool) Preview(context.Context, json.RawMessage) (string, error) {
	return "increment the counter", nil
}
func (t *counterTool) Run(context.Context, json.RawMessage) (agent.Output, error) {
	t.runs.Add(1)
	return agent.Output{Content: "ok"}, nil
}

// stores returns two stores sharing one truth and, for Redis, the round
// trip counter and a client for INFO.
func stores(ctx context.Context, cfg Config, log *slog.Logger) (a, b approval.Store, cnt *counter, info *server, closeAll func(), err error) {
	if cfg.RedisURL == "" {
		s := memstore.New(memstore.Options{})
		return s, s, nil, nil, func() {}, nil
	}
	opt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, nil, nil, nil, nil, errors.New("-redis: not a redis:// URL")
	}
	opt.PoolSize = max(2*cfg.C, 16)
	cnt = &counter{}
	if cfg.ByCall {
		cnt.byCall = map[string]int64{}
	}
	prefix := fmt.Sprintf("hitlbench:%d:", time.Now().UnixNano())
	var clients []*redis.Client
	mk := func() (approval.Store, error) {
		c := redis.NewClient(opt)
		c.AddHook(cnt)
		clients = append(clients, c)
		// Itemised, each command is sent alone: a batch of the
		// auto-pipeliner is sent by its goroutine, not by the caller.
		return redisstore.New(c, redisstore.Options{Prefix: prefix, Logger: log, NoAutoPipeline: cfg.NoAutoPipeline || cfg.ByCall})
	}
	if a, err = mk(); err == nil {
		b, err = mk()
	}
	info = &server{UniversalClient: redis.NewClient(opt), prefix: prefix}
	closeAll = func() {
		// Remove what the run wrote (everything under its own prefix).
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		iter := info.Scan(cctx, 0, prefix+"*", 1000).Iterator()
		var batch []string
		for iter.Next(cctx) {
			if batch = append(batch, iter.Val()); len(batch) == 1000 {
				info.Unlink(cctx, batch...)
				batch = batch[:0]
			}
		}
		if len(batch) > 0 {
			info.Unlink(cctx, batch...)
		}
		for _, c := range clients {
			c.Close()
		}
		info.Close()
	}
	if err == nil {
		err = info.Ping(ctx).Err()
	}
	if err != nil {
		closeAll()
		return nil, nil, nil, nil, nil, fmt.Errorf("redis: %w", err)
	}
	return a, b, cnt, info, closeAll, nil
}

// Run runs one benchmark and writes its JSON result to out.
func Run(ctx context.Context, cfg Config, out io.Writer) (Result, error) {
	if cfg.N <= 0 || cfg.C <= 0 {
		return Result{}, errors.New("-n and -c must be positive")
	}
	if cfg.Hold < 0 || cfg.Pending < 0 {
		return Result{}, errors.New("-hold and -pending must not be negative")
	}
	log := slog.New(slog.DiscardHandler)
	sa, sb, cnt, info, closeAll, err := stores(ctx, cfg, log)
	if err != nil {
		return Result{}, err
	}
	defer closeAll()
	res := Result{Mode: cfg.Mode, Store: "memory", N: cfg.N, C: cfg.C, Hold: cfg.Hold}
	if cfg.RedisURL != "" {
		res.Store = "redis"
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	switch cfg.Mode {
	case "engine":
		err = runEngine(ctx, cfg, sa, sb, cnt, info, log, &res)
	case "agent":
		err = runAgent(ctx, cfg, sa, sb, cnt, info, log, &res)
	case "resume":
		err = runResume(ctx, cfg, sa, sb, cnt, info, log, &res)
	case "mcp":
		err = runMCP(ctx, cfg, sa, sb, cnt, info, log, &res)
	default:
		err = fmt.Errorf("-mode %q: want engine, agent, resume or mcp", cfg.Mode)
	}
	if err != nil {
		return res, err
	}
	enc := json.NewEncoder(out)
	return res, enc.Encode(res)
}

func engines(ctx context.Context, sa, sb approval.Store, n approval.Notifier, d approval.Dispatcher, log *slog.Logger) (*approval.Engine, *approval.Engine, error) {
	var es []*approval.Engine
	for _, s := range []approval.Store{sa, sb} {
		e, err := approval.NewEngine(approval.EngineConfig{Store: s, Notifier: n, Dispatcher: d, Audit: nopAudit{}, Logger: log})
		if err != nil {
			return nil, nil, err
		}
		if err := e.Start(ctx); err != nil {
			return nil, nil, err
		}
		es = append(es, e)
	}
	return es[0], es[1], nil
}

func benchRequest(i int) approval.Request {
	return approval.Request{
		Session:   approval.SessionKey("bench:chat-" + strconv.Itoa(i)),
		Channel:   "bench",
		ChatID:    "chat-" + strconv.Itoa(i),
		Requester: "bench",
		Calls:     []approval.Call{{Tool: "bench_op", Args: json.RawMessage(`{"n":` + strconv.Itoa(i) + `}`), CallID: "c1"}},
		Verdict:   approval.Verdict{NeedsApproval: true, Risk: approval.RiskHigh, Timeout: 5 * time.Minute, Approvers: approval.ApproverRule{Mode: approval.ApproverRequester}},
		Summary:   "increment the counter",
	}
}

// parallel runs fn(i) for i in [0, n) on c goroutines.
func parallel(n, c int, fn func(i int)) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

func percentiles(d []time.Duration, res *Result) {
	if len(d) == 0 {
		return
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	at := func(p float64) float64 {
		return float64(d[min(len(d)-1, int(p*float64(len(d))))].Microseconds()) / 1000
	}
	res.P50Ms, res.P99Ms = at(0.50), at(0.99)
}

func runEngine(ctx context.Context, cfg Config, sa, sb approval.Store, cnt *counter, info *server, log *slog.Logger, res *Result) error {
	tool := &counterTool{}
	ea, eb, err := engines(ctx, sa, sb, approval.NopNotifier{}, tool, log)
	if err != nil {
		return err
	}
	held, err := hold(ctx, cfg, ea)
	if err != nil {
		return err
	}
	defer held.release()
	lat := make([]time.Duration, cfg.N)
	var errs atomic.Int64
	rt0 := count(cnt)
	cpu0 := cpuNow(ctx, info)
	elapsed := parallel(cfg.N, cfg.C, func(i int) {
		a, err := ea.Request(ctx, benchRequest(i))
		if err != nil {
			errs.Add(1)
			return
		}
		woke := make(chan time.Time, 1)
		go func() {
			o, err := ea.Wait(ctx, a.ID)
			if err != nil || o.Status != approval.StatusExecuted {
				errs.Add(1)
			}
			woke <- time.Now()
		}()
		t0 := time.Now()
		if _, err := eb.Decide(ctx, a.ID, approval.Decision{Verb: approval.Approve, Actor: "bench", Source: approval.SourceCard, PayloadSHA256: a.PayloadSHA256}); err != nil {
			errs.Add(1)
		}
		lat[i] = (<-woke).Sub(t0)
	})
	finish(res, cfg, tool.runs.Load(), errs.Load(), elapsed, lat, cnt, rt0)
	cpuSince(ctx, info, cpu0, cfg.N, res)
	if err := held.check(ctx); err != nil {
		return err
	}
	if cfg.Pending > 0 {
		return measurePending(ctx, cfg, ea, info, res)
	}
	return nil
}

// tally is a reading of a counter: the round trips so far, and by
// caller when itemised.
type tally struct {
	n      int64
	byCall map[string]int64
}

func count(c *counter) tally {
	if c == nil {
		return tally{}
	}
	return c.read()
}

func finish(res *Result, cfg Config, runs, errs int64, elapsed time.Duration, lat []time.Duration, cnt *counter, rt0 tally) {
	res.ToolRuns, res.Errors = runs, errs
	res.Seconds = elapsed.Seconds()
	res.RoundTripsPerSec = float64(cfg.N) / elapsed.Seconds()
	percentiles(lat, res)
	if cnt == nil {
		return
	}
	rt1 := count(cnt)
	res.RedisRoundTripsPerApproval = float64(rt1.n-rt0.n) / float64(cfg.N)
	for who, n := range rt1.byCall {
		if d := n - rt0.byCall[who]; d > 0 {
			if res.RedisRoundTripsByCall == nil {
				res.RedisRoundTripsByCall = map[string]float64{}
			}
			res.RedisRoundTripsByCall[who] = float64(d) / float64(cfg.N)
		}
	}
}

// cpuTimes is a reading of the CPU time spent so far by this process and
// by the Redis server (negative when unknown).
type cpuTimes struct {
	process time.Duration
	redis   float64 // seconds
	// mallocs and bytes are the heap allocations of the process so far.
	mallocs, bytes uint64
}

func cpuNow(ctx context.Context, info *server) cpuTimes {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t := cpuTimes{process: processCPU(), redis: -1, mallocs: ms.Mallocs, bytes: ms.TotalAlloc}
	if info == nil {
		return t
	}
	s, err := info.Info(ctx, "cpu").Result()
	if err != nil {
		return t
	}
	var sum float64
	var seen int
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return t
			}
			sum += f
			seen++
		}
	}
	if seen == 2 {
		t.redis = sum
	}
	return t
}

// cpuSince fills the CPU figures of res from the reading t0 taken before
// n approvals ran.
func cpuSince(ctx context.Context, info *server, t0 cpuTimes, n int, res *Result) {
	t1 := cpuNow(ctx, info)
	if t0.process >= 0 && t1.process >= 0 {
		res.ProcessCPUMicrosPerApproval = float64((t1.process - t0.process).Microseconds()) / float64(n)
	}
	res.ProcessAllocsPerApproval = float64(t1.mallocs-t0.mallocs) / float64(n)
	res.ProcessAllocBytesPerApproval = float64(t1.bytes-t0.bytes) / float64(n)
	if t0.redis >= 0 && t1.redis >= 0 {
		res.RedisCPUMicrosPerApproval = (t1.redis - t0.redis) * 1e6 / float64(n)
	}
}

// holding is the approvals -hold keeps pending during a run.
type holding struct {
	e       *approval.Engine
	ids     []approval.ID
	release func()
}

// hold makes cfg.Hold approvals pending on e, in cfg.Hold/10 chats of
// their own (each in a session of its own, so none supersedes another),
// each with a Wait blocked on it until release. They expire in an hour,
// long after any run.
func hold(ctx context.Context, cfg Config, e *approval.Engine) (*holding, error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	h := &holding{e: e, ids: make([]approval.ID, cfg.Hold), release: func() { cancel(); wg.Wait() }}
	if cfg.Hold == 0 {
		return h, nil
	}
	chats := max(cfg.Hold/10, 1)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	var failed atomic.Value
	var returned atomic.Int64 // waits that returned before release
	parallel(cfg.Hold, cfg.C, func(i int) {
		r := benchRequest(i)
		r.Session = approval.SessionKey("bench:held-" + run + "-" + strconv.Itoa(i))
		r.ChatID = "held-" + run + "-" + strconv.Itoa(i%chats)
		r.Verdict.Timeout = time.Hour
		a, err := e.Request(ctx, r)
		if err != nil {
			failed.CompareAndSwap(nil, err)
			return
		}
		h.ids[i] = a.ID
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = e.Wait(ctx, a.ID)
			if ctx.Err() == nil {
				returned.Add(1)
			}
		}()
	})
	for err, _ := failed.Load().(error); err == nil && e.WaitingCount() < cfg.Hold; err, _ = failed.Load().(error) {
		if returned.Load() > 0 {
			failed.CompareAndSwap(nil, errors.New("a wait on a held approval returned"))
		}
		time.Sleep(time.Millisecond)
	}
	if err, _ := failed.Load().(error); err != nil {
		h.release()
		return nil, fmt.Errorf("-hold: %w", err)
	}
	return h, nil
}

// check reports an error unless every held approval is still pending (it
// held for the whole run) and waited on.
func (h *holding) check(ctx context.Context) error {
	if n := h.e.WaitingCount(); n < len(h.ids) {
		return fmt.Errorf("-hold: %d waits blocked at the end of the run, want at least %d", n, len(h.ids))
	}
	for _, id := range h.ids {
		a, err := h.e.Get(ctx, id)
		if err != nil {
			return fmt.Errorf("-hold: %w", err)
		}
		if a.State != approval.StatePending {
			return fmt.Errorf("-hold: approval %s is %s at the end of the run, want pending", id, a.State)
		}
	}
	return nil
}

// measurePending holds cfg.Pending approvals open, each with a blocked
// Wait, and reports what one costs in the process and in Redis.
func measurePending(ctx context.Context, cfg Config, e *approval.Engine, info *server, res *Result) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r0, err := usedMemory(ctx, info)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	started := make(chan struct{}, cfg.Pending)
	for i := range cfg.Pending {
		a, err := e.Request(ctx, benchRequest(cfg.N+i))
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			started <- struct{}{}
			_, _ = e.Wait(ctx, a.ID)
		}()
	}
	for range cfg.Pending {
		<-started
	}
	for e.WaitingCount() < cfg.Pending {
		time.Sleep(time.Millisecond)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	r1, err := usedMemory(ctx, info)
	if err != nil {
		return err
	}
	res.Pending = cfg.Pending
	proc := float64(after.HeapAlloc) - float64(before.HeapAlloc) + float64(after.StackInuse) - float64(before.StackInuse)
	res.ProcessBytesPerPending = proc / float64(cfg.Pending)
	res.ProcessHeapBytesPerPending = (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(cfg.Pending)
	if info != nil {
		res.RedisBytesPerPending = float64(r1-r0) / float64(cfg.Pending)
	}
	cancel()
	wg.Wait()
	return nil
}

// server is the Redis the bench runs against: a client of its own (for
// INFO, MEMORY USAGE and the clean-up) and the key prefix of this run.
type server struct {
	redis.UniversalClient
	prefix string
}

// usedMemory returns what the run's keys take in Redis: the sum of MEMORY
// USAGE (SAMPLES 0: every element counted) over the keys under the run's
// prefix. Unlike INFO's used_memory it is not moved by the client buffers
// Redis grows and frees as the bench's connections come and go, which
// would swamp a few hundred bytes per approval.
func usedMemory(ctx context.Context, info *server) (int64, error) {
	if info == nil {
		return 0, nil
	}
	var total int64
	iter := info.Scan(ctx, 0, info.prefix+"*", 1000).Iterator()
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		cmds, err := info.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range batch {
				p.MemoryUsage(ctx, k, 0)
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		for _, c := range cmds {
			if n, err := c.(*redis.IntCmd).Result(); err == nil {
				total += n
			}
		}
		batch = batch[:0]
		return nil
	}
	for iter.Next(ctx) {
		if batch = append(batch, iter.Val()); len(batch) == 1000 {
			if err := flush(); err != nil {
				return 0, err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return 0, err
	}
	if err := flush(); err != nil {
		return 0, err
	}
	return total, nil
}

// benchChannel is the chat platform of the agent mode: it hands every
// approval card and every answer to the driver.
type benchChannel struct {
	mu      sync.Mutex
	shown   map[string]chan cards.View // chat id → the approval card shown there
	answers map[string]chan string     // chat id → the answer said there
}

func newBenchChannel() *benchChannel {
	return &benchChannel{shown: map[string]chan cards.View{}, answers: map[string]chan string{}}
}

func (c *benchChannel) expect(chat string) (<-chan cards.View, <-chan string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, a := make(chan cards.View, 1), make(chan string, 4)
	c.shown[chat], c.answers[chat] = s, a
	return s, a
}

func (c *benchChannel) Name() string                                  { return "bench" }
func (c *benchChannel) Start(context.Context, channels.Handler) error { return nil }
func (c *benchChannel) Close(context.Context) error                   { return nil }
func (c *benchChannel) Ready() error                                  { return nil }
func (c *benchChannel) Send(_ context.Context, to channels.Target, out channels.Outgoing) error {
	if out.Kind != channels.OutAnswer {
		return nil
	}
	c.mu.Lock()
	ch := c.answers[to.ChatID]
	c.mu.Unlock()
	if ch != nil {
		ch <- out.Text
	}
	return nil
}
func (c *benchChannel) ShowApproval(_ context.Context, to channels.Target, v cards.View) (approval.CardRef, error) {
	c.mu.Lock()
	ch := c.shown[to.ChatID]
	c.mu.Unlock()
	if ch != nil {
		ch <- v // the card carries the id and the payload hash, as a button does
	}
	return approval.CardRef{Channel: "bench", ChatID: to.ChatID, MessageID: string(v.ApprovalID)}, nil
}
func (c *benchChannel) SettleApproval(context.Context, approval.CardRef, cards.View) error {
	return nil
}

// benchTool is the tool the agent modes call: the counter (bench_op), or
// an MCP server's tool (-mode mcp).
type benchTool struct {
	tool agent.Tool
	args json.RawMessage
	// runs reports how many times the tool ran.
	runs func() int64
}

func counterBenchTool() (benchTool, *counterTool) {
	t := &counterTool{}
	return benchTool{tool: t, args: json.RawMessage(`{"n":1}`), runs: t.runs.Load}, t
}

// scriptedModel asks for its tool on a user message and says "done" after
// the tool's result.
type scriptedModel struct{ bt benchTool }

func (m scriptedModel) Complete(_ context.Context, req agent.Request) (agent.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == agent.RoleTool {
		return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "done"}}, nil
	}
	return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, ToolCalls: []agent.ToolCall{
		{ID: "c1", Name: m.bt.tool.Name(), Args: m.bt.args, Confidence: 1}}}}, nil
}

// instance is one replica of the agent mode.
type instance struct {
	router *channels.Router
	engine *approval.Engine
	loop   *agent.Loop
	ch     *benchChannel
}

// newInstance builds one replica on store s, sharing hist and locker with
// the other.
func newInstance(ctx context.Context, s approval.Store, bt benchTool, hist agent.History, locker agent.SessionLocker, log *slog.Logger) (*instance, error) {
	reg := agent.NewRegistry()
	if err := reg.Register(bt.tool); err != nil {
		return nil, err
	}
	pol, err := approval.NewPolicy(approval.DefaultPolicyConfig())
	if err != nil {
		return nil, err
	}
	// Built as cmd/bot/serve.go builds it (channels.Assemble).
	as, err := channels.Assemble(channels.Parts{
		Engine: approval.EngineConfig{Store: s, Dispatcher: reg, Audit: nopAudit{}, Logger: log},
		Loop: agent.LoopConfig{Model: scriptedModel{bt}, Tools: reg, Policy: func() *approval.Policy { return pol },
			History: hist, Locker: locker, Logger: log, Workers: 1024, SlowNotice: time.Hour},
		Router: channels.RouterConfig{Store: s, Logger: log, MaxAge: -1},
	})
	if err != nil {
		return nil, err
	}
	e, loop, r := as.Engine, as.Loop, as.Router
	ch := newBenchChannel()
	if err := as.Registry.Register(ch); err != nil {
		return nil, err
	}
	if err := e.Start(ctx); err != nil {
		return nil, err
	}
	if err := r.Start(ctx); err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, func() { _ = loop.Close(context.Background()) })
	return &instance{router: r, engine: e, loop: loop, ch: ch}, nil
}

// replicas builds instances A and B on stores sa and sb, with one history
// and one session lock between them (as replicas share Redis's): a turn
// resumed on B waits for A's turn of the same session, which holds the
// lock while it waits for its approval.
func replicas(ctx context.Context, sa, sb approval.Store, bt benchTool, log *slog.Logger) (a, b *instance, err error) {
	hist, locker := agent.NewMemoryHistory(), agent.SessionLocker(agent.NewMemoryLocker())
	if a, err = newInstance(ctx, sa, bt, hist, locker, log); err != nil {
		return nil, nil, err
	}
	if b, err = newInstance(ctx, sb, bt, hist, locker, log); err != nil {
		return nil, nil, err
	}
	return a, b, nil
}

// closeLoops closes the loops of the instances and waits for what they
// still run: the resumptions a decision queued on B go on after the last
// answer (they wait for A's turn, then claim), and a claim sent after the
// run's keys were removed would be left behind.
func closeLoops(is ...*instance) {
	for _, i := range is {
		_ = i.loop.Close(context.Background())
	}
}

func runAgent(ctx context.Context, cfg Config, sa, sb approval.Store, cnt *counter, info *server, log *slog.Logger, res *Result) error {
	bt, _ := counterBenchTool()
	return runConversations(ctx, cfg, sa, sb, cnt, info, log, res, bt)
}

// runConversations is the agent mode with tool bt: each conversation asks
// on A, is approved on B, and ends with A's answer.
func runConversations(ctx context.Context, cfg Config, sa, sb approval.Store, cnt *counter, info *server, log *slog.Logger, res *Result, bt benchTool) error {
	a, b, err := replicas(ctx, sa, sb, bt, log)
	if err != nil {
		return err
	}
	defer closeLoops(a, b)
	held, err := hold(ctx, cfg, a.engine)
	if err != nil {
		return err
	}
	defer held.release()
	lat := make([]time.Duration, cfg.N)
	var errs atomic.Int64
	rt0 := count(cnt)
	cpu0 := cpuNow(ctx, info)
	run := fmt.Sprint(time.Now().UnixNano())
	elapsed := parallel(cfg.N, cfg.C, func(i int) {
		chat := "conv-" + run + "-" + strconv.Itoa(i)
		shown, answers := a.ch.expect(chat)
		user := approval.UserID("u" + strconv.Itoa(i))
		if err := a.router.HandleMessage(ctx, channels.Message{Channel: "bench", ChatID: chat, ChatType: "p2p", UserID: user,
			MessageID: "m-" + chat, Text: "go", CreatedAt: time.Now()}); err != nil {
			errs.Add(1)
			return
		}
		var card cards.View
		select {
		case card = <-shown:
		case <-time.After(time.Minute):
			errs.Add(1)
			return
		}
		lat[i] = clickAndWait(ctx, b, chat, user, card, answers, &errs)
	})
	finish(res, cfg, bt.runs(), errs.Load(), elapsed, lat, cnt, rt0)
	cpuSince(ctx, info, cpu0, cfg.N, res)
	if err := held.check(ctx); err != nil {
		return err
	}
	if cfg.Pending > 0 {
		return measurePending(ctx, cfg, a.engine, info, res)
	}
	return nil
}

// runResume measures resumed turns: every conversation asks on A, A's loop
// closes (its waiters are gone), and each decision on B resumes its turn
// on B; the latency is from the click to the resumed answer.
func runResume(ctx context.Context, cfg Config, sa, sb approval.Store, cnt *counter, info *server, log *slog.Logger, res *Result) error {
	bt, tool := counterBenchTool()
	a, b, err := replicas(ctx, sa, sb, bt, log)
	if err != nil {
		return err
	}
	defer closeLoops(a, b)
	// Held on B, which decides and resumes every turn: A's waiters go
	// with its loop's below, but the held approvals' stay.
	held, err := hold(ctx, cfg, b.engine)
	if err != nil {
		return err
	}
	defer held.release()
	run := fmt.Sprint(time.Now().UnixNano())
	chats := make([]string, cfg.N)
	views := make([]cards.View, cfg.N)
	var errs atomic.Int64
	parallel(cfg.N, cfg.C, func(i int) {
		chat := "resume-" + run + "-" + strconv.Itoa(i)
		shown, _ := a.ch.expect(chat)
		if err := a.router.HandleMessage(ctx, channels.Message{Channel: "bench", ChatID: chat, ChatType: "p2p", UserID: approval.UserID("u" + strconv.Itoa(i)),
			MessageID: "m-" + chat, Text: "go", CreatedAt: time.Now()}); err != nil {
			errs.Add(1)
			return
		}
		select {
		case views[i] = <-shown:
			chats[i] = chat
		case <-time.After(time.Minute):
			errs.Add(1)
		}
	})
	// A's waiters go, as with a replica that died: their turns stay
	// suspended in the history.
	if err := a.loop.Close(ctx); err != nil {
		return err
	}
	lat := make([]time.Duration, cfg.N)
	rt0 := count(cnt)
	cpu0 := cpuNow(ctx, info)
	elapsed := parallel(cfg.N, cfg.C, func(i int) {
		chat := chats[i]
		if chat == "" {
			return
		}
		_, answers := b.ch.expect(chat)
		lat[i] = clickAndWait(ctx, b, chat, approval.UserID("u"+strconv.Itoa(i)), views[i], answers, &errs)
	})
	finish(res, cfg, tool.runs.Load(), errs.Load(), elapsed, lat, cnt, rt0)
	cpuSince(ctx, info, cpu0, cfg.N, res)
	return held.check(ctx)
}

// clickAndWait approves card on instance b as user, as a click on its
// button does (the button carries the approval id and the payload hash),
// and waits for the conversation's answer: it returns the time from the
// click to the answer, or 0 after counting an error.
func clickAndWait(ctx context.Context, b *instance, chat string, user approval.UserID, card cards.View, answers <-chan string, errs *atomic.Int64) time.Duration {
	t0 := time.Now()
	o, err := b.router.HandleCardAction(ctx, channels.CardAction{Channel: "bench", ChatID: chat, MessageID: string(card.ApprovalID),
		EventID: "click-" + chat, UserID: user, ApprovalID: card.ApprovalID, Verb: approval.Approve, PayloadSHA256: card.PayloadSHA256})
	if err != nil || o.Status != approval.StatusExecuted {
		errs.Add(1)
		return 0
	}
	select {
	case text := <-answers:
		if text != "done" {
			errs.Add(1)
		}
		return time.Since(t0)
	case <-time.After(time.Minute):
		errs.Add(1)
		return 0
	}
}
