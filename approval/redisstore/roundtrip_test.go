package redisstore_test

import (
	"context"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/approval/storetest"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

// counter is a go-redis hook that records every command and pipeline sent:
// each is one round trip to Redis.
type counter struct {
	mu   sync.Mutex
	cmds []string
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.mu.Lock()
		c.cmds = append(c.cmds, cmd.Name())
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.mu.Lock()
		c.cmds = append(c.cmds, "pipeline")
		c.mu.Unlock()
		return next(ctx, cmds)
	}
}

// withoutHandshakes drops the handshake of a connection opened during an
// operation (a pipeline of HELLO and CLIENT SETINFO, recorded as
// "pipeline", "hello"): go-redis may open one more pooled connection while
// the scripts are first loaded.
func withoutHandshakes(cmds []string) []string {
	var out []string
	for i := 0; i < len(cmds); i++ {
		if cmds[i] == "pipeline" && i+1 < len(cmds) && cmds[i+1] == "hello" {
			i++
			continue
		}
		out = append(out, cmds[i])
	}
	return out
}

// take returns the commands recorded since the last take.
func (c *counter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	got := c.cmds
	c.cmds = nil
	return got
}

// TestRoundTrips counts the commands each operation sends, once the
// scripts are cached on the server.
func TestRoundTrips(t *testing.T) {
	c, prefix := testredis.Start(t)
	cnt := &counter{}
	c.AddHook(cnt)
	s, err := redisstore.New(c, redisstore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Open the connection first: its handshake (HELLO, CLIENT SETINFO) is
	// not part of any operation.
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	now := storetest.T0.Add(time.Minute)
	approve := func(a *approval.Approval) approval.ClaimRequest {
		return approval.ClaimRequest{Intent: approval.IntentApprove, PayloadSHA256: a.PayloadSHA256, Actor: "bob", Source: approval.SourceCard, Now: now}
	}
	executed := approval.Outcome{Status: approval.StatusExecuted, Content: "ok"}

	// One decision, start to end; the first round loads the scripts
	// (EVALSHA, then EVAL when the server does not know one yet).
	decision := func(t *testing.T, check bool) {
		a := storetest.NewApproval(t)
		b := storetest.NewApproval(t, a.Session)
		steps := []struct {
			name string
			want int
			fn   func() error
		}{
			{"Put", 1, func() error { _, err := s.Put(ctx, a, approval.Outcome{}); return err }},
			{"Put (superseding)", 1, func() error { _, err := s.Put(ctx, b, approval.Outcome{}); return err }},
			{"AddCards", 1, func() error {
				return errOf(s.AddCards(ctx, b.ID, []approval.CardRef{{Channel: "web", MessageID: "1"}}))
			}},
			{"Get", 1, func() error { _, err := s.Get(ctx, b.ID); return err }},
			{"Pending", 1, func() error { _, err := s.Pending(ctx, b.Session); return err }},
			{"Claim", 1, func() error { _, err := s.Claim(ctx, b.ID, approve(b)); return err }},
			{"Complete", 1, func() error { return errOf(s.Complete(ctx, b.ID, approval.StateExecuted, executed, time.Hour)) }},
			{"Cancel", 1, func() error { _, _, err := s.Cancel(ctx, a.ID, approval.Outcome{}, now); return err }},
			{"Seen", 1, func() error { _, err := s.Seen(ctx, string(b.ID), time.Minute); return err }},
			{"PutGrant", 1, func() error {
				return s.PutGrant(ctx, approval.Grant{Session: b.Session, Tool: "t", ExpiresAt: time.Now().Add(time.Minute)}, time.Minute)
			}},
			{"GrantFor", 1, func() error { _, err := s.GrantFor(ctx, b.Session, string(b.ID)); return err }},
			{"Grants", 1, func() error { _, err := s.Grants(ctx, b.Session); return err }},
			{"Revoke", 1, func() error { _, err := s.Revoke(ctx, b.Session); return err }},
		}
		for _, st := range steps {
			cnt.take()
			if err := st.fn(); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			got := cnt.take()
			if !check {
				got = withoutHandshakes(got)
				if len(got) > 2 {
					t.Errorf("%s, first run: %d round trips %v, want at most 2", st.name, len(got), got)
				}
				continue
			}
			if len(got) != st.want {
				t.Errorf("%s: %d round trips %v, want %d", st.name, len(got), got, st.want)
			} else {
				t.Logf("%-18s %d round trip  %v", st.name, len(got), got)
			}
		}
	}
	decision(t, false)
	decision(t, true)

	// A Claim that replays a cached result, and one that ends the approval,
	// are one round trip too.
	a := storetest.NewApproval(t)
	a.IdempotencyKey = ""
	b := storetest.NewApproval(t)
	for _, x := range []*approval.Approval{a, b} {
		if _, err := s.Put(ctx, x, approval.Outcome{}); err != nil {
			t.Fatal(err)
		}
	}
	cnt.take()
	reject := approve(a)
	reject.Intent = approval.IntentReject
	if r, err := s.Claim(ctx, a.ID, reject); err != nil || !r.Ended {
		t.Fatalf("reject: %+v, %v", r, err)
	}
	late := approve(b)
	late.Now = b.ExpiresAt
	if r, err := s.Claim(ctx, b.ID, late); err != nil || r.Code != approval.ClaimExpired {
		t.Fatalf("late approve: %+v, %v", r, err)
	}
	if got := cnt.take(); !slices.Equal(got, []string{"evalsha", "evalsha"}) {
		t.Errorf("two ending claims sent %v, want two EVALSHA", got)
	}
}

// TestChatCodeAfterPut: Put reads its approval's chat index back in its
// own round trip, so the card's short code that follows it (ChatCode, as
// Engine.Request asks it) costs no round trip when the approval is alone
// in its chat, and one (the records) when it is not; each answers what
// CodeIn of ChatPending answers.
func TestChatCodeAfterPut(t *testing.T) {
	c, prefix := testredis.Start(t)
	cnt := &counter{}
	c.AddHook(cnt)
	s, err := redisstore.New(c, redisstore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	chat := "chat-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	mk := func(user string) *approval.Approval {
		a := storetest.NewApproval(t, approval.SessionKey("test:"+chat+":"+user))
		a.Channel, a.ChatID = "test", chat
		if _, err := s.Put(ctx, a, approval.Outcome{}); err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, st := range []struct {
		user string
		want int
	}{{"ou_a", 0}, {"ou_b", 1}} {
		a := mk(st.user)
		cnt.take()
		got, err := s.ChatCode(ctx, a)
		if n := len(cnt.take()); err != nil || n != st.want {
			t.Fatalf("ChatCode after Put (%s) = %q, %v in %d round trips, want %d", st.user, got, err, n, st.want)
		}
		waiting, err := s.ChatPending(ctx, a.Channel, a.ChatID)
		if want := approval.CodeIn(waiting, a); err != nil || got != want {
			t.Fatalf("ChatCode(%s) = %q; CodeIn of ChatPending %q, %v", st.user, got, want, err)
		}
		// Asked again, with nothing kept of the Put: the index is read.
		cnt.take()
		if again, err := s.ChatCode(ctx, a); err != nil || again != got || len(cnt.take()) != st.want+1 {
			t.Fatalf("ChatCode again = %q, %v", again, err)
		}
	}
}
