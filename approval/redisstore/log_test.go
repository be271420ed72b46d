package redisstore_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval/redisstore"
)

// TestSetLogger: go-redis's own log lines (here: a failed dial to a closed
// port, and a TTL it truncates) come out as JSON records of the slog
// logger, component "redis", not as plain lines on stderr.
func TestSetLogger(t *testing.T) {
	var buf lockedBuffer
	redisstore.SetLogger(slog.New(slog.NewJSONHandler(&buf, nil)))
	t.Cleanup(func() { redisstore.SetLogger(slog.New(slog.NewJSONHandler(os.Stderr, nil))) })

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	c := redis.NewClient(&redis.Options{Addr: closed, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Set(context.Background(), "k", "v", 500*time.Microsecond).Err(); err == nil {
		t.Fatal("SET through a closed port succeeded")
	}

	want := map[string]bool{"failed to dial": false, "minimal supported value": false}
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON record: %q (%v)", line, err)
		}
		msg, _ := rec["msg"].(string)
		for w := range want {
			if strings.Contains(msg, w) {
				want[w] = true
				if rec["component"] != "redis" || rec["level"] != "WARN" {
					t.Errorf("record %v: want component redis, level WARN", rec)
				}
			}
		}
	}
	for w, seen := range want {
		if !seen {
			t.Errorf("no record says %q; the log:\n%s", w, buf.String())
		}
	}
}
