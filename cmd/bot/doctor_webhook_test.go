package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/channels/dingtalk/dingtalktest"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
)

// TestDoctorWebhookProbe serves a bot in process with Feishu in webhook
// mode and DingTalk in HTTP mode (against the local fakes), and runs
// `bot doctor` with server.public_url at it: with the server's keys both
// URLs answer (OK); with another encrypt key, another verification token
// or another client secret the bot refuses the probe (FAIL with the fix
// that names them); a public_url where nothing listens is FAIL with the
// fix that names the URL. No secret is printed.
func TestDoctorWebhookProbe(t *testing.T) {
	lark := feishutest.New()
	t.Cleanup(lark.Close)
	ding := dingtalktest.New(t)
	const (
		encryptKey = "feishu-encrypt-key-5be1"
		token      = "feishu-vtoken-77a0"
		secret     = "ding-secret-c3f9"
	)
	env := map[string]string{
		"HITLBOT_CHANNELS_FEISHU_ENABLED":            "true",
		"HITLBOT_CHANNELS_FEISHU_APP_ID":             "cli_doctor",
		"HITLBOT_CHANNELS_FEISHU_APP_SECRET":         "feishu-app-secret-1",
		"HITLBOT_CHANNELS_FEISHU_BASE_URL":           lark.URL,
		"HITLBOT_CHANNELS_FEISHU_MODE":               "webhook",
		"HITLBOT_CHANNELS_FEISHU_ENCRYPT_KEY":        encryptKey,
		"HITLBOT_CHANNELS_FEISHU_VERIFICATION_TOKEN": token,
		"HITLBOT_CHANNELS_DINGTALK_ENABLED":          "true",
		"HITLBOT_CHANNELS_DINGTALK_CLIENT_ID":        "ding-doctor",
		"HITLBOT_CHANNELS_DINGTALK_CLIENT_SECRET":    secret,
		"HITLBOT_CHANNELS_DINGTALK_API_BASE_URL":     ding.URL(),
		"HITLBOT_CHANNELS_DINGTALK_MODE":             "http",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	s := serve(t, "-data", filepath.Join(t.TempDir(), "data"))

	// A proxy that redirects to https, as one in front of the wrong port
	// might: the platforms do not follow it, and neither does doctor.
	redirect := httptest.NewServer(http.RedirectHandler("https://bot.example.com/", http.StatusPermanentRedirect))
	t.Cleanup(redirect.Close)

	cases := []struct {
		name   string
		env    map[string]string
		status int
		want   []string
	}{
		{
			name:   "the served bot answers",
			env:    map[string]string{"HITLBOT_SERVER_PUBLIC_URL": s.base + "/"},
			status: 0,
			want: []string{"webhook   OK", "Feishu: " + s.base + "/webhook/feishu answers the url_verification challenge",
				"DingTalk: " + s.base + "/webhook/dingtalk accepts a request signed with the client secret"},
		},
		{
			name:   "another encrypt key",
			env:    map[string]string{"HITLBOT_SERVER_PUBLIC_URL": s.base, "HITLBOT_CHANNELS_FEISHU_ENCRYPT_KEY": "feishu-encrypt-key-other"},
			status: 1,
			want:   []string{"webhook   FAIL", `answered 401 to the url_verification challenge ("signature verification failed")`, "fix: " + fixFeishuWebhook},
		},
		{
			name:   "another verification token",
			env:    map[string]string{"HITLBOT_SERVER_PUBLIC_URL": s.base, "HITLBOT_CHANNELS_FEISHU_VERIFICATION_TOKEN": "feishu-vtoken-other"},
			status: 1,
			want:   []string{"webhook   FAIL", `("challenge with a wrong verification token")`, "fix: " + fixFeishuWebhook},
		},
		{
			name:   "another client secret",
			env:    map[string]string{"HITLBOT_SERVER_PUBLIC_URL": s.base, "HITLBOT_CHANNELS_DINGTALK_CLIENT_SECRET": "ding-secret-other"},
			status: 1,
			want: []string{"webhook   FAIL", "answers the url_verification challenge", `/webhook/dingtalk answered 401 "bad sign"`,
				"fix: " + fixDingTalkHTTP},
		},
		{
			name:   "a redirect",
			env:    map[string]string{"HITLBOT_SERVER_PUBLIC_URL": redirect.URL},
			status: 1,
			want: []string{"webhook   FAIL", "/webhook/feishu answered 308 (a redirect to https://bot.example.com/, not followed) to the url_verification challenge",
				"/webhook/dingtalk answered 308 (a redirect to https://bot.example.com/, not followed)", "fix: " + fixWebhookReach},
		},
		{
			name:   "nothing listens",
			env:    map[string]string{"HITLBOT_SERVER_PUBLIC_URL": "http://" + closedAddr(t)},
			status: 1,
			want:   []string{"webhook   FAIL", "/webhook/feishu got no answer", "/webhook/dingtalk got no answer", "fix: " + fixWebhookReach},
		},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			st, out, errb := doctorRun(t, tt.env, "")
			line := doctorLine(t, out, "webhook")
			t.Log(line)
			if st != tt.status {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", st, tt.status, out, errb)
			}
			for _, w := range tt.want {
				if !strings.Contains(line, w) {
					t.Errorf("the webhook line lacks %q:\n%s", w, line)
				}
			}
			if strings.Count(line, "fix: ") > 1 {
				t.Errorf("more than one fix: %s", line)
			}
			for _, v := range []string{encryptKey, token, secret, "feishu-encrypt-key-other", "feishu-vtoken-other", "ding-secret-other", "feishu-app-secret-1"} {
				if strings.Contains(out+errb, v) {
					t.Errorf("a secret was printed:\n%s%s", out, errb)
				}
			}
		})
	}
}
