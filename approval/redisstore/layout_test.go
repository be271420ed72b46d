package redisstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/approval/storetest"
	"github.com/hitlbot/hitlbot/internal/clock"
)

// sameJSON fails the test when m and r differ as JSON (how the memory and
// the Redis store are compared everywhere).
func sameJSON(t *testing.T, what string, m, r any) {
	t.Helper()
	mj, _ := json.Marshal(m)
	rj, _ := json.Marshal(r)
	if !bytes.Equal(mj, rj) {
		t.Fatalf("%s differ\nmemstore: %s\n   redis: %s", what, mj, rj)
	}
}

func kindOf(err error) string {
	if err == nil {
		return ""
	}
	return approval.KindOf(err).String()
}

// putFirstLayout writes a as a record of the first layout, field for field
// as the scripts of that layout wrote it (field "rec" with the JSON of the
// approval as put, long field names, cards as JSON objects), with its
// session's pointer when it is pending.
func putFirstLayout(t *testing.T, c redis.UniversalClient, s *redisstore.Store, a *approval.Approval, ttl time.Duration) {
	t.Helper()
	ctx := context.Background()
	asPut := a.Clone()
	asPut.State, asPut.Cards, asPut.Outcome = approval.StatePending, nil, nil
	asPut.DecidedBy, asPut.DecidedAt, asPut.DecidedVia, asPut.Comment = "", time.Time{}, "", ""
	rec, err := json.Marshal(asPut)
	if err != nil {
		t.Fatal(err)
	}
	ms := a.ExpiresAt.Unix()*1000 + int64(a.ExpiresAt.Nanosecond())/1e6
	f := []any{"rec", string(rec), "state", string(a.State), "hash", a.PayloadSHA256, "session", string(a.Session),
		"exp", ms, "expns", a.ExpiresAt.Nanosecond() % 1e6, "req", string(a.Requester), "amode", string(a.Approvers.Mode),
		"tok", "put 0123456789abcdef.1 "}
	if a.IdempotencyKey != "" {
		f = append(f, "idem", a.IdempotencyKey)
	}
	if a.Approvers.NotRequester {
		f = append(f, "anr", "1")
	}
	if a.Approvers.Mode == approval.ApproverChat && a.ChatID != "" {
		f = append(f, "chat", a.Channel+"\n"+a.ChatID)
	}
	if len(a.Approvers.Users) > 0 {
		u, _ := json.Marshal(a.Approvers.Users)
		f = append(f, "ausers", string(u))
	}
	for i, card := range a.Cards {
		b, _ := json.Marshal(card)
		f = append(f, "card:"+strconv.Itoa(i+1), string(b))
	}
	if len(a.Cards) > 0 {
		f = append(f, "ncards", len(a.Cards), "ctok", "0123456789abcdef.2")
	}
	if a.DecidedBy != "" {
		f = append(f, "by", string(a.DecidedBy))
	}
	if a.DecidedVia != "" {
		f = append(f, "via", string(a.DecidedVia), "comment", a.Comment)
	}
	if !a.DecidedAt.IsZero() {
		f = append(f, "at", a.DecidedAt.Format(time.RFC3339Nano))
	}
	if a.Outcome != nil {
		o, _ := json.Marshal(a.Outcome)
		f = append(f, "outcome", string(o))
	}
	rk, pk, _ := redisstore.Keys(s, a)
	if err := c.HSet(ctx, rk, f...).Err(); err != nil {
		t.Fatal(err)
	}
	c.PExpire(ctx, rk, ttl)
	if a.State == approval.StatePending {
		c.Set(ctx, pk, string(a.ID), ttl)
	}
}

