package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/words"
)

// Who may decide an approval of the API is its approver rule's business,
// judged by the store's claim exactly as for a click on a card
// (approval.ApproverRule.Allows): the requester; anyone in the approval's
// chat for the rule "chat", where the API's chat is the tenant (a user of
// the approval's tenant decides "in its chat"); the listed "tenant/user"
// ids for the rule "users"; and with four eyes (not_requester) not the
// requester, who may still reject. The API does not refuse in advance what
// the rule allows: it reads the rule only to show an approval to those who
// may decide it and to name a refusal (refusal).

// mayDecide reports whether u may approve rec, as the claim judges it (a
// user other than the requester may reject exactly when they may approve).
func mayDecide(u User, rec *approval.Approval) bool {
	tenant, _, _, ok := splitChatID(rec.ChatID)
	if rec.Channel != Name || !ok {
		return false
	}
	// With an approvers' chat (approve_in: Feishu or DingTalk), no API
	// user decides "in its chat".
	// The people an escalation step added decide from anywhere (mode
	// users); its chats are Feishu's or DingTalk's, not the API's.
	user := approval.UserID(u.UserID())
	return rec.Allows(user, approval.Approve, rec.ApproveIn == nil && tenant == u.Tenant) || rec.EscalationAllows(user, approval.Approve, "", "")
}

// decisionChat is the chat a decision of u on rec is taken in: the
// approval's own chat when u is of its tenant (the API's chat is the
// tenant), the caller's own otherwise.
func decisionChat(u User, rec *approval.Approval) string {
	if tenant, _, _, ok := splitChatID(rec.ChatID); ok && tenant == u.Tenant {
		return rec.ChatID
	}
	return chatID(u, "decisions")
}

// refusal names the refusal of u's decision on rec, which the approver
// rule does not allow: family_mismatch for a user of another tenant,
// forbidden for the requester (the rule needs someone else to approve),
// user_mismatch for another user. Who may decide is said in lang.
func refusal(u User, rec *approval.Approval, lang words.Lang) *apiError {
	tenant, _, _, _ := splitChatID(rec.ChatID)
	who := rec.ApproversIn(string(lang), Name, "") // never the approvers' chat
	switch {
	case tenant != u.Tenant:
		return fail(CodeFamilyMismatch, words.APIFamilyMismatch, who)
	case approval.UserID(u.UserID()) == rec.Requester:
		return fail(CodeForbidden, words.APIForbiddenOwn, who)
	default:
		return fail(CodeUserMismatch, words.APIUserMismatch, who)
	}
}

// decided reports the statuses of a decision that took effect: the
// approval ran (or its result was replayed), or was rejected.
func decided(st approval.Status) bool {
	switch st {
	case approval.StatusExecuted, approval.StatusReplayed, approval.StatusFailed, approval.StatusFrozen, approval.StatusRejected:
		return true
	}
	return false
}

// ---- POST /agent/chat {confirmationToken, confirmed}

// decide takes a confirmation or cancellation by token. The requester's
// decision then waits for the rest of the turn (see the package doc).
func (a *inbound) decide(ctx context.Context, u User, req ChatRequest, reqID string) (*ChatResponse, *apiError) {
	if req.Confirmed == nil {
		return nil, fail(CodeInvalidRequest, words.APIConfirmedRequired)
	}
	return a.decideToken(ctx, u, req.ConfirmationToken, *req.Confirmed, strings.TrimSpace(req.Message), reqID, true)
}

