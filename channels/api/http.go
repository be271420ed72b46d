package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/internal/redact"
	"github.com/hitlbot/hitlbot/words"
	"log/slog"
)

// ChatRequest is the body of POST /agent/chat.
type ChatRequest struct {
	// Message is what the user says. Required unless ConfirmationToken is
	// set; with a token it is recorded as the decision's comment.
	Message string `json:"message"`
	// ConversationID continues a conversation; empty starts a new one.
	ConversationID string `json:"conversationId,omitempty"`
	// ConfirmationToken and Confirmed decide a pending action: true runs
	// it, false cancels it.
	ConfirmationToken string `json:"confirmationToken,omitempty"`
	Confirmed         *bool  `json:"confirmed,omitempty"`
	// ConfirmationTokens decides several pending actions at once (1 to
	// MaxBatchTokens, in order), each the same way (Confirmed); the
	// response's Results has one entry per token. Not with
	// ConfirmationToken.
	ConfirmationTokens []string `json:"confirmationTokens,omitempty"`
}

// ChatResponse is the answer of POST /agent/chat.
type ChatResponse struct {
	// Text is the agent's answer (or, after a decision that no turn of
	// this process waits for, the outcome's text).
	Text string `json:"text"`
	// Actions are the tool calls that ran (or were decided) during the
	// request.
	Actions []Action `json:"actions"`
	// Domain is the kind of work: the prefix of the first tool's name
	// ("sql", "task"), or "chat" when no tool was involved.
	Domain         string `json:"domain"`
	ConversationID string `json:"conversationId"`
	RequestID      string `json:"requestId"`
	// RequiresConfirmation and PendingAction: the turn waits for the
	// user's confirmation of PendingAction.
	RequiresConfirmation bool           `json:"requiresConfirmation,omitempty"`
	PendingAction        *PendingAction `json:"pendingAction,omitempty"`
	// Status is the outcome status of a decision (executed, rejected, …).
	Status approval.Status `json:"status,omitempty"`
	// Incomplete reports that TurnTimeout passed before the turn ended;
	// the turn goes on, and its answer is not delivered to this request.
	Incomplete bool `json:"incomplete,omitempty"`
	// Results answers a batch (ConfirmationTokens): one per token, in
	// the order given.
	Results []BatchResult `json:"results,omitempty"`
	// Resumed are the answers of earlier turns of this conversation that
	// an approval's outcome resumed after their request had returned (the
	// approval was decided later, elsewhere, or after the replica that
	// waited stopped), each given once, oldest first.
	Resumed []Resumed `json:"resumed,omitempty"`
}

// Resumed is the answer of a turn that an approval's outcome resumed:
// what the agent said after the decision, and the calls it ran.
type Resumed struct {
	ApprovalID approval.ID `json:"approvalId"`
	Text       string      `json:"text"`
	Actions    []Action    `json:"actions"`
	At         time.Time   `json:"at"`
}

// BatchResult is the result of one token of a batch confirmation: either
// Status (executed, rejected, failed, …) with Text and Actions, or Error
// and Message, the code and words a single confirmation would have got.
type BatchResult struct {
	Token   string          `json:"token"`
	Status  approval.Status `json:"status,omitempty"`
	Text    string          `json:"text,omitempty"`
	Actions []Action        `json:"actions,omitempty"`
	Error   string          `json:"error,omitempty"`
	Message string          `json:"message,omitempty"`
}

// Action is one tool call and its result.
type Action struct {
	Tool    string          `json:"tool"`
	Input   json.RawMessage `json:"input"`
	Result  string          `json:"result"`
	Status  approval.Status `json:"status,omitempty"`
	IsError bool            `json:"isError,omitempty"`
}

// PendingAction is an action that waits for the user's confirmation.
type PendingAction struct {
	// Token decides it: POST /agent/chat {confirmationToken, confirmed}.
	Token      string `json:"token"`
	ApprovalID string `json:"approvalId"`
	// Description says in a line what will happen. InputPreview is the
	// call's arguments as an object, sanitised: the values of
	// secret-looking keys and secret-looking text redacted, strings cut
	// to 200 runes, arrays to 20 elements; a batch approval shows
	// {"calls": [{"tool", "input"}, …]}.
	Description  string         `json:"description"`
	ToolName     string         `json:"toolName"`
	InputPreview map[string]any `json:"inputPreview"`
	Risk         string         `json:"risk"`
	// ExpiresAt is RFC 3339.
	ExpiresAt     string `json:"expiresAt"`
	IsDestructive bool   `json:"isDestructive"`
	// WaitsIn, set when the approval is decided in an approvers' chat
	// (approval.policy.approve_in), says so in the API's language ("the
	// approvers' chat"): the token cannot approve it (confirmed: true is
	// refused as UNAUTHORIZED), only withdraw it (confirmed: false).
	WaitsIn string `json:"waitsIn,omitempty"`
}

