package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/cmd/bot/internal/bench"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

func TestMain(m *testing.M) { testredis.Main(m) }

func TestRun(t *testing.T) {
	c, _ := testredis.Start(t)
	url := "redis://" + c.(*redis.Client).Options().Addr
	// Pending is large enough that the memory it holds (kilobytes each)
	// stands clear of the heap's noise from the run before it.
	for _, cfg := range []bench.Config{
		{Mode: "engine", N: 200, C: 8, Pending: 500},
		{Mode: "agent", N: 100, C: 8},
		// tool_runs is what the MCP server counted: each approval ran
		// its tool there exactly once.
		{Mode: "mcp", N: 100, C: 8},
		{Mode: "engine", RedisURL: url, N: 200, C: 8, Pending: 500},
		{Mode: "agent", RedisURL: url, N: 100, C: 8, Pending: 500},
		{Mode: "engine", RedisURL: url, N: 200, C: 8, NoAutoPipeline: true},
	} {
		var out bytes.Buffer
		res, err := bench.Run(context.Background(), cfg, &out)
		if err != nil {
			t.Fatalf("%+v: %v", cfg, err)
		}
		var printed bench.Result
		if err := json.Unmarshal(out.Bytes(), &printed); err != nil {
			t.Fatalf("output %q: %v", out.String(), err)
		}
		if res.Errors != 0 || res.ToolRuns != int64(cfg.N) || printed.ToolRuns != res.ToolRuns || res.RoundTripsPerSec <= 0 {
			t.Fatalf("%+v: %+v", cfg, res)
		}
		// Request 1, decide 2 (claim, complete); the requesting replica's
		// Wait reads nothing. Fewer means something was not counted. The
		// auto-pipeliner carries commands of approvals at once in one
		// round trip: then there are fewer, but some.
		if cfg.RedisURL != "" && cfg.NoAutoPipeline && res.RedisRoundTripsPerApproval < 3 {
			t.Fatalf("%+v: %.2f Redis round trips per approval; an approval needs at least 3", cfg, res.RedisRoundTripsPerApproval)
		}
		if cfg.RedisURL != "" && (res.RedisRoundTripsPerApproval <= 0 || res.RedisRoundTripsPerApproval > 3) && cfg.Mode == "engine" && !cfg.NoAutoPipeline {
			t.Fatalf("%+v: %.2f Redis round trips per approval, want some and at most 3 (its 3 calls)", cfg, res.RedisRoundTripsPerApproval)
		}
		// 100 approvals cost milliseconds of CPU on both sides; getrusage
		// and INFO cpu count in microseconds.
		if res.ProcessCPUMicrosPerApproval <= 0 || (cfg.RedisURL != "") != (res.RedisCPUMicrosPerApproval > 0) {
			t.Fatalf("%+v: CPU per approval: process %.1f µs, Redis %.1f µs", cfg, res.ProcessCPUMicrosPerApproval, res.RedisCPUMicrosPerApproval)
		}
		if cfg.Pending > 0 && res.ProcessBytesPerPending <= 0 {
			t.Fatalf("%+v: no process memory measured", cfg)
		}
		if cfg.Pending > 0 && cfg.RedisURL != "" && res.RedisBytesPerPending <= 0 {
			t.Fatalf("%+v: no Redis memory measured", cfg)
		}
		for _, field := range []string{"round_trips_per_sec", "p50_ms", "p99_ms", "redis_round_trips_per_approval", "process_cpu_us_per_approval", "redis_cpu_us_per_approval", "redis_bytes_per_pending", "process_bytes_per_pending", "tool_runs", "n"} {
			if !bytes.Contains(out.Bytes(), []byte(`"`+field+`":`)) {
				t.Errorf("%+v: the output has no %s: %s", cfg, field, out.String())
			}
		}
	}
	if keys, err := c.Keys(context.Background(), "hitlbench:*").Result(); err != nil || len(keys) > 0 {
		t.Fatalf("bench left %d keys behind (%v)", len(keys), err)
	}
	if _, err := bench.Run(context.Background(), bench.Config{Mode: "nope", N: 1, C: 1}, &bytes.Buffer{}); err == nil {
		t.Fatal("an unknown mode was accepted")
	}
}

// holdRuns are the runs TestHold makes, with the Redis URL filled in for
// those marked redis.
var holdRuns = []struct {
	cfg   bench.Config
	redis bool
}{
	{bench.Config{Mode: "engine", N: 50, C: 4, Hold: 30}, false},
	{bench.Config{Mode: "agent", N: 50, C: 4, Hold: 30}, false},
	{bench.Config{Mode: "resume", N: 50, C: 4, Hold: 30}, false},
	{bench.Config{Mode: "agent", N: 50, C: 4, Hold: 30}, true},
	{bench.Config{Mode: "resume", N: 50, C: 4, Hold: 30}, true},
}

