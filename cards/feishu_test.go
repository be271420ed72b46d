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

// TestFeishuGolden compares the Feishu card JSON 2.0 of every case (as
// indented JSON) with testdata/feishu_<case>.json.golden; -update rewrites
// them.
func TestFeishuGolden(t *testing.T) {
	for _, c := range goldenCases(t) {
		t.Run(c.name, func(t *testing.T) {
			js, err := json.MarshalIndent(cards.FeishuCard(c.view, c.lang), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got := string(js) + "\n"
			path := filepath.Join("testdata", "feishu_"+c.name+".json.golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./cards -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", path, got, want)
			}
		})
	}
}

func TestFeishuCardShapes(t *testing.T) {
	a := sample(t, false)
	p := cards.Pending(a, nil, "zh")
	js, err := cards.FeishuCardJSON(p, "zh")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"schema":"2.0"`, `"update_multi":true`, `"template":"red"`, `"确认"`, `"取消"`,
		`"behaviors":[{"type":"callback","value":{"approval_id":"` + string(a.ID) + `","decision":"approve","kind":"approval","payload_sha256":"` + a.PayloadSHA256 + `"}}]`} {
		if !strings.Contains(js, want) {
			t.Errorf("pending card lacks %s:\n%s", want, js)
		}
	}
	for r, want := range map[approval.Risk]string{approval.RiskHigh: "red", approval.RiskMedium: "orange", approval.RiskLow: "blue"} {
		if got := cards.FeishuRiskTemplate(r); got != want {
			t.Errorf("risk %v: %s, want %s", r, got, want)
		}
	}
	for _, st := range approval.AllStatuses {
		f := cards.Final(a, approval.Outcome{Status: st, Content: "out"}, approval.DefaultOutcomeText("en"), "en")
		js, err := cards.FeishuCardJSON(f, "en")
		if err != nil {
			t.Fatal(err)
		}
		if st == approval.StatusFrozen {
			// A frozen card's only buttons resolve it (TestFeishuFrozenCardResolves).
			if strings.Count(js, `"decision":"resolve"`) != 3 || strings.Contains(js, `"decision":"approve"`) || strings.Contains(js, `"decision":"reject"`) {
				t.Errorf("frozen card's buttons:\n%s", js)
			}
			continue
		}
		if strings.Contains(js, `"button"`) || strings.Contains(js, "behaviors") || !strings.Contains(js, `"update_multi":true`) {
			t.Errorf("%s: final card has buttons or lacks update_multi:\n%s", st, js)
		}
	}
	proc, _ := json.Marshal(cards.FeishuProcessingCard(p, "zh"))
	if strings.Contains(string(proc), "behaviors") || !strings.Contains(string(proc), "处理中") {
		t.Errorf("processing card: %s", proc)
	}
	if c := cards.FeishuOutcomeCard(p, approval.Outcome{Status: approval.StatusUnauthorized}, nil, "zh"); c != nil {
		t.Errorf("an unauthorized click changes the card: %v", c)
	}
	ex, _ := json.Marshal(cards.FeishuOutcomeCard(p, approval.Outcome{Status: approval.StatusExecuted, Content: "DELETE 37", DecidedBy: "bob"}, nil, "zh"))
	if !strings.Contains(string(ex), "已执行") || !strings.Contains(string(ex), "DELETE 37") || !strings.Contains(string(ex), `"template":"green"`) {
		t.Errorf("executed card: %s", ex)
	}
}

func TestFeishuPreviewCannotEscapeItsBlock(t *testing.T) {
	a := sample(t, false)
	a.Preview = "```\n<at user_id=\"all\"></at> [x](https://evil.example)\n```"
	c := cards.FeishuCard(cards.Pending(a, nil, "en"), "en")
	js, _ := json.Marshal(c)
	if !strings.Contains(string(js), "````\\n```\\n") {
		t.Errorf("preview not fenced safely: %s", js)
	}
}