// TestFirstLayout: records written by the first layout (before records
// became listpacks) are read by Get as they are, and every script upgrades
// one in place before it works on it, so that an approval pending across an
// upgrade can still be decided, and a late click on an old card still gets
// already_decided. The memory store, driven the same way, says what every
// answer must be.
func TestFirstLayout(t *testing.T) {
	ctx := context.Background()
	now := storetest.T0.Add(time.Minute)
	approve := func(a *approval.Approval, actor approval.UserID) approval.ClaimRequest {
		return approval.ClaimRequest{Intent: approval.IntentApprove, PayloadSHA256: a.PayloadSHA256, Actor: actor,
			Source: approval.SourceCard, Now: now, Channel: a.Channel, ChatID: a.ChatID,
			Outcome: func(st approval.Status) approval.Outcome { return approval.Outcome{Content: "status " + string(st)} }}
	}
	type env struct {
		ms *memstore.Store
		rs *redisstore.Store
		c  redis.UniversalClient
	}
	setup := func(t *testing.T, a *approval.Approval) env {
		t.Helper()
		rs, c := newStoreClient(t, redisstore.Options{})
		ms := memstore.New(memstore.Options{Clock: clock.NewFake(storetest.T0)})
		if _, err := ms.Put(ctx, a.Clone(), approval.Outcome{}); err != nil {
			t.Fatal(err)
		}
		return env{ms, rs, c}
	}
	// old writes memstore's record of id in the first layout.
	old := func(t *testing.T, e env, id approval.ID) *approval.Approval {
		t.Helper()
		a, err := e.ms.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		putFirstLayout(t, e.c, e.rs, a, time.Hour)
		return a
	}
	get := func(t *testing.T, e env, id approval.ID) {
		t.Helper()
		ma, merr := e.ms.Get(ctx, id)
		ra, rerr := e.rs.Get(ctx, id)
		sameJSON(t, "Get", []any{ma, kindOf(merr)}, []any{ra, kindOf(rerr)})
	}
	claim := func(t *testing.T, e env, id approval.ID, req approval.ClaimRequest) approval.ClaimResult {
		t.Helper()
		mr, merr := e.ms.Claim(ctx, id, req)
		rr, rerr := e.rs.Claim(ctx, id, req)
		sameJSON(t, "Claim", []any{mr, kindOf(merr)}, []any{rr, kindOf(rerr)})
		return rr
	}

	t.Run("pending, decided after the upgrade", func(t *testing.T) {
		a := storetest.NewApproval(t)
		a.Cards = []approval.CardRef{{Channel: "feishu", ChatID: "oc_1", MessageID: "om_1"}}
		e := setup(t, a)
		old(t, e, a.ID)
		get(t, e, a.ID) // read as it is, not upgraded
		rk, _, _ := redisstore.Keys(e.rs, a)
		if e.c.HExists(ctx, rk, "rec").Val() != true {
			t.Fatal("Get upgraded the record; it must only read")
		}
		mp, _ := e.ms.Pending(ctx, a.Session)
		rp, err := e.rs.Pending(ctx, a.Session)
		sameJSON(t, "Pending", []any{mp}, []any{rp})
		if err != nil {
			t.Fatal(err)
		}
		if e.c.HExists(ctx, rk, "rec").Val() || !e.c.HExists(ctx, rk, "L").Val() {
			t.Fatalf("the record was not upgraded: %v", e.c.HKeys(ctx, rk).Val())
		}
		if ttl := e.c.PTTL(ctx, rk).Val(); ttl <= 0 || ttl > time.Hour {
			t.Fatalf("TTL after the upgrade %v, want the record's own (at most 1h)", ttl)
		}
		get(t, e, a.ID) // read upgraded
		cards := []approval.CardRef{{Channel: "test", ChatID: "chat", MessageID: "m2"}}
		ma, _ := e.ms.AddCards(ctx, a.ID, cards)
		ra, err := e.rs.AddCards(ctx, a.ID, cards)
		sameJSON(t, "AddCards", ma, ra)
		if err != nil {
			t.Fatal(err)
		}
		claim(t, e, a.ID, approve(a, "mallory")) // unauthorized
		if r := claim(t, e, a.ID, approve(a, "bob")); r.Code != approval.ClaimOK {
			t.Fatalf("claim = %s", r.Code)
		}
		o := approval.Outcome{Status: approval.StatusExecuted, Content: strings.Repeat("done ", 40)}
		mc, _ := e.ms.Complete(ctx, a.ID, approval.StateExecuted, o, time.Hour)
		rc, err := e.rs.Complete(ctx, a.ID, approval.StateExecuted, o, time.Hour)
		sameJSON(t, "Complete", mc, rc)
		if err != nil {
			t.Fatal(err)
		}
		get(t, e, a.ID)
		// The result cache entry has the format of the first layout, so
		// that entries written before and after an upgrade replay alike.
		_, _, ik := redisstore.Keys(e.rs, a)
		want := `{"hash":"` + a.PayloadSHA256 + `","outcome":`
		if v := e.c.Get(ctx, ik).Val(); !strings.HasPrefix(v, want) {
			t.Fatalf("cached result %q, want it to start with %q", v, want)
		}
		b := storetest.NewApproval(t, a.Session)
		e.ms.Put(ctx, b.Clone(), approval.Outcome{})
		if _, err := e.rs.Put(ctx, b.Clone(), approval.Outcome{}); err != nil {
			t.Fatal(err)
		}
		if r := claim(t, e, b.ID, approve(b, "carol")); r.Cached == nil {
			t.Fatal("no replay of the result cached for the old approval")
		}
	})

	t.Run("pending, chat rule, superseded by a new Put", func(t *testing.T) {
		a := storetest.NewApproval(t)
		a.Approvers = approval.ApproverRule{Mode: approval.ApproverChat, NotRequester: true}
		e := setup(t, a)
		old(t, e, a.ID)
		claim(t, e, a.ID, approve(a, "alice")) // the requester, four eyes: unauthorized
		b := storetest.NewApproval(t, a.Session)
		mo, merr := e.ms.Put(ctx, b.Clone(), approval.Outcome{Content: "newer"})
		ro, rerr := e.rs.Put(ctx, b.Clone(), approval.Outcome{Content: "newer"})
		sameJSON(t, "Put superseding", []any{mo, kindOf(merr)}, []any{ro, kindOf(rerr)})
		get(t, e, a.ID)
		claim(t, e, a.ID, approve(a, "bob")) // superseded
	})

	t.Run("pending, chat rule, decided in the chat", func(t *testing.T) {
		a := storetest.NewApproval(t)
		a.Approvers = approval.ApproverRule{Mode: approval.ApproverChat}
		e := setup(t, a)
		old(t, e, a.ID)
		wrong := approve(a, "bob")
		wrong.ChatID = "elsewhere"
		claim(t, e, a.ID, wrong)
		if r := claim(t, e, a.ID, approve(a, "bob")); r.Code != approval.ClaimOK {
			t.Fatalf("claim in the chat = %s", r.Code)
		}
	})

	t.Run("pending, a payload hash that is not a hex SHA-256", func(t *testing.T) {
		a := storetest.NewApproval(t)
		a.PayloadSHA256 = "v2:" + a.PayloadSHA256
		e := setup(t, a)
		old(t, e, a.ID)
		bad := approve(a, "bob")
		bad.PayloadSHA256 = a.PayloadSHA256[3:]
		claim(t, e, a.ID, bad) // tampered
		if r := claim(t, e, a.ID, approve(a, "bob")); r.Code != approval.ClaimOK {
			t.Fatalf("claim = %s", r.Code)
		}
	})

	t.Run("pending, cancelled", func(t *testing.T) {
		a := storetest.NewApproval(t)
		e := setup(t, a)
		old(t, e, a.ID)
		ma, mok, merr := e.ms.Cancel(ctx, a.ID, approval.Outcome{Content: "bye"}, now)
		ra, rok, rerr := e.rs.Cancel(ctx, a.ID, approval.Outcome{Content: "bye"}, now)
		sameJSON(t, "Cancel", []any{ma, mok, kindOf(merr)}, []any{ra, rok, kindOf(rerr)})
		mp, _ := e.ms.Pending(ctx, a.Session)
		rp, _ := e.rs.Pending(ctx, a.Session)
		sameJSON(t, "Pending", []any{mp}, []any{rp})
	})

	t.Run("ended before the upgrade", func(t *testing.T) {
		for _, end := range []string{"executed", "rejected", "expired"} {
			t.Run(end, func(t *testing.T) {
				a := storetest.NewApproval(t)
				a.Cards = []approval.CardRef{{Channel: "web", MessageID: "w1"}}
				e := setup(t, a)
				switch end {
				case "executed":
					req := approve(a, "bob")
					req.Comment = "ok"
					e.ms.Claim(ctx, a.ID, req)
					e.ms.Complete(ctx, a.ID, approval.StateExecuted, approval.Outcome{Status: approval.StatusExecuted, Content: "1 row"}, 0)
				case "rejected":
					req := approve(a, "alice")
					req.Intent = approval.IntentReject
					e.ms.Claim(ctx, a.ID, req)
				case "expired":
					req := approve(a, "")
					req.Intent, req.Now = approval.IntentExpire, a.ExpiresAt
					e.ms.Claim(ctx, a.ID, req)
				}
				old(t, e, a.ID)
				get(t, e, a.ID)
				claim(t, e, a.ID, approve(a, "bob")) // a late click
				ma, mok, merr := e.ms.Cancel(ctx, a.ID, approval.Outcome{}, now)
				ra, rok, rerr := e.rs.Cancel(ctx, a.ID, approval.Outcome{}, now)
				sameJSON(t, "Cancel", []any{ma, mok, kindOf(merr)}, []any{ra, rok, kindOf(rerr)})
				mc, merr := e.ms.Complete(ctx, a.ID, approval.StateExecuted, approval.Outcome{}, 0)
				rc, rerr := e.rs.Complete(ctx, a.ID, approval.StateExecuted, approval.Outcome{}, 0)
				sameJSON(t, "Complete", []any{mc, kindOf(merr)}, []any{rc, kindOf(rerr)})
				get(t, e, a.ID)
			})
		}
	})
}

