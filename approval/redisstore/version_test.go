package redisstore_test

import (
	"context"
	"testing"

	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

// TestCheckVersion: the Redis the tests run against (7.0 or later) is
// accepted.
func TestCheckVersion(t *testing.T) {
	c, _ := testredis.Start(t)
	if err := redisstore.CheckVersion(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}
