// Package api is the HTTP API of hitlbot: a channels.Channel named "api"
// whose conversations are HTTP requests, plus endpoints to list, inspect
// and cancel the caller's approvals.
//
// # Wiring (cmd/bot)
//
//	tokens := api.NewRedisTokens(redisClient, "hitl:", nil) // or api.NewMemoryTokens(nil) on one node
//	a, err := api.New(api.Config{Tokens: …, TokenStore: tokens, Audit: auditReader, Clock: engineClock}, engine, logger)
//	_ = router.Register(a)          // before router.Start, which calls a.Start(ctx, router)
//	a.Mount(mux)                    // or mux.Handle("/agent/chat", a.Handler()) and the /api/approvals paths
//
// # Routes
//
//	POST /agent/chat                  {message, conversationId?, confirmationToken?, confirmed?}
//	GET  /api/approvals?state=pending the caller's approvals (state: pending (default), all, or any state name)
//	GET  /api/approvals/{id}          one of them, with its audit trail
//	POST /api/approvals/{id}/cancel   withdraw a pending one
//
// Every request carries "Authorization: Bearer <token>" (Config.Tokens maps
// it to a user and a tenant); with AllowAnonymousLocal, a request without
// the header from a loopback address is the user "local" of tenant
// "local". Errors are JSON {error, message}: invalid_request 400,
// unauthorized 401, user_mismatch / tenant_mismatch / forbidden 403,
// not_found 404, already_decided 409, expired 410, rate_limited 429,
// internal 500, unavailable 503. Clients that know the older name
// family_mismatch should treat it like tenant_mismatch; the server sends
// tenant_mismatch.
//
// # A message
//
// POST /agent/chat {message} becomes a channels.Message (channel "api",
// chat id "<tenant>/<user>/<conversationId>", user id "<tenant>/<user>", a
// fresh message id that is also the response's requestId) handed to the
// router. The request then waits (at most TurnTimeout) for the turn:
//
//   - The router does not tell a channel when a turn ends, so the API reads
//     it from what the turn says through Send. Everything the agent says
//     comes with Target.ReplyTo set to the message id the turn started
//     from, and an approval's idempotency key starts with that id, so the
//     request listens to its own turn only.
//   - A "tool_result" is an action; an "answer" ends the turn (its text is
//     the response's text); a "notice" with IsError ends it too (the model
//     failed, for example). A plain notice ends the request only while the
//     conversation has a pending action: that is the router saying the
//     message was queued behind the approval, and the response carries the
//     pending action again. Other notices (still working…) are kept and
//     returned if TurnTimeout passes first (with "incomplete": true).
//   - An approval shown in the conversation (ShowApproval) ends the
//     request with requiresConfirmation and pendingAction {token, …}; the
//     turn goes on waiting in the background.
//
// # A decision
//
// {confirmationToken, confirmed} decides the pending action: through the
// router's HandleCardAction, as the caller, so the audit trail records the
// source "api". If a turn of this process waits for the approval, the
// request then waits for the rest of that turn and returns its answer,
// with the decided calls first among the actions; otherwise (the turn runs
// on another replica, or died in a restart) the outcome is the answer. A
// typed 确认 / 取消 message in the conversation decides it as well (the
// router recognises it); the request then returns the rest of the turn the
// same way.
//
// Tokens are "pa_" + 32 hex digits. They live in a TokenStore shared by
// the replicas (Redis) until TokenRetention after the approval's expiry, so
// a confirmation works on any replica, and a reused token reads the
// approval's state: decided → 404 not_found, expired → 410 expired. The
// store also keeps each user's index of tokens: it lists the caller's
// approvals and counts them for the per-user cap (MaxPendingPerUser; a
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
