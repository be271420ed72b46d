package gate

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/internal/tracing"
)

// maxLongPoll bounds GET /api/approvals/{id}?wait=.
const maxLongPoll = 60 * time.Second

// view is an Answer as the HTTP API writes it (camelCase, as the rest of
// the API).
type view struct {
	ID        approval.ID     `json:"id,omitempty"`
	Status    string          `json:"status"`
	Message   string          `json:"message,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Risk      string          `json:"risk"`
	ExpiresAt string          `json:"expiresAt,omitempty"`
	State     approval.State  `json:"state,omitempty"`
	DecidedBy approval.UserID `json:"decidedBy,omitempty"`
}

func viewOf(a Answer) view {
	v := view{ID: a.ID, Status: a.Status, Message: a.Message, Input: a.Input, Risk: a.Risk, State: a.State, DecidedBy: a.DecidedBy}
	if !a.ExpiresAt.IsZero() {
		v.ExpiresAt = a.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return v
}

// HTTP serves the agents' part of the HTTP API in front of next (the
// people's API, package channels/api):
//
//	POST /api/approvals  {tool_name, input, tool_use_id?, idempotency_key?, description?, callback_url?}
//	                     201 {id, status: pending, expiresAt, …} when this request made the approval;
//	                     200 when allowed at once, or for a retry (the key asked before with the same
//	                     tool and input: that approval, pending or ended);
//	                     409 idempotency_conflict when the key was asked before with another tool or input
//	GET  /api/approvals/{id}[?wait=30s]   where it stands; with wait, held until it ends or wait passes (≤ 60s)
//	POST /hooks/claude   Claude Code's PermissionRequest hook (claude.go): held until a decision or the
//	                     agent's hook_timeout, answered {"hookSpecificOutput":{…,"decision":{…}}}
//	POST /hooks/codex    Codex's (codex.go): the same, answered as Codex accepts (no updatedInput)
//
// A request with an agent's bearer token is the gate's; any other goes to
// next, except POST /api/approvals and the hooks, which only agents
// may use: 401.
func (g *Gate) HTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ag, isAgent := g.Authenticate(bearer(r.Header))
		if isAgent {
			// The agent's trace context (a W3C traceparent header), as MCP's
			// _meta carries it: its approvals are asked in its trace. Only
			// an agent's request may name one.
			r = r.WithContext(tracing.WithRemote(r.Context(), r.Header.Get("traceparent")))
		}
		create := r.URL.Path == "/api/approvals" && r.Method == http.MethodPost
		hook := r.URL.Path == HookPath || r.URL.Path == CodexHookPath
		switch {
		case hook && r.Method != http.MethodPost:
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "POST a PermissionRequest hook's input here")
		case hook && !isAgent:
			unauthorized(w)
		case r.URL.Path == HookPath:
			g.serveHook(w, r, ag, claudeCode)
		case r.URL.Path == CodexHookPath:
			g.serveHook(w, r, ag, codex)
		case create && !isAgent:
			unauthorized(w)
		case create:
			g.serveCreate(w, r, ag)
		case isAgent && r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/approvals/") && !strings.Contains(r.URL.Path[len("/api/approvals/"):], "/"):
			g.serveGet(w, r, ag)
		case isAgent:
			writeError(w, http.StatusForbidden, "forbidden", "an agent's token may create approvals and read its own (POST /api/approvals, GET /api/approvals/{id}); nothing else")
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// createBody is POST /api/approvals's body.
type createBody struct {
	askInput
	CallbackURL string `json:"callback_url"`
}

// readJSONBody reads a request's JSON body of at most maxBody bytes, or
// answers 415 (not JSON) or 413 (larger) and reports false.
func readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		writeError(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "send the body as application/json")
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("the body is larger than %d bytes", maxBody))
		return nil, false
	}
	return body, true
}

func (g *Gate) serveCreate(w http.ResponseWriter, r *http.Request, ag *Agent) {
	body, ok := readJSONBody(w, r)
	if !ok {
		return
	}
	var in createBody
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&in); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "the body is not a JSON object of the documented fields: "+err.Error())
		return
	}
	if _, err := dec.Token(); err != io.EOF {
		writeError(w, http.StatusBadRequest, "invalid_request", "the body has more after its JSON object; send one object")
		return
	}
	if in.CallbackURL != "" {
		if err := g.checkCallback(ag, in.CallbackURL); err != nil {
			writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
			return
		}
	}
	ans, created, err := g.ask(r.Context(), ag, in.ask())
	if err != nil {
		g.writeFailure(w, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	if ans.Status == StatusPending && in.CallbackURL != "" {
		g.startCallback(ag, ans.ID, in.CallbackURL)
	}
	writeJSON(w, status, viewOf(ans))
}

func (g *Gate) serveGet(w http.ResponseWriter, r *http.Request, ag *Agent) {
	id := approval.ID(r.URL.Path[len("/api/approvals/"):])
	var d time.Duration
	if s := r.URL.Query().Get("wait"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil || d < 0 {
			writeError(w, http.StatusBadRequest, "invalid_request", "wait must be a duration such as 30s")
			return
		}
		d = min(d, maxLongPoll)
	}
	ans, err := g.Wait(r.Context(), ag, id, d)
	if err != nil {
		g.writeFailure(w, err)
		return
	}
	writeJSON(w, http.StatusOK, viewOf(ans))
}

func (g *Gate) writeFailure(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrInvalid):
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
	case errors.Is(err, ErrNotFound):
		writeError(w, http.StatusNotFound, "not_found", "this agent has no approval with that id")
	case errors.Is(err, ErrKeyConflict):
		writeError(w, http.StatusConflict, codeKeyConflict, message(err))
	case errors.Is(err, ErrBusy):
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusTooManyRequests, "too_many_pending", message(err))
	default:
		g.log.Error("an agent's request failed", "err", err)
		writeError(w, http.StatusServiceUnavailable, "unavailable", message(err))
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]string{"error": code, "message": msg})
}

// checkCallback accepts an https URL (http only for a loopback host) whose
// host is in the agent's callback_hosts.
func (g *Gate) checkCallback(ag *Agent, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		return errors.New("callback_url is not an absolute URL")
	}
	host := u.Hostname()
	loopback := host == "localhost" || host == "127.0.0.1" || host == "::1"
	if u.Scheme != "https" && !(u.Scheme == "http" && loopback) {
		return errors.New("callback_url must be https (http only for localhost)")
	}
	if !slices.Contains(ag.cfg.CallbackHosts, host) {
		return fmt.Errorf("callback_url's host %s is not in agents[%s].callback_hosts", host, ag.cfg.Name)
	}
	return nil
}

// Callback headers: the body's signature and the time it was signed.
const (
	HeaderSignature = "X-Hitlbot-Signature" // "sha256=" + hex HMAC-SHA256(key, timestamp + "." + body)
	HeaderTimestamp = "X-Hitlbot-Timestamp" // Unix seconds
)

// CallbackKey is the key an agent checks callbacks with: HMAC-SHA256 of
// "hitlbot callback" under its token, so the token itself never signs.
func CallbackKey(token string) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("hitlbot callback"))
	return m.Sum(nil)
}

// Sign returns the signature header value of body signed at ts.
func Sign(key []byte, ts int64, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(strconv.FormatInt(ts, 10) + "."))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// callbackTries are the waits before each delivery attempt.
var callbackTries = []time.Duration{0, time.Second, 4 * time.Second, 15 * time.Second, time.Minute}

// callbackClaimTTL is how long a claimed delivery stays claimed: far longer
// than the other senders of the approval take to see that it ended.
const callbackClaimTTL = 24 * time.Hour

// delivery names one delivery a replica makes: an approval's outcome to a
// callback URL.
type delivery struct {
	id  approval.ID
	url string
}

// startCallback starts delivering approval id's outcome to u, unless this
// replica is delivering it there already (for the request, or an earlier
// retry of it).
func (g *Gate) startCallback(ag *Agent, id approval.ID, u string) {
	k := delivery{id, u}
	g.sendMu.Lock()
	defer g.sendMu.Unlock()
	if g.sending[k] > 0 {
		return
	}
	g.sending[k]++
	g.senders.Go(func() {
		defer func() {
			g.sendMu.Lock()
			if g.sending[k]--; g.sending[k] == 0 {
				delete(g.sending, k)
			}
			g.sendMu.Unlock()
		}()
		g.callback(ag, id, u)
	})
}

// callback waits for approval id to end and POSTs its answer to u, signed,
// retrying on failure; each delivery's end is audited. Every replica that
// got the request, or a retry of it, with u waits; once the approval ends,
// the first of them to claim the delivery in the store (Seen) sends it and
// the others send nothing, so u gets the outcome from one sender. That
// sender tries until a 2xx, at most len(callbackTries) times (the last
// about 80 s after the first; then it gives up, audited as failed), so a
// receiver whose 2xx was lost sees the same body again (de-duplicate on
// its id); a sender that stops after its claim (a restart) hands the
// delivery to nobody: GET the approval then. While the store cannot be
// read, the sender waits for it (each second) rather than drop the
// delivery.
func (g *Gate) callback(ag *Agent, id approval.ID, u string) {
	ctx := context.Background()
	var ans Answer
	for {
		a, err := g.Wait(ctx, ag, id, maxWait)
		if err == nil && a.Status != StatusPending {
			ans = a
			break
		}
		if err != nil && approval.KindOf(err) == errkind.Unavailable {
			// The store is down for now: the decision is still to come
			// (or is there, unread). Dropping the delivery here would
			// lose it for good; wait for the store as for a free slot.
			g.log.Warn("callback: the approval could not be read; retrying", "agent", ag.cfg.Name, "approval_id", id, "err", err)
		} else if err != nil && !errors.Is(err, ErrBusy) {
			g.log.Error("callback: the approval could not be read; not delivered", "agent", ag.cfg.Name, "approval_id", id, "err", err)
			return
		}
		time.Sleep(time.Second)
	}
	body, _ := json.Marshal(viewOf(ans))
	key := CallbackKey(string(ag.token))
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	claimed := false
	var last string
	for i, wait := range callbackTries {
		time.Sleep(wait)
		if !claimed {
			first, err := g.claimCallback(ctx, ag, id, u)
			if err != nil {
				last = "the delivery could not be claimed in the store"
				g.log.Warn("callback: the delivery could not be claimed; retrying", "agent", ag.cfg.Name, "approval_id", id, "attempt", i+1, "err", err)
				continue
			}
			if !first {
				g.log.Info("callback: another sender delivers it (a retry's, on this replica or another); not sent", "agent", ag.cfg.Name, "approval_id", id)
				return
			}
			claimed = true
		}
		ts := time.Now().Unix()
		req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
		if err != nil {
			last = err.Error()
			break
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
		req.Header.Set(HeaderSignature, Sign(key, ts, body))
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				g.deps.Audit.Append(audit.Record{Event: audit.EventCallback, ApprovalID: string(id), Actor: ag.cfg.Name, Source: "agent", Outcome: "delivered"})
				return
			}
			last = "HTTP " + strconv.Itoa(resp.StatusCode)
		} else {
			last = "no answer"
		}
		g.log.Warn("callback not delivered; retrying", "agent", ag.cfg.Name, "approval_id", id, "attempt", i+1, "err", last)
	}
	g.deps.Audit.Append(audit.Record{Event: audit.EventCallback, ApprovalID: string(id), Actor: ag.cfg.Name, Source: "agent", Outcome: "failed", Error: last})
	g.log.Error("callback not delivered; gave up", "agent", ag.cfg.Name, "approval_id", id, "err", last)
}

// claimCallback claims the delivery of ended approval id's outcome to u
// for this sender: true the first time, on any replica. The claim names
// the approval's creation too, so an approval made again under the same
// id (its record gone, the key asked again) is delivered again.
func (g *Gate) claimCallback(ctx context.Context, ag *Agent, id approval.ID, u string) (bool, error) {
	a, err := g.own(ctx, ag, id)
	if err != nil {
		return false, err
	}
	h := sha256.Sum256([]byte(u))
	return g.deps.Engine.Store().Seen(ctx, fmt.Sprintf("gate-callback:%s:%d:%s", id, a.CreatedAt.UnixNano(), hex.EncodeToString(h[:16])), callbackClaimTTL)
}
