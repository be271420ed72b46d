package cards_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
)

// form returns the form of a Feishu card (nil without one) and fails when
// one is anywhere but at the root of the body.
func form(t *testing.T, card map[string]any) map[string]any {
	t.Helper()
	var js []byte
	js, err := json.Marshal(card)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Body struct {
			Elements []map[string]any `json:"elements"`
		} `json:"body"`
	}
	if err := json.Unmarshal(js, &c); err != nil {
		t.Fatal(err)
	}
	var f map[string]any
	for _, el := range c.Body.Elements {
		if el["tag"] == "form" {
			if f != nil {
				t.Fatalf("two forms: %s", js)
			}
			f = el
		}
	}
	if n := strings.Count(string(js), `"tag":"form"`); (f == nil && n != 0) || (f != nil && n != 1) {
		t.Fatalf("a form that is not at the root: %s", js)
	}
	return f
}

// A pending card holds one form at its root: the optional reason input
// (named, with the placeholder of the card's language and the engine's
// bound as max_length), then both buttons, each submitting the form and
// keeping its callback value; HIGH keeps 确认 primary and 取消 danger, in
// that order. Feishu's rules for forms (the fake's) accept it.
func TestFeishuPendingCardHasAReasonForm(t *testing.T) {
	a := sample(t, false)
	for _, lang := range []string{"zh", "en"} {
		card := cards.FeishuCard(cards.Pending(a, nil, lang), lang)
		js, _ := json.Marshal(card)
		if err := feishutest.CheckCard(string(js)); err != nil {
			t.Fatalf("%s: Feishu would refuse the card: %v\n%s", lang, err, js)
		}
		f := form(t, card)
		if f == nil || f["name"] == "" {
			t.Fatalf("%s: no named form: %s", lang, js)
		}
		fj, _ := json.Marshal(f)
		placeholder := map[string]string{"zh": "取消原因（可选）", "en": "Reason for cancelling (optional)"}[lang]
		input := `{"max_length":500,"name":"reason","placeholder":{"content":"` + placeholder + `","tag":"plain_text"},"tag":"input","width":"fill"}`
		if !strings.Contains(string(fj), input) {
			t.Errorf("%s: the form lacks the reason input %s:\n%s", lang, input, fj)
		}
		if strings.Contains(string(fj), `"required"`) {
			t.Errorf("%s: the reason must stay optional: %s", lang, fj)
		}
		for _, d := range []string{"approve", "reject"} {
			button := `"behaviors":[{"type":"callback","value":{"approval_id":"` + string(a.ID) + `","decision":"` + d + `","kind":"approval","payload_sha256":"` + a.PayloadSHA256 + `"}}],"form_action_type":"submit","name":"` + d + `"`
			if !strings.Contains(string(fj), button) {
				t.Errorf("%s: no %s button submitting the form with its value:\n%s", lang, d, fj)
			}
		}
		confirm, cancel := strings.Index(string(fj), `"content":"确认","tag":"plain_text"},"type":"primary"`), strings.Index(string(fj), `"content":"取消","tag":"plain_text"},"type":"danger"`)
		if confirm < 0 || cancel < confirm {
			t.Errorf("%s: buttons changed (确认 primary first, 取消 danger second): %s", lang, fj)
		}
	}
	if cards.MaxFeishuReason != approval.MaxNoteRunes || cards.MaxFeishuReason > 1000 {
		t.Errorf("max_length %d: the engine keeps %d runes, Feishu allows 1..1000", cards.MaxFeishuReason, approval.MaxNoteRunes)
	}
}

// Settled and processing cards have no form: nothing is left to submit.
func TestFeishuNoFormOnceDecided(t *testing.T) {
	a := sample(t, false)
	p := cards.Pending(a, nil, "en")
	if f := form(t, cards.FeishuProcessingCard(p, "en")); f != nil {
		t.Errorf("processing card has a form: %v", f)
	}
	for _, st := range approval.AllStatuses {
		// A frozen card has a form of its own: the resolution's (see
		// TestFeishuFrozenCardResolves), never the decision's.
		f := form(t, cards.FeishuCard(cards.Final(a, approval.Outcome{Status: st}, nil, "en"), "en"))
		if st == approval.StatusFrozen {
			if f == nil || f["name"] != "resolution" {
				t.Errorf("frozen card's form = %v, want the resolution form", f)
			}
		} else if f != nil {
			t.Errorf("%s: final card has a form: %v", st, f)
		}
		if c := cards.FeishuDecidedCard(p, approval.Outcome{Status: st, DecidedBy: "bob"}, nil, "why", "en"); c != nil && form(t, c) != nil && st != approval.StatusFrozen {
			t.Errorf("%s: decided card has a form", st)
		}
	}
}

