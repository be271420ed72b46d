package cards

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/words"
)

// Questions on cards. Another agent's AskUserQuestion (approval/
// question.go) is shown as its questions (View.Questions): each with its
// options and a free-text answer. A pending view carries the Answer
// button value (decision AnswerDecision, bound to the payload hash shown);
// 取消 (Reject) declines to answer. On Feishu the card's form holds, per
// question, a select of its options (multi_select_static for a
// multi-select; named FeishuQuestionField(n), option values "1".."k") and
// an input for the person's own answer (FeishuOtherField(n)); a card of
// one single-choice question of at most feishuOptionButtons options shows
// its options as buttons instead, each submitting the form with its
// option's number (ButtonValue.Option). ParseFeishuAnswers reads a submit
// into the edit the engine checks (approval.AnswerQuestions). The final
// view of an answered question says the answers (the Result: "question →
// answer" per line, the gate's Dispatcher's content).

// AnswerDecision is the decision of a question card's answer buttons.
const AnswerDecision approval.Verb = "answer"

// QuestionView is one question as a card shows it.
type QuestionView struct {
	Question string               `json:"question"`
	Header   string               `json:"header,omitempty"`
	Multi    bool                 `json:"multi_select,omitempty"`
	Options  []QuestionOptionView `json:"options,omitempty"`
	// Answer is the answer the call's input holds (an answered question's
	// final card), "" while it has none.
	Answer string `json:"answer,omitempty"`
	// Default is what Question ends with when an empty answer takes a
	// default (an MCP server's field: " (default: X)"), "" for none; a
	// card that cuts Question keeps it (DingTalk). Question says it, so
	// the view's JSON does not.
	Default string `json:"-"`
}

// QuestionOptionView is an option of a QuestionView.
type QuestionOptionView struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// questionsOf are the questions of a question approval's view; nil for
// any other approval.
func questionsOf(a *approval.Approval, lang string) []QuestionView {
	if !a.IsQuestion() {
		return nil
	}
	qs, err := approval.ParseQuestions(a.Calls[0].Args)
	if err != nil {
		return nil
	}
	out := make([]QuestionView, len(qs))
	answers := approval.QuestionAnswers(a.Calls[0].Args)
	defaults := approval.QuestionDefaults(a.Calls[0].Args)
	for i, q := range qs {
		qv := QuestionView{Question: oneLine(q.Question), Header: oneLine(q.Header), Multi: q.MultiSelect, Answer: oneLine(answers[q.Question])}
		if i < len(defaults) && defaults[i] != "" {
			// An MCP server's field with a default: an empty answer takes it.
			qv.Default = words.In(lang, words.ElicitDefault, oneLine(defaults[i]))
			qv.Question += qv.Default
		}
		for _, o := range q.Options {
			qv.Options = append(qv.Options, QuestionOptionView{Label: oneLine(o.Label), Description: oneLine(o.Description)})
		}
		out[i] = qv
	}
	return out
}

// AnswerCommand is the answer command with an approval's code, as cards
// and notices show it: "回答 <code>" (the word is the same in every
// language, as 确认 is; package channels also reads "answer").
func AnswerCommand(code string) string {
	if code == "" {
		return "回答"
	}
	return "回答 " + code
}

// QuestionTyped is how v's questions are answered by typing (the answer
// command, with v's code), in lang.
func QuestionTyped(v View, lang string) string {
	if len(v.Questions) > 1 {
		return words.In(lang, words.QuestionTypedMany, AnswerCommand(v.Code))
	}
	return words.In(lang, words.QuestionTypedOne, AnswerCommand(v.Code))
}

// FeishuQuestionField is the name of question n's (1-based) select.
func FeishuQuestionField(n int) string { return "q_" + strconv.Itoa(n) }

// FeishuOtherField is the name of question n's free-text input.
func FeishuOtherField(n int) string { return "other_" + strconv.Itoa(n) }

// feishuOptionButtons is the most options a card of one single-choice
// question shows as buttons (more: a select).
const feishuOptionButtons = 4

// The names of a question card's buttons.
const (
	feishuAnswerName  = "answer"
	feishuOptionName  = "option_"
	feishuDeclineName = "decline"
)

// optionRunes is how much of an option's label a select shows, by the
// card's compaction (View.fit): a card of many long options is made to
// keep Feishu's 30 KB (the questions in full are in the preview, which
// compaction cuts first; the web page shows them whole).
var optionRunes = []int{100, 60, 30, 16, 8}

// optionButtons reports whether v's card shows its options as buttons.
func optionButtons(v View) bool {
	return len(v.Questions) == 1 && !v.Questions[0].Multi && len(v.Questions[0].Options) > 0 && len(v.Questions[0].Options) <= feishuOptionButtons
}

