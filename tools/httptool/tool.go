package httptool

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/redact"
	"github.com/hitlbot/hitlbot/tools/internal/argtmpl"
	"github.com/hitlbot/hitlbot/words"
)

// errTimeout is the cause of a request's own timeout.
var errTimeout = errors.New("request timed out")

// maxPreviewBody is how much of a request body a preview shows.
const maxPreviewBody = 2000

// tool is one configured HTTP tool.
type tool struct {
	name, desc  string
	method      string
	url         *urlTemplate
	query       []queryParam
	body        template // nil: no body
	headers     http.Header
	headerNames []string // sorted; previews show these, never the values
	scrub       redact.Values
	schema      *jsonschema.Schema
	effect      approval.Effect
	timeout     time.Duration
	maxBytes    int64
	client      *http.Client
}

type queryParam struct {
	key  string
	tmpl template
}

var _ agent.Tool = (*tool)(nil)

func (t *tool) Name() string                           { return t.name }
func (t *tool) Description() string                    { return t.desc }
func (t *tool) Schema() *jsonschema.Schema             { return t.schema }
func (t *tool) Effect(json.RawMessage) approval.Effect { return t.effect }

// request is one call rendered: what would be sent.
type request struct {
	url  *url.URL
	body []byte // nil: none
}

// render decodes the arguments and fills the templates.
func (t *tool) render(raw json.RawMessage) (*request, error) {
	args, err := decodeArgs(raw)
	if err != nil {
		return nil, err
	}
	u, err := t.url.render(args)
	if err != nil {
		return nil, err
	}
	if len(t.query) > 0 {
		q := url.Values{}
		for _, p := range t.query {
			if name, ok := p.tmpl.Single(); ok {
				if v, present := args[name]; !present || v == nil {
					continue // optional and absent: leave the parameter out
				}
			}
			v, err := renderArgs(p.tmpl, args, func(name string, v any, present bool) (string, error) {
				if !present || v == nil {
					return "", nil
				}
				return scalar(name, v, true)
			})
			if err != nil {
				return nil, err
			}
			q.Add(p.key, v)
		}
		if enc := q.Encode(); enc != "" {
			if u.RawQuery != "" {
				u.RawQuery += "&"
			}
			u.RawQuery += enc
		}
	}
	r := &request{url: u}
	if t.body != nil {
		if r.body, err = renderBody(t.body, args); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// decodeArgs reads the arguments object, keeping numbers as written.
func decodeArgs(raw json.RawMessage) (map[string]any, error) { return argtmpl.DecodeArgs(raw) }

// Preview shows the method and the URL (secret-looking query values
// hidden), the header names and the body (secret-looking keys hidden):
//
//	POST https://api.example.com/orders/42/refund
//	headers: Authorization, Content-Type (values hidden)
//	body: {"amount":5,"reason":"duplicate"}
func (t *tool) Preview(_ context.Context, raw json.RawMessage) (string, error) {
	r, err := t.render(raw)
	if err != nil {
		return "", fmt.Errorf("%s: %s", t.name, t.scrub.Hide(err.Error()))
	}
	var b strings.Builder
	b.WriteString(t.method + " " + redactURL(r.url))
	if len(t.headerNames) > 0 {
		b.WriteString("\nheaders: " + strings.Join(t.headerNames, ", ") + " (values hidden)")
	}
	if r.body != nil {
		body := redactJSON(r.body)
		if len(body) > maxPreviewBody {
			body = cutUTF8(body, maxPreviewBody) + " …"
		}
		b.WriteString("\nbody: " + body)
	}
	return t.scrub.Hide(b.String()), nil
}

// Run sends the request.
//
//   - Arguments that do not render (a missing path parameter, a path
//     segment that would be "..", a body that is not JSON): nothing is
//     sent; Output with IsError.
//   - No connection was ever obtained (DNS failure, connection refused, a
//     TLS handshake failure, the timeout hit while dialling): nothing can
//     have been sent; an error wrapping approval.ErrNotRun. "No connection"
//     is known from the GotConn trace hook of the standard transport; with
//     a custom transport only DNS, dial and TLS errors count.
//   - A connection was obtained and then the request failed (timeout while
//     waiting for the answer, connection reset): the server may have acted;
//     a plain error, so the approval freezes instead of being retried.
//   - A response: "HTTP <status>\n<body>", the body cut at MaxResponseBytes;
//     IsError unless the status is 2xx. Redirects are not followed.
func (t *tool) Run(ctx context.Context, raw json.RawMessage) (agent.Output, error) {
	r, err := t.render(raw)
	if err != nil {
		return agent.Output{Content: words.Text(words.LangOf(ctx), words.HTTPNotSent, t.scrub.Hide(err.Error())), IsError: true}, nil
	}
	shown := t.method + " " + redactURL(r.url)

	ctx, cancel := context.WithTimeoutCause(ctx, t.timeout, errTimeout)
	defer cancel()
	var connected atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { connected.Store(true) },
	})
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, t.method, r.url.String(), body)
	if err != nil {
		return agent.Output{}, fmt.Errorf("%w: %s: %s", approval.ErrNotRun, shown, t.scrub.Hide(err.Error()))
	}
	for k, vs := range t.headers {
		req.Header[k] = append([]string(nil), vs...)
	}

	resp, err := t.client.Do(req)
	if err != nil {
		cause := t.cause(ctx, err)
		if !connected.Load() && (t.traced() || beforeRequest(err)) {
			return agent.Output{}, fmt.Errorf("%w: %s: %s (no connection was made)", approval.ErrNotRun, shown, cause)
		}
		return agent.Output{}, fmt.Errorf("%s: %s; the request may have reached the server: effect unknown", shown, cause)
	}
	defer resp.Body.Close()

	data, readErr := io.ReadAll(io.LimitReader(resp.Body, t.maxBytes+1))
	cut := int64(len(data)) > t.maxBytes
	text := string(data)
	if cut {
		text = cutUTF8(text, int(t.maxBytes))
	}
	lang := words.LangOf(ctx)
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %d", resp.StatusCode)
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		note := words.Text(lang, words.HTTPRedirect)
		if loc := resp.Header.Get("Location"); loc != "" {
			note += words.Text(lang, words.ReasonSep) + words.Text(lang, words.HTTPLocation, loc)
		}
		b.WriteString(" (" + note + ")")
	}
	if text != "" {
		b.WriteString("\n" + strings.ToValidUTF8(text, "\uFFFD"))
	}
	if cut {
		b.WriteString("\n" + words.Text(lang, words.HTTPCut, t.maxBytes))
	}
	if readErr != nil {
		b.WriteString("\n" + words.Text(lang, words.HTTPReadFailed, t.cause(ctx, readErr)))
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	return agent.Output{Content: t.scrub.Hide(b.String()), IsError: !ok}, nil
}