// ApprovalInfo is one approval as GET /api/approvals shows it. Tool
// arguments are not shown, only the sanitised previews. PayloadSHA256 is
// the hash a decision must name (POST /api/approvals/{id}/decision).
type ApprovalInfo struct {
	ID             approval.ID    `json:"id"`
	State          approval.State `json:"state"`
	Tool           string         `json:"tool"`
	Risk           string         `json:"risk"`
	Summary        string         `json:"summary"`
	Preview        string         `json:"preview,omitempty"`
	Reason         string         `json:"reason,omitempty"`
	ConversationID string         `json:"conversationId"`
	Requester      string         `json:"requester"`
	PayloadSHA256  string         `json:"payloadSha256"`
	// ProposedSHA256 is the hash of the calls as proposed, when an
	// approver edited them before approving (PayloadSHA256 is then the
	// edited calls').
	ProposedSHA256 string     `json:"proposedSha256,omitempty"`
	CreatedAt      time.Time  `json:"createdAt"`
	ExpiresAt      time.Time  `json:"expiresAt"`
	DecidedBy      string     `json:"decidedBy,omitempty"`
	DecidedAt      *time.Time `json:"decidedAt,omitempty"`
	DecidedVia     string     `json:"decidedVia,omitempty"`
	Comment        string     `json:"comment,omitempty"`
	// GrantWindowSeconds, for a MEDIUM approval that may grant a window,
	// is that window: approving with grant "session" (or none) allows
	// the same request in this conversation for as long. Grant is the
	// choice the approver made, once decided.
	GrantWindowSeconds int64  `json:"grantWindowSeconds,omitempty"`
	Grant              string `json:"grant,omitempty"`
	// Status and Result describe the outcome once the approval has ended.
	Status approval.Status `json:"status,omitempty"`
	Result string          `json:"result,omitempty"`
	// Resolution is how a person resolved the approval once it froze
	// (done, retry, abandon; see POST /api/approvals/{id}/decision with
	// decision "resolve"), when they did.
	Resolution approval.Resolution `json:"resolution,omitempty"`
	// Calls are the approval's calls, each with the callId a per-call
	// decision names it by (POST /api/approvals/{id}/decision calls), its
	// tool and summary, and once the approval has ended its own status.
	Calls []ApprovalCall `json:"calls,omitempty"`
	// PendingAction is set while the approval waits.
	PendingAction *PendingAction `json:"pendingAction,omitempty"`
	// Resumed is the answer of the turn the approval's outcome resumed,
	// once there is one; shown to the requester only (it is their
	// conversation, which the approval's other deciders do not read).
	Resumed *Resumed `json:"resumed,omitempty"`
}

// ErrorResponse is the body of every error answer.
type ErrorResponse struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// Error codes, each with its HTTP status.
const (
	CodeInvalidRequest   = "invalid_request"    // 400: malformed body (bad JSON, invalid UTF-8, a missing field)
	CodeUnauthorized     = "unauthorized"       // 401: missing or unknown bearer token
	CodeUserMismatch     = "user_mismatch"      // 403: another user's action, and its approver rule does not let the caller decide it
	CodeFamilyMismatch   = "family_mismatch"    // 403: another tenant's action, and its approver rule does not let the caller decide it
	CodeForbidden        = "forbidden"          // 403: the caller's own action, which the approver rule needs someone else to approve (four eyes)
	CodeNotAllowed       = "not_allowed"        // 403: the caller is not in channels.api.allow.users
	CodeNotFound         = "not_found"          // 404: unknown, already used, or not visible
	CodeMethodNotAllowed = "method_not_allowed" // 405: the route takes other methods (the Allow header names them)
	CodeConflict         = "already_decided"    // 409: a decision or cancel of an approval that is no longer pending
	CodeTampered         = "tampered"           // 409: payloadSha256 names another payload than the approval's; nothing ran
	CodeExpired          = "expired"            // 410
	CodeRateLimited      = "rate_limited"       // 429
	CodeInternal         = "internal"           // 500
	CodeUnavailable      = "unavailable"        // 503: the store is down or the API is not running
)

var codeStatus = map[string]int{
	CodeInvalidRequest:   http.StatusBadRequest,
	CodeUnauthorized:     http.StatusUnauthorized,
	CodeUserMismatch:     http.StatusForbidden,
	CodeFamilyMismatch:   http.StatusForbidden,
	CodeForbidden:        http.StatusForbidden,
	CodeNotAllowed:       http.StatusForbidden,
	CodeNotFound:         http.StatusNotFound,
	CodeMethodNotAllowed: http.StatusMethodNotAllowed,
	CodeConflict:         http.StatusConflict,
	CodeTampered:         http.StatusConflict,
	CodeExpired:          http.StatusGone,
	CodeRateLimited:      http.StatusTooManyRequests,
	CodeInternal:         http.StatusInternalServerError,
	CodeUnavailable:      http.StatusServiceUnavailable,
}

// apiError is an error answer: its code, and its message as a sentence of
// the catalogue (key, args), said in the request's language when the
// answer is written, or as text already in words (an outcome's).
type apiError struct {
	code string
	key  words.Key
	args []any
	text string // the message when key is zero
}

func (e *apiError) Error() string { return e.code + ": " + e.message(words.EN) }

// message says the error's message in lang.
func (e *apiError) message(lang words.Lang) string {
	if !e.key.Valid() {
		return e.text
	}
	return words.Text(lang, e.key, e.args...)
}

