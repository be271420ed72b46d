package redisstore_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/approval/storetest"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

// dropProxy forwards TCP connections to Redis. When armed, it swallows the
// next reply coming back from Redis and cuts that connection: the command
// ran, but the client never hears so, and go-redis sends it again.
type dropProxy struct {
	ln              net.Listener
	network, target string
	armed           atomic.Bool
	dropped         atomic.Int32
	mu              sync.Mutex
	conns           []net.Conn
}

func startDropProxy(t *testing.T, network, target string) *dropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{ln: ln, network: network, target: target}
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			_ = c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial(network, target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); _ = s.Close() }()
			go func() {
				defer c.Close()
				defer s.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := s.Read(buf)
					if err != nil {
						return
					}
					if p.armed.CompareAndSwap(true, false) {
						p.dropped.Add(1)
						return // the reply is lost, the connection cut
					}
					if _, err := c.Write(buf[:n]); err != nil {
						return
					}
				}
			}()
		}
	}()
	return p
}

// TestLostReply: when the reply to a script is lost after the script ran,
// go-redis sends the command again; the re-sent call must get the answer of
// the first run (a claim that won must not come back already_claimed).
//
// Both ways the store sends its commands: through go-redis's auto-pipeliner
// (the default) and each on its own (Options.NoAutoPipeline).
func TestLostReply(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoAutoPipeline=%v", off), func(t *testing.T) { testLostReply(t, off) })
	}
}

