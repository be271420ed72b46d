package main

import (
	"go.opentelemetry.io/otel/trace"

	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hitlbot/hitlbot/internal/tracing"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/agent/model"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/api"
	"github.com/hitlbot/hitlbot/channels/dingtalk"
	"github.com/hitlbot/hitlbot/channels/feishu"
	"github.com/hitlbot/hitlbot/channels/web"
	"github.com/hitlbot/hitlbot/cmd/bot/internal/config"
	"github.com/hitlbot/hitlbot/cmd/bot/internal/metrics"
	"github.com/hitlbot/hitlbot/gate"
	"github.com/hitlbot/hitlbot/tools/demodb"
	"github.com/hitlbot/hitlbot/tools/httptool"
	"github.com/hitlbot/hitlbot/tools/mcptool"
	"github.com/hitlbot/hitlbot/tools/shell"
	sqltool "github.com/hitlbot/hitlbot/tools/sql"
	"github.com/hitlbot/hitlbot/tools/tasks"
	"github.com/hitlbot/hitlbot/words"
)

// cmdServe is `bot serve` (and `bot` alone).
func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, c := newFlags("serve", stderr)
	if st := parse(fs, args); st >= 0 {
		return st
	}
	opts := c.options()
	cfg := loadConfig(opts, stderr)
	if cfg == nil {
		return 1
	}
	log := newLogger(stderr, cfg.Log.Level)
	routeLibraryLogs(log) // go-redis's, the log package's, MySQL's lines as JSON records too
	s, err := newCore(ctx, cfg, log)
	if err != nil {
		log.Error("startup failed", "err", err)
		fmt.Fprintf(stderr, "bot: %v\n", err)
		return 1
	}
	if err := s.serve(ctx, opts, stdout); err != nil {
		log.Error("server failed", "err", err)
		fmt.Fprintf(stderr, "bot: %v\n", err)
		return 1
	}
	return 0
}

// core is everything a running bot is made of. Its lifecycle, in order:
//
// Build (newCore), each part from the ones before it:
//
//  1. the data directory and the store (memory or Redis);
//  2. the audit trail (the file, and the Redis stream with Redis);
//  3. the tools, each wrapped for metrics;
//  4. the model (OpenAI-compatible or rules), wrapped for metrics;
//  5. the approval policy, held in an atomic pointer for reloads;
//  6. the history and the session locker (Redis only);
//  7. to 9. the channel registry, the presenter, the engine, the agent
//     loop and the router, by channels.Assemble (the one function the
//     channels' tests build their stack with too), each given what it
//     needs when it is made: the registry; the presenter (everything that
//     goes out: cards, streams, privacy), with the registry and the store;
//     the engine, with the presenter wrapped for metrics as its Notifier;
//     the loop, with the engine and the presenter as its Speaker; the
//     router (everything that comes in), with the registry, the presenter,
//     the engine as its Decider and the loop as its Submitter.
//
// Register: 10. the channels (serve: addHTTPChannels; chat: the
// terminal), each built with what it needs (the store for replay marks,
// the DingTalk lease) and registered on the registry.
//
// Start (start): 11. the engine subscribes to outcomes and its sweeper
// runs; 12. the router starts every channel with itself as the Handler.
//
// Stop (shutdown): 13. the router closes the channels (typed decisions in
// flight finish) and the loop closes (turns end; pending approvals stay in
// the store); 14. release ends the engine's subscription, flushes and
// closes the audit trail, and closes the databases and Redis.
//
// serve adds the HTTP server and the config watcher; chat the terminal.
type core struct {
	cfg     *config.Config
	log     *slog.Logger
	metrics *metrics.Metrics

	store  approval.Store
	redis  redis.UniversalClient // nil with the memory store
	audit  *audit.Log
	dbs    *sqltool.Databases
	demo   *sql.DB // nil when nothing uses the demo database
	tools  *agent.Registry
	mcp    *mcptool.Manager // nil without tools.mcp.servers
	gate   *gate.Gate       // other agents' requests; nil without agents
	engine *approval.Engine
	loop   *agent.Loop
	// channels are the channels by name (registered in 10), router what
	// takes their messages and clicks (it starts them in 12).
	channels *channels.Registry
	router   *channels.Router
	web      *web.Web          // nil when disabled
	api      *api.API          // nil when disabled
	ding     *dingtalk.Channel // nil when disabled
	lark     *feishu.Channel   // nil when disabled

	// views are the presenter's views of pending approvals, given to the
	// channels that re-show a card by themselves (web, feishu, the chat).
	views channels.Views

	// policy is the approval policy in force; a reload swaps it.
	policy atomic.Pointer[approval.Policy]
	// running is the config the process runs with (the policy part follows
	// reloads). reloadMu serialises reloads, and makes a reload and the
	// release of what it swaps (dbs, demo) exclusive: release sets closing
	// under it, after a reload in progress has ended, and a reload that
	// finds closing set does nothing.
	reloadMu sync.Mutex
	running  *config.Config
	closing  bool

	engineStop context.CancelFunc // ends the engine's outcome subscription
	closeOnce  sync.Once

	// tracer makes the spans of turns and approvals: tracing.Nop unless
	// tracing.endpoint is set, then spans from traces (ended, and what
	// it holds sent, in release).
	tracer trace.Tracer
	traces *tracing.Provider
}