// fail is an error answer with code whose message is the catalogue's
// sentence k with args.
func fail(code string, k words.Key, args ...any) *apiError {
	return &apiError{code: code, key: k, args: args}
}

// failText is an error answer with code whose message is text, already
// in words.
func failText(code, text string) *apiError { return &apiError{code: code, text: text} }

// storeFailure turns an error of the engine or a store into an answer.
func storeFailure(err error) *apiError {
	switch approval.KindOf(err) {
	case errkind.Unavailable:
		return fail(CodeUnavailable, words.ErrUnavailable) // approval.UserMessageIn's sentence
	case errkind.NotFound:
		return fail(CodeNotFound, words.APINoPendingAction)
	}
	return fail(CodeInternal, words.ErrOther)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, `{"error":"internal","message":"encoding the answer failed"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// inbound is the API's inbound side: the HTTP handler of its routes. It
// authenticates a request, admits it under the per-user cap, hands its
// message to the router (the channels.Handler given to API.Start) and waits
// in the conversation for what the outbound side publishes; it decides,
// lists, reads and cancels approvals by their pending-action tokens.
type inbound struct {
	cfg    Config
	lang   words.Lang // cfg.Lang, parsed
	engine *approval.Engine
	log    *slog.Logger
	users  map[[32]byte]User // sha256 of the bearer token -> user
	mux    *http.ServeMux
	convs  *conversations
	tokens *tokenLedger
	caps   capGate // the per-user cap's count and reservation
	// slot is the router from Start, none before and once closed (503).
	slot channels.HandlerSlot
}

// mount registers the routes on mux (API.Mount).
func (a *inbound) mount(mux *http.ServeMux) {
	mux.HandleFunc("POST /agent/chat", a.serveChat)
	mux.HandleFunc("GET /api/approvals", a.serveList)
	mux.HandleFunc("GET /api/approvals/{id}", a.serveGet)
	mux.HandleFunc("POST /api/approvals/{id}/decision", a.serveDecision)
	mux.HandleFunc("POST /api/approvals/{id}/cancel", a.serveCancel)
	for _, r := range routes {
		mux.Handle(r.path, a.methodNotAllowed(r.allow))
	}
}

// writeError answers e, its message in the language of r.
func (a *inbound) writeError(w http.ResponseWriter, r *http.Request, e *apiError) {
	st := codeStatus[e.code]
	if st == 0 {
		st = http.StatusInternalServerError
	}
	if e.code == CodeUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="hitlbot"`)
	}
	writeJSON(w, st, ErrorResponse{Error: e.code, Message: e.message(a.langOf(r))})
}

// ---- authentication

// authenticate returns the caller: the user of the bearer token, or
// LocalUser for an anonymous loopback request when that is allowed; then
// admits them, so every route holds channels.api.allow.users.
func (a *inbound) authenticate(r *http.Request) (User, *apiError) {
	u, aerr := a.identify(r)
	if aerr == nil {
		aerr = a.allowed(r.Context(), u)
	}
	if aerr != nil {
		return User{}, aerr
	}
	return u, nil
}

// identify returns the user of the request's bearer token, or LocalUser
// for an anonymous loopback request when that is allowed.
func (a *inbound) identify(r *http.Request) (User, *apiError) {
	h := r.Header.Get("Authorization")
	if h == "" {
		if a.cfg.AllowAnonymousLocal && loopback(r.RemoteAddr) {
			return LocalUser, nil
		}
		return User{}, fail(CodeUnauthorized, words.APIAuthMissing)
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return User{}, fail(CodeUnauthorized, words.APIAuthMalformed)
	}
	u, ok := a.users[sha256.Sum256([]byte(strings.TrimSpace(tok)))]
	if !ok {
		return User{}, fail(CodeUnauthorized, words.APIAuthUnknown)
	}
	return u, nil
}

// allowed asks the router whether the channel's allow-list
// (channels.api.allow.users) lets u in: every route asks, before anything
// is read, decided or withdrawn (not_allowed, 403). Not running (no
// handler to ask): 503, fail closed. A handler that keeps no allow-list
// (not a channels.Admitter) lets everyone in.
func (a *inbound) allowed(ctx context.Context, u User) *apiError {
	h := a.slot.Handler()
	if h == nil {
		return fail(CodeUnavailable, words.APINotRunning)
	}
	if ad, ok := h.(channels.Admitter); ok && !ad.Admits(ctx, Name, approval.UserID(u.UserID())) {
		return fail(CodeNotAllowed, words.RouterRefused)
	}
	return nil
}

