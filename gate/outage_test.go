package gate_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/gate"
	"github.com/hitlbot/hitlbot/internal/hitltest"
)

// blinkingStore is a store whose Get fails, as a store that cannot be
// reached does, as many times as fails says, then answers again; while
// down, its Put, Get, Pending and GrantFor all fail.
type blinkingStore struct {
	approval.Store
	fails, failed atomic.Int32
	down          atomic.Bool
}

var errDown = approval.E("test", errkind.Unavailable, "", approval.ErrUnavailable)

func (s *blinkingStore) Get(ctx context.Context, id approval.ID) (*approval.Approval, error) {
	if s.down.Load() {
		return nil, errDown
	}
	if n := s.fails.Load(); n > 0 && s.fails.CompareAndSwap(n, n-1) {
		s.failed.Add(1)
		return nil, approval.E("test.Get", errkind.Unavailable, id, approval.ErrUnavailable)
	}
	return s.Store.Get(ctx, id)
}

func (s *blinkingStore) Put(ctx context.Context, a *approval.Approval, o approval.Outcome) (*approval.Approval, error) {
	if s.down.Load() {
		return nil, errDown
	}
	return s.Store.Put(ctx, a, o)
}

func (s *blinkingStore) Pending(ctx context.Context, k approval.SessionKey) (*approval.Approval, error) {
	if s.down.Load() {
		return nil, errDown
	}
	return s.Store.Pending(ctx, k)
}

func (s *blinkingStore) GrantFor(ctx context.Context, k approval.SessionKey, key string) (*approval.Grant, error) {
	if s.down.Load() {
		return nil, errDown
	}
	return s.Store.GrantFor(ctx, k, key)
}

// TestStoreDownNeverAllows: with the store down, an agent's hook and its
// request_approval are answered, never with an allow, and no card is
// shown (docs/failure-modes.md, "Each surface when the store is down").
func TestStoreDownNeverAllows(t *testing.T) {
	store := &blinkingStore{Store: memstore.New(memstore.Options{})}
	store.down.Store(true)
	r := newRigOn(t, store)
	base := hookServer(t, r)
	input := `{"command":"rm -rf build","description":"clean"}`
	for _, path := range []string{gate.HookPath, gate.CodexHookPath} {
		status, body := answer(t, postHookTo(t, base, path, ciToken, hookBody("sess-down", "Bash", input)))
		if status != "503 Service Unavailable" || !strings.Contains(body, `"error":"unavailable"`) ||
			!strings.Contains(body, "nothing was decided") || strings.Contains(body, "allow") {
			t.Fatalf("%s with the store down: %s %s; want 503 unavailable, no allow", path, status, body)
		}
	}
	srv := httptest.NewServer(r.gate.MCPHandler("test"))
	t.Cleanup(srv.Close)
	cs, err := connect(t, srv.URL, ciToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "request_approval",
		Arguments: map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "git push origin main"}, "tool_use_id": "toolu_down"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); !strings.Contains(got, `"behavior":"deny"`) || !strings.Contains(got, "nothing was decided") {
		t.Fatalf("request_approval with the store down: %s; want a deny saying nothing was decided", got)
	}
	select {
	case a := <-r.shown:
		t.Fatalf("a card was shown with the store down: %s", a.ID)
	default:
	}
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

// refusingTrail is an audit trail whose queue is full: it refuses every
// record (audit.Log.TryAppend's answer then).
type refusingTrail struct{ hitltest.Trail }

func (*refusingTrail) TryAppend(audit.Record) error {
	return audit.E("audit.Append", errkind.Unavailable, errors.New("the audit queue is full"))
}

// TestAutoAllowNeedsItsRecord: a request the policy allows without asking
// is allowed only once its auto_allow record is taken; a trail that
// refuses it (a full queue) makes the request fail as unavailable, and
// the agent is not told to go on.
func TestAutoAllowNeedsItsRecord(t *testing.T) {
	r := newRig(t)
	d := r.deps
	d.Audit = &refusingTrail{}
	g, err := gate.New(r.cfgs, d)
	if err != nil {
		t.Fatal(err)
	}
	ci, _ := g.Authenticate(ciToken)
	ans, err := g.Ask(context.Background(), ci, gate.Ask{Tool: "Read", Input: json.RawMessage(`{"file_path":"/etc/hosts"}`)})
	if err == nil || ans.Status == gate.StatusAllowed {
		t.Fatalf("Ask = %+v, %v: allowed without its audit record", ans, err)
	}
	if k := approval.KindOf(err); k != errkind.Unavailable {
		t.Fatalf("kind %v, want unavailable (%v)", k, err)
	}
	// The same request with a trail that takes it is allowed.
	if ans, err := r.gate.Ask(context.Background(), r.ci, gate.Ask{Tool: "Read", Input: json.RawMessage(`{"file_path":"/etc/hosts"}`)}); err != nil || ans.Status != gate.StatusAllowed {
		t.Fatalf("with a working trail: %+v, %v", ans, err)
	}
}