// decideToken decides the pending action of one token as u: through the
// router's HandleCardAction, as a click on a card, so that the claim
// judges the approver rule and the audit trail records the source "api".
// With await, a decision of the requester whose turn runs in this process
// waits for the rest of that turn; otherwise the outcome is the answer.
func (a *inbound) decideToken(ctx context.Context, u User, token string, confirmed bool, comment, eventID string, await bool) (*ChatResponse, *apiError) {
	if !ValidToken(token) {
		return nil, fail(CodeNotFound, words.APIUnknownToken)
	}
	e, err := a.cfg.TokenStore.Get(ctx, token)
	if approval.KindOf(err) == errkind.NotFound {
		return nil, fail(CodeNotFound, words.APIUnknownOrUsed)
	}
	if err != nil {
		return nil, storeFailure(err)
	}
	owner := ownedBy(e, u)
	await = await && owner
	var c *conv
	if await {
		// The requester's requests in the conversation take turns, so
		// that what the turn says next is this request's answer.
		id := chatID(u, e.Conversation)
		c = a.convs.join(id)
		defer a.convs.leave(id, c)
		if err := c.lock(ctx); err != nil {
			return nil, nil
		}
		defer c.unlock()
	}

	rec, err := a.engine.Get(ctx, e.Approval)
	if approval.KindOf(err) == errkind.NotFound {
		a.tokens.retire(ctx, e.Token)
		return nil, fail(CodeNotFound, words.APIUnknownOrUsed)
	}
	if err != nil {
		return nil, storeFailure(err)
	}
	permitted := owner || mayDecide(u, rec)
	switch {
	case !permitted && rec.State != approval.StatePending:
		// Says nothing of the state to one who may not decide it.
		return nil, refusal(u, rec, a.langIn(ctx))
	case !permitted, rec.State == approval.StatePending:
		// One who may not decide is refused by the claim, which audits
		// the attempt as for a card.
	case rec.State == approval.StateExpired:
		return nil, fail(CodeExpired, words.APIActionExpiredAt, rec.ExpiresAt.UTC().Format(time.RFC3339))
	default:
		return nil, fail(CodeNotFound, words.APIActionDecided, rec.State)
	}

	verb := approval.Reject
	if confirmed {
		verb = approval.Approve
	}
	h := a.slot.Handler()
	if h == nil {
		return nil, fail(CodeUnavailable, words.APINotRunning)
	}
	var wt *waiter
	if await {
		wt = a.convs.subscribe(c)
		defer a.convs.unsubscribe(c, wt)
	}
	local := await && a.convs.isLocal(rec.ID)
	o, err := h.HandleCardAction(ctx, channels.CardAction{Channel: Name, ChatID: decisionChat(u, rec), MessageID: e.Token,
		EventID: eventID, UserID: approval.UserID(u.UserID()), ApprovalID: rec.ID, Verb: verb, PayloadSHA256: rec.PayloadSHA256,
		Comment: comment})
	if err != nil {
		a.log.Warn("deciding failed; nothing was run", "approval_id", rec.ID, "user_id", u.UserID(), "msg_id", eventID, "err", err)
		return nil, storeFailure(err)
	}
	switch {
	case decided(o.Status):
	case o.Status == approval.StatusUnauthorized, !permitted:
		// Says nothing of the state to one who may not decide it.
		return nil, refusal(u, rec, a.langIn(ctx))
	case o.Status == approval.StatusExpired:
		return nil, fail(CodeExpired, words.APIActionExpired)
	case o.Status == approval.StatusTampered:
		return nil, failText(CodeInternal, o.Content)
	default: // already_decided, superseded, cancelled, missing
		return nil, fail(CodeNotFound, words.APIActionDecided, o.Status)
	}

	resp := &ChatResponse{Text: o.Content, Actions: decidedActions(rec, o), Status: o.Status}
	if owner {
		resp.ConversationID = e.Conversation
	}
	if !local {
		// No turn of this process waits for the approval (it was
		// requested on another replica, or before a restart), or the
		// decider is not the requester, whose turn it is: the outcome is
		// the answer.
		return resp, nil
	}
	var skip []approval.Call
	if o.Status == approval.StatusExecuted || o.Status == approval.StatusReplayed {
		skip = rec.Calls // their tool_result messages are the decided actions
	}
	rest, aerr := a.await(ctx, wt, u, e.Conversation, "", []string{turnOf(rec)}, skip)
	if rest == nil {
		return nil, aerr
	}
	if !rest.Incomplete {
		resp.Text = rest.Text
	}
	resp.Actions = append(resp.Actions, rest.Actions...)
	resp.RequiresConfirmation, resp.PendingAction = rest.RequiresConfirmation, rest.PendingAction
	return resp, nil
}

// MaxBatchTokens is the most tokens one batch confirmation may hold.
const MaxBatchTokens = 20