func loopback(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// begin opens a POST that carries a JSON body: it names the request
// (X-Request-Id), authenticates the caller and reads the body, of the form
// shape, into v. When it reports false it has answered the error.
func (a *inbound) begin(w http.ResponseWriter, r *http.Request, v any, shape string) (u User, reqID string, ok bool) {
	reqID = "req_" + rand.Text()
	w.Header().Set("X-Request-Id", reqID)
	u, aerr := a.authenticate(r)
	if aerr == nil {
		aerr = a.readJSON(w, r, v, shape, true)
	}
	if aerr != nil {
		a.writeError(w, r, aerr)
		return User{}, "", false
	}
	return u, reqID, true
}

// ---- POST /agent/chat

func (a *inbound) serveChat(w http.ResponseWriter, r *http.Request) {
	var req ChatRequest
	u, reqID, ok := a.begin(w, r, &req, "{message, conversationId?, confirmationToken? | confirmationTokens?, confirmed?}")
	if !ok {
		return
	}
	ctx := withLang(r.Context(), a.langOf(r))
	var resp *ChatResponse
	var aerr *apiError
	switch {
	case req.ConfirmationTokens != nil:
		resp, aerr = a.batch(ctx, u, req, reqID)
	case req.ConfirmationToken != "":
		resp, aerr = a.decide(ctx, u, req, reqID)
	default:
		resp, aerr = a.message(ctx, u, req, reqID)
	}
	if aerr != nil {
		a.writeError(w, r, aerr)
		return
	}
	if resp == nil { // the client went away
		return
	}
	if resp.Actions == nil {
		resp.Actions = []Action{}
	}
	resp.RequestID = reqID
	resp.Domain = domainOf(resp)
	writeJSON(w, http.StatusOK, resp)
}

// jsonProblem is the answer to a body of the form shape that does not
// decode: err is the decoder's.
func jsonProblem(err error, shape string) *apiError {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return fail(CodeInvalidRequest, words.APIBodyTooLarge, shape)
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fail(CodeInvalidRequest, words.APIBodyMalformed, shape)
	case errors.As(err, &te) && te.Field != "":
		return fail(CodeInvalidRequest, words.APIBodyFieldType, shape, te.Field)
	case errors.As(err, &te):
		return fail(CodeInvalidRequest, words.APIBodyNotObject, shape)
	case errors.Is(err, io.EOF):
		return fail(CodeInvalidRequest, words.APIBodyEmpty, shape)
	}
	return fail(CodeInvalidRequest, words.APIBodyMalformed, shape)
}

func validConversationID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("-_.:@", c)) {
			return false
		}
	}
	return true
}

// message hands a message to the router and waits for the turn.
func (a *inbound) message(ctx context.Context, u User, req ChatRequest, reqID string) (*ChatResponse, *apiError) {
	text := strings.TrimSpace(req.Message)
	switch {
	case text == "":
		return nil, fail(CodeInvalidRequest, words.APIMessageEmpty)
	case !utf8.ValidString(text):
		return nil, fail(CodeInvalidRequest, words.APIMessageBadUTF8)
	case req.Confirmed != nil:
		return nil, fail(CodeInvalidRequest, words.APIConfirmedNoToken)
	}
	convID := req.ConversationID
	if convID == "" {
		convID = "c_" + rand.Text()
	} else if !validConversationID(convID) {
		return nil, fail(CodeInvalidRequest, words.APIConversationID)
	}
	h := a.slot.Handler()
	if h == nil {
		return nil, fail(CodeUnavailable, words.APINotRunning)
	}
	id := chatID(u, convID)
	c := a.convs.join(id)
	defer a.convs.leave(id, c)
	if err := c.lock(ctx); err != nil {
		return nil, nil
	}
	defer c.unlock()

	inConv, release, aerr := a.admit(ctx, u, convID)
	if aerr != nil || release == nil {
		return nil, aerr
	}
	defer release()

	wt := a.convs.subscribe(c)
	defer a.convs.unsubscribe(c, wt)
	m := channels.Message{Channel: Name, ChatID: id, ChatType: "p2p", UserID: approval.UserID(u.UserID()), UserName: u.ID,
		MessageID: reqID, Text: text, CreatedAt: a.cfg.Clock.Now().UTC()}
	if err := h.HandleMessage(ctx, m); err != nil {
		a.log.Warn("handling a message failed", "chat_id", id, "user_id", u.UserID(), "msg_id", reqID, "err", err)
		return nil, storeFailure(err)
	}
	turns := []string{reqID}
	var waitFor approval.ID
	if inConv != nil {
		// The message may be a typed 确认 / 取消: then the rest of the
		// turn that waits for the approval is this request's answer.
		waitFor = inConv.Approval
		if inConv.turn != "" {
			turns = append(turns, inConv.turn)
		}
	}
	res, aerr := a.await(ctx, wt, u, convID, waitFor, turns, nil)
	if res == nil {
		return nil, aerr
	}
	res.ConversationID = convID
	res.Resumed = a.tokens.collectResumed(ctx, u, convID)
	return res, nil
}

// retire forgets a used token.
func (l *tokenLedger) retire(ctx context.Context, token string) {
	if err := l.cfg.TokenStore.Delete(context.WithoutCancel(ctx), token); err != nil {
		l.log.Warn("retiring a pending-action token failed", "err", err)
	}
}

