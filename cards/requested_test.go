package cards_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
)

// TestRequestedLine: a pending card says who asked and until when, in the
// configured zone (with the date when the expiry is on another day than
// the request); a Feishu card mentions a Feishu requester so the client
// shows the name, and puts nothing else in a mention; a name the platform
// gave is shown instead of the id.
func TestRequestedLine(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	text := approval.DefaultOutcomeText("zh")
	for _, tc := range []struct {
		name          string
		requester     approval.UserID
		requesterName string
		zone          *time.Location
		life          time.Duration
		md, feishu    string
	}{
		{"utc", "alice", "", nil, 5 * time.Minute, "由 alice 发起 · 09:05 UTC 前有效", `"由 alice 发起 · 09:05 UTC 前有效"`},
		{"zone", "alice", "", shanghai, 5 * time.Minute, "由 alice 发起 · 17:05 CST 前有效", `"由 alice 发起 · 17:05 CST 前有效"`},
		{"next day", "alice", "", shanghai, 16 * time.Hour, "由 alice 发起 · 2026-11-23 09:00 CST 前有效", `2026-11-23 09:00 CST`},
		{"feishu mention", "ou_4f2a9c", "", nil, 5 * time.Minute, "由 ou\\_4f2a9c 发起", `"由 \u003cat id=ou_4f2a9c\u003e\u003c/at\u003e 发起 · 09:05 UTC 前有效"`},
		{"not an id", "ou_x></at><at id=all", "", nil, 5 * time.Minute, "由 ou\\_x\\>\\</at\\>\\<at id=all 发起", `"由 ou_x\u003e\u003c/at\u003e\u003cat id=all 发起 · 09:05 UTC 前有效","tag":"plain_text"`},
		{"dingtalk name", "staff_0421", "张三", nil, 5 * time.Minute, "由 张三 发起", `"由 张三 发起 · 09:05 UTC 前有效"`},
	} {
		a := sample(t, false)
		a.Requester, a.RequesterName = tc.requester, tc.requesterName
		a.ExpiresAt = a.CreatedAt.Add(tc.life)
		v := cards.Pending(a, text, "zh")
		v.Zone = tc.zone
		if md := cards.Markdown(v, "zh"); !strings.Contains(md, tc.md) {
			t.Errorf("%s: Markdown lacks %q:\n%s", tc.name, tc.md, md)
		}
		card, err := json.Marshal(cards.FeishuCard(v, "zh"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(card), tc.feishu) {
			t.Errorf("%s: Feishu card lacks %s:\n%s", tc.name, tc.feishu, card)
		}
		if tc.name == "not an id" && strings.Contains(string(card), `"tag":"markdown","content":"由`) {
			t.Errorf("%s: a requester that is no Feishu id reached markdown", tc.name)
		}
	}
}
