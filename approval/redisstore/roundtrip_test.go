package redisstore_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/approval/storetest"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

// roundTrips names each recorded round trip: a command by its name, a
// pipeline as "pipeline".
func roundTrips(trips []testredis.Trip) []string {
	out := make([]string, len(trips))
	for i, t := range trips {
		out[i] = t.Names[0]
		if t.Pipeline {
			out[i] = "pipeline"
		}
	}
	return out
}

// counter counts the round trips of a store's client (countedStore).
type counter struct{ rec *testredis.Recorder }

// take returns the commands recorded since the last take.
func (c *counter) take() []string { return roundTrips(c.rec.Take()) }

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

// countedStore returns a store on a test Redis whose client counts the
// commands it sends, the key prefix, and a connection already open: its
// handshake (HELLO, CLIENT SETINFO) is not part of any operation.
func countedStore(t *testing.T) (*redisstore.Store, *counter, string) {
	t.Helper()
	c, prefix := testredis.Start(t)
	cnt := &counter{rec: testredis.Record(c)}
	s, err := redisstore.New(c, redisstore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	cnt.take()
	return s, cnt, prefix
}

// TestRoundTrips counts the commands each operation sends, once the
// scripts are cached on the server.
func TestRoundTrips(t *testing.T) {
	s, cnt, _ := countedStore(t)
	ctx := context.Background()
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
	s, cnt, _ := countedStore(t)
	ctx := context.Background()
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

// TestChatIndexPrunedAtEnd: an approval that leaves pending (claimed and
// completed, rejected, cancelled, superseded) leaves its chat's index in a
// pipeline the store sends anyway, not only when the index is next read;
// so the next approval of the chat finds itself alone there and its card's
// code costs no round trip.
func TestChatIndexPrunedAtEnd(t *testing.T) {
	c, prefix := testredis.Start(t)
	cnt := &counter{rec: testredis.Record(c)}
	s, err := redisstore.New(c, redisstore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := storetest.T0.Add(time.Minute)
	chat := "chat-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	index := prefix + "chat:4:test:" + chat
	sess := approval.SessionKey("test:" + chat)
	put := func() *approval.Approval {
		t.Helper()
		a := storetest.NewApproval(t, sess)
		a.Channel, a.ChatID = "test", chat
		if _, err := s.Put(ctx, a, approval.Outcome{}); err != nil {
			t.Fatal(err)
		}
		return a
	}
	req := func(a *approval.Approval, intent approval.Intent) approval.ClaimRequest {
		return approval.ClaimRequest{Intent: intent, PayloadSHA256: a.PayloadSHA256, Actor: "bob", Source: approval.SourceCard, Now: now}
	}
	ends := []struct {
		name string
		end  func(a *approval.Approval) error
	}{
		{"approved and completed", func(a *approval.Approval) error {
			if _, err := s.Claim(ctx, a.ID, req(a, approval.IntentApprove)); err != nil {
				return err
			}
			return errOf(s.Complete(ctx, a.ID, approval.StateExecuted, approval.Outcome{Status: approval.StatusExecuted}, time.Hour))
		}},
		{"rejected", func(a *approval.Approval) error {
			_, err := s.Claim(ctx, a.ID, req(a, approval.IntentReject))
			return err
		}},
		{"cancelled", func(a *approval.Approval) error {
			_, _, err := s.Cancel(ctx, a.ID, approval.Outcome{}, now)
			return err
		}},
		{"superseded", func(*approval.Approval) error { return nil }}, // by the next Put
	}
	for _, e := range ends {
		a := put()
		if _, err := s.ChatCode(ctx, a); err != nil {
			t.Fatal(err)
		}
		if err := e.end(a); err != nil {
			t.Fatalf("%s: %v", e.name, err)
		}
		b := put()
		cnt.take()
		if _, err := s.ChatCode(ctx, b); err != nil {
			t.Fatal(err)
		}
		if got := cnt.take(); len(got) != 0 {
			t.Errorf("after an approval %s, the next one's code cost %v: its index was %v", e.name, got, c.ZRange(ctx, index, 0, -1).Val())
		}
		if _, _, err := s.Cancel(ctx, b.ID, approval.Outcome{}, now); err != nil {
			t.Fatal(err)
		}
		put() // its pipeline removes b's entry
		if ids := c.ZRange(ctx, index, 0, -1).Val(); len(ids) != 1 {
			t.Fatalf("after an approval %s: the chat's index holds %v, want the pending one alone", e.name, ids)
		}
		c.Del(ctx, index)
	}
}

// TestStepRoundTrips: Escalate and Remind take a step in 3 round trips
// (the record, the step script, the indexes in one pipeline) and answer a
// step not yet due in 2 (the record, the index), as doc.go says.
func TestStepRoundTrips(t *testing.T) {
	s, cnt, _ := countedStore(t)
	ctx := context.Background()
	step := func(t *testing.T, name string, take func(*approval.Approval, time.Time) error, a *approval.Approval, early, due time.Time) {
		t.Helper()
		if _, err := s.Put(ctx, a, approval.Outcome{}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			at   time.Time
			want []string
		}{{early, []string{"hgetall", "zadd"}}, {due, []string{"hgetall", "evalsha", "pipeline"}}} {
			cnt.take()
			if err := take(a, c.at); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got := cnt.take(); !slices.Equal(got, c.want) {
				t.Errorf("%s at %v: %v, want %v", name, c.at, got, c.want)
			}
		}
	}
	escalating := func() *approval.Approval {
		a := storetest.NewApproval(t)
		a.Escalation = []approval.Escalation{{After: time.Minute, To: approval.Place{Channel: "feishu", ChatID: "oc_lead"},
			Approvers: approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"dave"}}}, {After: 2 * time.Minute, To: approval.Place{Channel: "feishu", ChatID: "oc_lead"},
			Approvers: approval.ApproverRule{Mode: approval.ApproverChat}}}
		return a
	}
	escalate := func(a *approval.Approval, now time.Time) error { _, err := s.Escalate(ctx, a.ID, now); return err }
	reminding := func() *approval.Approval {
		a := storetest.NewApproval(t)
		a.Reminders = []float64{0.5, 0.9}
		return a
	}
	remind := func(a *approval.Approval, now time.Time) error { _, err := s.Remind(ctx, a.ID, now); return err }
	// The first takes load the script.
	warm := escalating()
	if _, err := s.Put(ctx, warm, approval.Outcome{}); err != nil {
		t.Fatal(err)
	}
	if err := escalate(warm, storetest.T0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	step(t, "Escalate", escalate, escalating(), storetest.T0.Add(30*time.Second), storetest.T0.Add(time.Minute))
	step(t, "Remind", remind, reminding(), storetest.T0.Add(time.Minute), storetest.T0.Add(150*time.Second))
}
