package httptool

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
)

const secretToken = "s3cr3t-t0ken-value"

// env is the fake environment of every test.
func env(name string) string {
	switch name {
	case "API_TOKEN":
		return secretToken
	case "BROKEN":
		return "a\r\nX-Evil: 1"
	}
	return ""
}

// seen is one request the test server received.
type seen struct {
	Method, RequestURI, Host string
	Header                   http.Header
	Body                     string
}

// recorder is a test server that records requests and answers with the
// handler the test sets (default: 200 "ok").
type recorder struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []seen
	handler http.HandlerFunc
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, seen{req.Method, req.RequestURI, req.Host, req.Header.Clone(), string(b)})
		h := r.handler
		r.mu.Unlock()
		if h == nil {
			io.WriteString(w, "ok")
			return
		}
		h(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) requests() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seen(nil), r.reqs...)
}

func (r *recorder) setHandler(h http.HandlerFunc) {
	r.mu.Lock()
	r.handler = h
	r.mu.Unlock()
}

// one builds a single tool from cfg and registers it.
func one(t *testing.T, cfg ToolConfig) (agent.Tool, *agent.Registry) {
	t.Helper()
	tools, err := New([]ToolConfig{cfg}, nil, env)
	if err != nil {
		t.Fatal(err)
	}
	reg := agent.NewRegistry()
	if err := reg.Register(tools...); err != nil {
		t.Fatal(err)
	}
	return tools[0], reg
}

func dispatch(t *testing.T, reg *agent.Registry, name, args string) (approval.Result, error) {
	t.Helper()
	return reg.Dispatch(context.Background(), approval.Call{Tool: name, Args: json.RawMessage(args)})
}

// idParams is a schema with one string property per name.
func strParams(names ...string) map[string]any {
	props := map[string]any{}
	for _, n := range names {
		props[n] = map[string]any{"type": "string"}
	}
	return map[string]any{"type": "object", "properties": props}
}

var templatingCases = []struct {
	name    string
	url     string
	query   map[string]string
	body    string
	method  string
	args    string
	wantURI string
	want    string // body the server must see
}{
	{name: "plain", url: "/orders/{{.id}}/refund", args: `{"id":"42"}`, wantURI: "/orders/42/refund"},
	{name: "dot dot slash is one segment", url: "/files/{{.id}}", args: `{"id":"../admin"}`, wantURI: "/files/..%2Fadmin"},
	{name: "slash", url: "/files/{{.id}}/x", args: `{"id":"a/b"}`, wantURI: "/files/a%2Fb/x"},
	{name: "space question hash", url: "/q/{{.id}}", args: `{"id":"a b?c#d"}`, wantURI: "/q/a%20b%3Fc%23d"},
	{name: "host-looking value", url: "/u/{{.id}}", args: `{"id":"@evil.com:80"}`, wantURI: "/u/@evil.com:80"},
	{name: "backslash", url: "/u/{{.id}}", args: `{"id":"..\\..\\x"}`, wantURI: "/u/..%5C..%5Cx"},
	{name: "part of a segment", url: "/v1/item-{{.id}}.json", args: `{"id":"7"}`, wantURI: "/v1/item-7.json"},
	{name: "url query escaped", url: "/s?q={{.id}}&x=1", args: `{"id":"a&admin=1"}`, wantURI: "/s?q=a%26admin%3D1&x=1"},
	{name: "query map", url: "/s", query: map[string]string{"q": "{{.id}}", "lang": "en"}, args: `{"id":"a b&c=d"}`, wantURI: "/s?lang=en&q=a+b%26c%3Dd"},
	{name: "query map optional absent", url: "/s", query: map[string]string{"q": "{{.id}}", "lang": "en"}, args: `{}`, wantURI: "/s?lang=en"},
	{name: "both queries", url: "/s?a=1", query: map[string]string{"b": "{{.id}}"}, args: `{"id":"2"}`, wantURI: "/s?a=1&b=2"},
	{name: "number value", url: "/n/{{.n}}", args: `{"n":12345678901234567890}`, wantURI: "/n/12345678901234567890"},
	{name: "body json encoded", method: "POST", url: "/o", body: `{"reason": {{.id}}, "n": {{.n}}}`,
		args: `{"id":"x\", \"admin\": true, \"y\":\"","n":5}`, wantURI: "/o",
		want: `{"reason": "x\", \"admin\": true, \"y\":\"", "n": 5}`},
	{name: "body missing is null", method: "POST", url: "/o", body: `{"reason": {{.id}}}`, args: `{}`, wantURI: "/o", want: `{"reason": null}`},
}

