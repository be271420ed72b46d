// Package feishu is the Feishu (飞书 / Lark) channel: people chat with the
// bot in a 1:1 chat or a group, get an approval card (card JSON 2.0) when
// the agent wants to run a risky tool, and decide it with the card's
// 确认 / 取消 buttons or by typing "@bot 确认".
//
// # The story
//
// Receiving. Events come either over the SDK's long connection (mode
// long_connection, the default: no public address, the app dials out) or
// as HTTP POSTs on WebhookHandler (mode webhook, mounted at
// /webhook/feishu; it refuses to start without an encrypt key, because
// only the encrypt key signs a request). One event dispatcher serves both.
// The webhook checks each request itself before the dispatcher sees it
// (see WebhookHandler): the signature, a timestamp within MaxRequestAge,
// and that the (timestamp, nonce, signature) was not seen before, in the
// store the replicas share (Config.Marks), so a captured request cannot be
// posted again; a malformed body is 400, an unsigned, stale or replayed
// one 401, logged as WARN at most once per reason per warnEvery.
//
// im.message.receive_v1 (p2p and group): the sender is identified by
// open_id; in a group the bot acts only when mentioned (its @_user_N
// placeholder is stripped, other mentions become @name); the event id, the
// message id, the message's create_time and its thread id go into a
// channels.Message, which is handed to the router (it de-duplicates in the
// shared store, drops old backlogs, reads typed 确认 / 取消 and queues the
// rest for the agent). The handler acks at once: it waits at most 2 s for
// the router (whose own work is a store lookup and a queue push) and never
// for the model or a tool.
//
// card.action.trigger (over either transport): the button value is an
// object {kind, approval_id, decision, payload_sha256}; a malformed value
// gets an error toast and decides nothing. The buttons submit the card's
// form, so the click also carries action.form_value: the optional reason
// typed on the card (cards.FeishuReasonField), trimmed, becomes the
// decision's comment on either button (the engine cleans and cuts it, and
// records it; the answered card shows it as the settled card will). A
// click without a form (a card sent before forms) decides with no
// comment. The click goes to the router
// and the engine as the clicker's open_id; the handler waits up to
// CallbackWait (2.5 s, inside Feishu's 3 s) and answers with a toast and
// the card's next state: the final card if the outcome arrived, else a
// "processing" card. Someone who may not decide gets a toast saying who
// may, and the card is unchanged. Whenever an approval ends (a click, a
// typed reply, another replica, expiry) the engine settles it and the
// channel PATCHes the card to its final state; if a "processing" answer
// was just given the patch is repeated shortly after, so a late-applied
// answer cannot leave the card in "processing".
//
// Sending. Replies go in reply to the user's message (in its thread when
// it has one), new messages and cards to the chat; content is built with
// json.Marshal; each create / reply carries a uuid (Feishu's 1 h
// idempotency key) derived from the message answered and the text, or
// from the approval id for a card. API failures are read from the
// response code (APIError), not only from Go errors; HTTP 429 / code
// 99991400 is retried after x-ogw-ratelimit-reset seconds (bounded by
// MaxRetryWait, at most MaxRetries times), as are 5xx answers and
// transport errors. Every request has a timeout (RequestTimeout).
//
// Health. Ready reports the long connection as connected or not, from the
// SDK's OnReady / OnReconnected / OnDisconnected callbacks. The SDK
// (v3.12) reconnects by itself, and its read deadline (2 × ping interval +
// 5 s) catches a silently dropped, half-open connection (tested against
// the fake). When the SDK gives up (a server-sent reconnect count ran out,
// or a terminal error after it had connected) a supervisor starts a new
// client with a growing pause.
//
// Cluster. With several replicas Feishu gives each event to one random
// long connection and may re-deliver it to another, so de-duplication
// and approval state live in the shared store (the router's and the
// engine's job). A click on a card another replica sent (or sent before
// a restart) is answered like any other: the channel reads the
// approval's pending view from the Presenter (Config.Views) before
// deciding, so the answer carries the processing or final card
// and a refused clicker is told who may approve. A developer laptop running production credentials steals
// a share of events: use a separate app for development.
//
// Privacy in groups (private.go, channels.PrivateChannel). A private
// approval's whole card goes to each person who may see it in their 1:1
// chat with the bot (im/v1/messages, receive_id_type open_id), and its
// turn's answer likewise; the group gets the redacted card. Ephemeral
// cards ("仅特定人可见") are not used: they cannot be patched to a final
// state, are seen only while their person is online and notify nobody.
//
// # Console checklist (开发者后台, for docs/feishu.md)
//
//  1. Create a custom app (企业自建应用) and enable the bot capability
//     (添加应用能力 → 机器人).
//  2. Credentials (凭证与基础信息): App ID → app_id; App Secret →
//     app_secret (a secret: environment or *_file only).
//  3. Permissions (权限管理), then publish a version:
//     im:message (获取与发送单聊、群组消息),
//     im:message:send_as_bot (以应用的身份发消息),
//     im:message.p2p_msg:readonly (读取用户发给机器人的单聊消息),
//     im:message.group_at_msg:readonly (接收群聊中@机器人消息事件).
//     Do not grant im:message.group_msg (all group messages) unless
//     needed: the bot only acts on mentions anyway.
//  4. Events (事件与回调 → 事件配置): subscription mode 使用长连接接收事件
//     (long_connection) or 将事件发送至开发者服务器 with request URL
//     https://<host>/webhook/feishu (webhook); add the event
//     im.message.receive_v1 (接收消息).
//  5. Callbacks (事件与回调 → 回调配置): the same mode; add
//     card.action.trigger (卡片回传交互). Without it clicks fail with
//     error 200340.
//  6. Webhook mode only (加密策略): set an Encrypt Key → encrypt_key and
//     copy the Verification Token → verification_token (both secrets).
//  7. Add the bot to the groups where it should work; members talk to it
//     with @bot. Clients older than 7.20 cannot show card JSON 2.0.
//
// # Wiring
//
//	fs, err := feishu.New(feishu.Config{AppID: …, AppSecret: …, Marks: store}, logger) // store: the approval store the replicas share
//	_ = registry.Register(fs) // the channels.Registry channels.Assemble made
//	if cfg.Mode == feishu.ModeWebhook { mux.Handle("/webhook/feishu", fs.WebhookHandler()) }
//	_ = router.Start(ctx) // starts fs with the router as its Handler
//
// Tests run the real SDK against feishutest, a local fake of the OpenAPI,
// the long-connection gateway and signed, encrypted webhook posts.
package feishu
