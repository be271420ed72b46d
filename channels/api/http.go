package api

import (
	"bytes"
	"context"
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
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
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
	Status string `json:"status,omitempty"`
	// Incomplete reports that TurnTimeout passed before the turn ended;
	// the turn goes on, and its answer is not delivered to this request.
	Incomplete bool `json:"incomplete,omitempty"`
}

// Action is one tool call and its result.
type Action struct {
	Tool    string          `json:"tool"`
	Input   json.RawMessage `json:"input"`
	Result  string          `json:"result"`
	Status  string          `json:"status,omitempty"`
	IsError bool            `json:"isError,omitempty"`
}

// PendingAction is an action that waits for the user's confirmation.
type PendingAction struct {
	// Token decides it: POST /agent/chat {confirmationToken, confirmed}.
	Token      string `json:"token"`
	ApprovalID string `json:"approvalId"`
	// Description says in a line what will happen; InputPreview shows the
	// detail, secrets redacted.
	Description  string `json:"description"`
	ToolName     string `json:"toolName"`
	InputPreview string `json:"inputPreview"`
	Risk         string `json:"risk"`
	// ExpiresAt is RFC 3339.
	ExpiresAt     string `json:"expiresAt"`
	IsDestructive bool   `json:"isDestructive"`
}

// ApprovalInfo is one approval as GET /api/approvals shows it. Tool
// arguments are not shown, only the sanitised preview.
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
	CreatedAt      time.Time      `json:"createdAt"`
	ExpiresAt      time.Time      `json:"expiresAt"`
	DecidedBy      string         `json:"decidedBy,omitempty"`
	DecidedAt      *time.Time     `json:"decidedAt,omitempty"`
	DecidedVia     string         `json:"decidedVia,omitempty"`
	Comment        string         `json:"comment,omitempty"`
	// Status and Result describe the outcome once the approval has ended.
	Status string `json:"status,omitempty"`
	Result string `json:"result,omitempty"`
	// PendingAction is set while the approval waits.
	PendingAction *PendingAction `json:"pendingAction,omitempty"`
}

// ErrorResponse is the body of every error answer.
type ErrorResponse struct {
	Error   string `json:"error"`
	Message string `json:"message"`
}

// Error codes, each with its HTTP status.
const (
	CodeInvalidRequest = "invalid_request" // 400
	CodeUnauthorized   = "unauthorized"    // 401: missing or unknown bearer token
	CodeUserMismatch   = "user_mismatch"   // 403: the token belongs to another user
	CodeTenantMismatch = "tenant_mismatch" // 403: the token belongs to another tenant (clients also accept family_mismatch)
	CodeForbidden      = "forbidden"       // 403: the policy does not let this user decide
	CodeNotFound       = "not_found"       // 404: unknown, already used, or not visible
	CodeConflict       = "already_decided" // 409: cancel of an approval that is no longer pending
	CodeExpired        = "expired"         // 410
	CodeRateLimited    = "rate_limited"    // 429
	CodeInternal       = "internal"        // 500
	CodeUnavailable    = "unavailable"     // 503: the store is down or the API is not running
)

var codeStatus = map[string]int{
	CodeInvalidRequest: http.StatusBadRequest,
	CodeUnauthorized:   http.StatusUnauthorized,
	CodeUserMismatch:   http.StatusForbidden,
	CodeTenantMismatch: http.StatusForbidden,
	CodeForbidden:      http.StatusForbidden,
	CodeNotFound:       http.StatusNotFound,
	CodeConflict:       http.StatusConflict,
	CodeExpired:        http.StatusGone,
	CodeRateLimited:    http.StatusTooManyRequests,
	CodeInternal:       http.StatusInternalServerError,
	CodeUnavailable:    http.StatusServiceUnavailable,
}

// apiError is an error answer.
type apiError struct {
	code, msg string
}

func (e *apiError) Error() string { return e.code + ": " + e.msg }

func fail(code, msg string) *apiError { return &apiError{code, msg} }