func TestTemplating(t *testing.T) {
	for _, c := range templatingCases {
		t.Run(c.name, func(t *testing.T) {
			srv := newRecorder(t)
			params := strParams("id")
			params["properties"].(map[string]any)["n"] = map[string]any{"type": "number"}
			_, reg := one(t, ToolConfig{Name: "x", Method: c.method, URL: srv.URL + c.url, Query: c.query, Body: c.body, Parameters: params})
			res, err := dispatch(t, reg, "x", c.args)
			if err != nil || res.IsError {
				t.Fatalf("res %+v err %v", res, err)
			}
			reqs := srv.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			if reqs[0].RequestURI != c.wantURI {
				t.Errorf("URI %q, want %q", reqs[0].RequestURI, c.wantURI)
			}
			if reqs[0].Body != c.want {
				t.Errorf("body %q, want %q", reqs[0].Body, c.want)
			}
			if c.body != "" {
				var v map[string]any
				if err := json.Unmarshal([]byte(reqs[0].Body), &v); err != nil {
					t.Errorf("body is not JSON: %v", err)
				}
				if _, injected := v["admin"]; injected {
					t.Error("a value added a key to the body")
				}
				if ct := reqs[0].Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q", ct)
				}
			}
		})
	}
}

// Values that would make a path segment empty or a dot segment are refused
// before anything is sent.
var refusedPathCases = []string{`{"id":".."}`, `{"id":"."}`, `{"id":""}`, `{"id":{"a":1}}`}