// traced reports whether the client's transport is the standard one, whose
// GotConn trace hook reliably fires before any byte of a request is
// written. A custom transport may not call the hook at all.
func (t *tool) traced() bool {
	switch t.client.Transport.(type) {
	case nil, *http.Transport:
		return true
	}
	return false
}

// beforeRequest reports errors that can only happen before a request is
// written: name resolution, dialling, the TLS handshake.
func beforeRequest(err error) bool {
	var (
		dns  *net.DNSError
		op   *net.OpError
		cert *tls.CertificateVerificationError
		rec  tls.RecordHeaderError
		host x509.HostnameError
		ua   x509.UnknownAuthorityError
		ci   x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &dns), errors.As(err, &op) && op.Op == "dial",
		errors.As(err, &cert), errors.As(err, &rec), errors.As(err, &host), errors.As(err, &ua), errors.As(err, &ci):
		return true
	}
	return false
}

// cause says why a request failed, without the URL (the caller shows the
// redacted one) and without secrets.
func (t *tool) cause(ctx context.Context, err error) string {
	if context.Cause(ctx) == errTimeout {
		return words.Text(words.LangOf(ctx), words.HTTPTimedOut, t.timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return t.scrub.Hide(err.Error())
}

// cutUTF8 returns at most n bytes of s, not splitting a rune.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
