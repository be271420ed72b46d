package feishu

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
	"github.com/hitlbot/hitlbot/channels/internal/marks"
)

// countingMetrics records what a channel counts (channels.PlatformMetrics).
type countingMetrics struct {
	mu                          sync.Mutex
	requests                    map[string]int // "api code"
	throttled, retried, dropped int
}

func (m *countingMetrics) Request(platform, api, code string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.requests == nil {
		m.requests = map[string]int{}
	}
	m.requests[api+" "+code]++
}
func (m *countingMetrics) Throttled(platform, api string) { m.mu.Lock(); m.throttled++; m.mu.Unlock() }
func (m *countingMetrics) Retried(platform, api string)   { m.mu.Lock(); m.retried++; m.mu.Unlock() }
func (m *countingMetrics) DeliveryFailed(platform, api string) {
	m.mu.Lock()
	m.dropped++
	m.mu.Unlock()
}

// testClock is a clock a test moves.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// sendAll has each channel send n notices to chat at once and returns
// the errors.
func sendAll(chs []*Channel, chat string, n int) []error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for i, ch := range chs {
		for k := range n {
			wg.Go(func() {
				err := ch.Send(context.Background(), channels.Target{ChatID: chat}, channels.Outgoing{Kind: channels.OutNotice, Text: fmt.Sprintf("replica %d, notice %d", i, k)})
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return errs
}

// Two bots in one group (each with its own budget) together send more
// than Feishu's 5 messages per second to the chat: Feishu answers some
// 230020 (HTTP 400), and each is retried after a backoff until it goes.
// Nothing is dropped; the throttles and retries are counted.
func TestFrequencyLimitRetried(t *testing.T) {
	fake := feishutest.New()
	defer fake.Close()
	m := &countingMetrics{}
	var chs []*Channel
	for range 2 {
		cfg := testConfig(fake)
		cfg.MaxRetries, cfg.Metrics = 6, m
		ch, err := New(cfg, quiet)
		if err != nil {
			t.Fatal(err)
		}
		chs = append(chs, ch)
	}
	if errs := sendAll(chs, "oc_busy", 4); len(errs) > 0 {
		t.Fatalf("messages dropped: %v", errs)
	}
	sent := 0
	for _, c := range fake.Calls() {
		if c.Op == "create" && c.Answered == 200 {
			sent++
		}
	}
	refused := len(fake.Refused(feishutest.FrequencyLimitCode))
	if sent != 8 || refused == 0 {
		t.Fatalf("%d of 8 messages sent, %d refused with 230020 (the two bots together exceed 5 per second)", sent, refused)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.throttled != refused || m.retried < refused || m.dropped != 0 || m.requests["create 230020"] != refused || m.requests["create 0"] != 8 {
		t.Fatalf("counted %+v, want %d throttles and retries, no delivery failure", m, refused)
	}
}

// Two replicas of one bot share the per-chat budget through the shared
// store: together they stay under Feishu's 5 messages per second to a
// chat, and Feishu refuses none. Both the fake and the store run on one
// clock the test moves when every slot is taken.
func TestReplicasShareTheChatBudget(t *testing.T) {
	fake := feishutest.New()
	defer fake.Close()
	clock := &testClock{t: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)}
	fake.SetClock(clock.now)
	shared := &grantCounter{Store: marks.NewLocal(clock.now)}
	// When every slot is taken, the clock moves on, once every message
	// the budget let go has reached Feishu (else one still on its way
	// would land in the next second).
	var mu sync.Mutex
	moveOn := func() {
		mu.Lock()
		defer mu.Unlock()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if int64(len(fake.Calls())) >= shared.granted.Load() {
				break
			}
		}
		clock.add(slotHold)
	}
	var chs []*Channel
	for range 2 {
		cfg := testConfig(fake)
		cfg.Marks = shared
		ch, err := New(cfg, quiet)
		if err != nil {
			t.Fatal(err)
		}
		ch.api.chatLimit.onWait = moveOn
		chs = append(chs, ch)
	}
	if errs := sendAll(chs, "oc_busy", 6); len(errs) > 0 {
		t.Fatalf("messages dropped: %v", errs)
	}
	if r := fake.Refused(feishutest.FrequencyLimitCode); len(r) != 0 {
		t.Fatalf("Feishu refused %d of the replicas' messages with 230020: they exceeded the chat's 5 per second together", len(r))
	}
}

// grantCounter counts the slots a store granted.
type grantCounter struct {
	marks.Store
	granted atomic.Int64
}

func (g *grantCounter) Seen(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	first, err := g.Store.Seen(ctx, key, ttl)
	if first {
		g.granted.Add(1)
	}
	return first, err
}

// A message Feishu keeps refusing is given up on after MaxRetries, with
// a WARN and a delivery failure counted, and the error returned: never
// dropped silently.
func TestGivingUpIsLoudAndCounted(t *testing.T) {
	fake := feishutest.New()
	defer fake.Close()
	fake.Throttle("create", 10, "0")
	logs, logger := newLogBuf()
	m := &countingMetrics{}
	cfg := testConfig(fake)
	cfg.MaxRetries, cfg.Metrics = 2, m
	ch, err := New(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	err = ch.Send(context.Background(), channels.Target{ChatID: "oc_1"}, channels.Outgoing{Kind: channels.OutNotice, Text: "hello"})
	if err == nil || !strings.Contains(err.Error(), "99991400") {
		t.Fatalf("Send = %v, want the throttle", err)
	}
	warned := false
	for _, l := range logs.lines(t) {
		if l["level"] == "WARN" && strings.Contains(fmt.Sprint(l["msg"]), "not delivered") {
			warned = true
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !warned || m.dropped != 1 || m.retried != 2 || m.throttled != 3 {
		t.Fatalf("warned %v, counted %+v: want a WARN, 1 delivery failure, 2 retries, 3 throttles", warned, m)
	}
}

// Redraws of one card coalesce: while a redraw waits for the message's
// PATCH budget, a newer one replaces it, and only the newest is sent.
func TestRedrawsCoalesce(t *testing.T) {
	fake := feishutest.New()
	defer fake.Close()
	clock := &testClock{t: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)}
	fake.SetClock(clock.now)
	cfg := testConfig(fake)
	cfg.Marks = marks.NewLocal(clock.now)
	ch, err := New(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id, err := ch.api.post(ctx, channels.Target{ChatID: "oc_1"}, "interactive", `{"schema":"2.0","config":{"update_multi":true},"body":{"elements":[]}}`, "u1")
	if err != nil {
		t.Fatal(err)
	}
	card := func(n int) string {
		return fmt.Sprintf(`{"schema":"2.0","config":{"update_multi":true},"body":{"elements":[{"tag":"markdown","content":"redraw %d"}]}}`, n)
	}
	for n := range perKeyRate {
		if err := ch.api.patch(ctx, id, card(n)); err != nil {
			t.Fatal(err)
		}
	}
	// The budget is spent: the next redraws wait; each newer one
	// supersedes the one before. The clock moves once all have queued.
	waiting := make(chan struct{}, 16)
	release := make(chan struct{})
	ch.api.msgLimit.onWait = func() {
		waiting <- struct{}{}
		<-release
	}
	var wg sync.WaitGroup
	for n := 10; n < 13; n++ {
		wg.Go(func() {
			if err := ch.api.patch(ctx, id, card(n)); err != nil {
				t.Error(err)
			}
		})
		<-waiting // queued, and waiting: the next one is newer
	}
	clock.add(slotHold)
	close(release)
	wg.Wait()
	var patched []string
	for _, c := range fake.Calls() {
		if c.Op == "patch" && c.Answered == 200 {
			patched = append(patched, c.Content)
		}
	}
	if len(patched) != perKeyRate+1 || !strings.Contains(patched[perKeyRate], "redraw 12") {
		t.Fatalf("patches %d, last %q: want the 5 within the budget, then only the newest redraw", len(patched), patched[len(patched)-1])
	}
}