// decidedActions describes the calls of a decided approval.
func decidedActions(rec *approval.Approval, o approval.Outcome) []Action {
	byID := map[string]approval.Result{}
	for _, r := range o.Results {
		byID[r.CallID] = r
	}
	out := make([]Action, 0, len(rec.Calls))
	for i, c := range rec.Calls {
		act := Action{Tool: c.Tool, Input: c.Args, Result: o.Content, Status: o.Status, IsError: o.IsError}
		r, ok := byID[c.CallID]
		if !ok && i < len(o.Results) {
			r, ok = o.Results[i], true
		}
		if ok {
			act.Result, act.Status, act.IsError = r.Content, r.Status, r.IsError
		}
		out = append(out, act)
	}
	return out
}

// await collects what the turns named by turns (their message ids) say in
// the conversation until one ends, shows an approval, or TurnTimeout
// passes. It returns nil when ctx ends (the client went away), and an
// error when the router refused the message (429 busy, 503 shutting down).
//
// It ends on the turn's typed events (channels.TurnEvent), never on
// what is said: a turn's end (its answer or the notice that ended it), or
// the router's own answer to the message (a typed 确认 / 取消 that found
// the approval ended or lost the race for it, a late one, an approval
// command: its text and status); an approval shown (a new pending
// action); the message queued behind the conversation's pending approval
// (its pending action); the message refused; the settling of waitFor when
// no turn of this process waits for that approval (a typed 确认 / 取消
// decided here for a turn elsewhere: its outcome is the answer, and the
// resumed turn's answer comes with a later request). When the message's
// typed decision ended waitFor and a turn of this process waits for it
// (it was shown here, or its settling said so), that turn's end is the answer: it comes after
// the decision. tool_result messages are actions, except the first one
// matching each call of skip (already reported). What other turns say (an
// earlier turn that outlived its request, a resumed turn) is not this
// request's answer.
func (a *inbound) await(ctx context.Context, wt *waiter, u User, convID string, waitFor approval.ID, turns []string, skip []approval.Call) (*ChatResponse, *apiError) {
	// Measured on the wall clock, not the engine's: it bounds an HTTP
	// request, and advancing a test's fake clock past an approval's expiry
	// must not end the requests in flight.
	wall := time.NewTimer(a.cfg.TurnTimeout)
	defer wall.Stop()
	// An unknown turn ("") lets everything said in the conversation in.
	filter := !slices.Contains(turns, "")
	res := &ChatResponse{}
	var notices []string
	// localWait: waitFor was settled while a turn of this process waited
	// for it, so that turn goes on.
	localWait := false
	for {
		for {
			ev, ok := wt.pop()
			if !ok {
				break
			}
			if ev.settled == nil && filter && !slices.Contains(turns, ev.turn) {
				continue
			}
			switch {
			case ev.shown != nil:
				res.RequiresConfirmation, res.PendingAction = true, ev.shown
				if res.Text == "" {
					res.Text = confirmText(a.langIn(ctx), ev.shown)
				}
				return res, nil
			case ev.settled != nil:
				if waitFor != "" && ev.settled.view.ApprovalID == waitFor && ev.settled.local {
					localWait = true
				}
				if waitFor != "" && ev.settled.view.ApprovalID == waitFor && !ev.settled.local {
					v := ev.settled.view
					res.Text = v.StatusText
					if v.Result != "" {
						res.Text += ": " + v.Result
					}
					res.Status = v.Status
					return res, nil
				}
			case ev.turnEv != nil:
				te := ev.turnEv
				switch te.Kind {
				case agent.SayTurnEnded:
					var ended agent.TurnResult
					if te.Result != nil {
						ended = *te.Result
					}
					if ended.Resumed != "" {
						continue // a resumed turn's answer is kept for the next request
					}
					if te.Decided != "" && te.Decided == waitFor && (localWait || a.convs.isLocal(waitFor)) {
						// The typed decision's outcome; the waiting turn's
						// end follows. Its settling may come later still:
						// a decision that beat the recording of the card
						// settles that card after it (Engine.Request).
						localWait = true
						continue
					}
					res.Text, res.Status = ended.Text, te.Status
					return res, nil
				case channels.SayQueued:
					res.Text = te.Text
					if pa := a.pendingIn(ctx, u, convID); pa != nil {
						res.RequiresConfirmation, res.PendingAction = true, pa
					}
					return res, nil
				case channels.SayRefused:
					if errors.Is(te.Refusal, channels.ErrBusy) {
						return nil, fail(CodeRateLimited, words.APIBusy)
					}
					return nil, fail(CodeUnavailable, words.APIShuttingDown)
				case agent.SayToolResult:
					if i := matchCall(skip, te.Tool, te.Args); i >= 0 {
						skip = append(skip[:i:i], skip[i+1:]...)
						continue
					}
					st := approval.StatusExecuted
					if te.IsError {
						st = approval.StatusFailed
					}
					res.Actions = append(res.Actions, Action{Tool: te.Tool, Input: te.Args, Result: te.Text, Status: st, IsError: te.IsError})
				case agent.SayNotice:
					notices = append(notices, te.Text)
				case agent.SayStreamEnd:
					if te.IsError && te.Text != "" {
						// The model failed mid-stream: the sentence stands
						// for the error notice.
						notices = append(notices, te.Text)
					}
				}
			}
		}
		select {
		case <-wt.sig:
		case <-ctx.Done():
			return nil, nil
		case <-wall.C:
			return timedOut(a.langIn(ctx), res, notices), nil
		}
	}
}

