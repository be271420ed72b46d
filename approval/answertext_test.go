package approval

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// typedQuestions: one single choice, one multi-select, one without
// options.
const typedQuestions = `{"questions":[` +
	`{"question":"Which size?","options":[{"label":"Small"},{"label":"Large"}]},` +
	`{"question":"Which extras?","options":[{"label":"Cache"},{"label":"Logs"},{"label":"Metrics"}],"multiSelect":true},` +
	`{"question":"How many replicas?"}]}`

const oneQuestion = `{"questions":[{"question":"Which size?","options":[{"label":"Small"},{"label":"Large"}]}]}`

var typedAnswerTests = []struct {
	name, args, text string
	answers          string      // the answers AnswerQuestions makes of the edit
	fault            AnswerFault // or the refusal
}{
	{"an option", oneQuestion, "2", `{"Which size?":"Large"}`, 0},
	{"a full-width option", oneQuestion, " ２ ", `{"Which size?":"Large"}`, 0},
	{"free text", oneQuestion, "Medium, please", `{"Which size?":"Medium, please"}`, 0},
	{"free text with a number", oneQuestion, "2 of them", `{"Which size?":"2 of them"}`, 0},
	{"no such option", oneQuestion, "3", "", AnswerNoSuchOption},
	{"option zero", oneQuestion, "0", "", AnswerNoSuchOption},
	{"two options of a single choice", oneQuestion, "1,2", "", AnswerOneOption},
	{"nothing", oneQuestion, "  ", "", AnswerEmpty},
	{"lines", typedQuestions, "1: 2\n2: 1,3\n3: 4", `{"How many replicas?":"4","Which extras?":"Cache, Metrics","Which size?":"Large"}`, 0},
	{"full-width colons and 、", typedQuestions, "2：1、3\n1：Small please", `{"Which extras?":"Cache, Metrics","Which size?":"Small please"}`, 0},
	{"semicolons on one line", typedQuestions, "1:1；2:2", `{"Which extras?":"Logs","Which size?":"Small"}`, 0},
	{"some questions only", typedQuestions, "2: 1 2", `{"Which extras?":"Cache, Logs"}`, 0},
	{"several questions, no lines", typedQuestions, "2", "", AnswerNeedsLines},
	{"no such question", typedQuestions, "4: 1", "", AnswerNoSuchQuestion},
	{"a question twice", typedQuestions, "1: 1\n1: 2", "", AnswerTwice},
	{"a bad option on a line", typedQuestions, "1: 1\n2: 1,4", "", AnswerNoSuchOption},
	{"empty lines", typedQuestions, "1:\n2: ", "", AnswerEmpty},
	{"too long", oneQuestion, strings.Repeat("x", MaxAnswerRunes+1), "", AnswerTooLong},
}

func TestParseAnswers(t *testing.T) {
	for _, tt := range typedAnswerTests {
		t.Run(tt.name, func(t *testing.T) {
			qs, err := ParseQuestions(json.RawMessage(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			edit, err := ParseAnswers(qs, tt.text)
			if tt.fault != 0 {
				var te *AnswerTextError
				if !errors.As(err, &te) || te.Fault != tt.fault || !errors.Is(err, ErrQuestion) {
					t.Fatalf("%q: %s, %v; want fault %d", tt.text, edit, err, tt.fault)
				}
				return
			}
			if err != nil {
				t.Fatalf("%q: %v", tt.text, err)
			}
			answered, err := AnswerQuestions(json.RawMessage(tt.args), edit)
			if err != nil {
				t.Fatalf("%q: edit %s: %v", tt.text, edit, err)
			}
			var in struct {
				Answers json.RawMessage `json:"answers"`
			}
			_ = json.Unmarshal(answered, &in)
			if string(in.Answers) != tt.answers {
				t.Fatalf("%q: answers %s, want %s", tt.text, in.Answers, tt.answers)
			}
		})
	}
}

// FuzzParseAnswers: whatever the text, the parser never panics, answers
// the same twice, and what it accepts AnswerQuestions accepts too; a text
// of digits only on a question with options is never taken as free text.
func FuzzParseAnswers(f *testing.F) {
	for _, tt := range typedAnswerTests {
		f.Add(tt.text, tt.args == oneQuestion)
	}
	f.Add("1: 1;2: 9", false)
	f.Add("\u00a0１\u3000", true)
	many, _ := ParseQuestions(json.RawMessage(typedQuestions))
	one, _ := ParseQuestions(json.RawMessage(oneQuestion))
	f.Fuzz(func(t *testing.T, text string, single bool) {
		qs, args := many, typedQuestions
		if single {
			qs, args = one, oneQuestion
		}
		edit, err := ParseAnswers(qs, text)
		again, err2 := ParseAnswers(qs, text)
		if string(edit) != string(again) || (err == nil) != (err2 == nil) {
			t.Fatalf("%q: %s %v, then %s %v", text, edit, err, again, err2)
		}
		if err != nil {
			var te *AnswerTextError
			if !errors.As(err, &te) || te.Error() == "" {
				t.Fatalf("%q: %v is not an AnswerTextError", text, err)
			}
			return
		}
		answered, err := AnswerQuestions(json.RawMessage(args), edit)
		if err != nil {
			t.Fatalf("%q: the edit %s is refused: %v", text, edit, err)
		}
		if single {
			if _, isNums := optionNumbers(strings.TrimSpace(text)); isNums {
				if a := QuestionAnswers(answered)["Which size?"]; a != "Small" && a != "Large" {
					t.Fatalf("%q: digits answered as %q", text, a)
				}
			}
		}
	})
}

// TestAnswerQuestionsTyped: {"typed": …} (a DingTalk card's inputs) is
// read by ParseAnswer; a refused text keeps its AnswerTextError.
func TestAnswerQuestionsTyped(t *testing.T) {
	args := json.RawMessage(typedQuestions)
	got, err := AnswerQuestions(args, json.RawMessage(`{"answers":{"#1":{"typed":"2"},"#2":{"typed":"1，3"},"#3":{"typed":""}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if a := QuestionAnswers(got); len(a) != 2 || a["Which size?"] != "Large" || a["Which extras?"] != "Cache, Metrics" {
		t.Fatalf("answers %v", a)
	}
	_, err = AnswerQuestions(args, json.RawMessage(`{"answers":{"#1":{"typed":"3"}}}`))
	var te *AnswerTextError
	if !errors.As(err, &te) || te.Fault != AnswerNoSuchOption || te.Question != 1 || te.Option != 3 || te.Options != 2 {
		t.Fatalf("a bad number: %v", err)
	}
	if _, err := AnswerQuestions(args, json.RawMessage(`{"answers":{"#1":{"typed":"2","other":"x"}}}`)); err == nil {
		t.Fatal("typed with other was taken")
	}
}