// TestHold: with -hold K the run keeps K approvals pending, each waited
// on, through the measured run (Run fails if one is no longer pending at
// its end), and prints hold: K.
func TestHold(t *testing.T) {
	c, _ := testredis.Start(t)
	url := "redis://" + c.(*redis.Client).Options().Addr
	for _, tc := range holdRuns {
		cfg := tc.cfg
		if tc.redis {
			cfg.RedisURL = url
		}
		var out bytes.Buffer
		res, err := bench.Run(context.Background(), cfg, &out)
		if err != nil {
			t.Fatalf("%+v: %v", cfg, err)
		}
		if res.Errors != 0 || res.ToolRuns != int64(cfg.N) || res.Hold != cfg.Hold {
			t.Fatalf("%+v: %+v", cfg, res)
		}
		var printed map[string]any
		if err := json.Unmarshal(out.Bytes(), &printed); err != nil {
			t.Fatalf("output %q: %v", out.String(), err)
		}
		if printed["hold"] != float64(cfg.Hold) {
			t.Fatalf("%+v: printed hold %v, want %d", cfg, printed["hold"], cfg.Hold)
		}
	}
	if _, err := bench.Run(context.Background(), bench.Config{Mode: "engine", N: 1, C: 1, Hold: -1}, &bytes.Buffer{}); err == nil {
		t.Fatal("a negative hold was accepted")
	}
}

// conversationRoundTrips is what one agent conversation costs in Redis
// round trips, as bench counts them (a pipeline is one; a connection's
// handshake is none): on A the inbound check (marks and the session's
// pending approval, one pipeline), the Put, AddCards and the waiting
// turn's resume claim; on B the claim (with the click's mark) and the
// Complete, and the losing resume claim of B's resumption.
const conversationRoundTrips = 7

// TestConversationRoundTrips pins the Redis round trips of one agent
// conversation (a count, not a time): a change that adds one fails here,
// and one that saves one lowers the constant.
func TestConversationRoundTrips(t *testing.T) {
	c, _ := testredis.Start(t)
	url := "redis://" + c.(*redis.Client).Options().Addr
	const n = 20
	res, err := bench.Run(context.Background(), bench.Config{Mode: "agent", RedisURL: url, N: n, C: 1, ByCall: true}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || res.ToolRuns != n {
		t.Fatalf("%+v", res)
	}
	// Itemised (-v), the calls add up to the total, and each step of the
	// conversation is named by its store method and its caller.
	var sum float64
	for _, v := range res.RedisRoundTripsByCall {
		sum += v
	}
	if math.Abs(sum-res.RedisRoundTripsPerApproval) > 1e-9 {
		t.Errorf("itemised %v adds up to %.3f, the total is %.3f", res.RedisRoundTripsByCall, sum, res.RedisRoundTripsPerApproval)
	}
	for _, who := range []string{
		"SeenAndPending <- approval.CheckInbound <- channels.Router.HandleMessage",
		"Put <- approval.Engine.Request <- agent.Loop.approve",
		"AddCards <- approval.Engine.Request <- agent.Loop.approve",
		"Claim <- approval.Engine.decideMarked <- channels.Router.HandleCardAction",
		"Complete <- approval.Engine.complete <- channels.Router.HandleCardAction",
	} {
		if res.RedisRoundTripsByCall[who] != 1 {
			t.Errorf("%s: %v round trips per conversation, want 1 (itemised: %v)", who, res.RedisRoundTripsByCall[who], res.RedisRoundTripsByCall)
		}
	}
	// Both claims of the continuation go through Loop.claim: the waiting
	// turn's on A (it wins) and B's resumption's (it loses; rounded, as
	// the total below is).
	if who := "Seen <- approval.Engine.ClaimResume <- agent.Loop.claim"; math.Round(res.RedisRoundTripsByCall[who]) != 2 {
		t.Errorf("%s: %v round trips per conversation, want 2 (itemised: %v)", who, res.RedisRoundTripsByCall[who], res.RedisRoundTripsByCall)
	}
	// Rounded: the engine's backstop poll (one pipeline every 5 s while a
	// Wait is blocked) may fall into a slow run and add one, and B's
	// resumption may find A's turn gone (its lock released, its claim
	// taken) without a round trip of its own and save one: each moves
	// the mean by 1/n, never by half a round trip.
	if got := int(math.Round(res.RedisRoundTripsPerApproval)); got != conversationRoundTrips {
		t.Fatalf("%.2f Redis round trips per conversation, want %d", res.RedisRoundTripsPerApproval, conversationRoundTrips)
	}
}
