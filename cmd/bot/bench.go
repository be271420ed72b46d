package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"

	"github.com/hitlbot/hitlbot/cmd/bot/internal/bench"
)

// cmdBench runs `bot bench`: the real engine (or agent loop and router) on
// two instances sharing one store, printing one JSON object.
func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bot bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg bench.Config
	fs.StringVar(&cfg.Mode, "mode", "engine", "`engine` (request, decide on the other instance, the waiter wakes), agent (the same through the agent loop and the router) resume (the waiting replica's loop closed first: each decision resumes its turn on the other) or mcp (agent mode with an MCP server's tool over streamable HTTP, in process)")
	fs.StringVar(&cfg.RedisURL, "redis", "", "a redis:// `URL`; none: the memory store")
	fs.IntVar(&cfg.N, "n", 10000, "approvals (engine) or conversations (agent)")
	fs.IntVar(&cfg.C, "c", 100, "how many run at once")
	fs.IntVar(&cfg.Pending, "pending", 0, "approvals held open, each with a blocked Wait, while the memory one pending approval costs is measured (0: not measured)")
	fs.IntVar(&cfg.Hold, "hold", 0, "approvals kept pending, each with a blocked Wait, ten to a chat, during the measured run (0: none): the cost of one approval under that load")
	autoPipeline := fs.Bool("autopipeline", true, "with -redis: send the store's commands through go-redis's auto-pipeliner, as bot serve does by default (store.redis.auto_pipeline); false: each in a round trip of its own")
	fs.BoolVar(&cfg.ByCall, "v", false, "itemise the Redis round trips per approval by the call that sent them (redis_round_trips_by_call: store method <- engine or loop function); each command is then sent alone, as with -autopipeline=false")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to `FILE` (go tool pprof reads it)")
	memProfile := fs.String("memprofile", "", "write a heap profile to `FILE` at the end of the run (go tool pprof -sample_index=alloc_space reads what was allocated, where)")
	if st := parse(fs, args); st >= 0 {
		return st
	}
	cfg.NoAutoPipeline = !*autoPipeline
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "bot bench: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "bot bench: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	if cfg.RedisURL != "" {
		// go-redis's own lines (a failed dial) as JSON records on stderr.
		routeLibraryLogs(newLogger(stderr, "warn"))
	}
	if *memProfile != "" {
		runtime.MemProfileRate = 64 << 10
	}
	res, err := bench.Run(ctx, cfg, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "bot bench: %v\n", err)
		return 1
	}
	if *memProfile != "" {
		if err := writeHeapProfile(*memProfile); err != nil {
			fmt.Fprintf(stderr, "bot bench: %v\n", err)
			return 1
		}
	}
	if res.Errors > 0 || res.ToolRuns != int64(res.N) {
		fmt.Fprintf(stderr, "bot bench: %d errors; the tool ran %d times for %d approvals\n", res.Errors, res.ToolRuns, res.N)
		return 1
	}
	return 0
}

// writeHeapProfile writes the heap profile (what the run allocated, by
// call stack, sampled every 64 KiB) to file.
func writeHeapProfile(file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	runtime.GC() // the profile's figures are as of the last GC
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