// timedOut is res once the request stops waiting: the notices the turn
// gave, or a sentence in lang that it goes on.
func timedOut(lang words.Lang, res *ChatResponse, notices []string) *ChatResponse {
	res.Incomplete = true
	res.Text = strings.Join(notices, "\n")
	if res.Text == "" {
		res.Text = words.Text(lang, words.APIStillWorking)
	}
	return res
}

// confirmText is the text of an answer that waits for pa, in lang.
func confirmText(lang words.Lang, pa *PendingAction) string {
	return words.Text(lang, words.APIConfirmNeeded, pa.Description)
}

// matchCall returns the index in calls of the call of tool with args, or
// -1.
func matchCall(calls []approval.Call, tool string, args []byte) int {
	for i, c := range calls {
		if c.Tool == tool && bytes.Equal(c.Args, args) {
			return i
		}
	}
	return -1
}

// domainOf names the kind of work of a response.
func domainOf(r *ChatResponse) string {
	tool := ""
	if len(r.Actions) > 0 {
		tool = r.Actions[0].Tool
	} else if r.PendingAction != nil {
		tool = r.PendingAction.ToolName
	}
	if tool == "" {
		return "chat"
	}
	if i := strings.IndexByte(tool, '_'); i > 0 {
		return tool[:i]
	}
	return tool
}

// pendingAction turns a pending card view into the API's form.
func pendingAction(v cards.View, token string) PendingAction {
	return PendingAction{Token: token, ApprovalID: string(v.ApprovalID), Description: v.Summary, ToolName: v.Tool,
		InputPreview: inputPreview(v.Calls), Risk: v.Risk.String(), ExpiresAt: v.ExpiresAt.UTC().Format(time.RFC3339),
		IsDestructive: v.Risk >= approval.RiskHigh, WaitsIn: v.WaitsIn}
}

// Bounds of an inputPreview.
const (
	previewStringRunes = 200
	previewItems       = 20
)

// inputPreview shows the arguments of the calls as an object, sanitised
// (redact.Value): one call's arguments, or {"calls": [{tool, input}, …]}
// for a batch.
func inputPreview(calls []cards.CallView) map[string]any {
	if len(calls) == 1 {
		return argsPreview(calls[0].Args)
	}
	list := make([]any, 0, len(calls))
	for _, c := range calls {
		list = append(list, map[string]any{"tool": c.Tool, "input": argsPreview(c.Args)})
	}
	return map[string]any{"calls": list}
}

func argsPreview(raw json.RawMessage) map[string]any {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if len(raw) == 0 || d.Decode(&v) != nil {
		return map[string]any{}
	}
	switch x := redact.Value(v, previewStringRunes, previewItems).(type) {
	case map[string]any:
		return x
	case nil:
		return map[string]any{}
	default:
		return map[string]any{"value": x}
	}
}

// ---- the caller's approvals

// owned is an approval the caller may see, with its token.
type owned struct {
	entry TokenEntry
	rec   *approval.Approval
}

// pendingEntry is the pending approval of a conversation.
type pendingEntry struct {
	TokenEntry
	turn string // the turn that waits for it
}

// ownedBy reports whether u asked for the approval of e.
func ownedBy(e TokenEntry, u User) bool { return e.Tenant == u.Tenant && e.User == u.ID }

// approvalsOf returns the caller's own approvals that the token index
// still holds (those requested within TokenRetention plus their timeout),
// retiring tokens whose approvals are gone. pendingOnly reads only the
// approvals whose expiry has not passed, so that the per-user cap costs a
// store read per live approval, not per remembered one.
func (l *tokenLedger) approvalsOf(ctx context.Context, u User, pendingOnly bool) ([]owned, error) {
	es, err := l.cfg.TokenStore.List(ctx, u.Tenant, u.ID)
	if err != nil {
		return nil, err
	}
	var own []TokenEntry
	for _, e := range es {
		if ownedBy(e, u) { // the index also holds approvals shared with u
			own = append(own, e)
		}
	}
	return l.records(ctx, own, pendingOnly)
}

// records reads the approvals of entries (see approvalsOf).
func (l *tokenLedger) records(ctx context.Context, es []TokenEntry, pendingOnly bool) ([]owned, error) {
	now := l.cfg.Clock.Now()
	var out []owned
	for _, e := range es {
		if pendingOnly && !now.Before(e.ExpiresAt) {
			continue
		}
		rec, err := l.engine.Get(ctx, e.Approval)
		if approval.KindOf(err) == errkind.NotFound {
			l.retire(ctx, e.Token)
			continue
		}
		if err != nil {
			return nil, err
		}
		if pendingOnly && (rec.State != approval.StatePending || !now.Before(rec.ExpiresAt)) {
			continue
		}
		out = append(out, owned{e, rec})
	}
	return out, nil
}