// newCore builds the parts. It does no network I/O beyond a first ping of
// Redis and opening the configured databases; on an error it releases what
// it built. Channels besides web and api (the terminal) are registered by
// the caller before start.
func newCore(ctx context.Context, cfg *config.Config, log *slog.Logger) (c *core, err error) {
	c = &core{cfg: cfg, log: log, metrics: metrics.New(Version()), running: cfg}
	defer func() {
		if err != nil {
			c.release(context.Background())
			c = nil
		}
	}()

	if err := os.MkdirAll(cfg.Server.DataDir, 0o750); err != nil {
		return c, fmt.Errorf("server.data_dir: %w", err)
	}
	c.tracer = tracing.Nop
	if cfg.Tracing.Endpoint != "" {
		// Off by default: without an endpoint nothing is made, no
		// goroutine runs, and every span is tracing.Nop's.
		headers, err := cfg.Tracing.ParseHeaders() // checked by validation
		if err != nil {
			return c, fmt.Errorf("tracing.headers: %w", err)
		}
		c.traces = tracing.New(tracing.Config{Endpoint: cfg.Tracing.Endpoint, Headers: headers,
			SampleRatio: cfg.Tracing.SampleRatio, ServiceName: cfg.Tracing.ServiceName, ServiceVersion: Version(), Logger: log})
		c.tracer = c.traces.Tracer("github.com/hitlbot/hitlbot", trace.WithInstrumentationVersion(Version()))
		log.Info("tracing on", "endpoint", tracing.TracesURL(cfg.Tracing.Endpoint), "sample_ratio", cfg.Tracing.SampleRatio)
	}

	// 1. Store.
	switch cfg.Store.Backend {
	case "redis":
		rc, err := redisstore.NewClient(cfg.Store.Redis.ClientConfig())
		if err != nil {
			return c, fmt.Errorf("store.redis: %w", err)
		}
		c.redis = rc
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = rc.Ping(pctx).Err()
		cancel()
		if err != nil {
			return c, fmt.Errorf("store.redis: cannot reach Redis: %v", err)
		}
		vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = redisstore.CheckVersion(vctx, rc)
		cancel()
		if err != nil {
			return c, fmt.Errorf("store.redis: %w", err)
		}
		st, err := redisstore.New(rc, redisstore.Options{Prefix: cfg.Store.Redis.Prefix, Retention: cfg.Store.Retention, Logger: log,
			ReplicaAcks: cfg.Store.Redis.ReplicaAcks, ReplicaAckTimeout: cfg.Store.Redis.ReplicaAckTimeout, NoAutoPipeline: !cfg.Store.Redis.AutoPipeline})
		if err != nil {
			return c, fmt.Errorf("store.redis: %w", err)
		}
		c.store = st
	default:
		c.store = memstore.New(memstore.Options{Retention: cfg.Store.Retention})
	}

	// 2. Audit trail: the file always, the Redis stream too when there is Redis.
	if err := os.MkdirAll(filepath.Dir(cfg.Audit.File), 0o750); err != nil {
		return c, fmt.Errorf("audit.file: %w", err)
	}
	fsink, err := audit.NewFileSink(cfg.Audit.File, cfg.Audit.FSync)
	if err != nil {
		return c, fmt.Errorf("audit.file: %w", err)
	}
	sinks := []audit.Sink{fsink}
	if c.redis != nil {
		sinks = append(sinks, audit.NewRedisSink(c.redis, cfg.Store.Redis.AuditStreamKey(), cfg.Audit.RedisStreamMaxLen))
	}
	c.audit = audit.NewLog(audit.LogConfig{}, nil, log.With("component", "audit"), sinks...)
	c.metrics.Audit(c.audit.Health)

	// 3. Tools: the built-in ones, then (3b) the MCP servers' (started
	// here, in parallel, each within its start_timeout).
	if err := c.buildTools(ctx); err != nil {
		return c, err
	}
	c.startMCP(ctx)

	// 4. Model.
	var mdl agent.Model
	switch cfg.Model.Provider {
	case "openai":
		m, err := model.NewOpenAI(cfg.Model.OpenAI, log.With("component", "model"))
		if err != nil {
			return c, err
		}
		mdl = m
	default:
		m, err := model.NewRules(cfg.Model.Rules, model.RulesDeps{Tools: c.tools, Risk: func(name string) (approval.Risk, approval.Words, bool) {
			return c.tools.Risk(c.policy.Load(), name) // the policy in force now: reloads count
		}})
		if err != nil {
			return c, err
		}
		mdl = m
	}
	mdl = c.metrics.Model(mdl, cfg.Model.Provider)

	// 5. Policy.
	pol, err := approval.NewPolicy(cfg.Approval.EffectivePolicy())
	if err != nil {
		return c, fmt.Errorf("approval.policy: %w", err)
	}
	c.policy.Store(pol)

	// 6. History and session locker.
	var history agent.History = agent.NewMemoryHistory()
	var locker agent.SessionLocker // nil: one replica, the loop's queues order each session
	if c.redis != nil {
		history = agent.NewRedisHistory(c.redis, cfg.Store.Redis.Prefix, cfg.Store.Retention)
		// Replicas share the history: a session's turns take its lock in
		// Redis, so two replicas never work on one conversation at once.
		rl, lerr := agent.NewRedisLocker(agent.RedisLockerConfig{Client: c.redis, Prefix: cfg.Store.Redis.Prefix,
			TTL: cfg.Store.Redis.SessionLockTTL, Logger: log})
		if lerr != nil {
			return c, lerr
		}
		locker = rl
	}
	replies, err := approval.NewReplyParser(cfg.Approval.Replies)
	if err != nil {
		return c, fmt.Errorf("approval.replies: %w", err)
	}
	zone, err := cfg.Approval.Zone() // checked by config validation; an error here is a bug
	if err != nil {
		return c, err
	}

	// 7–9. Registry, presenter, engine, loop and router, in that order
	// (channels.Assemble, which the tests of every channel build their
	// stack with too): the engine notifies the presenter, wrapped for
	// metrics; the loop speaks through the presenter; the router decides
	// with the engine and submits to the loop.
	as, err := channels.Assemble(channels.Parts{
		Notifier: c.metrics.Notifier,
		Engine: approval.EngineConfig{
			Store:       c.store,
			Dispatcher:  gate.Dispatcher{Next: c.tools},
			Audit:       c.audit,
			Logger:      log,
			Text:        cfg.Approval.OutcomeText.With(cfg.CoreLang()),
			Lang:        cfg.CoreLang(),
			ResultTTL:   cfg.Approval.ResultTTL,
			ExecTimeout: cfg.Approval.ExecTimeout,
			Reminders:   cfg.Approval.Reminders,
			// An approver's edited arguments are checked with the tools (3)
			// and the policy in force (5); an answer to an agent's question
			// (AskUserQuestion) by the gate.
			Editor: gate.Editor{Next: agent.EditChecker{Tools: c.tools, Policy: c.policy.Load}},
			Tracer: c.tracer,
		},
		Loop: agent.LoopConfig{
			Lang:          cfg.CoreLang(),
			Model:         mdl,
			Tools:         c.tools,
			Policy:        c.policy.Load,
			History:       history,
			Locker:        locker,
			Logger:        log,
			SystemPrompt:  cfg.Model.SystemPrompt,
			MaxToolRounds: cfg.Model.MaxToolRounds,
			MaxHistory:    cfg.Model.MaxHistory,
			TurnTimeout:   cfg.Model.TurnTimeout,
			Retention:     cfg.Store.Retention,
			Tracer:        c.tracer,
		},
		Router: channels.RouterConfig{
			Store:    c.store,
			Replies:  replies,
			Scope:    channels.Scope(cfg.Approval.SessionScope),
			DedupTTL: cfg.Approval.DedupTTL,
			Lang:     cfg.CoreLang(),
			Zone:     zone,
			Text:     cfg.Approval.OutcomeText,
			Logger:   log,
			Metrics:  c.metrics,
			// Who may use each channel (channels.<name>.allow), and the clock
			// allowance of typed replies (approval.reply_clock_skew).
			Allow:          maps.Collect(cfg.Channels.Allow()),
			ReplyClockSkew: cfg.Approval.ReplyClockSkew,
		},
	})
	if err != nil {
		return c, err
	}
	c.channels, c.engine, c.loop, c.router, c.views = as.Registry, as.Engine, as.Loop, as.Router, as.Presenter

	// 10. The gate: other agents' requests for approval (agents).
	if len(cfg.Agents) > 0 {
		c.gate, err = gate.New(cfg.Agents, gate.Deps{Engine: c.engine, Policy: c.policy.Load, Audit: c.audit,
			Scope: channels.Scope(cfg.Approval.SessionScope), Lang: cfg.CoreLang(), Logger: log.With("component", "gate")})
		if err != nil {
			return c, fmt.Errorf("agents: %w", err)
		}
	}
	return c, nil
}

