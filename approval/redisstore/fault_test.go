package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/approval/storetest"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

func wantUnavailable(t *testing.T, what string, err error) {
	t.Helper()
	if approval.KindOf(err) != errkind.Unavailable || !errors.Is(err, approval.ErrUnavailable) {
		t.Errorf("%s with Redis down = %v, want errkind.Unavailable wrapping ErrUnavailable", what, err)
	}
}

// TestRedisDown stops Redis in the middle of a flow: every operation fails
// closed with errkind.Unavailable (a Claim never claims), and once Redis is back
// the same Store works again, subscriptions included.
func TestRedisDown(t *testing.T) {
	srv := testredis.StartServer(t)
	c := srv.Client()
	s, err := redisstore.New(c, redisstore.Options{Prefix: "down:"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := storetest.T0.Add(time.Minute)
	approve := func(a *approval.Approval) approval.ClaimRequest {
		return approval.ClaimRequest{Intent: approval.IntentApprove, PayloadSHA256: a.PayloadSHA256, Actor: "bob", Source: approval.SourceCard, Now: now}
	}
	pending := storetest.NewApproval(t)
	claimed := storetest.NewApproval(t)
	for _, a := range []*approval.Approval{pending, claimed} {
		if _, err := s.Put(ctx, a, approval.Outcome{}); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := s.Claim(ctx, claimed.ID, approve(claimed)); err != nil || r.Code != approval.ClaimOK {
		t.Fatalf("Claim = %+v, %v", r, err)
	}
	heard := make(chan approval.ID, 100)
	if err := s.Subscribe(t.Context(), func(id approval.ID, _ approval.Outcome) { heard <- id }); err != nil {
		t.Fatal(err)
	}

	srv.Stop()
	start := time.Now()
	_, err = s.Put(ctx, storetest.NewApproval(t), approval.Outcome{})
	wantUnavailable(t, "Put", err)
	t.Logf("Put failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
	r, err := s.Claim(ctx, pending.ID, approve(pending))
	wantUnavailable(t, "Claim", err)
	if r.Code != "" || r.Approval != nil {
		t.Errorf("Claim with Redis down returned %+v", r)
	}
	wantUnavailable(t, "Complete", errOf(s.Complete(ctx, claimed.ID, approval.StateExecuted, approval.Outcome{Status: approval.StatusExecuted}, time.Hour)))
	first, err := s.Seen(ctx, "ev-1", time.Minute)
	wantUnavailable(t, "Seen", err)
	if first {
		t.Error("Seen with Redis down reported a first delivery")
	}
	_, err = s.Get(ctx, pending.ID)
	wantUnavailable(t, "Get", err)
	_, err = s.Pending(ctx, pending.Session)
	wantUnavailable(t, "Pending", err)
	_, _, err = s.Cancel(ctx, pending.ID, approval.Outcome{}, now)
	wantUnavailable(t, "Cancel", err)
	wantUnavailable(t, "AddCards", errOf(s.AddCards(ctx, pending.ID, nil)))
	wantUnavailable(t, "PutGrant", s.PutGrant(ctx, approval.Grant{Session: pending.Session, ExpiresAt: time.Now().Add(time.Hour)}, time.Hour))
	_, err = s.GrantFor(ctx, pending.Session, "g")
	wantUnavailable(t, "GrantFor", err)
	_, err = s.Grants(ctx, pending.Session)
	wantUnavailable(t, "Grants", err)
	_, err = s.Revoke(ctx, pending.Session)
	wantUnavailable(t, "Revoke", err)
	wantUnavailable(t, "Ping", s.Ping(ctx))
	wantUnavailable(t, "Subscribe", s.Subscribe(t.Context(), func(approval.ID, approval.Outcome) {}))
	if err != nil && strings.Contains(err.Error(), "password") {
		t.Errorf("error mentions a password: %v", err)
	}

	srv.Restart() // empty: scripts and keys are gone
	restarted := time.Now()
	// go-redis's pool, after failed dials, probes the server once a second
	// in the background and answers with the last dial error until a probe
	// succeeds; so the first Put may still fail, with errkind.Unavailable.
	var a *approval.Approval
	waitFor(t, 15*time.Second, "a Put to succeed after the restart", func() bool {
		a = storetest.NewApproval(t)
		_, err := s.Put(ctx, a, approval.Outcome{})
		if err != nil {
			wantUnavailable(t, "Put right after the restart", err)
		}
		return err == nil
	})
	t.Logf("Put works again %v after the restart", time.Since(restarted).Round(time.Millisecond))
	// The pool may still answer a dial error it remembers for a moment
	// (a refused dial sends nothing, so retrying the claim is safe).
	var again approval.ClaimResult
	waitFor(t, 15*time.Second, "a Claim to go through after the restart", func() bool {
		var err error
		again, err = s.Claim(ctx, a.ID, approve(a))
		if err != nil {
			wantUnavailable(t, "Claim right after the restart", err)
		}
		return err == nil
	})
	if again.Code != approval.ClaimOK {
		t.Fatalf("Claim after restart = %+v", again)
	}
	if first, err := s.Seen(ctx, "ev-1", time.Minute); err != nil || !first {
		t.Fatalf("Seen after restart = %v, %v", first, err)
	}
	// The subscription made before the outage comes back by itself.
	deadline := time.After(20 * time.Second)
	for {
		b := storetest.NewApproval(t)
		if _, err := s.Put(ctx, b, approval.Outcome{}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Cancel(ctx, b.ID, approval.Outcome{}, now); err != nil {
			t.Fatal(err)
		}
		select {
		case id := <-heard:
			if id != b.ID {
				t.Fatalf("heard %s, want %s", id, b.ID)
			}
			return
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatal("the subscription did not come back after the restart")
		}
	}
}

// TestSecretsNotInErrors: neither the password nor the URL shows in errors,
// whether the URL is malformed, the password wrong, or Redis down.
func TestSecretsNotInErrors(t *testing.T) {
	const secret = "s3cr%zzet-Pw"
	for _, u := range []string{
		"redis://:" + secret + "@localhost:notaport/0",
		"redis://user:" + secret + "@localhost:6379/abc",
		"http://user:" + secret + "@localhost:6379",
		"redis://user:" + secret + "@localhost:6379/0?bogus=1",
		"redis://user:s3cret-Pw@localhost:6379/0?bogus=1",
		"redis://user:s3cret-Pw@[::1:6379/0",
	} {
		_, err := redisstore.NewClient(redisstore.ClientConfig{URL: u})
		if err == nil {
			t.Errorf("NewClient(%q) succeeded", u)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "s3cr") || strings.Contains(msg, "localhost") || strings.Contains(msg, "%zz") {
			t.Errorf("NewClient error leaks the URL or password: %v", msg)
		}
	}

	srv := testredis.StartServer(t)
	admin := srv.Client()
	ctx := context.Background()
	if err := admin.ConfigSet(ctx, "requirepass", "right-Pw").Err(); err != nil {
		t.Fatal(err)
	}
	for _, pw := range []string{"right-Pw", "wrong-Pw"} {
		c, err := redisstore.NewClient(redisstore.ClientConfig{URL: "redis://:" + pw + "@" + srv.Addr() + "/0", DialTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		s, err := redisstore.New(c, redisstore.Options{Prefix: "pw:"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Seen(ctx, "k-"+pw, time.Minute)
		if pw == "right-Pw" {
			if err != nil {
				t.Fatalf("Seen with the right password: %v", err)
			}
			continue
		}
		wantUnavailable(t, "Seen with a wrong password", err)
		if strings.Contains(err.Error(), "Pw") {
			t.Errorf("error leaks the password: %v", err)
		}
	}
}

func TestNewClient(t *testing.T) {
	for _, tc := range []struct {
		cfg  redisstore.ClientConfig
		kind string // "" for an error
	}{
		{redisstore.ClientConfig{URL: "redis://localhost:6379/2", PoolSize: 3}, "*redis.Client"},
		{redisstore.ClientConfig{URL: "rediss://u:p@redis.example:6380"}, "*redis.Client"},
		{redisstore.ClientConfig{Addrs: []string{"a:7000", "b:7000"}}, "*redis.ClusterClient"},
		{redisstore.ClientConfig{Addrs: []string{"s1:26379"}, MasterName: "mymaster", DB: 1}, "*redis.Client"},
		{redisstore.ClientConfig{}, ""},
		{redisstore.ClientConfig{URL: "redis://x", Addrs: []string{"a:1"}}, ""},
		{redisstore.ClientConfig{Addrs: []string{"a:1"}, DB: 2}, ""},
		{redisstore.ClientConfig{URL: "redis://x", MasterName: "m"}, ""},
		{redisstore.ClientConfig{Addrs: []string{"redis://a:1"}}, ""},
	} {
		c, err := redisstore.NewClient(tc.cfg)
		if tc.kind == "" {
			if err == nil {
				t.Errorf("NewClient(%+v) succeeded", tc.cfg)
				_ = c.Close()
			}
			continue
		}
		if err != nil {
			t.Errorf("NewClient(%+v): %v", tc.cfg, err)
			continue
		}
		if got := typeName(c); got != tc.kind {
			t.Errorf("NewClient(%+v) is %s, want %s", tc.cfg, got, tc.kind)
		}
		_ = c.Close()
	}
	o, err := redisstore.ParseURL("redis://:pw@h:1/3")
	if err != nil || o.Addr != "h:1" || o.DB != 3 || o.Password != "pw" {
		t.Fatalf("ParseURL = %+v, %v", o, err)
	}
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }

// errOf keeps the error of a call that returns a value and an error.
func errOf[T any](_ T, err error) error { return err }
