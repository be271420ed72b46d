package dingtalk

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/open-dingtalk/dingtalk-stream-sdk-go/chatbot"
)

// Sign computes DingTalk's HTTP-mode signature of a timestamp (epoch ms, as
// sent): Base64(HMAC-SHA256(secret, timestamp + "\n" + secret)).
func Sign(timestamp, secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp + "\n" + secret))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// verify checks the timestamp and sign headers against now.
func (c *intake) verify(timestamp, sign string, now time.Time) bool {
	ms, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil || sign == "" {
		return false
	}
	age := now.Sub(time.UnixMilli(ms))
	if age > c.cfg.MaxSignAge || age < -c.cfg.MaxSignAge {
		return false
	}
	return hmac.Equal([]byte(sign), []byte(Sign(timestamp, c.cfg.ClientSecret)))
}

// parseBotMessage decodes an HTTP-mode body (the same JSON as a stream
// bot message).
func parseBotMessage(b []byte) (*chatbot.BotCallbackDataModel, error) {
	d := &chatbot.BotCallbackDataModel{}
	if err := json.Unmarshal(b, d); err != nil {
		return nil, err
	}
	return d, nil
}

// signKey names a (timestamp, sign) pair in the store of marks.
func signKey(timestamp, sign string) string {
	sum := sha256.Sum256([]byte(timestamp + "\n" + sign))
	return hex.EncodeToString(sum[:16])
}

// signMark is the key of a (timestamp, sign) pair's mark.
func signMark(timestamp, sign string) string { return "dingtalk:sign:" + signKey(timestamp, sign) }

// freshSign marks a verified (timestamp, sign) pair as used and reports
// whether it was the first use. The mark lasts until the pair could no
// longer verify (its timestamp plus MaxSignAge, which is up to twice
// MaxSignAge from now for a timestamp in the future), plus a second.
func (c *intake) freshSign(ctx context.Context, timestamp, sign string, now time.Time) (bool, error) {
	ms, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return false, err
	}
	ttl := time.UnixMilli(ms).Add(c.cfg.MaxSignAge).Sub(now) + time.Second
	return c.marks.Seen(ctx, signMark(timestamp, sign), ttl)
}

// HTTPHandler serves the HTTP (outgoing robot) mode: DingTalk POSTs each
// bot message with headers timestamp and sign. A bad or stale sign is
// 401; the message is handed to the router and answered 200 at once.
//
// The body is not signed: the sign covers only the timestamp, so whoever
// captures one request could send any body (another sender, "确认") with
// its headers while the timestamp is within MaxSignAge. So each pair is
// accepted once: it is marked in the store of marks (Config.Marks: the
// store the replicas share) until it could no longer verify, and a pair seen
// before is 401. The price: a request DingTalk itself sends again with the
// same headers is refused (its msgId would make it a duplicate anyway),
// and two requests signed in the same millisecond would be one pair (the
// second is refused). A store that cannot be reached refuses the request
// (503): freshness is not assumed. The pair is also the message's event
// id, which the router de-duplicates in its own (shared) store. What a
// fresh pair with a forged body can do is limited by the sessionWebhook
// host check; it still takes a captured request to get one.
//
// The sign is checked before the body is read: a request with a good sign
// and an empty body is 400 "bad body" and delivers nothing, which is how
// `bot doctor` tells that the bot at server.public_url accepts the sign
// (401 "bad sign" when it does not).
func (c *Channel) HTTPHandler() http.Handler { return http.HandlerFunc(c.in.serveHTTP) }

// serveHTTP serves one POST of HTTP mode (HTTPHandler).
func (c *intake) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	now := c.now()
	ts, sign := r.Header.Get("timestamp"), r.Header.Get("sign")
	if !c.verify(ts, sign, now) {
		http.Error(w, "bad sign", http.StatusUnauthorized)
		return
	}
	first, err := c.freshSign(r.Context(), ts, sign, now)
	if err != nil {
		c.log.Error("cannot tell whether the request's sign was used before; refused", "err", err)
		http.Error(w, "temporarily unavailable", http.StatusServiceUnavailable)
		return
	}
	if !first {
		c.log.Warn("a (timestamp, sign) pair used before; refused as a replay", "timestamp", ts)
		http.Error(w, "sign used before", http.StatusUnauthorized)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	d, err := parseBotMessage(body)
	if err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	if err := c.deliver(r.Context(), d, "sign:"+signKey(ts, sign)); err != nil {
		c.log.Error("message not handled", "msg_id", d.MsgId, "err", err)
		// DingTalk delivers a failed request again with the same headers:
		// let that one in (as channels/feishu's webhook does).
		if ferr := c.marks.Forget(context.WithoutCancel(r.Context()), signMark(ts, sign)); ferr != nil {
			c.log.Warn("could not remove the sign mark of a request not handled; DingTalk's redelivery will be refused", "err", ferr)
		}
		http.Error(w, "not handled", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{}`))
}
