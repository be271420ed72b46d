package feishu

import (
	"context"
	"crypto/aes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	dispatcher "github.com/hitlbot/hitlbot/third_party/larkdispatch"
	larkevent "github.com/larksuite/oapi-sdk-go/v3/event"

	"github.com/hitlbot/hitlbot/internal/clip"
)

// maxWebhookBody bounds a webhook request body.
const maxWebhookBody = 1 << 20

// Reasons a webhook request is refused: the "reason" of the log line (one
// per reason per warnEvery) and the "msg" of the answer.
const (
	reasonTooLarge     = "body too large"
	reasonUnreadable   = "body unreadable"
	reasonEmpty        = "empty body"
	reasonUTF8         = "body is not valid UTF-8"
	reasonJSON         = "body is not a JSON object"
	reasonNoEncrypt    = "no encrypt field"
	reasonBase64       = "encrypt is not base64"
	reasonShort        = "ciphertext shorter than the IV and one block"
	reasonBlocks       = "ciphertext not a whole number of blocks"
	reasonUnsigned     = "no signature"
	reasonSignature    = "signature verification failed"
	reasonTimestamp    = "timestamp missing or not a number"
	reasonStale        = "timestamp outside max_request_age"
	reasonReplay       = "request seen before"
	reasonPlainUTF8    = "event is not valid UTF-8"
	reasonPlainJSON    = "event is not a JSON object"
	reasonDecode       = "event does not decode"
	reasonToken        = "challenge with a wrong verification token"
	reasonStore        = "store unavailable"
	reasonHandler      = "handler failed"
	reasonHandlerPanic = "handler panicked"
)

// WebhookHandler serves Feishu's events and card callbacks in webhook mode
// (mount it at /webhook/feishu, and give that URL both as the event
// request URL and as the callback request URL). In long connection mode,
// or before Start, it answers 503.
//
// Every request, an event or a card callback, is checked before anything
// is decoded, and refused at the first failure:
//
//   - POST only (405 with Allow: POST); at most 1 MiB (413); not empty,
//     valid UTF-8, a JSON object with a base64 "encrypt" field holding an
//     IV and whole AES blocks (400).
//   - Signed: X-Lark-Signature = sha256(timestamp + nonce + encrypt_key +
//     body), compared in constant time (401). Only the encrypt key signs a
//     request, which is why webhook mode requires it.
//   - Fresh: X-Lark-Request-Timestamp (Unix seconds) within
//     MaxRequestAge of now, either way (401).
//   - Once: the (timestamp, nonce, signature) is marked in the store of
//     marks (Config.Marks: the store the replicas share) until the timestamp
//     leaves the bound; one seen before is 401, so a captured request
//     cannot be posted again, to this replica or another. A store that
//     cannot say is 503: freshness is not assumed.
//   - The decrypted event is valid UTF-8 and a JSON object (400), and
//     decodes into its event type (400).
//
// The url_verification challenge (saving the URL in the console) is
// answered when it decrypts with the encrypt key and carries the
// verification token (401 otherwise), signed or not. An event type
// without a handler is acked (200) so Feishu does not retry it; a failure
// of the bot's own (the router refused the message) is 500, so Feishu
// delivers it again, and the mark is removed so that the same request is
// accepted then. Refusals are logged at WARN at most once per reason per
// warnEvery.
func (c *Channel) WebhookHandler() http.Handler {
	return http.HandlerFunc(c.in.serveWebhook)
}

// refusal is a refused request: its status and reason.
type refusal struct {
	status int
	reason string
	err    error // for the log; never secret
}

func refuse(status int, reason string) *refusal { return &refusal{status: status, reason: reason} }