func testLostReply(t *testing.T, noAutoPipeline bool) {
	direct, prefix := testredis.Start(t)
	opt := direct.(*redis.Client).Options()
	proxy := startDropProxy(t, opt.Network, opt.Addr)
	c := redis.NewClient(&redis.Options{Addr: proxy.ln.Addr().String(), Protocol: opt.Protocol, MaxRetries: 3})
	t.Cleanup(func() { _ = c.Close() })
	s, err := redisstore.New(c, redisstore.Options{Prefix: prefix, NoAutoPipeline: noAutoPipeline})
	if err != nil {
		t.Fatal(err)
	}
	// Trace the keys the scripts touch, to check the slots of the paths
	// that answer a re-sent call too.
	logKey := prefix + "trace"
	redisstore.TraceKeys(s, logKey)
	ctx := context.Background()
	now := storetest.T0.Add(time.Minute)
	approve := func(a *approval.Approval) approval.ClaimRequest {
		return approval.ClaimRequest{Intent: approval.IntentApprove, PayloadSHA256: a.PayloadSHA256, Actor: "bob", Source: approval.SourceCard, Now: now}
	}
	// lossy runs op with the next reply lost.
	lossy := func(name string, op func() error) {
		t.Helper()
		if err := s.Ping(ctx); err != nil { // a live connection, scripts aside
			t.Fatal(err)
		}
		direct.Del(ctx, logKey)
		before := proxy.dropped.Load()
		proxy.armed.Store(true)
		if err := op(); err != nil {
			t.Fatalf("%s with a lost reply: %v", name, err)
		}
		if proxy.dropped.Load() != before+1 {
			t.Fatalf("%s: no reply was dropped", name)
		}
		calls := direct.LRange(ctx, logKey, 0, -1).Val()
		slot := -1
		for _, call := range calls {
			cmd, key, _ := strings.Cut(call, " ")
			if cmd == "PUBLISH" {
				continue
			}
			if slot == -1 {
				slot = keySlot(key)
			} else if keySlot(key) != slot {
				t.Errorf("%s: %s %q is in slot %d, not %d", name, cmd, key, keySlot(key), slot)
			}
		}
	}
	// Load every script first, so that the dropped reply is the script's.
	warm := storetest.NewApproval(t)
	warm2 := storetest.NewApproval(t, warm.Session)
	_, _ = s.Put(ctx, warm, approval.Outcome{})
	_, _ = s.Put(ctx, warm2, approval.Outcome{})
	_ = errOf(s.AddCards(ctx, warm2.ID, nil))
	_, _ = s.Pending(ctx, warm2.Session)
	_, _ = s.Claim(ctx, warm2.ID, approve(warm2))
	_ = errOf(s.Complete(ctx, warm2.ID, approval.StateExecuted, approval.Outcome{Status: approval.StatusExecuted, Content: "done"}, time.Hour))
	_, _, _ = s.Cancel(ctx, warm.ID, approval.Outcome{}, now)

	a := storetest.NewApproval(t, warm.Session)
	lossy("Put", func() error {
		old, err := s.Put(ctx, a, approval.Outcome{})
		if err == nil && old != nil {
			t.Errorf("Put superseded %s", old.ID)
		}
		return err
	})
	b := storetest.NewApproval(t, warm.Session)
	lossy("Put (superseding)", func() error {
		old, err := s.Put(ctx, b, approval.Outcome{})
		if err == nil && (old == nil || old.ID != a.ID || old.State != approval.StateSuperseded) {
			t.Errorf("Put returned %+v, want %s superseded", old, a.ID)
		}
		return err
	})
	lossy("AddCards", func() error {
		return errOf(s.AddCards(ctx, b.ID, []approval.CardRef{{Channel: "web", MessageID: "1"}}))
	})
	if got, _ := s.Get(ctx, b.ID); len(got.Cards) != 1 {
		t.Errorf("cards after a re-sent AddCards: %+v, want one", got.Cards)
	}
	lossy("Claim", func() error {
		r, err := s.Claim(ctx, b.ID, approve(b))
		if err == nil && (r.Code != approval.ClaimOK || r.Ended || r.Cached == nil || r.Cached.Content != "done") {
			t.Errorf("Claim = %s ended=%v cached=%+v, want claimed with the cached result", r.Code, r.Ended, r.Cached)
		}
		return err
	})
	lossy("Complete", func() error {
		return errOf(s.Complete(ctx, b.ID, approval.StateExecuted, approval.Outcome{Status: approval.StatusExecuted}, time.Hour))
	})
	d := storetest.NewApproval(t)
	_, _ = s.Put(ctx, d, approval.Outcome{})
	lossy("Claim (reject)", func() error {
		req := approve(d)
		req.Intent = approval.IntentReject
		r, err := s.Claim(ctx, d.ID, req)
		if err == nil && (r.Code != approval.ClaimOK || !r.Ended || r.Approval.State != approval.StateRejected) {
			t.Errorf("reject = %s ended=%v, want claimed, ended", r.Code, r.Ended)
		}
		return err
	})
	mk := storetest.NewApproval(t)
	_, _ = s.Put(ctx, mk, approval.Outcome{})
	lossy("Claim (marked)", func() error {
		// The re-sent claim finds the mark it set itself: no duplicate.
		req := approve(mk)
		req.Mark, req.MarkTTL = "evt:test:lost", time.Minute
		r, err := s.Claim(ctx, mk.ID, req)
		if err == nil && r.Code != approval.ClaimOK {
			t.Errorf("marked claim = %s, want claimed", r.Code)
		}
		return err
	})
	e := storetest.NewApproval(t)
	_, _ = s.Put(ctx, e, approval.Outcome{})
	lossy("Cancel", func() error {
		got, ok, err := s.Cancel(ctx, e.ID, approval.Outcome{}, now)
		if err == nil && (!ok || got.State != approval.StateCancelled) {
			t.Errorf("Cancel = %v, %v; want cancelled, true", got.State, ok)
		}
		return err
	})
	// A de-duplication mark (Seen: the resume claim, an inbound
	// message's mark) that was set by the first run is the re-sent
	// call's own: first, not a duplicate of itself. (A resume claim that
	// won and heard "lost" would leave the turn with nobody to go on.)
	lossy("Seen", func() error {
		first, err := s.Seen(ctx, "resume:lost", time.Minute)
		if err == nil && !first {
			t.Errorf("Seen = not first, want first")
		}
		return err
	})
	lossy("SeenAndPending", func() error {
		c := s.SeenAndPending(ctx, []string{"evt:lost:1", "evt:lost:2"}, time.Minute, b.Session)
		if c.SeenErr == nil && (!c.First[0] || !c.First[1]) {
			t.Errorf("SeenAndPending first = %v, want both first", c.First)
		}
		return c.SeenErr
	})
	if first, _ := s.Seen(ctx, "resume:lost", time.Minute); first {
		t.Error("a second Seen of the same key = first, want a duplicate")
	}
	if c := s.SeenAndPending(ctx, []string{"evt:lost:1"}, time.Minute, b.Session); c.First[0] {
		t.Error("a second SeenAndPending of the same key = first, want a duplicate")
	}
	// A different call still sees the conflict.
	if _, err := s.Put(ctx, b, approval.Outcome{}); approval.KindOf(err) != errkind.Conflict {
		t.Errorf("a second Put of %s = %v, want errkind.Conflict", b.ID, err)
	}
	if r, _ := s.Claim(ctx, b.ID, approve(b)); r.Code != approval.ClaimAlreadyClaimed {
		t.Errorf("a second Claim = %s, want already_claimed", r.Code)
	}
}

