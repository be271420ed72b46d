package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
)

// The whole server with the Feishu channel in webhook mode: a wrong method
// on /webhook/feishu is 405 with Allow (not the web chat's 404), a signed
// event is served once and the same request again is 401, a body that is
// not valid UTF-8 is 400, and the log holds only JSON lines, none of them
// an ERROR.
func TestServeFeishuWebhook(t *testing.T) {
	fake := feishutest.New()
	t.Cleanup(fake.Close)
	for k, v := range map[string]string{
		"HITLBOT_CHANNELS_FEISHU_ENABLED":            "true",
		"HITLBOT_CHANNELS_FEISHU_APP_ID":             "cli_servewebhook",
		"HITLBOT_CHANNELS_FEISHU_APP_SECRET":         "s3cret-not-logged",
		"HITLBOT_CHANNELS_FEISHU_BASE_URL":           fake.URL,
		"HITLBOT_CHANNELS_FEISHU_MODE":               "webhook",
		"HITLBOT_CHANNELS_FEISHU_ENCRYPT_KEY":        "ekey-not-logged",
		"HITLBOT_CHANNELS_FEISHU_VERIFICATION_TOKEN": "vtoken",
	} {
		t.Setenv(k, v)
	}
	s := serve(t, "-data", filepath.Join(t.TempDir(), "data"))
	url := s.base + "/webhook/feishu"

	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		req, _ := http.NewRequest(m, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != http.MethodPost {
			t.Errorf("%s /webhook/feishu answered %d, Allow %q; want 405 with Allow: POST", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}

	ev := feishutest.MessageEvent{EventID: "ev-w1", MessageID: "om_w1", ChatID: "oc_w1", ChatType: "p2p", Sender: "ou_alice", Text: "hello"}
	q := feishutest.Sign(ev.JSON(), "ekey-not-logged", "ekey-not-logged", time.Now())
	if resp, body, err := q.Post(url); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("signed event: %v %s %v", resp, body, err)
	}
	if resp, body, err := q.Post(url); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the same request again: %v %s %v; want 401", resp, body, err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader([]byte("{\"encrypt\":\"\xff\xfe\"}")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("invalid UTF-8 answered %d, want 400", resp.StatusCode)
	}

	log := s.stderr.String()
	for _, secret := range []string{"s3cret-not-logged", "ekey-not-logged"} {
		if strings.Contains(log, secret) {
			t.Errorf("a secret reached the log")
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("a log line is not JSON: %q", line)
			continue
		}
		if m["level"] == "ERROR" {
			t.Errorf("an ERROR line: %s", line)
		}
	}
}
