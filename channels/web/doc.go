// Package web is the web chat channel (name "web"): a WebSocket at /ws and
// a page at / (embedded; plain HTML, CSS and JavaScript, no build step and
// no external resources).
//
// # Mounting
//
// New builds the channel; Handler returns the http.Handler that serves
// "/" (the page), "/app.js", "/style.css" and "/ws". cmd/bot mounts it on
// its mux at "/" (more specific routes such as /api/ or /healthz win), or
// under a prefix with http.StripPrefix: the page only uses relative URLs.
// Start (called by channels.Router.Start) hands the channel its Handler;
// before Start and after Close the socket answers 503.
//
// # Identity
//
// The WebSocket upgrade request carries a bearer token, as the query
// parameter ?token= (browsers cannot set headers on a WebSocket) or as
// "Authorization: Bearer <token>". Config.Tokens maps a token to a user
// (and tenant). With no token, Config.AllowAnonymousLocal admits a request
// from a loopback address as the single user "local" (zero-config); every
// other request gets 401. Behind a reverse proxy on the same host every
// request looks local: configure tokens there. The page reads ?token= from
// its own address and passes it on.
//
// Origin check: a request with an Origin header is accepted only when the
// Origin's host:port equals the request's Host (same host only); a request
// without Origin (not a browser) is accepted. Cross-site pages can thus not
// drive a logged-in user's chat.
//
// # Sessions
//
// session_id is chosen by the client: 1 to 64 characters of [A-Za-z0-9_-].
// The chat id is "<user>/<session_id>", so a user can only ever join their
// own sessions; the same session_id of another user is another chat.
// Several sockets (tabs) may watch one session: everything is sent to all
// of them. What is said while no socket watches a session is kept (up to 50
// messages, 10 minutes) and delivered when one joins.
//
// # Protocol
//
// Every frame is one JSON object whose kind is in "type"; the other fields
// sit beside it (flat, no "data" envelope). Unknown fields are ignored.
// Timestamps are RFC 3339 (UTC, milliseconds).
//
// The seed protocol (the WebSocket confirmation protocol hitlbot was built
// from) names a frame's kind "event" instead: the server accepts a client
// frame with "type", with "event", or with both when they are equal (two
// different kinds are INVALID_MESSAGE), and every server frame carries
// both, with the same value. A client written from the seed document
// works unchanged: it sends
//
//	{"event":"user.message","session_id":"sess_abc123","timestamp":"2024-01-01T12:00:00.000Z","content":"删除重要文件"}
//	{"session_id":"sess_abc123","event":"user.response","step_id":"confirm_ap_…_delete_file","timestamp":"…",
//	 "content":{"confirmed":true,"message":"确认删除文件"}}
//
// (a client "timestamp" is ignored: a message's time is when the server
// received it) and reads agent.user_confirm and agent.tool_result by their
// "event", and errors as {"error":"INVALID_STEP_ID","message":"…"}. It
// needs no hello: a user.message joins its session. The seed's batch
// confirmation answers several confirmations with one user.response each,
// sent back to back; each is decided on its own. The seed's client-side
// timeout sends confirmed:false with a message, a rejection like any other.
//
// A frame that is not valid UTF-8 is refused (INVALID_MESSAGE) before it
// is decoded: nothing in it is decided or said.
//
// Client → server:
//
//	{"type":"hello","session_id":"s1"}
//
// Joins (watches) a session. The server answers with "hello" and then
// re-sends agent.user_confirm for the session's pending approval, if any:
// after a reconnect, pending confirmations come back. The client should
// forget its open confirmations on "hello" and trust the re-sent ones.
//
//	{"type":"user.message","session_id":"s1","content":"清理已取消的订单","message_id":"c-17"}
//
// A chat message (also joins the session). message_id is optional (1–64
// of [A-Za-z0-9_-]); a message re-sent with the same id is handled once.
// A typed 确认 / 取消 while a confirmation is pending decides it, exactly
// as the buttons do.
//
//	{"type":"user.response","session_id":"s1","step_id":"confirm_6f1c…_sql_exec","content":{"confirmed":true,"message":"checked the rows"}}
//
// Answers a confirmation: confirmed true runs the action, false declines
// it; message is an optional comment recorded with the decision (with
// false: the reason of the rejection).
//
// Server → client:
//
//	{"type":"hello","event":"hello","session_id":"s1","user":"alice","timestamp":"…"}
//
//	{"type":"agent.message","event":"agent.message","session_id":"s1","kind":"answer","content":"已删除 37 行。","reply_to":"alice/s1/c-17","is_error":false,"timestamp":"2026-11-22T09:00:01.250Z"}
//
// kind is "answer" (the assistant's reply) or "notice" (progress, a
// problem, the outcome of a typed decision, "an approval is waiting").
//
//	{"type":"agent.delta","event":"agent.delta","session_id":"s1","stream_id":"st_9f2c…","content":"已删除 ","reply_to":"alice/s1/c-17","timestamp":"…"}
//
// A piece of an answer the model is still writing (a model that streams:
// model.openai.stream). The pieces of one stream_id, in order, make one
// growing message; they go only to the sockets watching the session at
// that moment (a socket that joins later gets the end). The stream ends
// with an agent.message carrying the same stream_id and the whole text: kind
// "answer" (also for the text the model wrote before asking for an
// approval: the agent.user_confirm comes after it), or kind "notice" with
// is_error true when the model failed mid-stream (the text so far, then the
// error sentence). A client that does not know agent.delta (the seed's)
// ignores it and reads that agent.message as before.
//
//	{"type":"agent.user_confirm","event":"agent.user_confirm","session_id":"s1",
//	 "step_id":"confirm_ap_0123abcd_6f1c2a9e0b7d4c1e9a552f8d3e4b5c6a_sql_exec","timestamp":"2026-11-22T09:00:00.500Z",
//	 "content":"[HIGH] Approval needed: sql_exec\n…",
//	 "metadata":{"tool_name":"sql_exec","tool_description":"Run a SQL statement on a configured database",
//	   "tool_args":{"database":"demo","sql":"DELETE FROM orders WHERE status = 'cancelled'"},
//	   "requires_confirmation":true,"risk":"HIGH","expires_at":"2026-11-22T09:05:00Z",
//	   "payload_sha256":"687bf776…","approval_id":"ap_0123abcd_…","summary":"…","preview":"…",
//	   "reason":"destructive statement","requester":"alice","approvers":"only the person who asked"},
//	 "card":{…cards.WebJSON of the view…}}
//
// A confirmation to show. step_id is "confirm_<approval id>_<tool>", the
// seed's confirm_{id}_{tool_name} with the approval's id (metadata
// approval_id) as the id: one approval is one step, with the same id on
// every showing, after a reconnect, on another replica and after a
// restart, and an answer to it is taken as long as the approval is the
// session's pending one (tool is "batch" for several calls; then tool_args
// is an array of {"tool","args"}). content is the card as plain text, for
// clients that only print.
//
//	{"type":"agent.tool_result","event":"agent.tool_result","session_id":"s1","step_id":"confirm_ap_…_sql_exec",
//	 "tool_name":"sql_exec","tool_args":{…},"content":"DELETE 37","is_error":false,"timestamp":"…",
//	 "metadata":{"tool_name":"sql_exec","tool_args":{…},"is_error":false}}
//
// A tool ran. step_id names the confirmation the call was approved in
// (each call of a batch gets its own frame with the batch's step); it is
// absent for a call that needed no confirmation.
//
//	{"type":"agent.confirm_resolved","event":"agent.confirm_resolved","session_id":"s1","step_id":"confirm_ap_…_sql_exec",
//	 "content":"Executed","status":"executed","status_text":"Executed","decided_by":"alice","result":"DELETE 37","timestamp":"…"}
//
// The confirmation ended, whoever decided it (a button, a typed reply, the
// expiry, a newer request): status is one of executed, replayed, rejected,
// failed, frozen, expired, superseded, cancelled.
//
//	{"type":"error","event":"error","code":"ALREADY_DECIDED","error":"ALREADY_DECIDED","message":"This approval has already been decided.",
//	 "session_id":"s1","step_id":"confirm_ap_…_sql_exec","timestamp":"…"}
//
// error repeats code under the seed's name for it.
//
// Error codes:
//
//   - INVALID_MESSAGE: not UTF-8, not JSON, an unknown type or event, a
//     type and an event that differ, a bad session_id or message_id, an
//     empty or oversized message.
//   - INVALID_STEP_ID: no such step in this session (unknown, of another
//     user, or whose approval is no longer the session's pending one).
//   - ALREADY_DECIDED: the step was answered already (a second response,
//     another tab, a typed reply); nothing runs a second time.
//   - EXPIRED: the approval expired before the response; nothing ran.
//   - UNAUTHORIZED: this user may not decide this approval (e.g. four eyes).
//   - UNAVAILABLE: the approval store cannot be reached; nothing ran, the
//     step can be answered again.
//
// A frame larger than Config.MaxMessageBytes closes the socket (close code
// 1009); the page reconnects. /ws answers GET only (405 with "Allow: GET"
// otherwise); the page and its assets answer GET and HEAD.
//
// # Replicas
//
// Sockets live on one replica. A decision taken elsewhere (a replica that
// got the API call) settles the cards through its own web channel, which
// has no socket for the chat: the page learns the outcome on its next
// hello (the confirmation is no longer re-sent). An answer to a step sent
// to a replica that did not show it is still taken (the step id names the
// approval). Use sticky sessions for the web chat when running several
// replicas.
package web
