package cards_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
)

// TestDingTalkGolden compares the DingTalk card data (as indented JSON) and
// the group markdown fallback of every case with
// testdata/dingtalk_<case>.{json,md}.golden; -update rewrites them.
func TestDingTalkGolden(t *testing.T) {
	for _, c := range goldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			data := cards.DingTalkCardData(c.view, c.lang)
			for k, v := range data {
				if k == "" || !strings.EqualFold(k, strings.TrimSpace(k)) {
					t.Errorf("bad key %q=%q", k, v)
				}
			}
			js, err := json.MarshalIndent(data, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			for ext, got := range map[string]string{
				"json": string(js) + "\n",
				"md":   cards.DingTalkMarkdown(c.view, c.lang, true),
			} {
				path := filepath.Join("testdata", "dingtalk_"+c.name+"."+ext+".golden")
				if *update {
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test ./cards -update to create it)", err)
				}
				if got != string(want) {
					t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", path, got, want)
				}
			}
		})
	}
}

func TestDingTalkCardDataStates(t *testing.T) {
	a := sample(t, false)
	p := cards.DingTalkCardData(cards.Pending(a, nil, "zh"), "zh")
	if p["status"] != "pending" || p["buttons"] != "true" || p["approval_id"] != string(a.ID) ||
		p["payload_sha256"] != a.PayloadSHA256 || p["requester"] != "alice" || p["expires_at"] != "2026-11-22 09:05:00 UTC" {
		t.Errorf("pending data: %v", p)
	}
	for _, st := range approval.AllStatuses {
		f := cards.DingTalkCardData(cards.Final(a, approval.Outcome{Status: st, Content: "out"}, approval.DefaultOutcomeText("en"), "en"), "en")
		if f["status"] != string(st) || f["buttons"] != "false" || f["final"] != "true" || f["status_text"] == "" {
			t.Errorf("%s: %v", st, f)
		}
	}
	o := cards.DingTalkOutcomeData(approval.Outcome{Status: approval.StatusExecuted, Content: "done", DecidedBy: "bob"}, nil, "zh")
	if o["status"] != "executed" || o["status_text"] != "已执行" || o["result"] != "done" || o["buttons"] != "false" {
		t.Errorf("outcome data: %v", o)
	}
	if pr := cards.DingTalkProcessingData("en"); pr["buttons"] != "false" || pr["status"] != "processing" {
		t.Errorf("processing data: %v", pr)
	}
}

func TestDingTalkMarkdownHowTo(t *testing.T) {
	v := cards.Pending(sample(t, false), nil, "zh")
	if g := cards.DingTalkMarkdown(v, "zh", true); !strings.Contains(g, "@机器人 确认") || strings.Contains(g, "按钮") {
		t.Errorf("group markdown:\n%s", g)
	}
	if d := cards.DingTalkMarkdown(v, "zh", false); strings.Contains(d, "@机器人") || strings.Contains(d, "按钮") || !strings.Contains(d, "**确认**") {
		t.Errorf("1:1 markdown:\n%s", d)
	}
}

// dingTalkLong are texts longer than a DingTalk cardParamMap value may
// be (1 KB, doc create-and-deliver-cards): ASCII, Chinese (3 bytes a
// rune) and a mix whose cut falls inside a rune.
var dingTalkLong = []struct {
	name, text string
}{
	{"ascii 4.6 KB", strings.Repeat("rm -rf /data/build-", 250)},
	{"chinese 3 KB", strings.Repeat("删除订单表", 200)},
	{"mixed", "a" + strings.Repeat("汉字", 400)},
}

// TestDingTalkCardDataFits: every value of a card's data, pending or
// final, and of a click's outcome, is within 1024 bytes, valid UTF-8, and
// a cut one says so; a value that fits is whole.
func TestDingTalkCardDataFits(t *testing.T) {
	for _, c := range dingTalkLong {
		t.Run(c.name, func(t *testing.T) {
			v := cards.View{ApprovalID: "appr-1", Title: "Approve", Tool: "erase", Preview: c.text, Summary: "short",
				About: c.text, Reason: c.text, Requester: "alice"}
			final := v
			final.Final, final.Status, final.Result = true, approval.StatusExecuted, c.text
			o := approval.Outcome{Status: approval.StatusExecuted, Content: c.text, Results: []approval.Result{{Content: c.text}}}
			for _, lang := range []string{"en", "zh"} {
				for what, data := range map[string]map[string]string{
					"pending": cards.DingTalkCardData(v, lang), "final": cards.DingTalkCardData(final, lang),
					"outcome": cards.DingTalkOutcomeData(o, nil, lang),
				} {
					for k, val := range data {
						if len(val) > 1024 || !utf8.ValidString(val) {
							t.Errorf("%s %s: %s is %d bytes (valid UTF-8: %v)", lang, what, k, len(val), utf8.ValidString(val))
						}
					}
					if what == "pending" && (data["summary"] != "short" || !strings.HasPrefix(c.text, strings.TrimRight(strings.SplitN(data["preview"], "…", 2)[0], " ")) ||
						!strings.Contains(data["preview"], "1 KB")) {
						t.Errorf("%s: summary %q, preview cut %q", lang, data["summary"], data["preview"])
					}
				}
			}
		})
	}
}
