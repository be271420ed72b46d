// Package api is the HTTP API of hitlbot: a channels.Channel named "api"
// whose conversations are HTTP requests, plus endpoints to list, inspect,
// decide and cancel approvals. Its wire format follows the seed document
// "Confirmation Guardrail Layer" (POST /agent/chat, pendingAction, the
// validation errors, batch confirmation); a client written from it works.
//
// # Wiring (cmd/bot)
//
//	tokens := api.NewRedisTokens(redisClient, "hitl:", nil) // or api.NewMemoryTokens(nil) on one node
//	a, err := api.New(api.Config{Tokens: …, Lang: "zh", TokenStore: tokens, Audit: auditReader, Clock: engineClock}, engine, logger)
//	_ = registry.Register(a)        // before router.Start, which calls a.Start(ctx, router)
//	a.Mount(mux)                    // or mux.Handle("/agent/chat", a.Handler()) and the /api/approvals paths
//
// # Routes
//
//	POST /agent/chat                    {message, conversationId?, confirmationToken? | confirmationTokens?, confirmed?}
//	GET  /api/approvals?state=pending   the approvals the caller may see (state: pending (default), all, or any state name)
//	GET  /api/approvals/{id}            one of them, with its payloadSha256 and its audit trail
//	POST /api/approvals/{id}/decision   {decision: approve|reject|edit, comment?, payloadSha256, grant?: once|session,
//	                                     calls?: {callId: approve|reject}, arguments?}
//	                                    {decision: resolve, resolution: done|retry|abandon, comment?, payloadSha256}:
//	                                    settles a frozen approval (409 already_decided when it is not frozen)
//	POST /api/approvals/{id}/cancel     {reason?}: the requester withdraws a pending one
//
// Any other method on these paths is 405 method_not_allowed with an Allow
// header (Mount registers a method-less pattern per path, so that a
// catch-all "/" beside the API, the web chat's, does not answer 404).
//
// Every request carries "Authorization: Bearer <token>" (Config.Tokens maps
// it to a user and a tenant); with AllowAnonymousLocal, a request without
// the header from a loopback address is the user "local" of tenant
// "local". A body must be one JSON object of valid UTF-8: invalid UTF-8 or
// a \u escape of a lone surrogate is 400 before decoding (encoding/json
// would turn either into U+FFFD silently). Errors are JSON {error,
// message}:
//
//	invalid_request    400  malformed body, a missing or wrong field
//	unauthorized       401  missing or unknown bearer token
//	user_mismatch      403  another user's action, which the approver rule does not let the caller decide
//	family_mismatch    403  another tenant's action, likewise (the seed's name; the tenant is its family)
//	forbidden          403  the caller's own action, which the rule needs someone else to approve (four eyes)
//	not_allowed        403  the caller is not in channels.api.allow.users (every route)
//	not_found          404  unknown or used token, unknown or invisible approval
//	method_not_allowed 405  see Allow
//	already_decided    409  the approval is no longer pending (decision route, cancel)
//	tampered           409  payloadSha256 is not the approval's; nothing ran
//	expired            410
//	rate_limited       429
//	internal           500
//	unavailable        503  the store is down or the API is not running
//
// # Language
//
// The words the API writes itself (the message of an error, the text of
// an answer that waits for a confirmation or stopped waiting, a batch's
// summary and per-token messages) come from the catalogue of package
// words, in English or Chinese: the first language of the request's
// Accept-Language header that the catalogue speaks ("zh", "zh-CN",
// "en-US" …, by q weight; q=0 refuses a tag), else Config.Lang (cmd/bot:
// channels.api.lang, empty for approval.lang; default "en"). Error codes,
// statuses, field names and every other machine-readable part are the
// same in every language: a client decides on the code, and shows the
// message. What the rest of hitlbot says into the conversation (the
// agent's answers, an outcome's text, a pending action's description) is
// in its own configured language.
//
// # Who may decide
//
// The approval's approver rule, judged by the store's claim exactly as for
// a click on a card (approval.ApproverRule): the requester (default);
// with "chat", anyone in the approval's chat, and the API's chat is the
// tenant (every user of the requester's tenant); with "users", the listed
// "tenant/user" ids (of any tenant); with four eyes (high_needs_other) not
// the requester, who may still reject. Those the rule lets decide see the
// approval in GET /api/approvals (ShowApproval shares its token with the
// tenant or the listed users) and in GET /api/approvals/{id}, and decide it
// with the decision route or its token on /agent/chat. Others get 404 for
// GET and, for a decision, the 403 that names why (family_mismatch,
// user_mismatch, forbidden); their attempt on a pending approval goes
// through the claim, which audits it as unauthorized. Only the requester
// may cancel (withdraw); the others reject.
//
// The decision route binds the decision to what the decider saw:
// payloadSha256 (from GET /api/approvals/{id}) is required to approve
// (400 when missing) and a different one is 409 tampered, as the hash in a
// card's button. A rejection without it rejects the approval as it is. The
// answer is the outcome {status, text, actions, approval}; a turn waiting
// for the approval goes on in the background (its later text is in the
// conversation's history).
//
// # A message
//
// POST /agent/chat {message} becomes a channels.Message (channel "api",
// chat id "<tenant>/<user>/<conversationId>", user id "<tenant>/<user>", a
// fresh message id that is also the response's requestId) handed to the
// router. The request then waits (at most TurnTimeout) for the turn:
//
//   - The API is a channels.TurnListener: it hears the turn's typed events
//     (everything the agent says: notice, tool_result, awaiting, answer,
//     stream_end, turn_ended; and the router's own queued, refused and
//     answers), and the request ends on those events, never on the words.
//     Nothing of a turn comes through Send (what does is said outside a
//     turn, a reminder or an escalation notice, and is dropped: no request
//     waits for it). Everything the agent says comes with
//     Target.ReplyTo set to the message id the turn started from, and an
//     approval's idempotency key starts with that id, so the request
//     listens to its own turn only.
//   - A "tool_result" is an action; turn_ended ends the request (its text
//     is the response's text: the turn's answer, or the notice that ended
//     it when the model failed). A message the router answers itself ends
//     with a turn_ended too, at once: a typed 确认 / 取消 that found the
//     approval ended (within the late-reply window) or lost the race for
//     it ("already decided: Executed", "Declined; nothing was run"; with
//     "status": already_decided, rejected, cancelled, expired…), an
//     approval command, a refusal by the allow-list. queued ends it while
//     the conversation has a pending action (the message waits behind it;
//     the response carries the pending action again); refused answers 429
//     (the conversation's queue is full) or 503 (shutting down). Notices
//     (still working…) are kept and returned if TurnTimeout passes first
//     (with "incomplete": true).
//   - An approval shown in the conversation (ShowApproval) ends the
//     request with requiresConfirmation and pendingAction {token, …}; the
//     turn goes on waiting in the background.
//   - The API is request/response, also when the model streams
//     (model.openai.stream): a TurnListener is not handed the pieces
//     (delta), and the response carries the whole answer; a model that
//     fails mid-stream ends its stream with the error sentence
//     (stream_end), kept as a notice, and its turn_ended carries it.
//
// pendingAction is {token, approvalId, description, toolName, inputPreview,
// risk, expiresAt, isDestructive}; inputPreview is the call's arguments as
// an object, sanitised (values of secret-looking keys and secret-looking
// text redacted, strings cut to 200 runes, arrays to 20 elements), or
// {"calls": [{tool, input}, …]} for a batch approval. An approval decided
// in an approvers' chat (approval.policy.approve_in) adds waitsIn ("the
// approvers' chat"): its requester's token may withdraw it (confirmed:
// false) but not approve it.
//
// # A decision
//
// {confirmationToken, confirmed} decides the pending action: through the
// router's HandleCardAction, as the caller, so the audit trail records the
// source "api". If the caller asked for it and a turn of this process
// waits for the approval, the request then waits for the rest of that turn
// and returns its answer, with the decided calls first among the actions;
// otherwise (another decider, the turn runs on another replica, or died in
// a restart) the outcome is the answer. A typed 确认 / 取消 message in the
// conversation decides it as well (the router recognises it); the request
// then returns the rest of the turn the same way when its decision ended
// the approval, and the router's answer at once otherwise (the approval
// had ended, another decision won, a vote counted towards a quorum).
//
// {confirmationTokens: [...], confirmed} decides up to MaxBatchTokens
// pending actions in one request (the seed's first enhancement), one
// after the other in the order given, each exactly as a single
// confirmation would be. The answer is 200 with "results": one {token,
// status, text, actions} or {token, error, message} per token, in order
// (error and message as a single confirmation would have got them; a
// token listed twice is invalid_request at its second place), "actions":
// all decided calls, and "text" counting the decided ones. A batch that is
// empty, too long, without confirmed or beside confirmationToken is 400.
//
// A cancel or a decision records who took it and through which channel
// (decidedBy, decidedVia "api"); a comment or reason is kept on the record
// and in the audit trail, cleaned (control characters dropped, secrets
// redacted, at most 500 runes).
//
// Tokens are "pa_" + 32 hex digits. They live in a TokenStore shared by
// the replicas (Redis) until TokenRetention after the approval's expiry, so
// a confirmation works on any replica, and a reused token reads the
// approval's state: decided → 404 not_found, expired → 410 expired. The
// store also keeps each user's index of tokens (their own, and those
// shared with them or their tenant): it lists the approvals the caller may
// see and counts the caller's own for the per-user cap (MaxPendingPerUser; a
// message that could open one more gets 429 rate_limited, except in a
// conversation that already has one, where a new approval would replace
// it and a typed 确认 / 取消 must get through). The cap is per replica: a
// message request counts the user's pending approvals plus the user's
// other message requests in flight on this process, and reserves its
// place, in one step; requests in flight on other replicas are not seen.
//
// # Limits
//
// What a turn says after its request stopped waiting (TurnTimeout, a
// message queued behind an approval, a decision taken on another replica)
// is not delivered: the conversation's history keeps it and the model sees
// it on the next message. Tool calls that were refused before they ran
// (invalid arguments) are not reported as actions, because the agent
// does not say them.
package api