// TestLongValues: values longer than 64 bytes are split over several
// fields and joined again, whatever their length (64, 65, 128, 129 …), in
// every field a script reads; the record stays a listpack. The memory store
// says what every answer must be.
func TestLongValues(t *testing.T) {
	ctx := context.Background()
	rs, c := newStoreClient(t, redisstore.Options{})
	ms := memstore.New(memstore.Options{Clock: clock.NewFake(storetest.T0)})
	same := func(what string, m, r any) { t.Helper(); sameJSON(t, what, m, r) }
	for _, n := range []int{63, 64, 65, 127, 128, 129, 300} {
		long := func(c string) string { return strings.Repeat(c, n) }
		for _, rule := range []approval.ApproverRule{
			{Mode: approval.ApproverChat},
			{Mode: approval.ApproverUsers, Users: []approval.UserID{approval.UserID(long("u")), "x"}},
			{Mode: approval.ApproverRequester},
		} {
			for _, sessOfChat := range []bool{true, false} {
				channel, chat := long("c"), long("d")
				sess := approval.SessionKey(long("s"))
				if sessOfChat {
					sess = approval.SessionKey(channel + ":" + chat + ":" + long("t"))
				}
				a := storetest.NewApproval(t, sess)
				a.Channel, a.ChatID, a.Requester, a.Approvers = channel, chat, approval.UserID(long("r")), rule
				a.IdempotencyKey = long("i")
				a.Summary, a.Preview = long("S"), long("P")
				a.Cards = []approval.CardRef{{Channel: channel, ChatID: chat, MessageID: long("m")}, {Channel: "x", MessageID: long("n")}}
				if n == 65 {
					a.PayloadSHA256 = long("h") // not a hex SHA-256: kept as text
				}
				name := fmt.Sprintf("%d %s session-of-chat=%v", n, rule.Mode, sessOfChat)
				mo, merr := ms.Put(ctx, a.Clone(), approval.Outcome{})
				ro, rerr := rs.Put(ctx, a.Clone(), approval.Outcome{})
				same(name+": Put", []any{mo, kindOf(merr)}, []any{ro, kindOf(rerr)})
				cards := []approval.CardRef{{Channel: channel, ChatID: chat, MessageID: long("o")}, {Channel: channel, ChatID: long("e"), MessageID: "p"}}
				ma, _ := ms.AddCards(ctx, a.ID, cards)
				ra, err := rs.AddCards(ctx, a.ID, cards)
				same(name+": AddCards", ma, ra)
				if err != nil {
					t.Fatal(err)
				}
				mp, _ := ms.Pending(ctx, sess)
				rp, _ := rs.Pending(ctx, sess)
				same(name+": Pending", mp, rp)
				actor := approval.UserID(long("u"))
				if rule.Mode == approval.ApproverRequester {
					actor = a.Requester
				}
				req := approval.ClaimRequest{Intent: approval.IntentApprove, PayloadSHA256: a.PayloadSHA256, Actor: actor,
					Source: approval.SourceCard, Comment: long("C"), Now: storetest.T0.Add(time.Minute), Channel: channel, ChatID: chat}
				mr, merr := ms.Claim(ctx, a.ID, req)
				rr, rerr := rs.Claim(ctx, a.ID, req)
				same(name+": Claim", []any{mr, kindOf(merr)}, []any{rr, kindOf(rerr)})
				if rr.Code != approval.ClaimOK {
					t.Fatalf("%s: claim = %s", name, rr.Code)
				}
				o := approval.Outcome{Status: approval.StatusExecuted, Content: long("O")}
				mc, merr := ms.Complete(ctx, a.ID, approval.StateExecuted, o, time.Hour)
				rc, rerr := rs.Complete(ctx, a.ID, approval.StateExecuted, o, time.Hour)
				same(name+": Complete", []any{mc, kindOf(merr)}, []any{rc, kindOf(rerr)})
				mg, _ := ms.Get(ctx, a.ID)
				rg, _ := rs.Get(ctx, a.ID)
				same(name+": Get", mg, rg)
				rk, _, _ := redisstore.Keys(rs, a)
				if enc := c.ObjectEncoding(ctx, rk).Val(); enc != "listpack" {
					t.Fatalf("%s: record encoding %s, want listpack", name, enc)
				}
				// The same idempotency key in the same session replays.
				b := storetest.NewApproval(t, sess)
				b.Channel, b.ChatID, b.Requester, b.Approvers, b.IdempotencyKey = a.Channel, a.ChatID, a.Requester, a.Approvers, a.IdempotencyKey
				b.PayloadSHA256 = a.PayloadSHA256
				ms.Put(ctx, b.Clone(), approval.Outcome{})
				if _, err := rs.Put(ctx, b.Clone(), approval.Outcome{}); err != nil {
					t.Fatal(err)
				}
				mr, _ = ms.Claim(ctx, b.ID, req)
				rr, _ = rs.Claim(ctx, b.ID, req)
				same(name+": replay", mr, rr)
				if rr.Cached == nil {
					t.Fatalf("%s: no replay", name)
				}
			}
		}
	}
}

