package cards_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
)

// TestFeishuFrozenCardResolves: a frozen card (every renderer of it) holds
// the three resolve buttons, bound to the approval and its hash, in the
// order 已完成 / 重试 / 放弃; on Feishu in a form Feishu's rules (the
// fake's) accept, with the optional result input under the field a click
// reads; once resolved (done, abandon, a retry that ran) no button is
// left, and a retry that froze again has them again.
func TestFeishuFrozenCardResolves(t *testing.T) {
	a := sample(t, false)
	frozen := approval.Outcome{Status: approval.StatusFrozen, DecidedBy: "bob", Detail: "timed out after 2m0s"}
	for _, lang := range []string{"zh", "en"} {
		v := cards.Final(a, frozen, nil, lang)
		if len(v.Resolve) != 3 {
			t.Fatalf("%s: frozen view has %d resolve buttons", lang, len(v.Resolve))
		}
		for i, b := range v.Resolve {
			if b.Decision != approval.Resolve || b.Resolution != approval.Resolutions[i] || b.ApprovalID != a.ID || b.PayloadSHA256 != a.PayloadSHA256 {
				t.Errorf("%s: button %d = %+v", lang, i, b)
			}
		}
		card := cards.FeishuCard(v, lang)
		js, _ := json.Marshal(card)
		if err := feishutest.CheckCard(string(js)); err != nil {
			t.Fatalf("%s: Feishu would refuse the frozen card: %v\n%s", lang, err, js)
		}
		f := form(t, card)
		fj, _ := json.Marshal(f)
		if f == nil || f["name"] != "resolution" || !strings.Contains(string(fj), `"name":"`+cards.FeishuReasonField+`"`) {
			t.Fatalf("%s: frozen card's form: %s", lang, fj)
		}
		labels := map[string][]string{"zh": {"已完成", "重试", "放弃"}, "en": {"Done", "Retry", "Abandon"}}[lang]
		last := -1
		for i, r := range approval.Resolutions {
			val := `{"approval_id":"` + string(a.ID) + `","decision":"resolve","kind":"approval","payload_sha256":"` + a.PayloadSHA256 + `","resolution":"` + string(r) + `"}`
			at := strings.Index(string(fj), val)
			label := strings.Index(string(fj), `"content":"`+labels[i]+`"`)
			if at < 0 || label < at || at < last {
				t.Errorf("%s: button %s (%s) missing or out of order:\n%s", lang, r, labels[i], fj)
			}
			last = at
		}
		web, err := cards.WebJSON(v)
		if err != nil || strings.Count(string(web), `"decision":"resolve"`) != 3 {
			t.Errorf("%s: web view of a frozen approval: %s, %v", lang, web, err)
		}
		if d := cards.DingTalkCardData(v, lang); d["resolve_buttons"] != "true" || d["buttons"] != "false" {
			t.Errorf("%s: DingTalk data of a frozen approval: %v", lang, d)
		}
		if d := cards.DingTalkOutcomeData(frozen, nil, lang); d["resolve_buttons"] != "true" {
			t.Errorf("%s: DingTalk update of a frozen outcome: %v", lang, d)
		}
	}
	for _, o := range []approval.Outcome{
		{Status: approval.StatusExecuted, Resolution: approval.ResolveDone, DecidedBy: "carol", Comment: "checked"},
		{Status: approval.StatusFailed, Resolution: approval.ResolveAbandon, DecidedBy: "carol", Detail: "abandoned by carol"},
		{Status: approval.StatusExecuted, Resolution: approval.ResolveRetry, DecidedBy: "carol", Content: "1 row"},
	} {
		v := cards.Final(a, o, nil, "en")
		js, _ := cards.FeishuCardJSON(v, "en")
		if len(v.Resolve) != 0 || strings.Contains(js, "behaviors") || v.Resolution != o.Resolution {
			t.Errorf("%s: a resolved card keeps buttons: %s", o.Resolution, js)
		}
		if d := cards.DingTalkOutcomeData(o, nil, "zh"); d["resolve_buttons"] != "false" || d["resolution"] != string(o.Resolution) || !strings.HasPrefix(d["status_text"], "已") {
			t.Errorf("%s: DingTalk update: %v", o.Resolution, d)
		}
	}
	again := cards.Final(a, approval.Outcome{Status: approval.StatusFrozen, Resolution: approval.ResolveRetry, DecidedBy: "carol"}, nil, "en")
	if len(again.Resolve) != 3 || !strings.HasPrefix(again.StatusText, "Retried: ") {
		t.Errorf("a retry that froze again: %+v", again)
	}
}