// buildTools opens the databases and registers every configured tool,
// each wrapped for metrics.
func (c *core) buildTools(ctx context.Context) error {
	all, dbs, err := c.makeTools(ctx, c.cfg)
	if err != nil {
		return err
	}
	c.tools, c.dbs = agent.NewRegistry(), dbs
	return c.tools.Register(all...)
}

// makeTools builds the tools of cfg (opening its databases) without
// touching the running ones; the demo database, once open, is shared.
func (c *core) makeTools(ctx context.Context, cfg *config.Config) ([]agent.Tool, *sqltool.Databases, error) {
	dbs := &sqltool.Databases{}
	fail := func(err error) ([]agent.Tool, *sqltool.Databases, error) {
		dbs.Close()
		return nil, nil, err
	}
	if c.demo == nil && (len(cfg.Tools.SQL.Databases) == 0 || cfg.Tools.Tasks.Enabled) {
		db, err := demodb.Open(ctx, cfg.Server.DataDir)
		if err != nil {
			return fail(fmt.Errorf("demo database: %w", err))
		}
		c.demo = db
	}
	if len(cfg.Tools.SQL.Databases) == 0 {
		if err := dbs.OpenDB("demo", "sqlite", c.demo); err != nil {
			return fail(err)
		}
	} else {
		dcs := make([]sqltool.DatabaseConfig, len(cfg.Tools.SQL.Databases))
		for i, d := range cfg.Tools.SQL.Databases {
			dcs[i] = d.DatabaseConfig
		}
		if err := dbs.Open(ctx, dcs); err != nil {
			return fail(fmt.Errorf("tools.sql: %w", err))
		}
	}
	all := []agent.Tool{sqltool.NewQueryTool(dbs), sqltool.NewExecuteTool(dbs)}
	if cfg.Tools.Tasks.Enabled {
		all = append(all, tasks.New(c.demo, nil)...)
	}
	httpTools, err := httptool.New(cfg.Tools.HTTP, nil, os.Getenv)
	if err != nil {
		return fail(fmt.Errorf("tools.http: %w", err))
	}
	all = append(all, httpTools...)
	shellTools, err := shell.New(cfg.Tools.Shell)
	if err != nil {
		return fail(fmt.Errorf("tools.shell: %w", err))
	}
	all = append(all, shellTools...)
	return c.metrics.Tools(all), dbs, nil
}

