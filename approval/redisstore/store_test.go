package redisstore_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/approval/storetest"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

func TestMain(m *testing.M) { testredis.Main(m) }

// newStore returns a Store on the shared test Redis, under a prefix of its own.
func newStore(t testing.TB, opts redisstore.Options) *redisstore.Store {
	t.Helper()
	s, _ := newStoreClient(t, opts)
	return s
}

// newStoreClient is newStore that also returns the store's client.
func newStoreClient(t testing.TB, opts redisstore.Options) (*redisstore.Store, redis.UniversalClient) {
	t.Helper()
	c, prefix := testredis.Start(t)
	opts.Prefix = prefix
	s, err := redisstore.New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// TestConformance runs the store conformance suite against a real Redis.
// TTLs are Redis's own, so the suite's clock advance is a real sleep (the
// suite keeps them in the hundreds of milliseconds).
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) (approval.Store, func(time.Duration)) {
			return newStore(t, redisstore.Options{}), time.Sleep
		},
	})
}

// TestConformanceNoAutoPipeline runs the suite with every command sent on
// its own (store.redis.auto_pipeline: false), the other way the store can
// talk to Redis.
func TestConformanceNoAutoPipeline(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) (approval.Store, func(time.Duration)) {
			return newStore(t, redisstore.Options{NoAutoPipeline: true}), time.Sleep
		},
	})
}
