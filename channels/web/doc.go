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
// # The page
//
// index.html is a template filled in once, at New, in Config.Lang: its
// labels, and in data attributes (JSON, no inline script) the sentences
// app.js says itself and Config.Greeting, all from package words. The
// page greets with what the bot can do and example requests (buttons that
// fill the input). The dialog shows first what will happen (the preview),
// then the risk and why, what the tool does for its approver, who asked
// and until when (in the reader's time zone), and the details (tool,
// arguments, who may approve, payload hash) folded. A HIGH dialog opens
// with the focus on 取消 and Enter never approves it; Tab stays in the
// dialog. A tool's result is shown once: the agent's answer after it says
// it, and the result itself is a closed disclosure in the bubble of its
// confirmation's outcome (or its own bubble for a call that needed none).
// At phone width (≤ 640 px) the dialog is full width and the side panel
// of pending confirmations folds under a header button. The log is an
// aria-live region; who wrote a message is said in words for screen
// readers, never by a glyph alone.
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
// A batch (one confirmation of several calls; its card lists them under
// "calls", each with a "call_id") may be decided call by call: a
// user.response with confirmed true and "calls":{"<call_id>":"approve"|
// "reject", …} naming every call once runs the approved calls and declines
// the others (see approval.Decision.Calls). calls with confirmed false, a
// value other than approve or reject, or a call missing or unknown is
// INVALID_MESSAGE and leaves the confirmation open.
//
// Edit before approve: a user.response with confirmed true and
// "edits":{"<call key>":{…new arguments…}} ("#1" for a confirmation of one
// call, else the card's call_id) approves the changed arguments in one step
// (approval.Decision.Edits: checked against the tool's schema, assessed
// again, the approval bound to their hash). Malformed edits, or arguments
// the tool refuses, are INVALID_MESSAGE ("the edited arguments were
// refused; …: <why>") and leave the confirmation open. The page prefills
// the arguments in a text area under the dialog's "修改参数后确认".
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
// On a MEDIUM confirmation that may grant the conversation a window (its
// card has approve_once and grant_window), confirmed true may carry
// "grant": "once" (仅本次: run it this time) or "session" (本会话允许:
// also allow the same request for the window); without grant it is
// session, as a typed 确认. Another grant, or a grant with confirmed
// false, is INVALID_MESSAGE. The card also carries the approval's code
// (确认 <code>, /cancel <code>).
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
//	   "reason":"destructive statement","requester":"alice","approvers":"only the person who asked",
//	   "about":"Changes data or tables in a SQL database and commits the change.","risk_text":"HIGH risk",
//	   "short_hash":"687bf776a9a8"},
//	 "card":{…cards.WebJSON of the view…}}
//
// A confirmation to show. step_id is "confirm_<approval id>_<tool>", the
// seed's confirm_{id}_{tool_name} with the approval's id (metadata
// approval_id) as the id: one approval is one step, with the same id on
// every showing, after a reconnect, on another replica and after a
// restart, and an answer to it is taken as long as the approval is the
// session's pending one (tool is "batch" for several calls; then tool_args
// is an array of {"tool","args"}). content is the card as plain text, for
// clients that only print. Everything a person reads in metadata is in the
// channel's language: summary and preview (the tool's preview, "… —
// affects 7 rows in demo" / "… — 影响 demo 中的 7 行"), reason, approvers,
// risk_text, and about, what the call does written for its approver;
// tool_description is about, or for a tool that says nothing for its
// approver its own description. risk stays the level (LOW, MEDIUM, HIGH).
// While the approval waits, the same step is sent again (same step_id)
// when metadata.progress (a quorum's votes: "1/2 approved: bob") or
// metadata.escalated (a timed escalation's line) changes: a client
// updates the step it shows, keeping what its person is typing.
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
// A frozen confirmation (its effect unknown) carries its three resolve
// choices and what they do, in the channel's language:
//
//	{"type":"agent.confirm_resolved",…,"status":"frozen","status_text":"The result is unknown; …",
//	 "resolve":[{"resolution":"done","label":"Done"},{"resolution":"retry","label":"Retry"},{"resolution":"abandon","label":"Abandon"}],
//	 "resolve_how":"Check by hand, then: …"}
//
// The page answers one with user.response on the same step, content
// {"resolution":"done"|"retry"|"abandon","message":"<note>"}; the step is
// resolved again (a new confirm_resolved with "resolution" set: the retry's
// status, or executed / failed for done / abandon). A resolution of a step
// that is not frozen, or lost to another one, is ALREADY_DECIDED; an unknown
// resolution INVALID_MESSAGE.
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
//   - AWAITING_QUORUM: the approve counted towards a quorum not reached
//     yet (or had counted before); the message says the progress ("1/2
//     approved: alice"). Nothing ran; the step stays open for the other
//     approvers, and for a reject.
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