// addHTTPChannels builds and registers the web chat, the HTTP API and the
// chat platforms.
func (c *core) addHTTPChannels() error {
	cfg := c.cfg
	if d := cfg.Channels.DingTalk; d.Enabled {
		dc := d.Config
		if dc.Lang == "" {
			dc.Lang = cfg.PlatformLang()
		}
		dc.Text = cfg.Approval.OutcomeText.With(dc.Lang)
		// Signature replay marks in the shared store, so a captured
		// (timestamp, sign) pair is refused by every replica.
		dc.Marks = c.store
		dc.Metrics = c.metrics
		if c.redis != nil {
			key := dc.LeaseKey
			if key == "" {
				key = cfg.Store.Redis.Prefix + "dingtalk:stream:" + dc.ClientID
			}
			dc.Lease = dingtalk.NewRedisLease(c.redis, key, dc.LeaseTTL)
		}
		dingtalk.SetSDKLogger(c.log.With("channel", "dingtalk"))
		ch, err := dingtalk.New(dc, c.log)
		if err != nil {
			return fmt.Errorf("channels.dingtalk: %w", err)
		}
		if err := c.channels.Register(ch); err != nil {
			return err
		}
		c.ding = ch
	}
	if f := cfg.Channels.Feishu; f.Enabled {
		fc := f.Config
		if fc.Lang == "" {
			fc.Lang = cfg.PlatformLang()
		}
		fc.Text = cfg.Approval.OutcomeText.With(fc.Lang)
		// Webhook request marks in the shared store, so a captured request
		// is refused by every replica.
		fc.Marks = c.store
		fc.Metrics = c.metrics
		fc.Views = c.views
		ch, err := feishu.New(fc, c.log)
		if err != nil {
			return fmt.Errorf("channels.feishu: %w", err)
		}
		if err := c.channels.Register(ch); err != nil {
			return err
		}
		c.lark = ch
	}
	if cfg.Channels.Web.Enabled {
		toks, err := cfg.Channels.Web.Parse()
		if err != nil {
			return fmt.Errorf("channels.web.tokens: %w", err)
		}
		users := map[string]web.TokenUser{}
		for _, t := range toks {
			users[t.Token.Reveal()] = web.TokenUser{User: t.User, Tenant: t.Tenant}
		}
		c.web, err = web.New(web.Config{
			Tokens:              users,
			AllowAnonymousLocal: len(users) == 0,
			Lang:                cfg.CoreLang(),
			PageLang:            cfg.PageLang(),
			Tools:               c.tools,
			Views:               c.views,
			GreetingIn:          func(l words.Lang) web.Greeting { return webGreeting(l, demoOn(cfg)) },
			Logger:              c.log,
		})
		if err != nil {
			return err
		}
		if err := c.channels.Register(c.web); err != nil {
			return err
		}
	}
	if cfg.Channels.API.Enabled {
		toks, err := cfg.Channels.API.Parse()
		if err != nil {
			return fmt.Errorf("channels.api.tokens: %w", err)
		}
		users := map[string]api.User{}
		for _, t := range toks {
			tenant := t.Tenant
			if tenant == "" {
				tenant = "default"
			}
			users[t.Token.Reveal()] = api.User{ID: t.User, Tenant: tenant}
		}
		var tokens api.TokenStore = api.NewMemoryTokens(nil)
		if c.redis != nil {
			tokens = api.NewRedisTokens(c.redis, cfg.Store.Redis.Prefix, nil)
		}
		lang := cfg.APILang()
		c.api, err = api.New(api.Config{
			Tokens:              users,
			AllowAnonymousLocal: len(users) == 0,
			MaxPendingPerUser:   cfg.Channels.API.MaxPendingPerUser,
			TurnTimeout:         cfg.Channels.API.TurnTimeout,
			Lang:                lang,
			TokenStore:          tokens,
			Audit:               c.auditReader(),
		}, c.engine, c.log)
		if err != nil {
			return err
		}
		if err := c.channels.Register(c.api); err != nil {
			return err
		}
	}
	return nil
}

