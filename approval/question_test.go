package approval_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
)

// askInput is Claude Code's AskUserQuestion input of two questions, one
// multi-select (../shared/reference/agent-hooks.md).
const askInput = `{"questions":[` +
	`{"question":"Which size?","header":"Size","options":[{"label":"Small","description":"fast"},{"label":"Large","description":"slow"}],"multiSelect":false},` +
	`{"question":"Which extras?","header":"Extras","options":[{"label":"Cache"},{"label":"Logs"},{"label":"Metrics"}],"multiSelect":true}]}`

// answerCases: the picks a channel or the API sends, and the answers
// Claude Code reads (keyed by question text, a multi-select joined).
var answerCases = []struct {
	name, picks string
	want        map[string]string
	err         string
}{
	{"options by number", `{"answers":{"#1":{"options":[2]},"#2":{"options":[1,3]}}}`,
		map[string]string{"Which size?": "Large", "Which extras?": "Cache, Metrics"}, ""},
	{"text by question", `{"answers":{"Which size?":"Small","Which extras?":["Logs","Cache"]}}`,
		map[string]string{"Which size?": "Small", "Which extras?": "Logs, Cache"}, ""},
	{"free text wins on one choice", `{"answers":{"#1":{"options":[1],"other":"  Medium "}}}`,
		map[string]string{"Which size?": "Medium"}, ""},
	{"free text joins a multi-select", `{"answers":{"#2":{"options":[2],"other":"Traces"}}}`,
		map[string]string{"Which extras?": "Logs, Traces"}, ""},
	{"the original input with answers", `{"questions":` + askQuestionsJSON + `,"answers":{"Which size?":"Large"}}`,
		map[string]string{"Which size?": "Large"}, ""},
	{"no answer", `{"answers":{}}`, nil, "no answer"},
	{"empty answer", `{"answers":{"#1":{"options":[],"other":" "}}}`, nil, "no answer"},
	{"unknown question", `{"answers":{"Which colour?":"red"}}`, nil, "no question"},
	{"question out of range", `{"answers":{"#3":"x"}}`, nil, "no question"},
	{"option out of range", `{"answers":{"#1":{"options":[3]}}}`, nil, "no option 3"},
	{"two options on one choice", `{"answers":{"#1":{"options":[1,2]}}}`, nil, "one option"},
	{"two values on one choice", `{"answers":{"#1":["Small","Large"]}}`, nil, "one option"},
	{"the questions changed", `{"questions":[],"answers":{"#1":"Small"}}`, nil, "only the answers"},
	{"another key", `{"answers":{"#1":"Small"},"x":1}`, nil, "only the answers"},
	{"answers not an object", `{"answers":["Small"]}`, nil, "answers"},
	{"a number", `{"answers":{"#1":3}}`, nil, "answer"},
	{"the same question twice", `{"answers":{"#1":"Small","Which size?":"Large"}}`, nil, "twice"},
	{"too long", `{"answers":{"#1":"` + strings.Repeat("x", approval.MaxAnswerRunes+1) + `"}}`, nil, "longer"},
}

const askQuestionsJSON = `[{"question":"Which size?","header":"Size","options":[{"label":"Small","description":"fast"},{"label":"Large","description":"slow"}],"multiSelect":false},` +
	`{"question":"Which extras?","header":"Extras","options":[{"label":"Cache"},{"label":"Logs"},{"label":"Metrics"}],"multiSelect":true}]`

func TestAnswerQuestions(t *testing.T) {
	canon, err := approval.Canonicalize([]byte(askInput))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range answerCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := approval.AnswerQuestions(canon, json.RawMessage(tt.picks))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var out struct {
				Questions json.RawMessage   `json:"questions"`
				Answers   map[string]string `json:"answers"`
			}
			if err := json.Unmarshal(got, &out); err != nil {
				t.Fatal(err)
			}
			want, _ := approval.Canonicalize([]byte(askQuestionsJSON))
			if string(out.Questions) != string(want) {
				t.Fatalf("the questions changed: %s", out.Questions)
			}
			if len(out.Answers) != len(tt.want) {
				t.Fatalf("answers %v, want %v", out.Answers, tt.want)
			}
			for k, v := range tt.want {
				if out.Answers[k] != v {
					t.Fatalf("answers %v, want %v", out.Answers, tt.want)
				}
			}
			if c, _ := approval.Canonicalize(got); string(c) != string(got) {
				t.Fatalf("not canonical: %s", got)
			}
			if ans := approval.QuestionAnswers(got); len(ans) != len(tt.want) {
				t.Fatalf("QuestionAnswers %v", ans)
			}
		})
	}
}

// questionInputs that are no question the card can show.
var badQuestions = []string{
	`{}`, `{"questions":[]}`, `{"questions":{}}`, `{"questions":[{"question":""}]}`,
	`{"questions":[{"question":"a","options":[{"label":""}]}]}`,
	`{"questions":[{"question":"a"},{"question":"a"}]}`,
	`{"questions":[{"question":"a","options":[{"label":"x"},{"label":"x"}]}]}`,
	`{"questions":[{"question":"a","multiSelect":"yes"}]}`,
}

func TestParseQuestions(t *testing.T) {
	qs, err := approval.ParseQuestions(json.RawMessage(askInput))
	if err != nil || len(qs) != 2 || qs[0].Header != "Size" || qs[0].Options[1].Description != "slow" || !qs[1].MultiSelect || len(qs[1].Options) != 3 {
		t.Fatalf("%+v %v", qs, err)
	}
	for _, in := range badQuestions {
		if _, err := approval.ParseQuestions(json.RawMessage(in)); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
	if !approval.IsQuestionCall("ci-claude/AskUserQuestion") || approval.IsQuestionCall("AskUserQuestion") || approval.IsQuestionCall("ci/Bash") {
		t.Fatal("IsQuestionCall")
	}
}

func FuzzAnswerQuestions(f *testing.F) {
	f.Add([]byte(askInput), []byte(`{"answers":{"#1":{"options":[2]}}}`))
	for _, tt := range answerCases {
		f.Add([]byte(askInput), []byte(tt.picks))
	}
	f.Fuzz(func(t *testing.T, args, picks []byte) {
		canon, err := approval.Canonicalize(args)
		if err != nil {
			return
		}
		qs, qerr := approval.ParseQuestions(canon)
		out, err := approval.AnswerQuestions(canon, picks)
		if err != nil {
			return
		}
		if qerr != nil {
			t.Fatalf("answered questions it cannot read: %v", qerr)
		}
		ans := approval.QuestionAnswers(out)
		if len(ans) == 0 {
			t.Fatalf("answered with no answer: %s", out)
		}
		for k, v := range ans {
			found := false
			for _, q := range qs {
				found = found || q.Question == k
			}
			if !found || v == "" {
				t.Fatalf("answer %q=%q to no question", k, v)
			}
		}
		if again, err := approval.AnswerQuestions(out, out); err != nil || string(again) != string(out) {
			t.Fatalf("the answered input is not its own answer: %v", err)
		}
	})
}
