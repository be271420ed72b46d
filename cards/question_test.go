package cards_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
	"github.com/hitlbot/hitlbot/words"
)

const questionInput = `{"questions":[` +
	`{"question":"Which size?","header":"Size","options":[{"label":"Small","description":"fast"},{"label":"Large","description":"slow"}],"multiSelect":false},` +
	`{"question":"Which extras?","header":"Extras","options":[{"label":"Cache"},{"label":"Logs"},{"label":"Metrics"}],"multiSelect":true}]}`

// questionSample is a pending question of another agent (Claude Code's
// AskUserQuestion through the gate), with input in.
func questionSample(t *testing.T, in string) *approval.Approval {
	t.Helper()
	a := agentSample(t)
	canon, h, err := approval.HashCall("ci-claude/AskUserQuestion", json.RawMessage(in))
	if err != nil {
		t.Fatal(err)
	}
	c := approval.Call{Tool: "ci-claude/AskUserQuestion", Args: canon, PayloadSHA256: h,
		Summary: words.In("en", words.QuestionAsks, "ci-claude", "Which size?"), SummaryZH: words.In("zh", words.QuestionAsks, "ci-claude", "Which size?")}
	a.Calls, a.PayloadSHA256, a.Risk = []approval.Call{c}, h, approval.RiskMedium
	a.Summary, a.SummaryZH = c.Summary, c.SummaryZH
	a.Preview = "1. [Size] Which size?\n   1. Small — fast\n   2. Large — slow\n\n2. [Extras] Which extras? (choose any)\n   1. Cache\n   2. Logs\n   3. Metrics"
	a.PreviewZH = strings.Replace(a.Preview, "(choose any)", "（可多选）", 1)
	a.Reason, a.ReasonZH = "MEDIUM risk", "中风险"
	return a
}

// answered is a's final state once answered by bob (the gate's result).
func answered(a *approval.Approval) (*approval.Approval, approval.Outcome) {
	b := a.Clone()
	b.State, b.DecidedBy = approval.StateExecuted, "bob"
	args, err := approval.AnswerQuestions(a.Calls[0].Args, json.RawMessage(`{"answers":{"#1":{"options":[2]},"#2":{"options":[1,3]}}}`))
	if err != nil {
		panic(err)
	}
	b.Calls[0].Args = args
	o := approval.Outcome{Status: approval.StatusExecuted, DecidedBy: "bob", Content: "Which size? → Large\nWhich extras? → Cache, Metrics",
		Results: []approval.Result{{Tool: a.Calls[0].Tool, Status: approval.StatusExecuted, Content: "Which size? → Large\nWhich extras? → Cache, Metrics", Edited: "answers: added {…}"}}}
	return b, o
}

func questionGolden(t *testing.T) []golden {
	a := questionSample(t, questionInput)
	b, o := answered(a)
	var out []golden
	for _, lang := range []string{"en", "zh"} {
		text := approval.DefaultOutcomeText(lang)
		pending := cards.Pending(a, text, lang)
		pending.Code = "ab12" // its code in the chat, as the presenter sets it
		out = append(out, golden{"pending_question_" + lang, lang, pending},
			golden{"final_question_answered_" + lang, lang, cards.Final(b, o, text, lang)})
	}
	one := questionSample(t, `{"questions":[{"question":"Deploy now?","options":[{"label":"Yes"},{"label":"Later","description":"after 18:00"}]}]}`)
	out = append(out, golden{"pending_question_buttons_en", "en", cards.Pending(one, approval.DefaultOutcomeText("en"), "en")})
	el := elicitSample(t)
	for _, lang := range []string{"en", "zh"} {
		pending := cards.Pending(el, approval.DefaultOutcomeText(lang), lang)
		pending.Code = "cd34"
		out = append(out, golden{"pending_elicit_defaults_" + lang, lang, pending})
	}
	return out
}

