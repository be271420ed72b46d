package api_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/channels/api"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

func TestMain(m *testing.M) { testredis.Main(m) }

func TestNewToken(t *testing.T) {
	a, b := api.NewToken(), api.NewToken()
	if a == b || !api.ValidToken(a) || !tokenRE.MatchString(a) {
		t.Fatalf("%q %q", a, b)
	}
	for _, s := range []string{"", "pa_", "pa_" + a[3:34], "PA_" + a[3:], "pa_" + a[3:34] + "G"} {
		if api.ValidToken(s) {
			t.Errorf("%q is valid", s)
		}
	}
}

func TestMemoryTokens(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	tokenStoreSuite(t, api.NewMemoryTokens(clk), clk.Advance, false)
}

func TestRedisTokens(t *testing.T) {
	client, prefix := testredis.Start(t)
	// A real server cannot be fast-forwarded: lapses are tested with
	// millisecond TTLs and a real sleep past them.
	tokenStoreSuite(t, api.NewRedisTokens(client, prefix, nil), func(d time.Duration) { time.Sleep(d) }, true)
}

// tokenStoreSuite is what every TokenStore must do. advance moves the
// store's time forward; realTime says it sleeps rather than moving a fake
// clock.
func tokenStoreSuite(t *testing.T, s api.TokenStore, advance func(time.Duration), realTime bool) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	entry := func(user string, n int) api.TokenEntry {
		return api.TokenEntry{Token: api.NewToken(), Approval: approval.NewID("s"), Tenant: "acme", User: user,
			Conversation: "c1", CreatedAt: now.Add(time.Duration(n) * time.Second), ExpiresAt: now.Add(5 * time.Minute)}
	}
	e1, e2, other := entry("alice", 1), entry("alice", 2), entry("bob", 3)
	for _, e := range []api.TokenEntry{e2, e1, other} {
		if err := s.Put(ctx, e, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Get(ctx, e1.Token)
	if err != nil || !reflect.DeepEqual(got, e1) {
		t.Fatalf("get: %+v, %v", got, err)
	}
	if _, err := s.Get(ctx, api.NewToken()); approval.KindOf(err) != errkind.NotFound {
		t.Fatalf("unknown token: %v", err)
	}
	list, err := s.List(ctx, "acme", "alice")
	if err != nil || len(list) != 2 || !reflect.DeepEqual(list[0], e1) || !reflect.DeepEqual(list[1], e2) {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if list, _ := s.List(ctx, "globex", "alice"); len(list) != 0 {
		t.Fatalf("another tenant's alice sees %+v", list)
	}
	if err := s.Delete(ctx, e1.Token); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, e1.Token); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := s.Get(ctx, e1.Token); approval.KindOf(err) != errkind.NotFound {
		t.Fatalf("deleted token: %v", err)
	}
	if list, _ := s.List(ctx, "acme", "alice"); len(list) != 1 || !reflect.DeepEqual(list[0], e2) {
		t.Fatalf("after delete: %+v", list)
	}

	// Tokens lapse after their TTL, from Get and from the index; a live
	// token of the same owner stays. (Whether the short token is listed
	// before it lapses is checked on a fake clock only: on a real one, a
	// loaded machine may take longer than its TTL between two calls.)
	short, long := entry("carol", 4), entry("carol", 5)
	if err := s.Put(ctx, long, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, short, 30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if !realTime {
		if list, _ := s.List(ctx, "acme", "carol"); len(list) != 2 {
			t.Fatalf("carol before the lapse: %+v", list)
		}
	}
	// Past twice the short TTL: an index whose TTL the short token had
	// shortened to that would be gone, and the live token with it.
	advance(100 * time.Millisecond)
	if _, err := s.Get(ctx, short.Token); approval.KindOf(err) != errkind.NotFound {
		t.Fatalf("lapsed token: %v", err)
	}
	if list, _ := s.List(ctx, "acme", "carol"); len(list) != 1 || list[0].Token != long.Token {
		t.Fatalf("carol after the lapse: %+v", list)
	}
	if _, err := s.Get(ctx, e2.Token); err != nil {
		t.Fatalf("a live token lapsed with it: %v", err)
	}

	// A shared token is listed for its owner, for each user it is shared
	// with, and (shared with a whole tenant) in the tenant's index; a
	// delete removes it from all of them.
	shared := entry("dave", 5)
	shared.SharedWith = []api.User{{Tenant: "acme"}, {Tenant: "globex", ID: "erin"}}
	if err := s.Put(ctx, shared, time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, who := range [][2]string{{"acme", "dave"}, {"acme", ""}, {"globex", "erin"}} {
		list, err := s.List(ctx, who[0], who[1])
		if err != nil || len(list) != 1 || !reflect.DeepEqual(list[0], shared) {
			t.Fatalf("list of %s/%s: %+v, %v", who[0], who[1], list, err)
		}
	}
	if list, _ := s.List(ctx, "globex", ""); len(list) != 0 {
		t.Fatalf("globex's tenant index: %+v", list)
	}
	if err := s.Delete(ctx, shared.Token); err != nil {
		t.Fatal(err)
	}
	for _, who := range [][2]string{{"acme", "dave"}, {"acme", ""}, {"globex", "erin"}} {
		if list, _ := s.List(ctx, who[0], who[1]); len(list) != 0 {
			t.Fatalf("list of %s/%s after the delete: %+v", who[0], who[1], list)
		}
	}
}

func TestRedisTokensUnavailable(t *testing.T) {
	srv := testredis.StartServer(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = client.Close() })
	s := api.NewRedisTokens(client, "hitl:", nil)
	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.Get(ctx, api.NewToken()); approval.KindOf(err) != errkind.Unavailable {
		t.Fatalf("get: %v", err)
	}
	if err := s.Put(ctx, api.TokenEntry{Token: api.NewToken(), Tenant: "a", User: "b"}, time.Minute); approval.KindOf(err) != errkind.Unavailable {
		t.Fatalf("put: %v", err)
	}
	if _, err := s.List(ctx, "a", "b"); approval.KindOf(err) != errkind.Unavailable {
		t.Fatalf("list: %v", err)
	}
}