// feishuQuestionForm is the form of a pending question card: per question
// its select (or, see optionButtons, its option buttons) and its free-text
// input, then Answer and Decline.
func feishuQuestionForm(v View, lang string) map[string]any {
	l := words.Of(lang)
	var els []any
	for i, q := range v.Questions {
		n := i + 1
		if len(q.Options) > 0 && !optionButtons(v) {
			var opts []any
			for j, o := range q.Options {
				opts = append(opts, map[string]any{"text": plainText(excerpt(o.Label, optionRunes[min(v.fit, len(optionRunes)-1)])), "value": strconv.Itoa(j + 1)})
			}
			tag := "select_static"
			if q.Multi {
				tag = "multi_select_static"
			}
			els = append(els, map[string]any{"tag": tag, "name": FeishuQuestionField(n), "width": "fill",
				"placeholder": plainText(words.Text(l, words.QuestionChoose, n)), "options": opts})
		}
		els = append(els, map[string]any{"tag": "input", "name": FeishuOtherField(n), "width": "fill",
			"placeholder": plainText(words.Text(l, words.QuestionOther, n)), "max_length": approval.MaxAnswerRunes})
	}
	var cols []any
	if optionButtons(v) {
		for j, o := range v.Questions[0].Options {
			val := *v.Answer
			val.Option = j + 1
			cols = append(cols, feishuButtonColumn(excerpt(o.Label, 40), "primary", feishuOptionName+strconv.Itoa(j+1), val))
		}
	}
	cols = append(cols, feishuButtonColumn(words.Text(l, words.QuestionAnswer), "primary", feishuAnswerName, *v.Answer),
		feishuButtonColumn(words.Text(l, words.QuestionDecline), "danger", feishuDeclineName, *v.Reject))
	els = append(els, map[string]any{"tag": "column_set", "flex_mode": "flow", "columns": cols})
	return map[string]any{"tag": "form", "name": feishuFormName, "elements": els}
}

// ParseFeishuAnswers reads a question card's submit (val is the pressed
// button's value: Answer, or an option button's with its Option) for a
// card of n questions: call "#1" -> {"answers": {"#k": {"options": […],
// "other": "…"}}} for each question the form answers; an option button
// answers question 1 with its option and nothing else. A select value
// that is not an option's number, or a field that is not text, is an
// error: the click decides nothing; a form that answers nothing is an
// error too.
func ParseFeishuAnswers(form map[string]any, val ButtonValue) (map[string]json.RawMessage, error) {
	type pick struct {
		Options []int  `json:"options,omitempty"`
		Other   string `json:"other,omitempty"`
	}
	picks := map[string]pick{}
	if val.Option > 0 {
		picks["#1"] = pick{Options: []int{val.Option}}
	} else {
		for n := 1; n <= approval.MaxQuestions; n++ {
			var p pick
			switch raw := form[FeishuQuestionField(n)].(type) {
			case nil:
			case string:
				if raw != "" {
					k, err := optionNumber(raw)
					if err != nil {
						return nil, err
					}
					p.Options = append(p.Options, k)
				}
			case []any:
				if len(raw) > approval.MaxQuestionOptions {
					return nil, fmt.Errorf("card form: %s holds too many options", FeishuQuestionField(n))
				}
				for _, x := range raw {
					s, ok := x.(string)
					if !ok {
						return nil, fmt.Errorf("card form: %s holds a value that is not text", FeishuQuestionField(n))
					}
					k, err := optionNumber(s)
					if err != nil {
						return nil, err
					}
					p.Options = append(p.Options, k)
				}
			default:
				return nil, fmt.Errorf("card form: %s is not a choice", FeishuQuestionField(n))
			}
			switch raw := form[FeishuOtherField(n)].(type) {
			case nil:
			case string:
				p.Other = strings.TrimSpace(raw)
			default:
				return nil, fmt.Errorf("card form: %s is not text", FeishuOtherField(n))
			}
			if len(p.Options) > 0 || p.Other != "" {
				picks["#"+strconv.Itoa(n)] = p
			}
		}
	}
	if len(picks) == 0 {
		return nil, fmt.Errorf("card form: no answer")
	}
	b, err := json.Marshal(map[string]any{"answers": picks})
	if err != nil {
		return nil, err
	}
	return map[string]json.RawMessage{"#1": b}, nil
}

// optionNumber reads a select's value: an option's number, 1 to
// approval.MaxQuestionOptions.
func optionNumber(s string) (int, error) {
	k, err := strconv.Atoi(s)
	if err != nil || k < 1 || k > approval.MaxQuestionOptions || strconv.Itoa(k) != s {
		return 0, fmt.Errorf("card form: %q is not an option's number", s)
	}
	return k, nil
}