// TestLostRepliesUnderLoad: replies lost while many calls are in flight
// at once, so that the auto-pipeliner has batched them (a cut connection
// loses every reply of its batch): each call that go-redis sends again
// gets the answer of its first run, never another's and never "already
// claimed" for a claim it won, both ways the store sends commands.
func TestLostRepliesUnderLoad(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoAutoPipeline=%v", off), func(t *testing.T) {
			direct, prefix := testredis.Start(t)
			opt := direct.(*redis.Client).Options()
			proxy := startDropProxy(t, opt.Network, opt.Addr)
			c := redis.NewClient(&redis.Options{Addr: proxy.ln.Addr().String(), Protocol: opt.Protocol, MaxRetries: 5})
			t.Cleanup(func() { _ = c.Close() })
			s, err := redisstore.New(c, redisstore.Options{Prefix: prefix, NoAutoPipeline: off})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			now := storetest.T0.Add(time.Minute)
			const n = 64
			as := make([]*approval.Approval, n)
			for i := range as {
				as[i] = storetest.NewApproval(t)
				if _, err := s.Put(ctx, as[i], approval.Outcome{}); err != nil {
					t.Fatal(err)
				}
			}
			// Drop a reply now and then while the claims run: the first
			// one from the start.
			proxy.armed.Store(true)
			stop := make(chan struct{})
			var armer sync.WaitGroup
			armer.Add(1)
			go func() {
				defer armer.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if proxy.dropped.Load() < 8 {
						proxy.armed.Store(true)
					}
					time.Sleep(time.Millisecond)
				}
			}()
			var wg sync.WaitGroup
			errs := make([]error, n)
			codes := make([]approval.ClaimCode, n)
			for i, a := range as {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, err := s.Claim(ctx, a.ID, approval.ClaimRequest{Intent: approval.IntentApprove, PayloadSHA256: a.PayloadSHA256,
						Actor: "bob", Source: approval.SourceCard, Now: now})
					errs[i], codes[i] = err, r.Code
					if err == nil && r.Code == approval.ClaimOK {
						_, errs[i] = s.Complete(ctx, a.ID, approval.StateExecuted, approval.Outcome{Status: approval.StatusExecuted}, time.Hour)
					}
				}()
			}
			wg.Wait()
			close(stop)
			armer.Wait()
			proxy.armed.Store(false)
			if proxy.dropped.Load() == 0 {
				t.Fatal("no reply was dropped")
			}
			for i, a := range as {
				if errs[i] != nil {
					t.Errorf("approval %d: %v (go-redis gives up after its retries)", i, errs[i])
					continue
				}
				if codes[i] != approval.ClaimOK {
					t.Errorf("approval %d: claim %s, want claimed (its re-sent claim must answer as its first run)", i, codes[i])
				}
				got, err := s.Get(ctx, a.ID)
				if err != nil || got.State != approval.StateExecuted {
					t.Errorf("approval %d: %v %v, want executed", i, got.State, err)
				}
			}
			t.Logf("%d replies dropped", proxy.dropped.Load())
		})
	}
}
