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
	if err := ch.Send(context.Background(), to, channels.Outgoing{Kind: channels.OutNotice, Text: "one"}); err != nil {
		t.Fatal(err)
	}
	fake.RotateToken()
	if err := ch.Send(context.Background(), to, channels.Outgoing{Kind: channels.OutNotice, Text: "two"}); err != nil {
		t.Fatal(err)
	}
	if err := ch.Send(context.Background(), to, channels.Outgoing{Kind: channels.OutNotice, Text: "three"}); err != nil {
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

// The wait before a retry honours x-ogw-ratelimit-reset (even when it is
// shorter or longer than the backoff), falls back to the exponential
// backoff when the header is absent or unusable, and never exceeds the cap
// (nor overflows for absurd values).
func TestRetryWait(t *testing.T) {
	const max = 10 * time.Second
	for _, tc := range []struct {
		reset   string
		attempt int
		max     time.Duration
		want    time.Duration
	}{
		{"1", 0, max, 1050 * time.Millisecond},
		{" 2 ", 3, max, 2050 * time.Millisecond}, // the header wins over a longer backoff
		{"0.05", 0, max, 100 * time.Millisecond}, // and over a shorter one
		{"0", 2, max, 50 * time.Millisecond},
		{"30", 0, max, max},
		{"1e300", 0, max, max},
		{"Inf", 0, max, 300 * time.Millisecond},
		{"NaN", 1, max, 600 * time.Millisecond},
		{"-1", 0, max, 300 * time.Millisecond},
		{"soon", 2, max, 1200 * time.Millisecond},
		{"", 0, max, 300 * time.Millisecond},
		{"", 1, max, 600 * time.Millisecond},
		{"", 5, max, 9600 * time.Millisecond},
		{"", 6, max, max},
		{"", 1000, max, max},
		{"1", 0, time.Second, time.Second},
		{"", 3, time.Second, time.Second},
	} {
		if got := retryWait(tc.reset, tc.attempt, tc.max); got != tc.want {
			t.Errorf("retryWait(%q, %d, %v) = %v, want %v", tc.reset, tc.attempt, tc.max, got, tc.want)
		}
	}
}

// A throttled reply is retried no sooner than x-ogw-ratelimit-reset says
// (1 s, where the first backoff would be 300 ms), with the same uuid.
func TestRateLimitResetHonoured(t *testing.T) {
	fake := feishutest.New()
	defer fake.Close()
	cfg := testConfig(fake)
	cfg.MaxRetryWait = 5 * time.Second
	ch, err := New(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	fake.Throttle("reply", 1, "1")
	to := channels.Target{ChatID: "oc_rl", ReplyTo: "om_rl"}
	if err := ch.Send(context.Background(), to, channels.Outgoing{Kind: channels.OutAnswer, Text: "later"}); err != nil {
		t.Fatal(err)
	}
	calls := fake.Calls()
	if len(calls) != 2 || calls[0].Answered != 429 || calls[1].Answered != 200 || calls[0].UUID != calls[1].UUID {
		t.Fatalf("calls %+v", calls)
	}
	if gap := calls[1].At.Sub(calls[0].At); gap < time.Second {
		t.Fatalf("retried %v after a 429 with x-ogw-ratelimit-reset: 1", gap)
	}
}