func TestParseFeishuButtonValue(t *testing.T) {
	a := sample(t, false)
	good := map[string]any{"kind": "approval", "approval_id": string(a.ID), "decision": "approve", "payload_sha256": a.PayloadSHA256}
	v, err := cards.ParseFeishuButtonValue(good)
	if err != nil || v.ApprovalID != a.ID || v.Decision != approval.Approve || v.PayloadSHA256 != a.PayloadSHA256 {
		t.Fatalf("good value: %+v, %v", v, err)
	}
	for name, mut := range map[string]func(m map[string]any){
		"no kind":                      func(m map[string]any) { delete(m, "kind") },
		"other kind":                   func(m map[string]any) { m["kind"] = "vote" },
		"number id":                    func(m map[string]any) { m["approval_id"] = 12.0 },
		"bad id":                       func(m map[string]any) { m["approval_id"] = "ap_x" },
		"bad decision":                 func(m map[string]any) { m["decision"] = "maybe" },
		"short hash":                   func(m map[string]any) { m["payload_sha256"] = "abc" },
		"no hash":                      func(m map[string]any) { delete(m, "payload_sha256") },
		"non-hex hash":                 func(m map[string]any) { m["payload_sha256"] = strings.Repeat("z", 64) },
		"nil hash":                     func(m map[string]any) { m["payload_sha256"] = nil },
		"object in id":                 func(m map[string]any) { m["approval_id"] = map[string]any{} },
		"list decision":                func(m map[string]any) { m["decision"] = []any{"approve"} },
		"resolve without a resolution": func(m map[string]any) { m["decision"] = "resolve" },
		"resolve maybe":                func(m map[string]any) { m["decision"], m["resolution"] = "resolve", "maybe" },
		"resolve number":               func(m map[string]any) { m["decision"], m["resolution"] = "resolve", 1.0 },
		"approve with a resolution":    func(m map[string]any) { m["resolution"] = "done" },
		"bad grant":                    func(m map[string]any) { m["grant"] = "forever" },
		"empty grant":                  func(m map[string]any) { m["grant"] = "" },
		"number grant":                 func(m map[string]any) { m["grant"] = 1.0 },
		"reject grant":                 func(m map[string]any) { m["decision"], m["grant"] = "reject", "once" },
		"reject always":                func(m map[string]any) { m["decision"], m["grant"] = "reject", "always" },
	} {
		m := map[string]any{}
		for k, v := range good {
			m[k] = v
		}
		mut(m)
		if v, err := cards.ParseFeishuButtonValue(m); err == nil {
			t.Errorf("%s: accepted %+v", name, v)
		}
	}
	for _, r := range approval.Resolutions {
		m := map[string]any{"resolution": string(r)}
		for k, v := range good {
			m[k] = v
		}
		m["decision"] = "resolve"
		v, err := cards.ParseFeishuButtonValue(m)
		if err != nil || v.Decision != approval.Resolve || v.Resolution != r {
			t.Errorf("resolve %s: %+v, %v", r, v, err)
		}
	}
	if _, err := cards.ParseFeishuButtonValue(nil); err == nil {
		t.Error("nil value accepted")
	}
	// A MEDIUM card's two approve buttons carry the grant choice, and an
	// agent's card's standing-rule button always (the engine checks that
	// the approval offers one).
	for _, g := range []approval.GrantChoice{approval.GrantOnce, approval.GrantSession, approval.GrantAlways} {
		m := map[string]any{"grant": string(g)}
		for k, v := range good {
			m[k] = v
		}
		if v, err := cards.ParseFeishuButtonValue(m); err != nil || v.Grant != g {
			t.Errorf("grant %s: %+v, %v", g, v, err)
		}
	}
}

// FuzzParseFeishuButtonValue feeds arbitrary JSON objects (as the SDK
// decodes action.value) to the parser: it must never panic, and whatever
// it accepts must be a well-formed approval button that renders back to
// the same value.
func FuzzParseFeishuButtonValue(f *testing.F) {
	f.Add(`{"kind":"approval","approval_id":"ap_0123abcd_00112233445566778899aabbccddeeff","decision":"approve","payload_sha256":"` + strings.Repeat("a", 64) + `"}`)
	f.Add(`{"kind":"approval","decision":"reject"}`)
	f.Add(`{"kind":"approval","approval_id":"ap_0123abcd_00112233445566778899aabbccddeeff","decision":"approve","grant":"once","payload_sha256":"` + strings.Repeat("a", 64) + `"}`)
	f.Add(`{"approval_id":1,"decision":null}`)
	f.Add(`{}`)
	f.Add(`{"kind":"approval","approval_id":"ap_0123abcd_00112233445566778899aabbccddeeff","decision":"resolve","resolution":"retry","payload_sha256":"` + strings.Repeat("b", 64) + `"}`)
	f.Add(`{"kind":"approval","approval_id":"ap_0123abcd_00112233445566778899aabbccddeeff","decision":"resolve","resolution":"maybe","payload_sha256":"` + strings.Repeat("b", 64) + `"}`)
	f.Add(`{"kind":"approval","approval_id":"ap_0123abcd_00112233445566778899aabbccddeeff","decision":"approve","resolution":"done","payload_sha256":"` + strings.Repeat("b", 64) + `"}`)
	f.Add(`{"kind":"approval","decision":"resolve","resolution":7}`)
	f.Fuzz(func(t *testing.T, s string) {
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) != nil {
			return
		}
		v, err := cards.ParseFeishuButtonValue(m)
		if err != nil {
			return
		}
		if v.Kind != "approval" || !v.ApprovalID.Valid() ||
			(v.Decision != approval.Approve && v.Decision != approval.Reject && v.Decision != approval.Resolve && v.Decision != cards.EditDecision) ||
			len(v.PayloadSHA256) != 64 || (v.Decision == approval.Resolve) != v.Resolution.Valid() || (v.Decision != approval.Resolve && v.Resolution != "") ||
			(v.Grant != "" && (v.Decision != approval.Approve || (v.Grant != approval.GrantOnce && v.Grant != approval.GrantSession))) {
			t.Fatalf("accepted a malformed value %+v from %s", v, s)
		}
	})
}

func TestFeishuCardStaysUnder30KB(t *testing.T) {
	a := sample(t, false)
	a.Summary = strings.Repeat("摘要", 5000)
	a.Preview = strings.Repeat("删除", 50000)
	js, err := cards.FeishuCardJSON(cards.Pending(a, nil, "zh"), "zh")
	if err != nil {
		t.Fatal(err)
	}
	if len(js) > 30*1024 {
		t.Fatalf("card is %d bytes", len(js))
	}
}
