package redisstore_test

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/approval/storetest"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

// pipelines is a go-redis hook that records, for each pipeline sent, its
// first command's name and its length.
type pipelines struct {
	mu  sync.Mutex
	got []string
}

func (p *pipelines) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}
func (p *pipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name != "client" && name != "hello" { // a new connection's handshake
			p.mu.Lock()
			p.got = append(p.got, name)
			p.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}
func (p *pipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		p.mu.Lock()
		if name := cmds[0].Name(); name != "client" && name != "hello" { // a new connection's handshake
			p.got = append(p.got, name+" x"+itoa(len(cmds)))
		}
		p.mu.Unlock()
		return next(ctx, cmds)
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func (p *pipelines) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	got := p.got
	p.got = nil
	return got
}

// TestOutcomesRoundTrips: Outcomes reads the states of 2,500 approvals in
// three pipelines (1,000 to a round trip), and the records of the ones
// that ended in one more; when none ended, no more.
func TestOutcomesRoundTrips(t *testing.T) {
	c, prefix := testredis.Start(t)
	cnt := &pipelines{}
	c.AddHook(cnt)
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
