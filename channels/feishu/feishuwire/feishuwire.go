// Package feishuwire builds webhook requests as Feishu sends them: the
// payload encrypted with the app's encrypt key into {"encrypt":"…"}, and
// the X-Lark-Request-Timestamp, X-Lark-Request-Nonce and X-Lark-Signature
// headers. `bot doctor` posts Feishu's url_verification challenge with it,
// and the test fake feishutest posts events with it: one encoder for both.
// It imports nothing of hitlbot, so that both may import it.
package feishuwire

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	larkevent "github.com/larksuite/oapi-sdk-go/v3/event"
)

// Encrypt encrypts a payload as Feishu does (AES-256-CBC, key
// sha256(encryptKey), a random IV prepended, PKCS#7) and returns the
// webhook body {"encrypt":"…"}.
func Encrypt(payload []byte, encryptKey string) []byte {
	key := sha256.Sum256([]byte(encryptKey))
	block, _ := aes.NewCipher(key[:]) // a 32-byte key: never an error
	pad := aes.BlockSize - len(payload)%aes.BlockSize
	plain := append(append([]byte(nil), payload...), bytes.Repeat([]byte{byte(pad)}, pad)...)
	out := make([]byte, aes.BlockSize+len(plain))
	_, _ = rand.Read(out[:aes.BlockSize])
	cipher.NewCBCEncrypter(block, out[:aes.BlockSize]).CryptBlocks(out[aes.BlockSize:], plain)
	b, _ := json.Marshal(map[string]string{"encrypt": base64.StdEncoding.EncodeToString(out)})
	return b
}

// Request is a webhook request as Feishu sends it: the body and the
// three X-Lark-* headers (an empty one is not sent).
type Request struct {
	Body      []byte
	Timestamp string // X-Lark-Request-Timestamp: Unix seconds
	Nonce     string // X-Lark-Request-Nonce
	Signature string // X-Lark-Signature
}

var nonceSeq atomic.Int64

// Sign builds the request Feishu would send for payload at time at:
// encrypted with encryptKey and signed with signKey (the same key for a
// genuine request; another one forges the signature), with a nonce used
// once.
func Sign(payload []byte, encryptKey, signKey string, at time.Time) Request {
	body := Encrypt(payload, encryptKey)
	ts := strconv.FormatInt(at.Unix(), 10)
	var r [6]byte
	_, _ = rand.Read(r[:])
	nonce := "nonce-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.FormatInt(nonceSeq.Add(1), 10) + "-" + base64.RawURLEncoding.EncodeToString(r[:])
	return Request{Body: body, Timestamp: ts, Nonce: nonce, Signature: larkevent.Signature(ts, nonce, signKey, string(body))}
}

// HTTPRequest is q as a POST to url.
func (q Request) HTTPRequest(ctx context.Context, url string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(q.Body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if q.Timestamp != "" {
		req.Header.Set(larkevent.EventRequestTimestamp, q.Timestamp)
	}
	if q.Nonce != "" {
		req.Header.Set(larkevent.EventRequestNonce, q.Nonce)
	}
	if q.Signature != "" {
		req.Header.Set(larkevent.EventSignature, q.Signature)
	}
	return req, nil
}
