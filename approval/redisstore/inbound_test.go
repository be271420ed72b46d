package redisstore_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/approval/storetest"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

// SeenAndPending on a server whose script cache was flushed (a restart, a
// failover to a replica that never ran the script) still finds the pending
// approval; on a server that is gone, both halves say so and every key counts
// as first, so the message is processed and a typed reply is not applied.
func TestSeenAndPendingFaults(t *testing.T) {
	srv := testredis.StartServer(t)
	c := srv.Client()
	s, err := redisstore.New(c, redisstore.Options{Prefix: "inbound:", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a := storetest.NewApproval(t)
	if _, err := s.Put(ctx, a, approval.Outcome{}); err != nil {
		t.Fatal(err)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	r := s.SeenAndPending(ctx, []string{"msg:t:1"}, time.Minute, a.Session)
	if r.SeenErr != nil || r.PendingErr != nil || !r.First[0] || r.Pending == nil || r.Pending.ID != a.ID {
		t.Fatalf("after SCRIPT FLUSH: %+v", r)
	}
	srv.Stop()
	r = s.SeenAndPending(ctx, []string{"msg:t:2", "evt:t:2"}, time.Minute, a.Session)
	if approval.KindOf(r.SeenErr) != errkind.Unavailable || approval.KindOf(r.PendingErr) != errkind.Unavailable ||
		!r.First[0] || !r.First[1] || r.Pending != nil {
		t.Fatalf("server gone: %+v", r)
	}
}