// batch decides several pending actions ({confirmationTokens, confirmed}),
// one after the other in the order given, each exactly as a single
// confirmation by token would be but answered with its outcome (the rest
// of a turn is not awaited). A token that fails gets its own error in
// Results; the others go on.
func (a *inbound) batch(ctx context.Context, u User, req ChatRequest, reqID string) (*ChatResponse, *apiError) {
	n := len(req.ConfirmationTokens)
	switch {
	case req.ConfirmationToken != "":
		return nil, fail(CodeInvalidRequest, words.APITokenAndTokens)
	case req.Confirmed == nil:
		return nil, fail(CodeInvalidRequest, words.APIBatchConfirmed)
	case n == 0:
		return nil, fail(CodeInvalidRequest, words.APIBatchEmpty)
	case n > MaxBatchTokens:
		return nil, fail(CodeInvalidRequest, words.APIBatchTooMany, n, MaxBatchTokens)
	}
	comment := strings.TrimSpace(req.Message)
	lang := a.langIn(ctx)
	resp := &ChatResponse{Actions: []Action{}, Results: make([]BatchResult, 0, n)}
	seen := make(map[string]bool, n)
	decided := 0
	for i, tok := range req.ConfirmationTokens {
		res := BatchResult{Token: tok}
		if seen[tok] {
			res.Error, res.Message = CodeInvalidRequest, words.Text(lang, words.APIBatchTwice)
			resp.Results = append(resp.Results, res)
			continue
		}
		seen[tok] = true
		r, aerr := a.decideToken(ctx, u, tok, *req.Confirmed, comment, fmt.Sprintf("%s/%d", reqID, i), false)
		switch {
		case aerr != nil:
			res.Error, res.Message = aerr.code, aerr.message(lang)
		case r == nil:
			return nil, nil // the client went away
		default:
			res.Status, res.Text, res.Actions = r.Status, r.Text, r.Actions
			resp.Actions = append(resp.Actions, r.Actions...)
			decided++
		}
		resp.Results = append(resp.Results, res)
	}
	resp.Text = words.Text(lang, words.APIBatchDecided, decided, n)
	return resp, nil
}

// ---- POST /api/approvals/{id}/decision