// start subscribes the engine to outcomes and starts the channels (steps
// 11 and 12 on core).
func (c *core) start(ctx context.Context) error {
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.engineStop = cancel
	if err := c.engine.Start(ectx); err != nil {
		return err
	}
	go c.engine.RunSweeper(ectx, c.cfg.Approval.SweepInterval)
	return c.router.Start(ctx)
}

// shutdown stops the parts in reverse order, each bounded by ctx: the
// channels and the agent (stopAgents, step 13 on core), then the rest
// (release, step 14).
func (c *core) shutdown(ctx context.Context) {
	c.stopAgents(ctx)
	c.release(ctx)
}

// stopAgents closes the channels (typed decisions in flight finish) and
// the agent loop (turns end; pending approvals stay in the store, to be
// decided after a restart).
func (c *core) stopAgents(ctx context.Context) {
	if c.engine != nil {
		// An MCP server's questions still open are withdrawn (cancel):
		// nobody can answer once the channels close, and the tool calls
		// waiting on them end.
		c.engine.EndElicitations()
	}
	if c.router != nil {
		if err := c.router.Close(ctx); err != nil {
			c.log.Warn("closing the channels", "err", err)
		}
	}
	if c.loop != nil {
		if err := c.loop.Close(ctx); err != nil {
			c.log.Warn("agent turns still running at shutdown; their approvals stay pending", "err", err)
		}
	}
}

