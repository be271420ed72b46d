package feishuwire

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	larkevent "github.com/larksuite/oapi-sdk-go/v3/event"
)

// The SDK reads what Encrypt and Sign write: it decrypts the body back to
// the payload and computes the same signature from the headers.
func TestSDKReadsIt(t *testing.T) {
	payload := []byte(`{"challenge":"ch-1","token":"vt","type":"url_verification"}`)
	q := Sign(payload, "ekey", "ekey", time.Unix(1700000000, 0))
	var env struct{ Encrypt string }
	if err := json.Unmarshal(q.Body, &env); err != nil {
		t.Fatal(err)
	}
	plain, err := larkevent.EventDecrypt(env.Encrypt, "ekey")
	if err != nil || string(plain) != string(payload) {
		t.Fatalf("decrypted %q, %v", plain, err)
	}
	req, err := q.HTTPRequest(context.Background(), "http://127.0.0.1/webhook/feishu")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(req.Body)
	h := req.Header
	if h.Get(larkevent.EventRequestTimestamp) != "1700000000" || h.Get(larkevent.EventRequestNonce) == "" ||
		h.Get(larkevent.EventSignature) != larkevent.Signature(h.Get(larkevent.EventRequestTimestamp), h.Get(larkevent.EventRequestNonce), "ekey", string(body)) {
		t.Fatalf("headers %v", h)
	}
	if Sign(payload, "ekey", "ekey", time.Now()).Nonce == q.Nonce {
		t.Fatal("a nonce used twice")
	}
}