// storeFailure turns an error of the engine or a store into an answer.
func storeFailure(err error) *apiError {
	switch approval.KindOf(err) {
	case approval.KindUnavailable:
		return fail(CodeUnavailable, approval.UserMessage(err))
	case approval.KindNotFound:
		return fail(CodeNotFound, "No such pending action.")
	}
	return fail(CodeInternal, "Something went wrong; nothing was run.")
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

func (a *API) writeError(w http.ResponseWriter, e *apiError) {
	st := codeStatus[e.code]
	if st == 0 {
		st = http.StatusInternalServerError
	}
	if e.code == CodeUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="hitlbot"`)
	}
	writeJSON(w, st, ErrorResponse{Error: e.code, Message: e.msg})
}

// ---- authentication

// authenticate returns the caller: the user of the bearer token, or
// LocalUser for an anonymous loopback request when that is allowed.
func (a *API) authenticate(r *http.Request) (User, *apiError) {
	h := r.Header.Get("Authorization")
	if h == "" {
		if a.cfg.AllowAnonymousLocal && loopback(r.RemoteAddr) {
			return LocalUser, nil
		}
		return User{}, fail(CodeUnauthorized, "Send Authorization: Bearer <token> with a token from the api.tokens config.")
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return User{}, fail(CodeUnauthorized, "The Authorization header must be \"Bearer <token>\".")
	}
	u, ok := a.users[sha256.Sum256([]byte(strings.TrimSpace(tok)))]
	if !ok {
		return User{}, fail(CodeUnauthorized, "Unknown bearer token.")
	}
	return u, nil
}

func loopback(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ---- POST /agent/chat

func (a *API) serveChat(w http.ResponseWriter, r *http.Request) {
	reqID := "req_" + randomHex(12)
	w.Header().Set("X-Request-Id", reqID)
	u, aerr := a.authenticate(r)
	if aerr != nil {
		a.writeError(w, aerr)
		return
	}
	var req ChatRequest
	body := http.MaxBytesReader(w, r.Body, a.cfg.MaxMessageBytes)
	dec := json.NewDecoder(body)
	if err := dec.Decode(&req); err != nil {
		a.writeError(w, fail(CodeInvalidRequest, "The body must be a JSON object {message, conversationId?, confirmationToken?, confirmed?}: "+jsonProblem(err)))
		return
	}
	if dec.More() {
		a.writeError(w, fail(CodeInvalidRequest, "The body must hold one JSON object."))
		return
	}
	var resp *ChatResponse
	if req.ConfirmationToken != "" {
		resp, aerr = a.decide(r.Context(), u, req, reqID)
	} else {
		resp, aerr = a.message(r.Context(), u, req, reqID)
	}
	if aerr != nil {
		a.writeError(w, aerr)
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

func jsonProblem(err error) string {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return "it is too large"
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return "malformed JSON"
	case errors.As(err, &te) && te.Field != "":
		return "field " + te.Field + " has the wrong type"
	case errors.As(err, &te):
		return "it is not an object"
	case errors.Is(err, io.EOF):
		return "the body is empty"
	}
	return "malformed JSON"
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
func (a *API) message(ctx context.Context, u User, req ChatRequest, reqID string) (*ChatResponse, *apiError) {
	text := strings.TrimSpace(req.Message)
	switch {
	case text == "":
		return nil, fail(CodeInvalidRequest, "message is empty.")
	case !utf8.ValidString(text):
		return nil, fail(CodeInvalidRequest, "message is not valid UTF-8.")
	case req.Confirmed != nil:
		return nil, fail(CodeInvalidRequest, "confirmed needs a confirmationToken.")
	}
	convID := req.ConversationID
	if convID == "" {
		convID = "c_" + randomHex(8)
	} else if !validConversationID(convID) {
		return nil, fail(CodeInvalidRequest, "conversationId must be 1-128 characters of A-Z a-z 0-9 - _ . : @.")
	}
	h := a.handler()
	if h == nil {
		return nil, fail(CodeUnavailable, "The API is not running.")
	}
	id := chatID(u, convID)
	c := a.join(id)
	defer a.leave(id, c)
	if err := c.lock(ctx); err != nil {
		return nil, nil
	}
	defer c.unlock()

	inConv, release, aerr := a.admit(ctx, u, convID)
	if aerr != nil || release == nil {
		return nil, aerr
	}
	defer release()

	wt := a.subscribe(c)
	defer a.unsubscribe(c, wt)
	m := channels.Message{Channel: Name, ChatID: id, ChatType: "p2p", UserID: approval.UserID(u.UserID()), UserName: u.ID,
		MessageID: reqID, Text: text, CreatedAt: a.cfg.Clock.Now().UTC()}
	if err := h.HandleMessage(ctx, m); err != nil {
		a.log.Warn("handling a message failed", "chat_id", id, "user_id", u.UserID(), "msg_id", reqID, "err", err)
		switch {
		case errors.Is(err, agent.ErrBusy):
			return nil, fail(CodeRateLimited, "Too many messages wait in this conversation; try again shortly.")
		case errors.Is(err, agent.ErrClosed):
			return nil, fail(CodeUnavailable, "The assistant is shutting down; try again shortly.")
		}
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
	res := a.await(ctx, wt, u, convID, waitFor, turns, nil)
	if res == nil {
		return nil, nil
	}
	res.ConversationID = convID
	return res, nil
}

// decide takes a confirmation or cancellation by token.
func (a *API) decide(ctx context.Context, u User, req ChatRequest, reqID string) (*ChatResponse, *apiError) {
	if req.Confirmed == nil {
		return nil, fail(CodeInvalidRequest, "confirmed (true or false) is required with a confirmationToken.")
	}
	if !ValidToken(req.ConfirmationToken) {
		return nil, fail(CodeNotFound, "Unknown pending-action token.")
	}
	e, err := a.cfg.TokenStore.Get(ctx, req.ConfirmationToken)
	if approval.KindOf(err) == approval.KindNotFound {
		return nil, fail(CodeNotFound, "Unknown or already used pending-action token.")
	}
	if err != nil {
		return nil, storeFailure(err)
	}
	if e.Tenant != u.Tenant {
		return nil, fail(CodeTenantMismatch, "This pending action belongs to another tenant.")
	}
	if e.User != u.ID {
		return nil, fail(CodeUserMismatch, "This pending action belongs to another user.")
	}
	id := chatID(u, e.Conversation)
	c := a.join(id)
	defer a.leave(id, c)
	if err := c.lock(ctx); err != nil {
		return nil, nil
	}
	defer c.unlock()

	rec, err := a.engine.Get(ctx, e.Approval)
	if approval.KindOf(err) == approval.KindNotFound {
		a.retire(ctx, e.Token)
		return nil, fail(CodeNotFound, "Unknown or already used pending-action token.")
	}
	if err != nil {
		return nil, storeFailure(err)
	}
	switch rec.State {
	case approval.StatePending:
	case approval.StateExpired:
		return nil, fail(CodeExpired, "This pending action expired at "+rec.ExpiresAt.UTC().Format(time.RFC3339)+"; nothing was run.")
	default:
		return nil, fail(CodeNotFound, "This pending action was already decided ("+string(rec.State)+").")
	}

	verb := approval.Reject
	if *req.Confirmed {
		verb = approval.Approve
	}
	h := a.handler()
	if h == nil {
		return nil, fail(CodeUnavailable, "The API is not running.")
	}
	wt := a.subscribe(c)
	defer a.unsubscribe(c, wt)
	local := a.isLocal(rec.ID)
	// Through the router, like a click on a card: it decides as the
	// caller, records the source "api" in the audit trail, and counts the
	// decision in the metrics.
	o, err := h.HandleCardAction(ctx, channels.CardAction{Channel: Name, ChatID: id, MessageID: e.Token, EventID: reqID,
		UserID: approval.UserID(u.UserID()), ApprovalID: rec.ID, Verb: verb, PayloadSHA256: rec.PayloadSHA256,
		Comment: strings.TrimSpace(req.Message)})
	if err != nil {
		a.log.Warn("deciding failed; nothing was run", "approval_id", rec.ID, "user_id", u.UserID(), "msg_id", reqID, "err", err)
		return nil, storeFailure(err)
	}
	switch o.Status {
	case approval.StatusExecuted, approval.StatusReplayed, approval.StatusFailed, approval.StatusFrozen, approval.StatusRejected:
	case approval.StatusExpired:
		return nil, fail(CodeExpired, "This pending action expired; nothing was run.")
	case approval.StatusUnauthorized:
		return nil, fail(CodeForbidden, o.Content)
	case approval.StatusTampered:
		return nil, fail(CodeInternal, o.Content)
	default: // already_decided, superseded, cancelled, missing
		return nil, fail(CodeNotFound, "This pending action was already decided ("+string(o.Status)+").")
	}

	decided := decidedActions(rec, o)
	resp := &ChatResponse{Text: o.Content, Actions: decided, ConversationID: e.Conversation, Status: string(o.Status)}
	if !local {
		// No turn of this process waits for the approval (it was
		// requested on another replica, or before a restart): the
		// outcome is the answer.
		return resp, nil
	}
	var skip []approval.Call
	if o.Status == approval.StatusExecuted || o.Status == approval.StatusReplayed {
		skip = rec.Calls // their tool_result messages are the decided actions
	}
	rest := a.await(ctx, wt, u, e.Conversation, "", []string{turnOf(rec)}, skip)
	if rest == nil {
		return nil, nil
	}
	if !rest.Incomplete {
		resp.Text = rest.Text
	}
	resp.Actions = append(resp.Actions, rest.Actions...)
	resp.RequiresConfirmation, resp.PendingAction = rest.RequiresConfirmation, rest.PendingAction
	return resp, nil
}

// retire forgets a used token.
func (a *API) retire(ctx context.Context, token string) {
	if err := a.cfg.TokenStore.Delete(context.WithoutCancel(ctx), token); err != nil {
		a.log.Warn("retiring a pending-action token failed", "err", err)
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
		act := Action{Tool: c.Tool, Input: c.Args, Result: o.Content, Status: string(o.Status), IsError: o.IsError}
		r, ok := byID[c.CallID]
		if !ok && i < len(o.Results) {
			r, ok = o.Results[i], true
		}
		if ok {
			act.Result, act.Status, act.IsError = r.Content, string(r.Status), r.IsError
		}
		out = append(out, act)
	}
	return out
}

// await collects what the turns named by turns (their message ids) say in
// the conversation until one ends, shows an approval, or TurnTimeout
// passes. It returns nil when ctx ends (the client went away).
//
// The router does not tell a channel when a turn ends, so the end is read
// from what is said (see the package documentation): an answer ends it; so
// does an error notice; a plain notice ends it only while the conversation
// has a pending action (the router's "an action is waiting" reminder: the
// message is queued behind the approval); the settling of waitFor ends it
// when no turn of this process waits for that approval (a typed 确认 / 取消
// decided here for a turn elsewhere). tool_result messages are actions,
// except the first one matching each call of skip (already reported).
// What other turns say (an earlier turn that outlived its request, a
// message queued behind an approval) is not this request's answer.
func (a *API) await(ctx context.Context, wt *waiter, u User, convID string, waitFor approval.ID, turns []string, skip []approval.Call) *ChatResponse {
	// Measured on the wall clock, not the engine's: it bounds an HTTP
	// request, and advancing a test's fake clock past an approval's expiry
	// must not end the requests in flight.
	wall := time.NewTimer(a.cfg.TurnTimeout)
	defer wall.Stop()
	// An unknown turn ("") lets everything said in the conversation in.
	filter := !slices.Contains(turns, "")
	res := &ChatResponse{}
	var notices []string
	for {
		for {
			ev, ok := wt.pop()
			if !ok {
				break
			}
			if ev.turn != "" && ev.settled == nil && filter && !slices.Contains(turns, ev.turn) {
				continue
			}
			switch {
			case ev.shown != nil:
				res.RequiresConfirmation, res.PendingAction = true, ev.shown
				if res.Text == "" {
					res.Text = confirmText(ev.shown)
				}
				return res
			case ev.settled != nil:
				if waitFor != "" && ev.settled.view.ApprovalID == waitFor && !ev.settled.local {
					v := ev.settled.view
					res.Text = v.StatusText
					if v.Result != "" {
						res.Text += ": " + v.Result
					}
					res.Status = string(v.Status)
					return res
				}
			case ev.out != nil:
				out := ev.out
				switch agent.SayKind(out.Kind) {
				case agent.SayToolResult:
					if i := matchCall(skip, out); i >= 0 {
						skip = append(skip[:i:i], skip[i+1:]...)
						continue
					}
					st := string(approval.StatusExecuted)
					if out.IsError {
						st = string(approval.StatusFailed)
					}
					res.Actions = append(res.Actions, Action{Tool: out.Tool, Input: json.RawMessage(out.Args), Result: out.Text, Status: st, IsError: out.IsError})
				case agent.SayAnswer:
					res.Text = out.Text
					return res
				default: // notice
					if out.IsError {
						res.Text = out.Text
						return res
					}
					notices = append(notices, out.Text)
					if pa := a.pendingIn(ctx, u, convID); pa != nil {
						res.Text = out.Text
						res.RequiresConfirmation, res.PendingAction = true, pa
						return res
					}
				}
			}
		}
		select {
		case <-wt.sig:
		case <-ctx.Done():
			return nil
		case <-wall.C:
			return a.timedOut(res, notices)
		}
	}
}

func (a *API) timedOut(res *ChatResponse, notices []string) *ChatResponse {
	res.Incomplete = true
	res.Text = strings.Join(notices, "\n")
	if res.Text == "" {
		res.Text = "Still working on it; this request stopped waiting. Ask again in a moment."
	}
	return res
}

func confirmText(pa *PendingAction) string {
	return "This needs your confirmation: " + pa.Description
}

func matchCall(calls []approval.Call, out *channels.Outgoing) int {
	for i, c := range calls {
		if c.Tool == out.Tool && bytes.Equal(c.Args, out.Args) {
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
	preview := v.Preview
	if preview == "" {
		preview = v.Summary
	}
	return PendingAction{Token: token, ApprovalID: string(v.ApprovalID), Description: v.Summary, ToolName: v.Tool,
		InputPreview: preview, Risk: v.Risk.String(), ExpiresAt: v.ExpiresAt.UTC().Format(time.RFC3339),
		IsDestructive: v.Risk >= approval.RiskHigh}
}

// ---- the caller's approvals

// owned is one of the caller's approvals, with its token.
type owned struct {
	entry TokenEntry
	rec   *approval.Approval
}

// pendingEntry is the pending approval of a conversation.
type pendingEntry struct {
	TokenEntry
	turn string // the turn that waits for it
}

// approvalsOf returns the caller's approvals that the token index still
// holds (those requested within TokenRetention plus their timeout),
// retiring tokens whose approvals are gone. pendingOnly reads only the
// approvals whose expiry has not passed, so that the per-user cap costs a
// store read per live approval, not per remembered one.
func (a *API) approvalsOf(ctx context.Context, u User, pendingOnly bool) ([]owned, error) {
	es, err := a.cfg.TokenStore.List(ctx, u.Tenant, u.ID)
	if err != nil {
		return nil, err
	}
	now := a.cfg.Clock.Now()
	var out []owned
	for _, e := range es {
		if pendingOnly && !now.Before(e.ExpiresAt) {
			continue
		}
		rec, err := a.engine.Get(ctx, e.Approval)
		if approval.KindOf(err) == approval.KindNotFound {
			a.retire(ctx, e.Token)
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

// pendingOf counts the caller's pending approvals and finds the one of the
// conversation, if any.
func (a *API) pendingOf(ctx context.Context, u User, convID string) (int, *pendingEntry, error) {
	own, err := a.approvalsOf(ctx, u, true)
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
func (a *API) pendingIn(ctx context.Context, u User, convID string) *PendingAction {
	own, err := a.approvalsOf(ctx, u, true)
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

func (a *API) info(rec *approval.Approval, token string) ApprovalInfo {
	_, _, convID, _ := splitChatID(rec.ChatID)
	in := ApprovalInfo{ID: rec.ID, State: rec.State, Tool: rec.Tool(), Risk: rec.Risk.String(), Summary: rec.Summary,
		Preview: rec.Preview, Reason: rec.Reason, ConversationID: convID, Requester: string(rec.Requester),
		PayloadSHA256: rec.PayloadSHA256, CreatedAt: rec.CreatedAt, ExpiresAt: rec.ExpiresAt,
		DecidedBy: string(rec.DecidedBy), DecidedVia: string(rec.DecidedVia), Comment: rec.Comment}
	if !rec.DecidedAt.IsZero() {
		t := rec.DecidedAt
		in.DecidedAt = &t
	}
	if rec.Outcome != nil {
		in.Status, in.Result = string(rec.Outcome.Status), rec.Outcome.Content
	}
	if rec.State == approval.StatePending && token != "" {
		pa := pendingAction(cards.Pending(rec, a.engine.Text(), ""), token)
		in.PendingAction = &pa
	}
	return in
}

// visible returns the caller's approval id with its token, or an error
// answer: approvals of other users and of other channels are not found.
func (a *API) visible(ctx context.Context, u User, id string) (*approval.Approval, string, *apiError) {
	aid := approval.ID(id)
	if !aid.Valid() {
		return nil, "", fail(CodeNotFound, "No such approval.")
	}
	rec, err := a.engine.Get(ctx, aid)
	if approval.KindOf(err) == approval.KindNotFound {
		return nil, "", fail(CodeNotFound, "No such approval.")
	}
	if err != nil {
		return nil, "", storeFailure(err)
	}
	tenant, user, _, ok := splitChatID(rec.ChatID)
	if rec.Channel != Name || !ok || tenant != u.Tenant || user != u.ID {
		return nil, "", fail(CodeNotFound, "No such approval.")
	}
	token := ""
	for _, c := range rec.Cards {
		if c.Channel == Name && ValidToken(c.MessageID) {
			token = c.MessageID
		}
	}
	return rec, token, nil
}

// ---- GET /api/approvals

func (a *API) serveList(w http.ResponseWriter, r *http.Request) {
	u, aerr := a.authenticate(r)
	if aerr != nil {
		a.writeError(w, aerr)
		return
	}
	state := r.URL.Query().Get("state")
	if state == "" {
		state = string(approval.StatePending)
	}
	if !validStateFilter(state) {
		a.writeError(w, fail(CodeInvalidRequest, "state must be all or an approval state (pending, executed, rejected, expired, …)."))
		return
	}
	own, err := a.approvalsOf(r.Context(), u, state == string(approval.StatePending))
	if err != nil {
		a.writeError(w, storeFailure(err))
		return
	}
	list := []ApprovalInfo{}
	for _, o := range own {
		if state == "all" || string(o.rec.State) == state {
			list = append(list, a.info(o.rec, o.entry.Token))
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

func (a *API) serveGet(w http.ResponseWriter, r *http.Request) {
	u, aerr := a.authenticate(r)
	if aerr != nil {
		a.writeError(w, aerr)
		return
	}
	rec, token, aerr := a.visible(r.Context(), u, r.PathValue("id"))
	if aerr != nil {
		a.writeError(w, aerr)
		return
	}
	resp := struct {
		Approval ApprovalInfo   `json:"approval"`
		Audit    []audit.Record `json:"audit"`
	}{Approval: a.info(rec, token), Audit: []audit.Record{}}
	if a.cfg.Audit != nil {
		recs, err := a.cfg.Audit.Records(r.Context(), string(rec.ID))
		if err != nil {
			a.log.Warn("reading the audit trail failed", "approval_id", rec.ID, "err", err)
			a.writeError(w, fail(CodeUnavailable, "The audit trail cannot be read right now; try again shortly."))
			return
		}
		if recs != nil {
			resp.Audit = recs
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

// ---- POST /api/approvals/{id}/cancel

func (a *API) serveCancel(w http.ResponseWriter, r *http.Request) {
	u, aerr := a.authenticate(r)
	if aerr != nil {
		a.writeError(w, aerr)
		return
	}
	rec, _, aerr := a.visible(r.Context(), u, r.PathValue("id"))
	if aerr != nil {
		a.writeError(w, aerr)
		return
	}
	o, err := a.engine.Cancel(r.Context(), rec.ID, approval.UserID(u.UserID()), approval.SourceAPI, "cancelled through the API")
	if err != nil {
		a.writeError(w, storeFailure(err))
		return
	}
	switch o.Status {
	case approval.StatusCancelled:
	case approval.StatusMissing:
		a.writeError(w, fail(CodeNotFound, "No such approval."))
		return
	default:
		if cur, err := a.engine.Get(r.Context(), rec.ID); err == nil {
			rec = cur
		}
		if rec.State == approval.StateExpired {
			a.writeError(w, fail(CodeExpired, "This approval has expired."))
			return
		}
		a.writeError(w, fail(CodeConflict, "This approval is no longer pending ("+string(rec.State)+")."))
		return
	}
	if cur, err := a.engine.Get(r.Context(), rec.ID); err == nil {
		rec = cur
	}
	writeJSON(w, http.StatusOK, map[string]any{"approval": a.info(rec, "")})
}