// release flushes and closes the audit trail and closes the databases and
// Redis: what newCore opened (also after a failed build). It waits for a
// config reload in progress, and no reload takes effect after it.
func (c *core) release(ctx context.Context) {
	c.closeOnce.Do(func() {
		if ctx.Err() != nil { // the shutdown deadline passed: still flush the audit trail
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
		}
		if c.engineStop != nil {
			c.engineStop()
		}
		if c.audit != nil {
			if err := c.audit.Flush(ctx); err != nil {
				c.log.Error("flushing the audit trail", "err", err)
			}
			if err := c.audit.Close(ctx); err != nil {
				c.log.Error("closing the audit trail", "err", err)
			}
		}
		if c.mcp != nil {
			c.mcp.Close() // the agent has stopped: no call is in flight
		}
		if c.traces != nil {
			// The spans of the turns and decisions that just ended.
			if err := c.traces.Shutdown(ctx); err != nil {
				c.log.Warn("sending the last spans failed", "err", err)
			}
		}
		// A reload in progress may be swapping the databases: wait for
		// it, and refuse later ones.
		c.reloadMu.Lock()
		c.closing = true
		if c.dbs != nil {
			c.dbs.Close()
		}
		if c.demo != nil {
			c.demo.Close()
		}
		c.reloadMu.Unlock()
		if c.redis != nil {
			c.redis.Close()
		}
	})
}

// auditReader serves the audit trail of one approval to the API: from the
// Redis stream when there is one (every replica writes there), else from
// the file.
func (c *core) auditReader() api.AuditReader {
	return auditReader{c: c}
}

type auditReader struct{ c *core }

func (r auditReader) Records(ctx context.Context, id string) ([]audit.Record, error) {
	fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_ = r.c.audit.Flush(fctx) // best effort: show what this process just wrote
	cancel()
	var (
		recs []audit.Record
		err  error
	)
	if r.c.redis != nil {
		recs, err = audit.ReadStream(ctx, r.c.redis, r.c.cfg.Store.Redis.AuditStreamKey(), 0)
	} else {
		recs, err = audit.ReadFile(r.c.cfg.Audit.File)
	}
	if err != nil {
		return nil, err
	}
	var out []audit.Record
	for _, rec := range audit.Dedupe(recs) {
		if rec.ApprovalID == id {
			out = append(out, rec)
		}
	}
	return out, nil
}

// serve runs the HTTP server until ctx ends, then shuts down gracefully.
func (c *core) serve(ctx context.Context, opts config.Options, stdout io.Writer) error {
	cfg := c.cfg
	if err := c.addHTTPChannels(); err != nil {
		c.release(context.Background())
		return err
	}
	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		c.release(context.Background())
		return fmt.Errorf("server.listen: %w", err)
	}
	if err := c.start(ctx); err != nil {
		ln.Close()
		c.shutdown(context.Background())
		return err
	}
	srv := &http.Server{
		Handler:           c.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(c.log.Handler(), slog.LevelWarn),
	}

	w := c.newWatcher()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error { c.watchConfig(gctx, opts, w); return nil })
	g.Go(func() error {
		<-gctx.Done()
		c.log.Info("shutting down", "timeout", cfg.Server.ShutdownTimeout.String())
		sctx, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownTimeout)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- srv.Shutdown(sctx) }() // stop accepting, let requests finish
		// Closing the channels and the agent ends the API requests that
		// wait for a turn; decisions in flight (API requests, web sockets)
		// finish before the audit trail and the databases close.
		c.stopAgents(sctx)
		if err := <-done; err != nil {
			c.log.Warn("requests still running at the shutdown deadline; closing them", "err", err)
			srv.Close()
		}
		c.release(sctx)
		c.log.Info("stopped")
		return nil
	})

	addr := ln.Addr().String()
	c.log.Info("listening", "addr", addr, "version", Version(), "store", cfg.Store.Backend,
		"model", cfg.Model.Provider, "tools", len(c.tools.Tools()), "config", cfg.File())
	line := readyLine(addr, c.web != nil, c.api != nil)
	if (c.web != nil || c.api != nil) && demoOn(cfg) {
		line += tryLine()
	}
	fmt.Fprintln(stdout, line)
	return g.Wait()
}

