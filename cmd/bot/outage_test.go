package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/internal/testredis"
)

// cutProxy forwards TCP connections to a Redis and can cut them: while
// cut, it drops every open connection and every new one at once, as a
// Redis that went away does to its clients, yet the data behind it stays
// (unlike a restarted test server, which comes back empty).
type cutProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	t.Cleanup(func() { ln.Close(); p.setCut(true) })
	go p.serve()
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *cutProxy) forward(c net.Conn) {
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		c.Close()
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[up] = struct{}{}
	p.mu.Unlock()
	go func() { io.Copy(up, c); up.Close() }()
	io.Copy(c, up)
	c.Close()
}

// setCut cuts (true) or restores (false) the link to Redis.
func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
}

// TestRedisOutage: Redis goes away while an approval is pending. The
// confirmation gets a clear "temporarily unavailable" answer and nothing
// runs; /readyz fails; when Redis is back, without a restart, /readyz
// recovers and the same approval is decided and runs exactly once.
func TestRedisOutage(t *testing.T) {
	client, prefix := testredis.Start(t)
	c, ok := client.(*redis.Client)
	if !ok || c.Options().Network == "unix" {
		t.Skipf("the test Redis is not a TCP single server (%T)", client)
	}
	if pw := c.Options().Password; pw != "" {
		t.Setenv("HITLBOT_STORE_REDIS_PASSWORD", pw)
	}
	proxy := startCutProxy(t, c.Options().Addr)
	t.Setenv("HITLBOT_STORE_BACKEND", "redis")
	t.Setenv("HITLBOT_STORE_REDIS_URL", fmt.Sprintf("redis://%s/%d", proxy.addr(), c.Options().DB))
	t.Setenv("HITLBOT_STORE_REDIS_PREFIX", prefix)

	s := serve(t, "-data", t.TempDir())
	tok := token(t, chat(t, s.base, map[string]any{"message": deleteCancelled}))

	proxy.setCut(true)
	waitFor(t, 20*time.Second, "/readyz to fail while Redis is away", func() bool {
		code, _ := get(t, s.base+"/readyz")
		return code == http.StatusServiceUnavailable
	})
	code, res := post(t, s.base+"/agent/chat", map[string]any{"confirmationToken": tok, "confirmed": true})
	if code != http.StatusServiceUnavailable || res["error"] != "unavailable" ||
		!strings.Contains(fmt.Sprint(res["message"]), "temporarily unavailable") {
		t.Fatalf("confirming while Redis is away: %d %v; want 503 unavailable with a clear sentence", code, res)
	}

	proxy.setCut(false)
	waitFor(t, 20*time.Second, "/readyz to recover once Redis is back", func() bool {
		code, _ := get(t, s.base+"/readyz")
		return code == http.StatusOK
	})
	res = chat(t, s.base, map[string]any{"confirmationToken": tok, "confirmed": true})
	if !strings.Contains(fmt.Sprint(res["text"]), "7 rows affected") {
		t.Fatalf("confirming once Redis is back answered %v; want the statement run (7 rows, none deleted during the outage)", res)
	}
	if code, _ := post(t, s.base+"/agent/chat", map[string]any{"confirmationToken": tok, "confirmed": true}); code != http.StatusNotFound {
		t.Fatalf("a second confirmation got %d, want 404", code)
	}
}

// post sends a JSON body and decodes the JSON answer, whatever its status.
func post(t *testing.T, url string, req map[string]any) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(req)
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("POST %s: status %d, decode: %v", url, resp.StatusCode, err)
	}
	return resp.StatusCode, out
}
