package testredis

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Recorder is a go-redis hook that records each round trip a client makes
// to Redis: one command, or one pipeline. Tests count round trips with it
// and read which commands went.
type Recorder struct {
	mu    sync.Mutex
	trips []Trip
	count int
}

// Trip is one round trip: the names of its commands ("hget", "evalsha"),
// and whether they went as a pipeline.
type Trip struct {
	Names    []string
	Pipeline bool
}

// Record adds a Recorder to c's hooks and returns it.
func Record(c redis.UniversalClient) *Recorder {
	r := &Recorder{}
	c.AddHook(r)
	return r
}

// Take returns the round trips recorded since the last Take.
func (r *Recorder) Take() []Trip {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.trips
	r.trips = nil
	return got
}

// Count is how many round trips were recorded in all, Take or not.
func (r *Recorder) Count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count
}

func (r *Recorder) add(t Trip) {
	r.mu.Lock()
	r.trips = append(r.trips, t)
	r.count++
	r.mu.Unlock()
}

// DialHook is the hook's dial: unchanged.
func (r *Recorder) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook records one command.
func (r *Recorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.add(Trip{Names: []string{cmd.Name()}})
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook records one pipeline.
func (r *Recorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		names := make([]string, len(cmds))
		for i, c := range cmds {
			names[i] = c.Name()
		}
		r.add(Trip{Names: names, Pipeline: true})
		return next(ctx, cmds)
	}
}

var _ redis.Hook = (*Recorder)(nil)
