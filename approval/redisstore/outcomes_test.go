package redisstore_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/approval/storetest"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

// pipelines names the round trips of a store's client: a pipeline by its
// first command and its length ("hget x1000"), a command by its name; a
// new connection's handshake (HELLO, CLIENT SETINFO) is left out.
type pipelines struct{ rec *testredis.Recorder }

func (p *pipelines) take() []string {
	var got []string
	for _, t := range p.rec.Take() {
		if name := t.Names[0]; name == "client" || name == "hello" {
			continue
		} else if t.Pipeline {
			got = append(got, name+" x"+strconv.Itoa(len(t.Names)))
		} else {
			got = append(got, name)
		}
	}
	return got
}

// TestOutcomesRoundTrips: Outcomes reads the states of 2,500 approvals in
// three pipelines (1,000 to a round trip), and the records of the ones
// that ended in one more; when none ended, no more.
func TestOutcomesRoundTrips(t *testing.T) {
	c, prefix := testredis.Start(t)
	cnt := &pipelines{rec: testredis.Record(c)}
	s, err := redisstore.New(c, redisstore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ids := make([]approval.ID, 2500)
	for i := range ids {
		ids[i] = approval.NewID("nowhere")
	}
	cnt.take()
	if _, err := s.Outcomes(ctx, ids); err != nil {
		t.Fatal(err)
	}
	if got := cnt.take(); len(got) != 3 || got[0] != "hget x1000" || got[2] != "hget x500" {
		t.Fatalf("Outcomes of 2,500 pending sent %v, want 3 pipelines of HGET", got)
	}
	for _, at := range []int{7, 1200} {
		a := storetest.NewApproval(t)
		if _, err := s.Put(ctx, a, approval.Outcome{}); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.Cancel(ctx, a.ID, approval.Outcome{Content: "withdrawn"}, storetest.T0); !ok || err != nil {
			t.Fatalf("Cancel = %v, %v", ok, err)
		}
		ids[at] = a.ID
	}
	cnt.take()
	os, err := s.Outcomes(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if got := cnt.take(); len(got) != 4 || got[3] != "hgetall x2" {
		t.Fatalf("Outcomes of 2,500 with 2 ended sent %v, want 3 pipelines of HGET and one of 2 HGETALL", got)
	}
	if os[7] == nil || os[1200] == nil || os[7].Status != approval.StatusCancelled {
		t.Fatalf("Outcomes[7], [1200] = %+v, %+v", os[7], os[1200])
	}
}