func (c *intake) serveWebhook(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeMsg(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	if c.cfg.Mode != ModeWebhook || c.slot.Handler() == nil {
		writeMsg(w, http.StatusServiceUnavailable, "feishu webhook not enabled")
		return
	}
	status, body, ref := c.webhook(r.Context(), w, r)
	if ref != nil {
		level := slog.LevelWarn
		if ref.status >= 500 {
			level = slog.LevelError
		}
		attrs := []any{"status", ref.status}
		if ref.err != nil {
			attrs = append(attrs, "err", clip.Runes(ref.err.Error(), 200))
		}
		c.warns.log(r.Context(), c.log, level, ref.reason, "feishu webhook request refused", attrs...)
		writeMsg(w, ref.status, ref.reason)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeMsg(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]string{"msg": msg})
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// webhook checks, decrypts and dispatches one request: the status and body
// of the answer, or why it is refused.
func (c *intake) webhook(ctx context.Context, w http.ResponseWriter, r *http.Request) (int, []byte, *refusal) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return 0, nil, refuse(http.StatusRequestEntityTooLarge, reasonTooLarge)
		}
		return 0, nil, refuse(http.StatusBadRequest, reasonUnreadable)
	}
	cipherText, ref := openEnvelope(raw)
	if ref != nil {
		return 0, nil, ref
	}
	ts, nonce, sig := r.Header.Get(larkevent.EventRequestTimestamp), r.Header.Get(larkevent.EventRequestNonce), r.Header.Get(larkevent.EventSignature)
	if ts == "" && nonce == "" && sig == "" {
		// Unsigned: only the url_verification challenge may be.
		plain, ref := c.decrypt(cipherText)
		if ref != nil {
			return 0, nil, ref
		}
		if kind, _ := eventKind(plain); kind.Type != "url_verification" {
			return 0, nil, refuse(http.StatusUnauthorized, reasonUnsigned)
		}
		return c.challenge(plain)
	}
	if sig == "" {
		return 0, nil, refuse(http.StatusUnauthorized, reasonUnsigned)
	}
	want := larkevent.Signature(ts, nonce, c.cfg.EncryptKey, string(raw))
	if subtle.ConstantTimeCompare([]byte(sig), []byte(want)) != 1 {
		return 0, nil, refuse(http.StatusUnauthorized, reasonSignature)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return 0, nil, refuse(http.StatusUnauthorized, reasonTimestamp)
	}
	now := c.now()
	signedAt := time.Unix(sec, 0)
	if age := now.Sub(signedAt); age > c.cfg.MaxRequestAge || age < -c.cfg.MaxRequestAge {
		return 0, nil, &refusal{status: http.StatusUnauthorized, reason: reasonStale,
			err: fmt.Errorf("signed %s from now; max_request_age %v", age.Round(time.Second), c.cfg.MaxRequestAge)}
	}
	plain, ref := c.decrypt(cipherText)
	if ref != nil {
		return 0, nil, ref
	}
	kind, ref := eventKind(plain)
	if ref != nil {
		return 0, nil, ref
	}
	// Marked only once signed and fresh: an outsider cannot fill the
	// store. The mark lasts until the timestamp leaves the bound (up to
	// twice MaxRequestAge from now for one in the future), plus a second.
	key := "feishu:req:" + requestKey(ts, nonce, sig)
	first, err := c.marks.Seen(ctx, key, signedAt.Add(c.cfg.MaxRequestAge).Sub(now)+time.Second)
	if err != nil {
		return 0, nil, &refusal{status: http.StatusServiceUnavailable, reason: reasonStore, err: err}
	}
	if !first {
		return 0, nil, refuse(http.StatusUnauthorized, reasonReplay)
	}
	if kind.Type == "url_verification" {
		return c.challenge(plain)
	}
	status, body, ref := c.dispatch(ctx, plain)
	if ref != nil && ref.status >= 500 {
		// Feishu delivers a failed request again: let the same one in.
		if err := c.marks.Forget(context.WithoutCancel(ctx), key); err != nil {
			c.log.Warn("could not remove the mark of a failed webhook request; Feishu's retry with the same headers will be refused", "err", err)
		}
	}
	return status, body, ref
}

// openEnvelope checks the body and returns the decoded ciphertext (IV
// first).
func openEnvelope(raw []byte) ([]byte, *refusal) {
	if len(raw) == 0 {
		return nil, refuse(http.StatusBadRequest, reasonEmpty)
	}
	if !utf8.Valid(raw) {
		return nil, refuse(http.StatusBadRequest, reasonUTF8)
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(raw, &env); err != nil || env == nil {
		return nil, refuse(http.StatusBadRequest, reasonJSON)
	}
	var enc string
	if f, ok := env["encrypt"]; !ok || json.Unmarshal(f, &enc) != nil || enc == "" {
		return nil, refuse(http.StatusBadRequest, reasonNoEncrypt)
	}
	data, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, refuse(http.StatusBadRequest, reasonBase64)
	}
	if len(data) < 2*aes.BlockSize {
		return nil, refuse(http.StatusBadRequest, reasonShort)
	}
	if len(data)%aes.BlockSize != 0 {
		return nil, refuse(http.StatusBadRequest, reasonBlocks)
	}
	return data, nil
}