// readyLine is the one line serve prints on stdout: where to open the chat.
func readyLine(addr string, webOn, apiOn bool) string {
	host, port, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	base := "http://" + net.JoinHostPort(host, port)
	switch {
	case webOn && apiOn:
		return fmt.Sprintf("hitlbot %s is running: open %s/ in a browser to chat (HTTP API: POST %s/agent/chat)", Version(), base, base)
	case webOn:
		return fmt.Sprintf("hitlbot %s is running: open %s/ in a browser to chat", Version(), base)
	case apiOn:
		return fmt.Sprintf("hitlbot %s is running: the web chat is off; HTTP API: POST %s/agent/chat", Version(), base)
	}
	return fmt.Sprintf("hitlbot %s is running on %s: no chat channel is enabled (health: %s/healthz)", Version(), base, base)
}

// tryLine is what the ready line says after the URL when the demo runs:
// one request to try. It stays on the ready line, which is the one line
// serve prints on stdout (stderr holds the JSON log only), and in
// English, as the rest of that line is.
func tryLine() string {
	return fmt.Sprintf("; try: %s (%s)", tryExample.request, words.Text(words.EN, tryExample.what))
}

// handler is the HTTP server's handler: mux, with the other agents'
// requests (an agent's bearer token on /api/approvals; Claude Code's
// permission hooks at /hooks/claude and /hooks/codex) taken by the gate first when agents
// are configured.
func (c *core) handler() http.Handler {
	mux := c.mux()
	if !c.gate.Agents() {
		return mux
	}
	agents := c.gate.HTTP(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/approvals" || strings.HasPrefix(r.URL.Path, "/api/approvals/") ||
			r.URL.Path == gate.HookPath || r.URL.Path == gate.CodexHookPath {
			agents.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// mux routes /healthz, /readyz, /metrics, the API, /mcp and the web chat.
func (c *core) mux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", c.serveReady)
	if c.cfg.Metrics.Enabled {
		mux.Handle("GET "+c.cfg.Metrics.Path, c.metrics.Handler())
	}
	if c.api != nil {
		c.api.Mount(mux)
	}
	if c.gate.Agents() {
		mux.Handle("/mcp", c.gate.MCPHandler(Version()))
	}
	if c.lark != nil && c.cfg.Channels.Feishu.Mode == "webhook" {
		// Every method: the handler answers a wrong one 405 with Allow,
		// where a POST-only pattern would let the web chat answer 404.
		mux.Handle("/webhook/feishu", c.lark.WebhookHandler())
	}
	if c.ding != nil && c.cfg.Channels.DingTalk.Mode == "http" {
		mux.Handle("POST /webhook/dingtalk", c.ding.HTTPHandler())
	}
	if c.web != nil {
		mux.Handle("/", c.web.Handler())
	} else {
		mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintln(w, "hitlbot: the web chat is disabled (channels.web.enabled: false).")
		})
	}
	return mux
}

// serveReady answers /readyz: 200 when the store answers, every channel
// is ready and the audit trail writes, 503 with the reasons otherwise. An
// audit sink whose last write failed, or a full audit queue, is a problem,
// not a warning: no approved tool can run on this replica meanwhile
// (docs/failure-modes.md, "The audit trail's sink").
func (c *core) serveReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	var problems []string
	if err := c.store.Ping(ctx); err != nil {
		problems = append(problems, "store: "+err.Error())
	}
	if err := c.channels.Ready(); err != nil {
		problems = append(problems, err.Error())
	}
	mcpErr, warnings := c.mcpReady()
	if mcpErr != nil {
		problems = append(problems, mcpErr.Error())
	}
	auditProblem, auditState := auditNotReady(c.audit)
	if auditProblem != "" {
		problems = append(problems, auditProblem)
	}
	// A platform that keeps refusing is said, not held against this
	// replica (every replica sees the same platform).
	warnings = append(warnings, c.metrics.PlatformWarnings()...)
	body := map[string]any{"status": "ok"}
	if len(warnings) > 0 {
		body["warnings"] = warnings
	}
	if r := c.metrics.PlatformRefusals(); len(r) > 0 {
		// The same runs, for bot doctor to explain (doctor.go).
		body["refusing"] = r
	}
	if auditState != nil {
		body["audit"] = auditState // for bot doctor to explain (doctor.go)
	}
	if len(problems) > 0 {
		body["status"], body["problems"] = "unavailable", problems
		writeJSON(w, http.StatusServiceUnavailable, body)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