// decidedCases are the cards answered to a click that rejected with a
// reason, compared with testdata/feishu_decided_<name>.json.golden.
var decidedCases = []struct {
	name, lang, comment string
}{
	{"rejected_reason_zh", "zh", "  表名错了，请用 orders_archive  "},
	{"rejected_reason_en", "en", "wrong table, use orders_archive"},
}

func TestFeishuDecidedGolden(t *testing.T) {
	a := sample(t, false)
	for _, c := range decidedCases {
		t.Run(c.name, func(t *testing.T) {
			o := approval.Outcome{Status: approval.StatusRejected, DecidedBy: "bob", Content: "rejected", Detail: `bob ("` + strings.TrimSpace(c.comment) + `")`}
			card := cards.FeishuDecidedCard(cards.Pending(a, nil, c.lang), o, nil, c.comment, c.lang)
			js, err := json.MarshalIndent(card, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got := string(js) + "\n"
			path := filepath.Join("testdata", "feishu_decided_"+c.name+".json.golden")
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

// The card answered to the deciding click says what the settled card of
// the record says: the reason cleaned and cut as the engine records it
// (control characters gone, line breaks folded, secrets redacted, cut),
// for a rejection and for an approval with a comment.
func TestFeishuDecidedCardMatchesTheRecord(t *testing.T) {
	executed := toolFunc(func(context.Context, approval.Call) (approval.Result, error) {
		return approval.Result{Content: "DELETE 37"}, nil
	})
	for _, tc := range []struct {
		name    string
		verb    approval.Verb
		comment string
	}{
		{"reject with a reason", approval.Reject, "wrong table, use orders_archive"},
		{"control characters and lines", approval.Reject, "bad\x00 \x1b[31mred\x1b[0m\nsecond line\u202e"},
		{"a secret", approval.Reject, "password=hunter2 is wrong"},
		{"oversized", approval.Reject, strings.Repeat("长", 5000)},
		{"approve with a comment", approval.Approve, "ok for the archive run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, lang := range []string{"zh", "en"} {
				text := approval.DefaultOutcomeText(lang)
				pending, done := ended(t, lang, executed, tc.verb, tc.comment)
				settled, err := json.Marshal(cards.FeishuCard(cards.Final(done, *done.Outcome, text, lang), lang))
				if err != nil {
					t.Fatal(err)
				}
				clicked, err := json.Marshal(cards.FeishuDecidedCard(cards.Pending(pending, text, lang), *done.Outcome, text, tc.comment, lang))
				if err != nil {
					t.Fatal(err)
				}
				if string(clicked) != string(settled) {
					t.Errorf("%s: the click's card differs from the settled one:\nclick   %s\nsettled %s", lang, clicked, settled)
				}
				if done.Comment == "" || !strings.Contains(string(settled), jsonText(t, cards.Final(done, *done.Outcome, text, lang).Comment)) {
					t.Errorf("%s: the comment %q is not on the card %s", lang, done.Comment, settled)
				}
				for _, bad := range []string{"\x00", "\x1b", "\u202e", "hunter2", "m\\nsecond"} {
					if strings.Contains(string(clicked), bad) {
						t.Errorf("%s: %q on the card %s", lang, bad, clicked)
					}
				}
			}
		})
	}
}

// jsonText is s as it appears inside a JSON string.
func jsonText(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Trim(string(b), `"`)
}

func TestParseFeishuReason(t *testing.T) {
	for _, tc := range []struct {
		form map[string]any
		want string
	}{
		{map[string]any{"reason": "  wrong table \n"}, "wrong table"},
		{map[string]any{"reason": ""}, ""},
		{map[string]any{"reason": 12.0}, ""},
		{map[string]any{"reason": []any{"x"}}, ""},
		{map[string]any{"reason": nil}, ""},
		{map[string]any{"other": "x"}, ""},
		{nil, ""},
	} {
		if got := cards.ParseFeishuReason(tc.form); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.form, got, tc.want)
		}
	}
}
