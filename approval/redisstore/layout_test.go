package redisstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

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
// decoding of their RFC 3339 text would give them: the same instant, UTC
// for offset 0, else the offset.
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
