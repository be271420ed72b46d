package feishu

import (
	"context"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
)

// A cached tenant token Feishu no longer accepts (99991663) is replaced
// by a fresh one, and the call goes through.
func TestStaleTokenRefreshed(t *testing.T) {
	fake := feishutest.New()
	defer fake.Close()
	ch, err := New(testConfig(fake), quiet)
	if err != nil {
		t.Fatal(err)
	}
	to := channels.Target{ChatID: "oc_1"}
	if err := ch.Send(context.Background(), to, channels.Outgoing{Kind: "notice", Text: "one"}); err != nil {
		t.Fatal(err)
	}
	fake.RotateToken()
	if err := ch.Send(context.Background(), to, channels.Outgoing{Kind: "notice", Text: "two"}); err != nil {
		t.Fatal(err)
	}
	if err := ch.Send(context.Background(), to, channels.Outgoing{Kind: "notice", Text: "three"}); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range fake.Calls() {
		if c.Op == "create" && c.Answered == 200 {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d messages created; calls %+v", n, fake.Calls())
	}
}

func TestPerChatLimit(t *testing.T) {
	var k keyLimiter
	ctx := context.Background()
	start := time.Now()
	for range 8 {
		if err := k.wait(ctx, "oc_1"); err != nil {
			t.Fatal(err)
		}
		if err := k.wait(ctx, "oc_2"); err != nil { // another chat has its own budget
			t.Fatal(err)
		}
	}
	// 5 at once, then 3 more at 5 per second.
	if took := time.Since(start); took < 500*time.Millisecond || took > 2*time.Second {
		t.Fatalf("8 calls to one chat took %v", took)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := k.wait(cctx, "oc_1"); err == nil {
		t.Fatal("wait ignored a cancelled context")
	}
}