// elicitSample is a pending MCP server's form (approval.ElicitArgs) whose
// fields have defaults: an option's, a boolean's, a number's, none.
func elicitSample(t *testing.T) *approval.Approval {
	t.Helper()
	args, err := approval.ElicitArgs("Deploy settings for web", map[string]any{"type": "object", "required": []any{"env"},
		"properties": map[string]any{
			"env": map[string]any{"type": "string", "title": "Environment", "default": "prod",
				"oneOf": []any{map[string]any{"const": "staging", "title": "Staging"}, map[string]any{"const": "prod", "title": "Production"}}},
			"notify":   map[string]any{"type": "boolean", "title": "Notify the team", "default": true},
			"replicas": map[string]any{"type": "integer", "title": "Replicas", "default": 3.0},
			"note":     map[string]any{"type": "string", "title": "Note"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	a := questionSample(t, `{"questions":[{"question":"q"}]}`)
	tool := approval.ElicitTool("deploy")
	canon, h, err := approval.HashCall(tool, args)
	if err != nil {
		t.Fatal(err)
	}
	c := approval.Call{Tool: tool, Args: canon, PayloadSHA256: h,
		Summary: words.In("en", words.ElicitAsks, "deploy", "Deploy settings for web"), SummaryZH: words.In("zh", words.ElicitAsks, "deploy", "Deploy settings for web")}
	a.Calls, a.PayloadSHA256 = []approval.Call{c}, h
	a.Summary, a.SummaryZH = c.Summary, c.SummaryZH
	a.Preview, a.PreviewZH = approval.ElicitPreview("en", canon), approval.ElicitPreview("zh", canon)
	about := approval.Say(words.ElicitAbout, "deploy")
	a.About, a.AboutZH = about.EN, about.ZH
	a.Reason, a.ReasonZH = "an MCP server asks", "MCP 服务提问"
	return a
}

// TestElicitCardShowsDefaults: a field's default is said after its
// question on the card (its questions, and the preview the text and
// Feishu cards show), in the card's language; a field without one says
// nothing more.
func TestElicitCardShowsDefaults(t *testing.T) {
	a := elicitSample(t)
	for lang, want := range map[string][]string{
		"en": {"Environment (default: Production (prod))", "Note", "Notify the team (default: true)", "Replicas (default: 3)"},
		"zh": {"Environment（默认：Production (prod)）", "Note", "Notify the team（默认：true）", "Replicas（默认：3）"},
	} {
		v := cards.Pending(a, nil, lang)
		var got []string
		for _, q := range v.Questions {
			got = append(got, q.Question)
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s: questions %q, want %q", lang, got, want)
		}
		if !strings.Contains(v.Preview, "1. [env] "+want[0]+"\n   1. Staging (staging)") || !strings.Contains(v.Preview, "2. [note] Note\n\n") {
			t.Errorf("%s: the preview %q", lang, v.Preview)
		}
	}
}

// TestQuestionCard: a question's card asks, never approves: no approve
// button but Answer (bound to the hash shown) and 取消 to decline; on
// Feishu a form at the root Feishu accepts, with a select per question
// (multi for a multi-select) and a free-text input each; the final card
// of the answered question says the answers, in both languages.
func TestQuestionCard(t *testing.T) {
	a := questionSample(t, questionInput)
	for _, lang := range []string{"en", "zh"} {
		v := cards.Pending(a, nil, lang)
		if v.Approve != nil || v.ApproveOnce != nil || v.Answer == nil || v.Answer.Decision != cards.AnswerDecision ||
			v.Answer.PayloadSHA256 != a.PayloadSHA256 || v.Reject == nil || len(v.Questions) != 2 || !v.Questions[1].Multi {
			t.Fatalf("%s: the view %+v", lang, v)
		}
		card := cards.FeishuCard(v, lang)
		js, _ := json.Marshal(card)
		if err := feishutest.CheckCard(string(js)); err != nil {
			t.Fatalf("%s: Feishu would refuse the card: %v\n%s", lang, err, js)
		}
		f := form(t, card)
		fs, _ := json.Marshal(f)
		for _, want := range []string{`"name":"q_1"`, `"name":"q_2"`, `"tag":"select_static"`, `"tag":"multi_select_static"`, `"name":"other_1"`, `"name":"other_2"`,
			`"decision":"answer"`, `"decision":"reject"`} {
			if !strings.Contains(string(fs), want) {
				t.Fatalf("%s: the form lacks %s: %s", lang, want, fs)
			}
		}
		if strings.Contains(string(fs), `"decision":"approve"`) {
			t.Fatalf("%s: a question card that approves: %s", lang, fs)
		}
		b, o := answered(a)
		fin := cards.FeishuCard(cards.Final(b, o, approval.DefaultOutcomeText(lang), lang), lang)
		fj, _ := json.Marshal(fin)
		if !strings.Contains(string(fj), "Which extras? → Cache, Metrics") || !strings.Contains(string(fj), words.In(lang, words.QuestionAnswered, "ci-claude")) ||
			strings.Contains(string(fj), `"tag":"form"`) {
			t.Fatalf("%s: the final card %s", lang, fj)
		}
		// The card answered to the click says what the settle says.
		if d := cards.FeishuDecidedCard(v, o, approval.DefaultOutcomeText(lang), "", lang); !strings.Contains(mustJSON(t, d), "Which extras? → Cache, Metrics") {
			t.Fatalf("%s: the decided card %s", lang, mustJSON(t, d))
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// feishuAnswerForms: what a question card's submit carries, and the edit
// it makes (nil: refused).
var feishuAnswerForms = []struct {
	name   string
	option string
	form   map[string]any
	want   string
}{
	{"a select and a multi-select", "", map[string]any{"q_1": "2", "q_2": []any{"1", "3"}, "other_1": "", "other_2": " "},
		`{"answers":{"#1":{"options":[2]},"#2":{"options":[1,3]}}}`},
	{"free text", "", map[string]any{"other_1": " Medium "}, `{"answers":{"#1":{"other":"Medium"}}}`},
	{"an option button", "2", map[string]any{"other_1": "ignored"}, `{"answers":{"#1":{"options":[2]}}}`},
	{"nothing", "", map[string]any{"other_1": ""}, ""},
	{"not a number", "", map[string]any{"q_1": "Large"}, ""},
	{"out of range", "", map[string]any{"q_1": "0"}, ""},
	{"not text", "", map[string]any{"other_1": 3.0}, ""},
	{"a list of numbers", "", map[string]any{"q_2": []any{1.0}}, ""},
}

func TestParseFeishuAnswers(t *testing.T) {
	a := questionSample(t, questionInput)
	v := cards.Pending(a, nil, "en")
	for _, tt := range feishuAnswerForms {
		t.Run(tt.name, func(t *testing.T) {
			m := map[string]any{"kind": "approval", "approval_id": string(a.ID), "decision": "answer", "payload_sha256": a.PayloadSHA256}
			if tt.option != "" {
				m["option"] = tt.option
			}
			val, err := cards.ParseFeishuButtonValue(m)
			if err != nil || val.PayloadSHA256 != v.Answer.PayloadSHA256 {
				t.Fatalf("the value: %+v %v", val, err)
			}
			edits, err := cards.ParseFeishuAnswers(tt.form, val)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("accepted: %s", edits["#1"])
				}
				return
			}
			if err != nil || string(edits["#1"]) != tt.want || len(edits) != 1 {
				t.Fatalf("%s, %v; want %s", edits["#1"], err, tt.want)
			}
			if _, err := approval.AnswerQuestions(a.Calls[0].Args, edits["#1"]); err != nil {
				t.Fatalf("the engine would refuse the card's answer: %v", err)
			}
		})
	}
	// An option on a button that does not answer is refused.
	if _, err := cards.ParseFeishuButtonValue(map[string]any{"kind": "approval", "approval_id": string(a.ID), "decision": "approve",
		"payload_sha256": a.PayloadSHA256, "option": "1"}); err == nil {
		t.Fatal("an approve button with an option was read")
	}
}

// TestQuestionOptionButtons: one single-choice question of few options:
// each option a button that answers it at once.
func TestQuestionOptionButtons(t *testing.T) {
	a := questionSample(t, `{"questions":[{"question":"Deploy now?","options":[{"label":"Yes"},{"label":"Later"}]}]}`)
	card := cards.FeishuCard(cards.Pending(a, nil, "zh"), "zh")
	js := mustJSON(t, card)
	if err := feishutest.CheckCard(js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js, `"option":"2"`) || strings.Contains(js, `select_static`) || !strings.Contains(js, `"name":"other_1"`) {
		t.Fatalf("the card %s", js)
	}
}

func FuzzParseFeishuAnswers(f *testing.F) {
	f.Add(`{"q_1":"2","q_2":["1","3"],"other_1":"x"}`, "")
	f.Add(`{"other_1":"x"}`, "1")
	f.Fuzz(func(t *testing.T, form, option string) {
		var m map[string]any
		if json.Unmarshal([]byte(form), &m) != nil {
			return
		}
		val := cards.ButtonValue{Decision: cards.AnswerDecision}
		if n, err := json.Number(option).Int64(); err == nil && n > 0 && n <= approval.MaxQuestionOptions {
			val.Option = int(n)
		}
		edits, err := cards.ParseFeishuAnswers(m, val)
		if err != nil {
			return
		}
		var e struct {
			Answers map[string]struct {
				Options []int  `json:"options"`
				Other   string `json:"other"`
			} `json:"answers"`
		}
		if len(edits) != 1 || json.Unmarshal(edits["#1"], &e) != nil || len(e.Answers) == 0 {
			t.Fatalf("an edit that answers nothing: %s", edits["#1"])
		}
		for k, p := range e.Answers {
			if !strings.HasPrefix(k, "#") || (len(p.Options) == 0 && p.Other == "") {
				t.Fatalf("answer %q: %+v", k, p)
			}
		}
	})
}

// TestQuestionCardFitsFeishu: the largest question the gate takes (8
// questions of 20 options, every text at its bound, in Chinese and in
// ASCII) still makes a card within Feishu's limits that holds every
// question's select and input; so does the largest elicitation (16
// fields of as many options as it takes in all, each with a default,
// every text at approval.ElicitArgs's bounds, its preview as Elicit
// makes it).
func TestQuestionCardFitsFeishu(t *testing.T) {
	for _, r := range []string{"a", "答"} {
		var qs []map[string]any
		for i := range approval.MaxAskQuestions {
			var opts []map[string]any
			for j := range approval.MaxQuestionOptions {
				opts = append(opts, map[string]any{"label": fmt.Sprint(j) + strings.Repeat(r, 290), "description": strings.Repeat(r, 990)})
			}
			qs = append(qs, map[string]any{"question": fmt.Sprint(i) + strings.Repeat(r, 990), "options": opts, "multiSelect": i%2 == 0})
		}
		in, _ := json.Marshal(map[string]any{"questions": qs})
		checkQuestionCard(t, r, questionSample(t, string(in)), approval.MaxAskQuestions)
		props := map[string]any{}
		for i := range approval.MaxQuestions {
			var opts []any
			for j := range approval.MaxElicitOptions / approval.MaxQuestions {
				opts = append(opts, map[string]any{"const": fmt.Sprint(j) + strings.Repeat(r, 140), "title": strings.Repeat(r, 200)})
			}
			props[fmt.Sprintf("f%02d", i)] = map[string]any{"type": "string", "title": strings.Repeat(r, 200), "description": strings.Repeat(r, 500), "oneOf": opts,
				"default": "0" + strings.Repeat(r, 140)}
		}
		args, err := approval.ElicitArgs(strings.Repeat(r, 1000), map[string]any{"type": "object", "properties": props})
		if err != nil {
			t.Fatal(err)
		}
		a := questionSample(t, `{"questions":[{"question":"q"}]}`)
		a.Calls[0].Tool, a.Calls[0].Args = approval.ElicitTool("srv"), args
		a.Preview, a.PreviewZH = approval.ElicitPreview("en", args), approval.ElicitPreview("zh", args)
		if !strings.Contains(a.PreviewZH, "默认") {
			t.Fatal("the fields' defaults are not shown")
		}
		checkQuestionCard(t, r+" elicitation", a, approval.MaxQuestions)
	}
}

// checkQuestionCard checks that question a's card fits Feishu and holds
// the select and input of each of its n questions.
func checkQuestionCard(t *testing.T, r string, a *approval.Approval, n int) {
	t.Helper()
	v := cards.Pending(a, nil, "zh")
	if len(v.Questions) != n {
		t.Fatalf("%s: %d questions on the view", r, len(v.Questions))
	}
	card := cards.FeishuCard(v, "zh")
	js := mustJSON(t, card)
	if !cards.FeishuCardFits(card) || feishutest.CheckCard(js) != nil {
		t.Fatalf("%s: the card does not fit (%d bytes): %v", r, len(js), feishutest.CheckCard(js))
	}
	for i := 1; i <= n; i++ {
		if !strings.Contains(js, `"name":"`+cards.FeishuQuestionField(i)+`"`) || !strings.Contains(js, `"name":"`+cards.FeishuOtherField(i)+`"`) {
			t.Fatalf("%s: question %d cannot be answered on the card", r, i)
		}
	}
}

// TestElicitDefaultKeptOnDingTalk: a DingTalk card's value holds at most
// 1 KB, and a field's question is cut to fit; the default an empty answer
// takes is never the part cut away (a person must see what leaving the
// field empty sends), even when the field's title and description, in
// Chinese at approval.ElicitArgs's bounds, take the whole value.
func TestElicitDefaultKeptOnDingTalk(t *testing.T) {
	def := "默" + strings.Repeat("认", 140)
	args, err := approval.ElicitArgs("部署", map[string]any{"type": "object", "properties": map[string]any{
		"note": map[string]any{"type": "string", "title": strings.Repeat("标", 200), "description": strings.Repeat("述", 500), "default": def},
	}})
	if err != nil {
		t.Fatal(err)
	}
	a := questionSample(t, `{"questions":[{"question":"q"}]}`)
	a.Calls[0].Tool, a.Calls[0].Args = approval.ElicitTool("srv"), args
	for _, lang := range []string{"en", "zh"} {
		data := cards.DingTalkCardData(cards.Pending(a, nil, lang), lang)
		text := data["q1_text"]
		if len(text) > cards.DingTalkMaxValue {
			t.Fatalf("%s: q1_text is %d bytes", lang, len(text))
		}
		if !strings.Contains(text, strings.TrimSuffix(words.In(lang, words.ElicitDefault, def), ")")) {
			t.Errorf("%s: the default is cut from the question: %q", lang, text)
		}
	}
}