// DecisionRequest is the body of POST /api/approvals/{id}/decision.
type DecisionRequest struct {
	// Decision is "approve", "reject", or "resolve" for a frozen approval
	// (its effect unknown), with Resolution.
	Decision string `json:"decision"`
	// Resolution is what "resolve" settles a frozen approval with: "done"
	// (it took effect; Comment is the result noted by hand), "retry" (run
	// it once more, with the same payloadSha256) or "abandon" (take it as
	// not done). Only with "resolve".
	Resolution string `json:"resolution,omitempty"`
	// Comment is an optional note; the record and the audit trail keep it
	// (control characters dropped, secrets redacted, at most 500 runes).
	Comment string `json:"comment,omitempty"`
	// PayloadSHA256 is the payloadSha256 GET /api/approvals/{id} showed:
	// the decision binds to what the decider saw. Required to approve; a
	// rejection without it rejects whatever the approval holds.
	PayloadSHA256 string `json:"payloadSha256,omitempty"`
	// Grant, approving a MEDIUM approval that may grant a window
	// (grantWindowSeconds in GET /api/approvals/{id}), is "once" (run it
	// this time) or "session" (also allow the same request in this
	// conversation for the window); absent means "session", as a plain
	// 确认 does. Ignored by a rejection; "session" for an approval that
	// grants nothing is a 400.
	Grant string `json:"grant,omitempty"`
	// Calls, with decision "approve", decides a batch call by call: every
	// call of the approval, named by the callId GET /api/approvals/{id}
	// shows (the model's call id, or "#<n>" for the n-th call), "approve"
	// or "reject". The approved calls run, the others do not and their
	// actions say rejected; all rejected is a rejection. Omitted: every
	// call as decision says.
	Calls map[string]string `json:"calls,omitempty"`
	// Arguments, with decision "edit", approves the calls with changed
	// arguments in one step: for an approval of one call, its new
	// arguments (an object); for several, an object of callId -> new
	// arguments, naming only the calls that change. They are validated
	// against the tool's schema and re-assessed; payloadSha256 is still
	// the hash the decider was shown (the proposed calls).
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// DecisionResponse is the answer of POST /api/approvals/{id}/decision.
type DecisionResponse struct {
	// Status is the outcome: executed, replayed, failed, frozen or
	// rejected.
	Status approval.Status `json:"status"`
	// Text is the outcome in words (the tool's result when it ran).
	Text string `json:"text"`
	// Actions are the decided calls and their results.
	Actions []Action `json:"actions"`
	// Approval is the approval after the decision.
	Approval ApprovalInfo `json:"approval"`
	// Approvals and Quorum, on a 202 awaiting_quorum answer, say how many
	// distinct people have approved so far and how many must.
	Approvals int `json:"approvals,omitempty"`
	Quorum    int `json:"quorum,omitempty"`
}

func (a *inbound) serveDecision(w http.ResponseWriter, r *http.Request) {
	var req DecisionRequest
	u, reqID, ok := a.begin(w, r, &req, "{decision: approve|reject|edit|resolve, comment?, payloadSha256, grant?: once|session, calls?: {callId: approve|reject}, arguments?, resolution?: done|retry|abandon}")
	if !ok {
		return
	}
	verb, resolution, aerr := decisionOf(req)
	if aerr != nil {
		a.writeError(w, r, aerr)
		return
	}
	grant, gerr := approval.ParseGrantChoice(req.Grant)
	if gerr != nil {
		a.writeError(w, r, fail(CodeInvalidRequest, words.APIGrant))
		return
	}
	if verb != approval.Approve {
		grant = approval.GrantUnset // only an approval grants
	}
	hash := strings.TrimSpace(req.PayloadSHA256)
	if req.Calls != nil && verb != approval.Approve {
		a.writeError(w, r, fail(CodeInvalidRequest, words.APICallsApproveOnly))
		return
	}
	ctx := r.Context()
	rec, token, owner, aerr := a.lookup(ctx, u, r.PathValue("id"))
	if aerr != nil {
		a.writeError(w, r, aerr)
		return
	}
	calls, aerr := callVerdicts(rec, req.Calls)
	if aerr != nil {
		a.writeError(w, r, aerr)
		return
	}
	var edits map[string]json.RawMessage
	if req.Decision == "edit" {
		if edits, aerr = editArguments(rec, req.Arguments); aerr != nil {
			a.writeError(w, r, aerr)
			return
		}
	} else if req.Arguments != nil {
		a.writeError(w, r, fail(CodeInvalidRequest, words.APIEditArguments))
		return
	}
	permitted := owner || mayDecide(u, rec)
	switch {
	case verb == approval.Resolve:
		if aerr := resolvable(u, rec, permitted, a.langOf(r)); aerr != nil {
			a.writeError(w, r, aerr)
			return
		}
	case !permitted && rec.State != approval.StatePending:
		a.writeError(w, r, refusal(u, rec, a.langOf(r)))
		return
	case !permitted, rec.State == approval.StatePending:
	case rec.State == approval.StateExpired:
		a.writeError(w, r, fail(CodeExpired, words.APIExpiredAt, rec.ExpiresAt.UTC().Format(time.RFC3339)))
		return
	default:
		a.writeError(w, r, fail(CodeConflict, words.APINotPending, rec.State))
		return
	}
	if grant == approval.GrantSession && !rec.Grantable() {
		a.writeError(w, r, fail(CodeInvalidRequest, words.APIGrantNone))
		return
	}
	if hash == "" {
		hash = rec.PayloadSHA256 // a rejection that names no payload
	}
	h := a.slot.Handler()
	if h == nil {
		a.writeError(w, r, fail(CodeUnavailable, words.APINotRunning))
		return
	}
	o, err := h.HandleCardAction(ctx, channels.CardAction{Channel: Name, ChatID: decisionChat(u, rec), MessageID: token,
		EventID: reqID, UserID: approval.UserID(u.UserID()), ApprovalID: rec.ID, Verb: verb, PayloadSHA256: hash,
		Comment: req.Comment, Resolution: resolution, Grant: grant, Calls: calls, Edits: edits})
	if err != nil {
		a.log.Warn("deciding failed; nothing was run", "approval_id", rec.ID, "user_id", u.UserID(), "msg_id", reqID, "err", err)
		if ae := (*approval.AnswerError)(nil); errors.As(err, &ae) {
			// An answer of the wrong type to an MCP server's question:
			// which field and why, in the request's language.
			a.writeError(w, r, failText(CodeInvalidRequest, ae.In(string(a.langOf(r)))))
			return
		}
		if approval.KindOf(err) == errkind.Invalid && edits != nil {
			a.writeError(w, r, fail(CodeInvalidRequest, words.APIEditInvalid, editCause(err)))
			return
		}
		if approval.KindOf(err) == errkind.Invalid {
			a.writeError(w, r, fail(CodeInvalidRequest, words.APICallsInvalid))
			return
		}
		a.writeError(w, r, storeFailure(err))
		return
	}
	switch {
	case decided(o.Status):
	case o.Status == approval.StatusAwaitingQuorum:
		// Counted (or counted before: Text says which); the approval
		// still waits for more approvers.
		if cur, err := a.engine.Get(ctx, rec.ID); err == nil {
			rec = cur
		}
		writeJSON(w, http.StatusAccepted, DecisionResponse{Status: o.Status, Text: o.Content, Actions: []Action{},
			Approval: a.info(rec, ""), Approvals: o.Approvals, Quorum: o.Quorum})
		return
	case o.Status == approval.StatusUnauthorized && edits != nil && mayDecide(u, rec):
		// The approval's rule lets u approve it, the edited call's not.
		a.writeError(w, r, fail(CodeForbidden, words.APIEditNeedsOther, o.Detail))
		return
	case o.Status == approval.StatusUnauthorized, !permitted:
		a.writeError(w, r, refusal(u, rec, a.langOf(r)))
		return
	case o.Status == approval.StatusExpired:
		a.writeError(w, r, fail(CodeExpired, words.APIExpiredNotRun))
		return
	case o.Status == approval.StatusTampered:
		a.writeError(w, r, fail(CodeTampered, words.APITampered))
		return
	case o.Status == approval.StatusMissing:
		a.writeError(w, r, fail(CodeNotFound, words.APINoApproval))
		return
	default: // already_decided, superseded, cancelled
		a.writeError(w, r, fail(CodeConflict, words.APINotPending, o.Status))
		return
	}
	if cur, err := a.engine.Get(ctx, rec.ID); err == nil {
		rec = cur // (an edit's calls, as they ran)
	}
	resp := DecisionResponse{Status: o.Status, Text: o.Content, Actions: decidedActions(rec, o)}
	resp.Approval = a.info(rec, "")
	writeJSON(w, http.StatusOK, resp)
}

// callVerdicts reads the calls of a per-call decision on rec: nil when
// the body has none, else every call of rec named once with "approve" or
// "reject" (approval.VerdictsFor), or a 400 that says how to name them.
func callVerdicts(rec *approval.Approval, in map[string]string) (map[string]approval.Verb, *apiError) {
	if in == nil {
		return nil, nil
	}
	out := make(map[string]approval.Verb, len(in))
	for k, v := range in {
		switch v {
		case "approve":
			out[k] = approval.Approve
		case "reject":
			out[k] = approval.Reject
		default:
			return nil, fail(CodeInvalidRequest, words.APICallsInvalid)
		}
	}
	if _, err := approval.VerdictsFor(rec.Calls, out); err != nil {
		return nil, fail(CodeInvalidRequest, words.APICallsInvalid)
	}
	return out, nil
}

// editArguments reads the arguments of a decision "edit" on rec: for an
// approval of one call, its new arguments (an object); for several, an
// object of callId -> new arguments (objects). Which calls they name, and
// whether the tools take them, is the engine's check.
func editArguments(rec *approval.Approval, raw json.RawMessage) (map[string]json.RawMessage, *apiError) {
	var obj map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &obj) != nil || obj == nil {
		return nil, fail(CodeInvalidRequest, words.APIEditArguments)
	}
	if len(rec.Calls) == 1 {
		return map[string]json.RawMessage{approval.CallKey(rec.Calls, 0): raw}, nil
	}
	if len(obj) == 0 {
		return nil, fail(CodeInvalidRequest, words.APIEditArguments)
	}
	for _, v := range obj {
		var m map[string]json.RawMessage
		if json.Unmarshal(v, &m) != nil || m == nil {
			return nil, fail(CodeInvalidRequest, words.APIEditArguments)
		}
	}
	return obj, nil
}

// editCause is why the engine refused an edit, as its error says after
// approval.ErrEdit ("call 1 (erase): invalid arguments …"), cut to 300
// runes; the edited arguments are the caller's own.
func editCause(err error) string {
	s := err.Error()
	if _, after, ok := strings.Cut(s, approval.ErrEdit.Error()+": "); ok {
		s = after
	}
	r := []rune(s)
	if len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return s
}