// decrypt decrypts a checked ciphertext as the SDK does (AES-256-CBC, key
// sha256(encrypt_key), the IV first; the event is the text from the first
// "{" to the last "}", which drops the padding) and checks that the
// result is valid UTF-8.
func (c *intake) decrypt(data []byte) ([]byte, *refusal) {
	plain, err := larkevent.EventDecrypt(base64.StdEncoding.EncodeToString(data), c.cfg.EncryptKey)
	if err != nil {
		return nil, &refusal{status: http.StatusBadRequest, reason: reasonPlainJSON, err: err}
	}
	if !utf8.Valid(plain) {
		return nil, refuse(http.StatusBadRequest, reasonPlainUTF8)
	}
	return plain, nil
}

// eventKind reads the type of a decrypted request: "url_verification"
// or an event's header.
type requestKind struct {
	Type      string `json:"type"`
	Token     string `json:"token"`
	Challenge string `json:"challenge"`
	Header    *struct {
		EventType string `json:"event_type"`
	} `json:"header"`
}

func eventKind(plain []byte) (requestKind, *refusal) {
	var k requestKind
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(plain, &obj); err != nil || obj == nil {
		return k, refuse(http.StatusBadRequest, reasonPlainJSON)
	}
	if err := json.Unmarshal(plain, &k); err != nil {
		return k, &refusal{status: http.StatusBadRequest, reason: reasonDecode, err: err}
	}
	return k, nil
}

// challenge answers url_verification.
func (c *intake) challenge(plain []byte) (int, []byte, *refusal) {
	k, ref := eventKind(plain)
	if ref != nil {
		return 0, nil, ref
	}
	if subtle.ConstantTimeCompare([]byte(k.Token), []byte(c.cfg.VerificationToken)) != 1 {
		return 0, nil, refuse(http.StatusUnauthorized, reasonToken)
	}
	b, err := json.Marshal(map[string]string{"challenge": k.Challenge})
	if err != nil {
		return 0, nil, &refusal{status: http.StatusInternalServerError, reason: reasonHandler, err: err}
	}
	c.log.Info("feishu url_verification answered")
	return http.StatusOK, b, nil
}

// dispatch runs a checked event through the SDK's dispatcher (its Do, as
// the long connection does: no second decryption or signature check).
func (c *intake) dispatch(ctx context.Context, plain []byte) (status int, body []byte, ref *refusal) {
	defer func() {
		if p := recover(); p != nil {
			status, body = 0, nil
			ref = &refusal{status: http.StatusInternalServerError, reason: reasonHandlerPanic, err: fmt.Errorf("%v", p)}
		}
	}()
	resp, err := sdkDispatcher.Do(withIntake(ctx, c), plain)
	if err != nil {
		if _, ok := errors.AsType[*dispatcher.NotFoundEventHandlerErr](err); ok {
			c.log.Debug("feishu event type without a handler acked", "err", err)
			b, _ := json.Marshal(map[string]string{"msg": "event type not handled"})
			return http.StatusOK, b, nil
		}
		if _, ok := errors.AsType[handlerError](err); ok {
			return 0, nil, &refusal{status: http.StatusInternalServerError, reason: reasonHandler, err: err}
		}
		// Anything else is the payload not decoding into its event type.
		return 0, nil, &refusal{status: http.StatusBadRequest, reason: reasonDecode, err: err}
	}
	if resp == nil {
		return http.StatusOK, []byte(`{"msg":"success"}`), nil
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return 0, nil, &refusal{status: http.StatusInternalServerError, reason: reasonHandler, err: err}
	}
	return http.StatusOK, b, nil
}

// requestKey names a (timestamp, nonce, signature) in the store of marks.
func requestKey(ts, nonce, sig string) string {
	sum := sha256.Sum256([]byte(ts + "\n" + nonce + "\n" + sig))
	return hex.EncodeToString(sum[:16])
}
