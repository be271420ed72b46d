package redisstore_test

import (
	"context"
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

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum
// Redis Cluster uses for key slots.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// keySlot is Redis Cluster's CLUSTER KEYSLOT: the CRC16 of the hash tag (the
// part between the first '{' and the next '}', when not empty) or else of the
// whole key, modulo 16384.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16([]byte(key)) % 16384)
}

func TestKeySlotVectors(t *testing.T) {
	if got := crc16([]byte("123456789")); got != 0x31C3 {
		t.Fatalf("crc16(123456789) = %#x, want 0x31c3", got)
	}
	for key, want := range map[string]int{
		"foo": 12182, "somekey": 11058, "{user1000}.following": keySlot("user1000"),
		"foo{}{bar}": keySlot("foo{}{bar}"), "{}x": keySlot("{}x"),
	} {
		if got := keySlot(key); got != want {
			t.Errorf("keySlot(%q) = %d, want %d", key, got, want)
		}
	}
	if keySlot("foo{}{bar}") == keySlot("bar") {
		t.Error("an empty first tag must hash the whole key")
	}
}

// TestKeysShareSlot checks, for many sessions, that the keys the Go side
// builds for one approval (record, session pointer, result cache) share one
// slot, whatever the session and idempotency key contain.
func TestKeysShareSlot(t *testing.T) {
	c, prefix := testredis.Start(t)
	s, err := redisstore.New(c, redisstore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	sessions := []approval.SessionKey{"", "feishu:oc_1", "web:{x}", "a}b{c", "dingtalk:cid==:u{}"}
	for i := range 500 {
		sessions = append(sessions, approval.SessionKey(fmt.Sprintf("feishu:oc_%d:ou_%d", i, i*7)))
	}
	for _, sess := range sessions {
		a := storetest.NewApproval(t, sess)
		a.IdempotencyKey = "turn-{9}/call-1"
		rec, ptr, idem := redisstore.Keys(s, a)
		want := keySlot(rec)
		for _, k := range []string{ptr, idem} {
			if got := keySlot(k); got != want {
				t.Fatalf("session %q: slot(%q) = %d, slot(%q) = %d", sess, rec, want, k, got)
			}
		}
		if keySlot(prefix+"{"+approval.Shard(sess)+"}") != want {
			t.Fatalf("session %q: the record's slot is not its shard's", sess)
		}
	}
	// An id whose shard is not its session's would split the record from
	// its pointer: refused.
	a := storetest.NewApproval(t)
	a.ID = approval.NewID("another:session")
	if _, err := s.Put(context.Background(), a, approval.Outcome{}); approval.KindOf(err) != errkind.Invalid {
		t.Fatalf("Put with a foreign shard = %v, want errkind.Invalid", err)
	}
	if _, err := redisstore.New(c, redisstore.Options{Prefix: "hitl{x}:"}); approval.KindOf(err) != errkind.Invalid {
		t.Fatalf("New with a braced prefix = %v, want errkind.Invalid", err)
	}
}

// TestScriptsTouchOneSlot runs every script, along every path that touches
// keys, with redis.call traced, and checks that every key a run touched is
// in the slot of the approval's shard. (Redis 7.0 in cluster mode does not
// refuse a script that touches two slots of one node, so this is checked
// here; TestCluster also runs the suite on three nodes.)
func TestScriptsTouchOneSlot(t *testing.T) {
	c, prefix := testredis.Start(t)
	s, err := redisstore.New(c, redisstore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	logKey := prefix + "trace"
	redisstore.TraceKeys(s, logKey)
	ctx := context.Background()
	touched := map[string]bool{} // commands seen, for coverage

	// run performs op and checks the keys it touched.
	run := func(name string, shardOf approval.SessionKey, op func() error) {
		t.Helper()
		c.Del(ctx, logKey)
		if err := op(); err != nil && approval.KindOf(err) == errkind.Unavailable {
			t.Fatalf("%s: %v", name, err)
		}
		calls, err := c.LRange(ctx, logKey, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) == 0 {
			t.Fatalf("%s: no traced calls", name)
		}
		base := prefix + "{" + approval.Shard(shardOf) + "}:"
		want := keySlot(base)
		for _, call := range calls {
			cmd, key, _ := strings.Cut(call, " ")
			touched[cmd] = true
			if cmd == "PUBLISH" {
				if key != redisstore.Channel(s) {
					t.Errorf("%s: PUBLISH to %q", name, key)
				}
				continue
			}
			if !strings.HasPrefix(key, base) || keySlot(key) != want {
				t.Errorf("%s: %s %q is in slot %d, want %d (%s…)", name, cmd, key, keySlot(key), want, base)
			}
		}
	}
	outcome := approval.Outcome{Content: "x"}
	now := storetest.T0.Add(time.Minute)
	req := func(a *approval.Approval, intent approval.Intent) approval.ClaimRequest {
		return approval.ClaimRequest{Intent: intent, PayloadSHA256: a.PayloadSHA256, Actor: "bob", Source: approval.SourceCard, Now: now}
	}

	a := storetest.NewApproval(t)
	sess := a.Session
	run("put fresh", sess, func() error { _, err := s.Put(ctx, a, outcome); return err })
	run("put duplicate", sess, func() error { _, err := s.Put(ctx, a, outcome); return err })
	run("pending", sess, func() error { _, err := s.Pending(ctx, sess); return err })
	run("latest", sess, func() error { _, err := s.Latest(ctx, sess); return err })
	run("addCards", sess, func() error {
		return errOf(s.AddCards(ctx, a.ID, []approval.CardRef{{Channel: "web", MessageID: "1"}}))
	})
	b := storetest.NewApproval(t, sess)
	run("put supersede", sess, func() error { _, err := s.Put(ctx, b, outcome); return err })
	run("claim superseded", sess, func() error { _, err := s.Claim(ctx, a.ID, req(a, approval.IntentApprove)); return err })
	run("expire not yet", sess, func() error { _, err := s.Claim(ctx, b.ID, req(b, approval.IntentExpire)); return err })
	bad := req(b, approval.IntentApprove)
	bad.Actor = "mallory"
	run("claim unauthorized", sess, func() error { _, err := s.Claim(ctx, b.ID, bad); return err })
	bad = req(b, approval.IntentApprove)
	bad.PayloadSHA256 = "0"
	run("claim tampered", sess, func() error { _, err := s.Claim(ctx, b.ID, bad); return err })
	run("claim approve", sess, func() error { _, err := s.Claim(ctx, b.ID, req(b, approval.IntentApprove)); return err })
	run("complete executed", sess, func() error {
		return errOf(s.Complete(ctx, b.ID, approval.StateExecuted, approval.Outcome{Status: approval.StatusExecuted}, time.Hour))
	})
	run("complete again", sess, func() error { return errOf(s.Complete(ctx, b.ID, approval.StateExecuted, outcome, time.Hour)) })
	d := storetest.NewApproval(t, sess)
	run("put after claim", sess, func() error { _, err := s.Put(ctx, d, outcome); return err })
	run("claim cached", sess, func() error {
		r, err := s.Claim(ctx, d.ID, req(d, approval.IntentApprove))
		if err == nil && r.Cached == nil {
			t.Error("claim cached: no cached result")
		}
		return err
	})
	e := storetest.NewApproval(t, sess)
	run("put e", sess, func() error { _, err := s.Put(ctx, e, outcome); return err })
	late := req(e, approval.IntentReject)
	late.Now = e.ExpiresAt
	run("reject late", sess, func() error { _, err := s.Claim(ctx, e.ID, late); return err })
	f := storetest.NewApproval(t, sess)
	run("put f", sess, func() error { _, err := s.Put(ctx, f, outcome); return err })
	run("reject", sess, func() error { _, err := s.Claim(ctx, f.ID, req(f, approval.IntentReject)); return err })
	g := storetest.NewApproval(t, sess)
	run("put g", sess, func() error { _, err := s.Put(ctx, g, outcome); return err })
	exp := req(g, approval.IntentExpire)
	exp.Now = g.ExpiresAt
	run("expire", sess, func() error { _, err := s.Claim(ctx, g.ID, exp); return err })
	h := storetest.NewApproval(t, sess)
	run("put h", sess, func() error { _, err := s.Put(ctx, h, outcome); return err })
	run("cancel", sess, func() error { _, _, err := s.Cancel(ctx, h.ID, outcome, now); return err })
	run("cancel again", sess, func() error { _, _, err := s.Cancel(ctx, h.ID, outcome, now); return err })
	k := storetest.NewApproval(t, sess)
	run("put k", sess, func() error { _, err := s.Put(ctx, k, outcome); return err })
	_, ptr, _ := redisstore.Keys(s, k)
	c.Del(ctx, ptr) // a stale approval whose pointer is gone
	run("claim stale", sess, func() error { _, err := s.Claim(ctx, k.ID, req(k, approval.IntentApprove)); return err })
	m := storetest.NewApproval(t, sess)
	run("put m", sess, func() error { _, err := s.Put(ctx, m, outcome); return err })
	run("claim m", sess, func() error { _, err := s.Claim(ctx, m.ID, req(m, approval.IntentApprove)); return err })
	run("complete failed", sess, func() error { return errOf(s.Complete(ctx, m.ID, approval.StateFailed, outcome, time.Hour)) })
	resolve := func(a *approval.Approval, r approval.Resolution) approval.ResolveRequest {
		return approval.ResolveRequest{Resolution: r, PayloadSHA256: a.PayloadSHA256, Actor: "bob", Source: approval.SourceCard, Now: now, Outcome: outcome}
	}
	run("resolve not frozen", sess, func() error { _, err := s.Resolve(ctx, m.ID, resolve(m, approval.ResolveDone)); return err })
	fz := storetest.NewApproval(t, sess)
	run("put fz", sess, func() error { _, err := s.Put(ctx, fz, outcome); return err })
	run("claim fz", sess, func() error { _, err := s.Claim(ctx, fz.ID, req(fz, approval.IntentApprove)); return err })
	long := approval.Outcome{Status: approval.StatusFrozen, Content: strings.Repeat("frozen ", 40)}
	run("complete frozen", sess, func() error { return errOf(s.Complete(ctx, fz.ID, approval.StateFrozen, long, 0)) })
	badr := resolve(fz, approval.ResolveRetry)
	badr.Actor = "mallory"
	run("resolve unauthorized", sess, func() error { _, err := s.Resolve(ctx, fz.ID, badr); return err })
	badr = resolve(fz, approval.ResolveRetry)
	badr.PayloadSHA256 = "0"
	run("resolve tampered", sess, func() error { _, err := s.Resolve(ctx, fz.ID, badr); return err })
	run("resolve retry", sess, func() error { _, err := s.Resolve(ctx, fz.ID, resolve(fz, approval.ResolveRetry)); return err })
	run("complete frozen again", sess, func() error { return errOf(s.Complete(ctx, fz.ID, approval.StateFrozen, long, 0)) })
	run("resolve done", sess, func() error { _, err := s.Resolve(ctx, fz.ID, resolve(fz, approval.ResolveDone)); return err })

	// An escalation step taken, then a claim by the step's person: the
	// claim reads the fields eu and ep.
	es := storetest.NewApproval(t, sess)
	es.Escalation = []approval.Escalation{{After: time.Minute, To: approval.Place{Channel: "feishu", ChatID: "oc_oncall"},
		Approvers: approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"dave"}}}}
	run("put es", sess, func() error { _, err := s.Put(ctx, es, outcome); return err })
	run("escalate", sess, func() error { _, err := s.Escalate(ctx, es.ID, es.CreatedAt.Add(time.Minute)); return err })
	byStep := req(es, approval.IntentApprove)
	byStep.Actor = "dave"
	run("claim by a step's person", sess, func() error { _, err := s.Claim(ctx, es.ID, byStep); return err })
	// A reminder taken (the same step script as an escalation step's).
	rm := storetest.NewApproval(t, sess)
	rm.Reminders = []float64{0.5}
	run("put rm", sess, func() error { _, err := s.Put(ctx, rm, outcome); return err })
	run("remind", sess, func() error {
		r, err := s.Remind(ctx, rm.ID, rm.CreatedAt.Add(rm.ExpiresAt.Sub(rm.CreatedAt)/2))
		if err == nil && r.Code != approval.RemindTaken {
			t.Errorf("remind = %s, want taken", r.Code)
		}
		return err
	})

	// A claim that sets its decision's de-duplication mark, and one that
	// finds it set.
	mk := storetest.NewApproval(t, sess)
	run("put mk", sess, func() error { _, err := s.Put(ctx, mk, outcome); return err })
	marked := req(mk, approval.IntentApprove)
	marked.Mark, marked.MarkTTL = "evt:test:click-1", time.Minute
	run("claim marked", sess, func() error { _, err := s.Claim(ctx, mk.ID, marked); return err })
	run("claim duplicate", sess, func() error {
		r, err := s.Claim(ctx, mk.ID, marked)
		if err == nil && r.Code != approval.ClaimDuplicate {
			t.Errorf("claim duplicate = %s, want duplicate", r.Code)
		}
		return err
	})

	missing := storetest.NewApproval(t)
	run("claim missing", missing.Session, func() error { _, err := s.Claim(ctx, missing.ID, req(missing, approval.IntentApprove)); return err })
	run("complete missing", missing.Session, func() error { return errOf(s.Complete(ctx, missing.ID, approval.StateExecuted, outcome, 0)) })
	run("cancel missing", missing.Session, func() error { _, _, err := s.Cancel(ctx, missing.ID, outcome, now); return err })
	run("addCards missing", missing.Session, func() error { return errOf(s.AddCards(ctx, missing.ID, nil)) })
	run("resolve missing", missing.Session, func() error {
		_, err := s.Resolve(ctx, missing.ID, resolve(missing, approval.ResolveDone))
		return err
	})
	run("pending none", missing.Session, func() error { _, err := s.Pending(ctx, missing.Session); return err })
	run("latest ended", sess, func() error { _, err := s.Latest(ctx, sess); return err })
	run("latest none", missing.Session, func() error { _, err := s.Latest(ctx, missing.Session); return err })

	// Grants: recorded, listed and revoked in the slot of their session.
	gr := approval.Grant{Session: sess, User: "u", Tool: "t", PayloadSHA256: "h", ExpiresAt: time.Now().Add(time.Minute)}
	gr2 := gr
	gr2.Tool = "t2"
	run("put grant", sess, func() error { return s.PutGrant(ctx, gr, time.Minute) })
	run("put grant 2", sess, func() error { return s.PutGrant(ctx, gr2, time.Minute) })
	run("list grants", sess, func() error { _, err := s.Grants(ctx, sess); return err })
	run("revoke one", sess, func() error { _, err := s.Revoke(ctx, sess, gr.Key()); return err })
	run("revoke all", sess, func() error { _, err := s.Revoke(ctx, sess); return err })

	// (Only the grant scripts DEL a key: session pointers stay when their
	// approval ends, for Latest.)
	for _, cmd := range []string{"HSETNX", "HSET", "HMGET", "HGET", "HGETALL", "GET", "SET", "PEXPIRE", "PUBLISH", "HDEL", "ZADD", "ZRANGE", "DEL", "ZREM"} {
		if !touched[cmd] {
			t.Errorf("no script path ran %s", cmd)
		}
	}
}