// visibleApprovals returns the approvals the caller may see: the caller's
// own, and those whose approver rule lets the caller decide them (shared
// with the caller's tenant or with the caller by ShowApproval), oldest
// first.
func (l *tokenLedger) visibleApprovals(ctx context.Context, u User, pendingOnly bool) ([]owned, error) {
	mine, err := l.cfg.TokenStore.List(ctx, u.Tenant, u.ID)
	if err != nil {
		return nil, err
	}
	tenant, err := l.cfg.TokenStore.List(ctx, u.Tenant, "")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var es []TokenEntry
	for _, e := range append(mine, tenant...) {
		if !seen[e.Token] {
			seen[e.Token] = true
			es = append(es, e)
		}
	}
	sortEntries(es)
	recs, err := l.records(ctx, es, pendingOnly)
	if err != nil {
		return nil, err
	}
	out := recs[:0]
	for _, o := range recs {
		if (ownedBy(o.entry, u) || mayDecide(u, o.rec)) && o.rec.MaySee(approval.UserID(u.UserID())) {
			out = append(out, o)
		}
	}
	return out, nil
}

// pendingOf counts the caller's pending approvals and finds the one of the
// conversation, if any.
func (l *tokenLedger) pendingOf(ctx context.Context, u User, convID string) (int, *pendingEntry, error) {
	own, err := l.approvalsOf(ctx, u, true)
	if err != nil {
		return 0, nil, err
	}
	var in *pendingEntry
	for _, o := range own {
		if o.entry.Conversation == convID {
			in = &pendingEntry{o.entry, turnOf(o.rec)}
		}
	}
	return len(own), in, nil
}

// pendingIn returns the pending action of a conversation, or nil.
func (a *inbound) pendingIn(ctx context.Context, u User, convID string) *PendingAction {
	own, err := a.tokens.approvalsOf(ctx, u, true)
	if err != nil {
		return nil
	}
	for _, o := range own {
		if o.entry.Conversation == convID {
			pa := pendingAction(cards.Pending(o.rec, a.engine.Text(), ""), o.entry.Token)
			return &pa
		}
	}
	return nil
}

func (a *inbound) info(rec *approval.Approval, token string) ApprovalInfo {
	return a.infoWith(rec, token, nil)
}

// infoWith is info with the resumed answer kept in the approval's token
// entry, when at hand.
func (a *inbound) infoWith(rec *approval.Approval, token string, resumed *Resumed) ApprovalInfo {
	_, _, convID, _ := splitChatID(rec.ChatID)
	in := ApprovalInfo{ID: rec.ID, State: rec.State, Tool: rec.Tool(), Risk: rec.Risk.String(), Summary: rec.Summary,
		Preview: rec.Preview, Reason: rec.Reason, ConversationID: convID, Requester: string(rec.Requester),
		PayloadSHA256: rec.PayloadSHA256, ProposedSHA256: rec.ProposedSHA256, CreatedAt: rec.CreatedAt, ExpiresAt: rec.ExpiresAt,
		DecidedBy: string(rec.DecidedBy), DecidedVia: string(rec.DecidedVia), Comment: rec.Comment}
	if !rec.DecidedAt.IsZero() {
		t := rec.DecidedAt
		in.DecidedAt = &t
	}
	if rec.Grantable() {
		in.GrantWindowSeconds = int64(rec.GrantWindow / time.Second)
		in.Grant = string(rec.Grant.For(rec))
		if rec.State == approval.StatePending {
			in.Grant = ""
		}
	}
	if rec.Outcome != nil {
		in.Status, in.Result, in.Resolution = rec.Outcome.Status, rec.Outcome.Content, rec.Outcome.Resolution
	}
	in.Calls = approvalCalls(rec)
	if rec.State == approval.StatePending && token != "" {
		pa := pendingAction(cards.Pending(rec, a.engine.Text(), ""), token)
		in.PendingAction = &pa
	}
	in.Resumed = resumed
	return in
}

// lookup returns an approval of the API channel with its token, and
// whether the caller asked for it; any other id is not found.
func (a *inbound) lookup(ctx context.Context, u User, id string) (rec *approval.Approval, token string, owner bool, aerr *apiError) {
	aid := approval.ID(id)
	if !aid.Valid() {
		return nil, "", false, fail(CodeNotFound, words.APINoApproval)
	}
	rec, err := a.engine.Get(ctx, aid)
	if approval.KindOf(err) == errkind.NotFound {
		return nil, "", false, fail(CodeNotFound, words.APINoApproval)
	}
	if err != nil {
		return nil, "", false, storeFailure(err)
	}
	tenant, user, _, ok := splitChatID(rec.ChatID)
	if rec.Channel != Name || !ok {
		return nil, "", false, fail(CodeNotFound, words.APINoApproval)
	}
	token = tokenOf(rec)
	if token == "" {
		// The card reference was never recorded (the replica that showed
		// it stopped first): the token entry is found by the approval's id.
		if e, ok, err := a.tokens.tokenEntryOf(ctx, rec); err == nil && ok {
			token = e.Token
		}
	}
	return rec, token, tenant == u.Tenant && user == u.ID, nil
}