// TestTimesKeepTheirZone: CreatedAt and ExpiresAt come back as the JSON
// decoding of their RFC 3339 text would give them (which the first layout
// did): the same instant, UTC for offset 0, else the offset.
func TestTimesKeepTheirZone(t *testing.T) {
	ctx := context.Background()
	rs := newStore(t, redisstore.Options{})
	east := time.FixedZone("CST", 8*3600)
	for _, tc := range []struct{ created, expires time.Time }{
		{storetest.T0.In(east), storetest.T0.Add(5 * time.Minute).In(east)},
		{storetest.T0, storetest.T0.Add(5*time.Minute + 1)},
		{storetest.T0.In(east), storetest.T0.Add(time.Minute)},
		{storetest.T0.Local(), storetest.T0.Add(time.Minute).Local()},
		{time.Time{}, storetest.T0},
		{storetest.T0, storetest.T0.Add(-time.Second)},
	} {
		a := storetest.NewApproval(t)
		a.CreatedAt, a.ExpiresAt = tc.created, tc.expires
		if _, err := rs.Put(ctx, a, approval.Outcome{}); err != nil {
			t.Fatal(err)
		}
		got, err := rs.Get(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		var want approval.Approval
		b, _ := json.Marshal(a)
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		for _, p := range [][2]time.Time{{got.CreatedAt, want.CreatedAt}, {got.ExpiresAt, want.ExpiresAt}} {
			gn, go_ := p[0].Zone()
			wn, wo := p[1].Zone()
			if !p[0].Equal(p[1]) || gn != wn || go_ != wo || p[0].Location().String() != p[1].Location().String() {
				t.Errorf("time %v (%s), want %v (%s)", p[0], p[0].Location(), p[1], p[1].Location())
			}
		}
		sameJSON(t, "Get", a, got)
	}
}
