// Package dingtalk is the DingTalk (钉钉) channel: a robot of an internal
// app that hears 1:1 and group messages, answers through the router and
// shows each approval as an interactive card whose buttons decide it.
//
// # The story
//
// A person writes to the robot (in a group: "@bot …"; the mention is
// removed and the text trimmed). The message arrives over the Stream
// connection (default) or, in HTTP mode, as a signed POST to HTTPHandler.
// The channel hands it to the router in the background and answers at
// once (the router de-duplicates by msgId in the shared store and queues
// it for the agent, but may also answer in the chat, which takes time), so
// DingTalk gets its ACK in time and does not deliver it again; Close waits
// for the hand-over. Identity is senderStaffId (the org user id; an
// external member without one gets the encrypted senderId, which no
// approver rule names; see "Platform rules" for their approvals).
//
// In HTTP mode the sign covers only the timestamp, not the body, so each
// (timestamp, sign) pair is accepted once: Config.Marks (the shared
// store) remembers it until it could no longer verify, and a reused pair is 401
// (see HTTPHandler for the trade-off).
//
// Answers go through the message's sessionWebhook while it is valid (90
// minutes; only when its scheme and host are WebhookBaseURL's) and
// otherwise through the robot send API (groupMessages/send or
// oToMessages/batchSend). An errcode in a 200 answer is an error, and so
// are the users batchSend names in its 200 answer as reached by nothing
// (see "Platform rules").
//
// When the agent needs a decision, ShowApproval creates an interactive
// card (POST /v1.0/card/instances/createAndDeliver, callbackType STREAM,
// outTrackId = the approval id) in the group (dtv1.card//IM_GROUP.<cid>)
// or the 1:1 chat (dtv1.card//IM_ROBOT.<staffId>), with the card data of
// cards.DingTalkCardData. A click comes back over the stream with the
// button's params (action, approval_id, payload_sha256); the router
// decides as the clicker (userId: approver rules apply server-side, every
// group member sees the card), and the click is answered in the same round
// trip with the buttons hidden and the outcome (in the words of
// Config.Text), or "processing" when the decision takes longer than
// ClickWait (at most 1.5 s: the answer is due within 2 s). Any update of
// the card meanwhile (its Settle, the decision's own) is held until just
// after the answer. A click that decides nothing (the store unreachable, a clicker
// who may not decide, a malformed or stale click) is answered to the
// clicker alone (userPrivateData) and never hides the others' buttons; if
// it had been answered "processing", the card is put back to pending. When
// the approval ends for any reason, SettleApproval updates the card (PUT
// /v1.0/card/instances).
// With no CardTemplateID, and in HTTP mode (clicks of STREAM cards arrive
// only over a stream; HTTP card callbacks are not implemented), the
// approval is a markdown message that asks to reply "@bot 确认 / @bot 取消"
// in a group or "确认 / 取消" in a 1:1 chat (the typed path).
//
// The chat type and sessionWebhook of a conversation are remembered in
// memory by the replica that received its messages; a conversation this
// process has not seen is taken as a group (1:1 answers then fail over to
// nothing better: they need the message first). A markdown approval keeps
// its chat's type in its ref ("md:g:<id>" / "md:p:<id>"), so settling it
// after a restart, or on another replica, uses the right send API.
//
// Privacy in groups (private.go, channels.PrivateChannel). A private
// approval's whole card is delivered in the group to its recipients only
// (imGroupOpenDeliverModel.recipients, supportForward false, outTrackId
// "<id>-private"), beside the redacted card; what its turn says goes by
// the robot's 1:1 send (oToMessages/batchSend), never the sessionWebhook.
// That recipients hide the card from everyone else is what DingTalk's
// documents say; it is not checked on a live tenant here.
//
// # Platform rules
//
// DingTalk's documented rules this channel keeps, each kept also by the
// fake (dingtalktest, which cites its sources and proves each with a
// table test) and listed in docs/platform-rules.md:
//
//   - createAndDeliver answers HTTP 200 and success true even when a
//     space was not reached; each result.deliverResults[] entry with
//     success false (a group the robot is not in, an unknown staff id) is
//     an error (errNotDelivered): an approval card not delivered to the
//     approvers' chat fails the request with
//     approval.ErrApproversUnreachable, and an AI card not delivered is
//     not streamed into (the answer comes whole).
//   - oToMessages/batchSend answers HTTP 200 with invalidStaffIdList (an
//     error naming them) and flowControlledStaffIdList (sent again twice,
//     backing off, then an error); at most 20 userIds a call, so more go
//     in batches.
//   - a call over a rate limit is refused before it is carried out (HTTP
//     429; 90018 / Forbidden.AccessDenied.QpsLimitForAppkeyAndApi, 90002
//     / QpsLimitForApi, 90019): tried again after Retry-After or 1 s
//     doubling, at most MaxRetries times (throttle.go). The month's call
//     quota (90020 / ApiCountLimitForOrg) is counted as a throttle but
//     not tried again, and nothing else is (a 5xx or a lost answer may
//     have been carried out; the robot send APIs take no idempotency key).
//   - one outTrackId is one card (param.cardAlreadyExist): an AI card
//     takes a new outTrackId on each open.
//   - every cardParamMap value is at most 1 KB: cards.DingTalkCardData and
//     cards.DingTalkOutcomeData cut each value on a rune boundary, ending
//     it with words.DingTalkValueCut (the whole text is on the web page
//     and in the HTTP API); the AI card's text goes whole through the
//     streaming API, never the card data (but for a failed finalising).
//   - a card callback is answered within 2 s and the card is not updated
//     from inside it: ClickWait at most MaxClickWait, card updates held
//     until afterAnswer past the answer (this replica's callbacks only).
//   - an external member has only the encrypted senderId in a message,
//     while a card click carries a userId DingTalk does not match to it:
//     the requester's click would be taken for someone else's (and pass
//     a four-eyes rule). So their approval is a markdown message, decided
//     by a typed reply (which carries the same senderId), and it says so
//     (words.DingTalkExternalRequester). A private approval of an
//     external member in a group still gets its card: not handled here.
//
// # Several replicas
//
// DingTalk gives each push to one of the open connections, but what
// several connections with the same credentials do on reconnect is not
// documented. With Config.Lease = NewRedisLease(rdb, cfg.LeaseKey, cfg.LeaseTTL)
// only the replica holding a lease in Redis (SET NX PX with a random token,
// renewed every TTL/3 by a compare-and-pexpire script, released by a
// compare-and-delete) opens the stream; the others stand by and retry
// every TTL/3. The owner disconnects when the lease is taken by another,
// or when it could not renew it for half a TTL (Redis unreachable), so
// that it has let go before the lease ends. When the owner dies its lease ends after LeaseTTL and
// another replica connects (messages sent in that gap may be lost or
// delivered late). Any replica can send, update cards and serve
// HTTPHandler. Without a lease (the memory store) the channel assumes it is
// alone. The owner checks its connection every LeaseTTL/3 and reports not
// ready while it is down (the SDK reconnects by itself; the check also
// tries, backing off to a minute). A lease TTL that is not positive is
// refused (ErrLeaseTTL from Start): it would never expire.
//
// # Console checklist (open-dev.dingtalk.com)
//
//  1. Create an internal enterprise app (企业内部应用); note its Client ID
//     (AppKey) and Client Secret (AppSecret): client_id, client_secret.
//  2. Add the robot capability (机器人); message receiving mode "Stream 模式"
//     (or "HTTP 模式" with the URL of HTTPHandler, mode: http).
//  3. Permissions: 企业内机器人发送消息 (robot send),
//     互动卡片实例写权限 / Card.Instance.Write and Card.Streaming.Write
//     (card create, deliver and update).
//  4. Publish the app version; add the robot to groups (群设置 → 机器人).
//  5. Outbound network: api.dingtalk.com:443,
//     wss-open-connection.dingtalk.com:443, oapi.dingtalk.com:443.
//
// # The card template
//
// In the card platform (open-dev.dingtalk.com/fe/card) create a message
// card (消息卡片) template for the app and note its id ("xxxx.schema"):
// card_template_id. Variables (all strings): title, summary, preview,
// risk, tool, reason, requester, approvers, expires_at, approval_id,
// payload_sha256, short_hash, status, status_text, decided_by, result,
// final, buttons, markdown. A simple layout: a title, a markdown block
// bound to "markdown", a text bound to status_text, and two buttons
// visible when buttons == "true":
//
//   - 确认 (id confirm), click type 回传请求 (request), params
//     action = "confirm" (constant), approval_id = variable approval_id,
//     payload_sha256 = variable payload_sha256;
//   - 取消 (id cancel), the same with action = "cancel";
//   - for a MEDIUM card that may grant (grant_buttons == "true"), instead
//     of 确认: 仅本次 (id approve_once, params as 确认 plus grant = "once")
//     and 本会话允许 (id approve_session, plus grant = "session"); the
//     window is the variable grant_window. A template without them keeps
//     确认, which allows for the session. The variable code is the
//     approval's short code (确认 <code>, /cancel <code>);
//   - for another agent's card offering a standing rule (always_button
//     == "true"), one more: its text the variable always_text (id
//     approve_always, params as 确认 plus grant = "always").
//
// Saving (保存) is enough; publishing freezes the template. The hash in
// the params is only a cross-check: the stored one is authoritative.
package dingtalk