func TestRefusedPathSegments(t *testing.T) {
	srv := newRecorder(t)
	tl, _ := one(t, ToolConfig{Name: "x", URL: srv.URL + "/files/{{.id}}/meta", Parameters: map[string]any{
		"properties": map[string]any{"id": map[string]any{}}}})
	for _, args := range refusedPathCases {
		if _, err := tl.Preview(context.Background(), json.RawMessage(args)); err == nil {
			t.Errorf("%s: preview accepted", args)
		}
		out, err := tl.Run(context.Background(), json.RawMessage(args))
		if err != nil || !out.IsError || !strings.Contains(out.Content, "not sent") {
			t.Errorf("%s: out %+v err %v", args, out, err)
		}
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// The host is fixed: whatever the value, the request reaches the server the
// template names, with its Host header.
func TestHostCannotBeInjected(t *testing.T) {
	srv := newRecorder(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	tl, reg := one(t, ToolConfig{Name: "x", URL: srv.URL + "/{{.id}}", Parameters: strParams("id")})
	for _, v := range []string{"/evil.com", "@evil.com", "\\\\evil.com", "%2F%2Fevil.com", "evil.com:80#", "http://evil.com/"} {
		args, _ := json.Marshal(map[string]string{"id": v})
		p, err := tl.Preview(context.Background(), args)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(p, "GET "+srv.URL+"/") {
			t.Errorf("preview %q", p)
		}
		if _, err := dispatch(t, reg, "x", string(args)); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range srv.requests() {
		if r.Host != host || strings.Count(r.RequestURI, "/") != 1 {
			t.Errorf("request %q to host %q", r.RequestURI, r.Host)
		}
	}
}

func TestPreview(t *testing.T) {
	tl, _ := one(t, ToolConfig{
		Name: "refund", Method: "post", URL: "https://api.example.com/orders/{{.id}}/refund",
		Headers: map[string]string{"Authorization": "Bearer ${API_TOKEN}", "X-Static": "plain"},
		Query:   map[string]string{"api_key": "abc123", "dry": "{{.dry}}"},
		Body:    `{"reason": {{.reason}}, "card": {"token": {{.reason}}}, "amount": 5}`,
		Parameters: map[string]any{"type": "object", "properties": map[string]any{
			"id": map[string]any{"type": "integer"}, "reason": map[string]any{"type": "string"}, "dry": map[string]any{"type": "boolean"}}},
	})
	got, err := tl.Preview(context.Background(), json.RawMessage(`{"id":42,"reason":"duplicate","dry":true}`))
	if err != nil {
		t.Fatal(err)
	}
	want := "POST https://api.example.com/orders/42/refund?api_key=[REDACTED]&dry=true\n" +
		"headers: Authorization, Content-Type, X-Static (values hidden)\n" +
		`body: {"amount":5,"card":{"token":"[REDACTED]"},"reason":"duplicate"}`
	if got != want {
		t.Errorf("preview\n%s\nwant\n%s", got, want)
	}
	if strings.Contains(got, secretToken) || strings.Contains(got, "plain") || strings.Contains(got, "abc123") {
		t.Error("preview shows a secret")
	}
	if tl.Effect(nil) != approval.EffectWrite {
		t.Errorf("effect %s", tl.Effect(nil))
	}
}

// The environment secret reaches the server, and nowhere else: not the
// preview, not an echoing response, not a transport error.
func TestEnvHeaderSecret(t *testing.T) {
	srv := newRecorder(t)
	srv.setHandler(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, "bad token "+r.Header.Get("Authorization"))
	})
	tl, reg := one(t, ToolConfig{Name: "x", URL: srv.URL + "/a",
		Headers: map[string]string{"Authorization": "Bearer ${API_TOKEN}"}})
	res, err := dispatch(t, reg, "x", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.requests()[0].Header.Get("Authorization"); got != "Bearer "+secretToken {
		t.Errorf("server saw %q", got)
	}
	if !res.IsError || !strings.HasPrefix(res.Content, "HTTP 403\n") || strings.Contains(res.Content, secretToken) ||
		!strings.Contains(res.Content, "Bearer [REDACTED]") {
		t.Errorf("result %+v", res)
	}
	p, _ := tl.Preview(context.Background(), nil)
	if strings.Contains(p, secretToken) {
		t.Errorf("preview %q", p)
	}
	srv.Close()
	_, err = tl.Run(context.Background(), nil)
	if err == nil || strings.Contains(err.Error(), secretToken) {
		t.Errorf("err %v", err)
	}
}

func TestResponseCut(t *testing.T) {
	srv := newRecorder(t)
	big := strings.Repeat("é", 5000) // 10000 bytes
	srv.setHandler(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, big) })
	_, reg := one(t, ToolConfig{Name: "x", URL: srv.URL, MaxResponseBytes: 1001})
	res, err := dispatch(t, reg, "x", `{}`)
	if err != nil || res.IsError {
		t.Fatalf("res %+v err %v", res, err)
	}
	want := "HTTP 200\n" + strings.Repeat("é", 500) + "\n[response cut at 1001 bytes]"
	if res.Content != want {
		t.Errorf("content %d bytes, tail %q", len(res.Content), res.Content[len(res.Content)-40:])
	}
}

var statusCases = []struct {
	code    int
	isError bool
}{
	{200, false}, {201, false}, {204, false}, {302, true}, {400, true}, {404, true}, {500, true}, {503, true},
}

func TestStatus(t *testing.T) {
	srv := newRecorder(t)
	_, reg := one(t, ToolConfig{Name: "x", URL: srv.URL + "/s/{{.code}}", Method: "DELETE",
		Parameters: strParams("code")})
	for _, c := range statusCases {
		srv.setHandler(func(w http.ResponseWriter, r *http.Request) {
			if c.code == 302 {
				w.Header().Set("Location", "http://elsewhere.invalid/")
			}
			w.WriteHeader(c.code)
			io.WriteString(w, "detail")
		})
		res, err := dispatch(t, reg, "x", `{"code":"a"}`)
		if err != nil {
			t.Fatalf("%d: %v", c.code, err)
		}
		if res.IsError != c.isError || !strings.HasPrefix(res.Content, "HTTP "+itoa(c.code)) {
			t.Errorf("%d: %+v", c.code, res)
		}
		if c.code != 204 && !strings.HasSuffix(res.Content, "\ndetail") {
			t.Errorf("%d: content %q", c.code, res.Content)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// A redirect is reported, not followed: the other host never sees the
// request or its secret header.
func TestRedirectNotFollowed(t *testing.T) {
	other := newRecorder(t)
	srv := newRecorder(t)
	srv.setHandler(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/steal", http.StatusTemporaryRedirect)
	})
	_, reg := one(t, ToolConfig{Name: "x", Method: "POST", URL: srv.URL,
		Headers: map[string]string{"X-Api-Key": "${API_TOKEN}"}})
	res, err := dispatch(t, reg, "x", `{}`)
	if err != nil || !res.IsError || !strings.Contains(res.Content, "redirects are not followed") {
		t.Fatalf("res %+v err %v", res, err)
	}
	if n := len(other.requests()); n != 0 {
		t.Errorf("the redirect target got %d requests", n)
	}
}

// A timeout after the request was sent is of unknown effect: a plain error.
func TestTimeoutAfterSend(t *testing.T) {
	srv := newRecorder(t)
	release := make(chan struct{})
	defer close(release)
	srv.setHandler(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	_, reg := one(t, ToolConfig{Name: "x", Method: "POST", URL: srv.URL, Timeout: 100 * time.Millisecond})
	_, err := dispatch(t, reg, "x", `{}`)
	if err == nil || errors.Is(err, approval.ErrNotRun) || !strings.Contains(err.Error(), "timed out after 100ms") ||
		!strings.Contains(err.Error(), "effect unknown") {
		t.Fatalf("err %v, want an unknown-effect timeout", err)
	}
}

// Nothing listens: the connection is refused before anything is written.
func TestConnectionRefusedIsNotRun(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, reg := one(t, ToolConfig{Name: "x", Method: "POST", URL: "http://" + addr + "/a"})
	_, err = dispatch(t, reg, "x", `{}`)
	if !errors.Is(err, approval.ErrNotRun) {
		t.Fatalf("err %v, want ErrNotRun", err)
	}
}

// The registry refuses arguments that miss a path parameter (made required).
func TestPathParamsRequired(t *testing.T) {
	srv := newRecorder(t)
	tl, reg := one(t, ToolConfig{Name: "x", URL: srv.URL + "/o/{{.id}}", Parameters: strParams("id")})
	if !contains(tl.Schema().Required, "id") {
		t.Errorf("required %v", tl.Schema().Required)
	}
	if _, err := dispatch(t, reg, "x", `{}`); !errors.Is(err, approval.ErrNotRun) {
		t.Errorf("err %v", err)
	}
	if len(srv.requests()) != 0 {
		t.Error("sent")
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

var kindCases = []struct {
	method, kind string
	want         approval.Effect
}{
	{"", "", approval.EffectRead},
	{"GET", "", approval.EffectRead},
	{"head", "", approval.EffectRead},
	{"POST", "", approval.EffectWrite},
	{"PUT", "", approval.EffectWrite},
	{"PATCH", "", approval.EffectWrite},
	{"DELETE", "", approval.EffectDestructive},
	{"POST", "read", approval.EffectRead},
	{"GET", "Destructive", approval.EffectDestructive},
}

func TestKinds(t *testing.T) {
	for _, c := range kindCases {
		tl, _ := one(t, ToolConfig{Name: "x", Method: c.method, Kind: c.kind, URL: "https://a.example/x"})
		if got := tl.Effect(nil); got != c.want {
			t.Errorf("%s/%s: %s, want %s", c.method, c.kind, got, c.want)
		}
	}
}

func TestDefaults(t *testing.T) {
	tl, _ := one(t, ToolConfig{Name: "x", URL: "https://a.example/x"})
	h := tl.(*tool)
	if h.timeout != DefaultTimeout || h.maxBytes != DefaultMaxResponseBytes || h.desc != "GET https://a.example/x" {
		t.Errorf("%v %v %q", h.timeout, h.maxBytes, h.desc)
	}
}

var configErrorCases = []struct {
	name string
	cfg  ToolConfig
	want string // substring of the error
}{
	{"bad name", ToolConfig{Name: "Refund-Order", URL: "https://a.example/"}, `tool "Refund-Order": name:`},
	{"no name", ToolConfig{URL: "https://a.example/"}, `tools.http[0]: name:`},
	{"bad method", ToolConfig{Name: "x", Method: "TRACE", URL: "https://a.example/"}, `tool "x": method:`},
	{"no url", ToolConfig{Name: "x"}, `tool "x": url: must start with`},
	{"ftp", ToolConfig{Name: "x", URL: "ftp://a.example/"}, `url: must start with`},
	{"relative", ToolConfig{Name: "x", URL: "/orders"}, `url: must start with`},
	{"host placeholder", ToolConfig{Name: "x", URL: "https://{{.host}}/a", Parameters: strParams("host")}, `url: host part must not contain a placeholder`},
	{"subdomain placeholder", ToolConfig{Name: "x", URL: "https://{{.t}}.example.com/a", Parameters: strParams("t")}, `host part must not contain a placeholder`},
	{"port placeholder", ToolConfig{Name: "x", URL: "https://a.example:{{.p}}/a", Parameters: strParams("p")}, `host part must not contain a placeholder`},
	{"host glued to placeholder", ToolConfig{Name: "x", URL: "https://a.example{{.p}}", Parameters: strParams("p")}, `host part must not contain a placeholder`},
	{"userinfo", ToolConfig{Name: "x", URL: "https://u:p@a.example/"}, `url: must not carry user info`},
	{"fragment", ToolConfig{Name: "x", URL: "https://a.example/#x"}, `url: must not have a fragment`},
	{"empty host", ToolConfig{Name: "x", URL: "https:///a"}, `url: has no host`},
	{"space in path", ToolConfig{Name: "x", URL: "https://a.example/a b/{{.id}}", Parameters: strParams("id")}, `url: path: character " " must be percent-encoded`},
	{"non-ASCII path", ToolConfig{Name: "x", URL: "https://a.example/订单"}, `url: path: character`},
	{"bad escape", ToolConfig{Name: "x", URL: "https://a.example/a%zz"}, `url: path: character "%"`},
	{"unclosed placeholder", ToolConfig{Name: "x", URL: "https://a.example/{{.id"}, `url: path: "{{" without`},
	{"template function", ToolConfig{Name: "x", URL: `https://a.example/{{printf "%s" .id}}`}, `url: path: placeholder`},
	{"undeclared placeholder", ToolConfig{Name: "x", URL: "https://a.example/{{.id}}"}, `url: placeholder {{.id}} is not a property`},
	{"undeclared query", ToolConfig{Name: "x", URL: "https://a.example/", Query: map[string]string{"q": "{{.q}}"}}, `query.q: placeholder {{.q}}`},
	{"undeclared body", ToolConfig{Name: "x", Method: "POST", URL: "https://a.example/", Body: `{"a":{{.a}}}`}, `body: placeholder {{.a}}`},
	{"quoted body placeholder", ToolConfig{Name: "x", Method: "POST", URL: "https://a.example/", Body: `{"a":"{{.a}}"}`, Parameters: strParams("a")}, `body: not valid JSON`},
	{"body not json", ToolConfig{Name: "x", Method: "POST", URL: "https://a.example/", Body: `{a:1}`}, `body: not valid JSON`},
	{"body with GET", ToolConfig{Name: "x", URL: "https://a.example/", Body: `{}`}, `body: not allowed with GET`},
	{"missing env", ToolConfig{Name: "x", URL: "https://a.example/", Headers: map[string]string{"Authorization": "Bearer ${NOPE}"}}, `headers.Authorization: environment variable NOPE is not set`},
	{"bad env name", ToolConfig{Name: "x", URL: "https://a.example/", Headers: map[string]string{"A": "${1X}"}}, `headers.A: "1X" is not a valid`},
	{"unclosed env", ToolConfig{Name: "x", URL: "https://a.example/", Headers: map[string]string{"A": "${API_TOKEN"}}, `headers.A: "${" without`},
	{"env with newline", ToolConfig{Name: "x", URL: "https://a.example/", Headers: map[string]string{"A": "${BROKEN}"}}, `headers.A: the value has a line break`},
	{"bad header name", ToolConfig{Name: "x", URL: "https://a.example/", Headers: map[string]string{"Bad Header": "v"}}, `headers: "Bad Header" is not a valid header name`},
	{"header placeholder", ToolConfig{Name: "x", URL: "https://a.example/", Headers: map[string]string{"A": "{{.a}}"}, Parameters: strParams("a")}, `headers.A: placeholders are not supported`},
	{"bad kind", ToolConfig{Name: "x", URL: "https://a.example/", Kind: "harmless"}, `kind: "harmless"`},
	{"negative timeout", ToolConfig{Name: "x", URL: "https://a.example/", Timeout: -1}, `timeout: must not be negative`},
	{"negative max", ToolConfig{Name: "x", URL: "https://a.example/", MaxResponseBytes: -1}, `max_response_bytes: must not be negative`},
	{"schema not object", ToolConfig{Name: "x", URL: "https://a.example/", Parameters: map[string]any{"type": "string"}}, `parameters: type must be "object"`},
	{"schema bad", ToolConfig{Name: "x", URL: "https://a.example/", Parameters: map[string]any{"properties": 3}}, `parameters: not a JSON schema`},
	{"schema unresolvable", ToolConfig{Name: "x", URL: "https://a.example/", Parameters: map[string]any{"$ref": "#/$defs/nope"}}, `parameters:`},
	{"schema not JSON", ToolConfig{Name: "x", URL: "https://a.example/", Parameters: map[string]any{"a": func() {}}}, `parameters: not representable`},
}

func TestConfigErrors(t *testing.T) {
	for _, c := range configErrorCases {
		t.Run(c.name, func(t *testing.T) {
			tools, err := New([]ToolConfig{c.cfg}, nil, env)
			if err == nil {
				t.Fatalf("no error; tools %v", tools)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want it to contain %q", err, c.want)
			}
			if strings.Contains(err.Error(), secretToken) || strings.Contains(err.Error(), "X-Evil") {
				t.Errorf("error shows a secret: %q", err)
			}
		})
	}
}

func TestConfigDuplicateAndAllErrors(t *testing.T) {
	_, err := New([]ToolConfig{
		{Name: "a", URL: "https://a.example/"},
		{Name: "a", URL: "https://a.example/"},
		{Name: "b", URL: "nope"},
	}, nil, env)
	if err == nil || !strings.Contains(err.Error(), `tool "a": name: defined twice`) || !strings.Contains(err.Error(), `tool "b": url:`) {
		t.Errorf("err %v", err)
	}
}

// The caller's client is not modified (redirect policy is set on a copy).
func TestClientNotModified(t *testing.T) {
	c := &http.Client{}
	if _, err := New([]ToolConfig{{Name: "a", URL: "https://a.example/"}}, c, env); err != nil {
		t.Fatal(err)
	}
	if c.CheckRedirect != nil {
		t.Error("the caller's client was changed")
	}
}

// roundTripFunc is a custom transport (no trace hooks).
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// With a custom transport the trace hook proves nothing: an error after the
// request went out is of unknown effect, a dial error is still "not run".
var customTransportCases = []struct {
	name   string
	send   bool  // the transport delivers the request first
	err    error // then fails with this
	notRun bool
}{
	{"sent then reset", true, errors.New("connection reset by peer"), false},
	{"dial refused", false, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, true},
	{"dns", false, &net.DNSError{Err: "no such host", Name: "a.example", IsNotFound: true}, true},
	{"read error", true, &net.OpError{Op: "read", Net: "tcp", Err: errors.New("reset")}, false},
}

func TestCustomTransportClassification(t *testing.T) {
	for _, c := range customTransportCases {
		t.Run(c.name, func(t *testing.T) {
			srv := newRecorder(t)
			client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if c.send {
					resp, err := http.DefaultTransport.RoundTrip(r)
					if err == nil {
						resp.Body.Close()
					}
				}
				return nil, c.err
			})}
			tools, err := New([]ToolConfig{{Name: "x", Method: "POST", URL: srv.URL}}, client, env)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tools[0].Run(context.Background(), nil)
			if err == nil || errors.Is(err, approval.ErrNotRun) != c.notRun {
				t.Errorf("err %v, want notRun=%v", err, c.notRun)
			}
		})
	}
}

// A TLS handshake failure happens before the request: not run, not received.
func TestTLSFailureIsNotRun(t *testing.T) {
	var got int
	var mu sync.Mutex
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { mu.Lock(); got++; mu.Unlock() }))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake error is expected
	srv.StartTLS()
	defer srv.Close()
	_, reg := one(t, ToolConfig{Name: "x", Method: "POST", URL: srv.URL + "/pay"})
	_, err := dispatch(t, reg, "x", `{}`)
	if !errors.Is(err, approval.ErrNotRun) {
		t.Errorf("err %v, want ErrNotRun", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got != 0 {
		t.Errorf("the server got %d requests", got)
	}
}