// visible returns an approval the caller may see (their own, or one its
// approver rule lets them decide) with its token, and whether the caller
// asked for it; others are not found.
func (a *inbound) visible(ctx context.Context, u User, id string) (*approval.Approval, string, bool, *apiError) {
	rec, token, owner, aerr := a.lookup(ctx, u, id)
	if aerr != nil {
		return nil, "", false, aerr
	}
	if !owner && !mayDecide(u, rec) || !rec.MaySee(approval.UserID(u.UserID())) {
		// Privacy in groups: who may not see an approval does not find it.
		return nil, "", false, fail(CodeNotFound, words.APINoApproval)
	}
	return rec, token, owner, nil
}

// ---- GET /api/approvals

func (a *inbound) serveList(w http.ResponseWriter, r *http.Request) {
	u, aerr := a.authenticate(r)
	if aerr != nil {
		a.writeError(w, r, aerr)
		return
	}
	state := r.URL.Query().Get("state")
	if state == "" {
		state = string(approval.StatePending)
	}
	if !validStateFilter(state) {
		a.writeError(w, r, fail(CodeInvalidRequest, words.APIStateFilter))
		return
	}
	own, err := a.tokens.visibleApprovals(r.Context(), u, state == string(approval.StatePending))
	if err != nil {
		a.writeError(w, r, storeFailure(err))
		return
	}
	list := []ApprovalInfo{}
	for _, o := range own {
		if state == "all" || string(o.rec.State) == state {
			var resumed *Resumed
			if ownedBy(o.entry, u) {
				resumed = o.entry.Resumed // the requester's conversation: theirs alone
			}
			list = append(list, a.infoWith(o.rec, o.entry.Token, resumed))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": list})
}

func validStateFilter(s string) bool {
	switch approval.State(s) {
	case approval.StatePending, approval.StateClaimed, approval.StateExecuted, approval.StateFailed, approval.StateFrozen,
		approval.StateRejected, approval.StateExpired, approval.StateSuperseded, approval.StateCancelled:
		return true
	}
	return s == "all"
}

// ---- GET /api/approvals/{id}

func (a *inbound) serveGet(w http.ResponseWriter, r *http.Request) {
	u, aerr := a.authenticate(r)
	if aerr != nil {
		a.writeError(w, r, aerr)
		return
	}
	rec, token, owner, aerr := a.visible(r.Context(), u, r.PathValue("id"))
	if aerr != nil {
		a.writeError(w, r, aerr)
		return
	}
	var resumed *Resumed
	if owner && token != "" { // the requester's conversation: not shown to the other deciders
		if e, err := a.cfg.TokenStore.Get(r.Context(), token); err == nil {
			resumed = e.Resumed
		}
	}
	resp := struct {
		Approval ApprovalInfo   `json:"approval"`
		Audit    []audit.Record `json:"audit"`
	}{Approval: a.infoWith(rec, token, resumed), Audit: []audit.Record{}}
	if a.cfg.Audit != nil {
		recs, err := a.cfg.Audit.Records(r.Context(), string(rec.ID))
		if err != nil {
			a.log.Warn("reading the audit trail failed", "approval_id", rec.ID, "err", err)
			a.writeError(w, r, fail(CodeUnavailable, words.APIAuditUnavailable))
			return
		}
		if recs != nil {
			resp.Audit = recs
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

// ---- POST /api/approvals/{id}/cancel

// CancelRequest is the optional body of POST /api/approvals/{id}/cancel.
type CancelRequest struct {
	// Reason says why; the record's outcome and the audit trail keep it
	// (control characters dropped, secrets redacted, at most 500 runes).
	Reason string `json:"reason,omitempty"`
}

func (a *inbound) serveCancel(w http.ResponseWriter, r *http.Request) {
	u, aerr := a.authenticate(r)
	if aerr != nil {
		a.writeError(w, r, aerr)
		return
	}
	var req CancelRequest
	if aerr := a.readJSON(w, r, &req, "{reason?}", false); aerr != nil {
		a.writeError(w, r, aerr)
		return
	}
	rec, _, owner, aerr := a.visible(r.Context(), u, r.PathValue("id"))
	if aerr != nil {
		a.writeError(w, r, aerr)
		return
	}
	if !owner {
		a.writeError(w, r, fail(CodeUserMismatch, words.APIOnlyRequester))
		return
	}
	o, err := a.engine.Cancel(r.Context(), rec.ID, approval.UserID(u.UserID()), approval.SourceAPI, req.Reason)
	if err != nil {
		a.writeError(w, r, storeFailure(err))
		return
	}
	switch o.Status {
	case approval.StatusCancelled:
	case approval.StatusMissing:
		a.writeError(w, r, fail(CodeNotFound, words.APINoApproval))
		return
	default:
		if cur, err := a.engine.Get(r.Context(), rec.ID); err == nil {
			rec = cur
		}
		if rec.State == approval.StateExpired {
			a.writeError(w, r, fail(CodeExpired, words.APIApprovalExpired))
			return
		}
		a.writeError(w, r, fail(CodeConflict, words.APINotPending, rec.State))
		return
	}
	if cur, err := a.engine.Get(r.Context(), rec.ID); err == nil {
		rec = cur
	}
	writeJSON(w, http.StatusOK, map[string]any{"approval": a.info(rec, "")})
}
