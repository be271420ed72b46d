package cards_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
