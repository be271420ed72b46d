package dingtalk

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/dingtalk/dingtalktest"
)

// waitRecorder stands for apiClient.sleep: it writes down each wait and
// returns at once.
type waitRecorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (w *waitRecorder) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waits = append(w.waits, d)
	return nil
}

const groupSend = "/v1.0/robot/groupMessages/send"

// throttleCases: DingTalk's documented throttles (throttle.go) refuse a
// call before it is carried out; those that pass within seconds are
// tried again after 1 s doubling (at most MaxRetries times), the month's
// quota is not; each try is counted, the message is sent at most once.
var throttleCases = []struct {
	name     string
	code     string // Throttle's code ("" HTTP 429)
	n        int    // refusals (-1: every call)
	fails    bool
	waits    []time.Duration
	sent     int // group messages carried out
	throttle int // calls counted as throttled
}{
	{"QpsLimitForAppkeyAndApi twice", dingtalktest.QpsLimitForAppkeyAndApi, 2, false, []time.Duration{time.Second, 2 * time.Second}, 1, 2},
	{"QpsLimitForApi once", dingtalktest.QpsLimitForApi, 1, false, []time.Duration{time.Second}, 1, 1},
	{"HTTP 429 once", "", 1, false, []time.Duration{time.Second}, 1, 1},
	{"QpsLimitForApi for good", dingtalktest.QpsLimitForApi, -1, true,
		[]time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}, 0, 5},
	{"the month's quota is spent: not tried again", dingtalktest.ApiCountLimitForOrg, -1, true, nil, 0, 1},
}

// TestThrottleRetried sends a group message through a fake DingTalk
// that throttles it.
func TestThrottleRetried(t *testing.T) {
	for _, tc := range throttleCases {
		t.Run(tc.name, func(t *testing.T) {
			f := dingtalktest.New(t)
			rec := &platformRecorder{}
			c, err := New(Config{ClientID: "app-key", ClientSecret: "app-secret", APIBaseURL: f.URL(), WebhookBaseURL: f.URL(),
				Lang: "en", HTTPTimeout: 5 * time.Second, Metrics: rec}, quiet)
			if err != nil {
				t.Fatal(err)
			}
			w := &waitRecorder{}
			c.api.sleep = w.sleep
			ctx := context.Background()
			if err := c.CheckCredentials(ctx); err != nil {
				t.Fatal(err)
			}
			f.Throttle(tc.code, tc.n)
			err = c.Send(ctx, channels.Target{Channel: Name, ChatID: "cid1"}, channels.Outgoing{Text: "hi"})
			if (err != nil) != tc.fails {
				t.Fatalf("err %v, want failure %v", err, tc.fails)
			}
			if !slices.Equal(w.waits, tc.waits) {
				t.Errorf("waits %v, want %v", w.waits, tc.waits)
			}
			sent := 0
			for _, call := range f.Calls(groupSend) {
				if !call.Refused {
					sent++
				}
			}
			if sent != tc.sent {
				t.Errorf("%d messages sent, want %d", sent, tc.sent)
			}
			throttled, retried, failed := 0, 0, 0
			for _, l := range rec.take() {
				switch l {
				case "throttled dingtalk robot/groupMessages/send":
					throttled++
				case "retried dingtalk robot/groupMessages/send":
					retried++
				case "failed dingtalk robot/groupMessages/send":
					failed++
				}
			}
			if throttled != tc.throttle || retried != len(tc.waits) || failed != map[bool]int{true: 1}[tc.fails] {
				t.Errorf("counted %d throttled, %d retried, %d failed; want %d, %d, %d", throttled, retried, failed,
					tc.throttle, len(tc.waits), map[bool]int{true: 1}[tc.fails])
			}
		})
	}
}

// TestOnlyThrottlesRetried: an answer that does not say the call was
// refused before it was carried out (a 5xx) is never tried again: the
// robot send APIs take no idempotency key, so a new try could send the
// message twice.
func TestOnlyThrottlesRetried(t *testing.T) {
	var sends atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == tokenPath {
			w.Write([]byte(`{"accessToken":"tok","expireIn":7200}`))
			return
		}
		sends.Add(1)
		w.WriteHeader(http.StatusBadGateway)
		w.Write([]byte(`{"code":"ServiceUnavailable","message":"upstream"}`))
	}))
	defer srv.Close()
	c, err := New(Config{ClientID: "app-key", ClientSecret: "app-secret", APIBaseURL: srv.URL, WebhookBaseURL: srv.URL}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	w := &waitRecorder{}
	c.api.sleep = w.sleep
	if err := c.Send(context.Background(), channels.Target{Channel: Name, ChatID: "cid1"}, channels.Outgoing{Text: "hi"}); err == nil {
		t.Fatal("a 502 was taken for a sent message")
	}
	if n := sends.Load(); n != 1 || len(w.waits) != 0 {
		t.Fatalf("%d sends and waits %v, want one send and no retry", n, w.waits)
	}
}

// TestRetryAfterHonoured: a throttled answer's Retry-After (seconds, or
// an HTTP date) is the wait, at most MaxRetryWait; without one the wait
// is 1 s doubling.
func TestRetryAfterHonoured(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		header  string
		attempt int
		want    time.Duration
	}{
		{"", 0, time.Second},
		{"", 2, 4 * time.Second},
		{"", 9, 10 * time.Second}, // MaxRetryWait
		{"3", 0, 3 * time.Second},
		{"0", 3, 0},
		{"120", 0, 10 * time.Second},
		{now.Add(5 * time.Second).Format(http.TimeFormat), 0, 5 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 1, 0},
		{"soon", 1, 2 * time.Second},
		{"-4", 0, time.Second},
	} {
		err := &apiError{Status: http.StatusTooManyRequests, RetryAfter: tc.header}
		if got := retryWait(retryAfter(err, now), tc.attempt, 10*time.Second); got != tc.want {
			t.Errorf("Retry-After %q, attempt %d: wait %v, want %v", tc.header, tc.attempt, got, tc.want)
		}
	}
}
