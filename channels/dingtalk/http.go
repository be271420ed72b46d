package dingtalk

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
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
func (c *Channel) verify(timestamp, sign string, now time.Time) bool {
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

// HTTPHandler serves the HTTP (outgoing robot) mode: DingTalk POSTs each
// bot message with headers timestamp and sign. A bad or stale sign is
// 401; the message is handed to the router and answered 200 at once.
// The body is not signed, so a captured sign could be replayed with
// another body within MaxSignAge: de-duplication and the sessionWebhook
// host check limit what that can do.
func (c *Channel) HTTPHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if !c.verify(r.Header.Get("timestamp"), r.Header.Get("sign"), c.now()) {
			http.Error(w, "bad sign", http.StatusUnauthorized)
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
		if err := c.deliver(r.Context(), d); err != nil {
			c.log.Error("message not handled", "msg_id", d.MsgId, "err", err)
			http.Error(w, "not handled", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	})
}
