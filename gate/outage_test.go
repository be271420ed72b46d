package gate_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/gate"
)

// blinkingStore is a store whose Get fails, as a store that cannot be
// reached does, as many times as fails says, then answers again.
type blinkingStore struct {
	approval.Store
	fails, failed atomic.Int32
}

func (s *blinkingStore) Get(ctx context.Context, id approval.ID) (*approval.Approval, error) {
	if n := s.fails.Load(); n > 0 && s.fails.CompareAndSwap(n, n-1) {
		s.failed.Add(1)
		return nil, approval.E("test.Get", errkind.Unavailable, id, approval.ErrUnavailable)
	}
	return s.Store.Get(ctx, id)
}

// TestCallbackOutlivesAStoreBlip: the store cannot be read for a moment
// while a callback's sender waits for the decision (docs/failure-modes.md,
// "An agent's callback_url"). The sender tries again; it does not drop the
// delivery, and the decision is POSTed and audited as delivered, once.
func TestCallbackOutlivesAStoreBlip(t *testing.T) {
	var mu sync.Mutex
	var got []string
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
	}))
	t.Cleanup(cb.Close)
	store := &blinkingStore{Store: memstore.New(memstore.Options{})}
	r := newRigOn(t, store)
	srv := httptest.NewServer(r.gate.HTTP(people))
	t.Cleanup(srv.Close)
	code, body, _ := request(t, "POST", srv.URL+"/api/approvals", ciToken,
		`{"tool_name":"Bash","input":{"command":"terraform apply"},"tool_use_id":"toolu_blip","callback_url":"`+cb.URL+`/hook"}`)
	var v struct{ ID string }
	if err := json.Unmarshal([]byte(body), &v); err != nil || code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	a := r.card(t)
	// From here only the callback's sender reads the record: its next
	// read fails.
	store.fails.Store(1)
	r.decide(t, a, approval.Approve, "ou_456", "")
	gate.CallbacksDone(r.gate)
	if store.failed.Load() != 1 {
		t.Fatal("the store's failure was never met; the test proves nothing")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || !strings.Contains(got[0], `"status":"allowed"`) || !strings.Contains(got[0], v.ID) {
		t.Fatalf("the callback received %d deliveries (%.200q); want one, allowed, of %s", len(got), got, v.ID)
	}
	var delivered int
	for _, rec := range r.trail.All() {
		if rec.Event == audit.EventCallback && rec.Outcome == "delivered" && rec.ApprovalID == v.ID {
			delivered++
		}
	}
	if delivered != 1 {
		t.Fatalf("%d callback records delivered; want one", delivered)
	}
}
