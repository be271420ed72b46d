package approval

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Typed answers. A question is answered in a chat with text (the answer
// command "回答 <code> …" of package channels, the inputs of a DingTalk
// card): ParseAnswer reads one question's text, ParseAnswers a whole
// answer, into the edit AnswerQuestions checks. One question's text is:
//
//   - option numbers, as the card numbers them: "2"; several, for a
//     multi-select, separated by commas, 、 or spaces ("1,3", "1，3",
//     "1 3"); full-width digits count. A number that is no option, or
//     several for a single choice, is refused (AnswerTextError): a
//     mistyped number never becomes an answer;
//   - anything else: the person's own answer, as written. A question
//     without options takes every text as written ("3" is the answer 3).
//
// A card of one question takes the whole text as its answer. A card of
// several takes one line per question answered, "<n>: <answer>" (a
// full-width colon counts), in any order; on one line, the answers may be
// separated by ; or ；.

// AnswerFault is what is wrong with a typed answer.
type AnswerFault int

// Faults of a typed answer.
const (
	AnswerEmpty          AnswerFault = iota + 1 // nothing is answered
	AnswerNoSuchOption                          // Option is not 1..Options of question Question
	AnswerOneOption                             // several options for single-choice question Question
	AnswerNoSuchQuestion                        // Question is not 1..Questions
	AnswerNeedsLines                            // several questions, and the text is not "<n>: <answer>" lines
	AnswerTwice                                 // question Question is answered twice
	AnswerTooLong                               // question Question's answer is longer than MaxAnswerRunes
)

// AnswerTextError is a typed answer refused, and why. It wraps
// ErrQuestion; channels word it for the person (en, zh).
type AnswerTextError struct {
	Fault AnswerFault
	// Question is the question's number (1-based), 0 when none is meant.
	Question int
	// Option is the number typed that is no option; Options how many the
	// question has; Questions how many the card asks.
	Option, Options, Questions int
}

// Error implements error (English, for logs and the API).
func (e *AnswerTextError) Error() string {
	switch e.Fault {
	case AnswerNoSuchOption:
		return fmt.Sprintf("question %d has options 1 to %d, not %d", e.Question, e.Options, e.Option)
	case AnswerOneOption:
		return fmt.Sprintf("question %d takes one option only", e.Question)
	case AnswerNoSuchQuestion:
		return fmt.Sprintf("there are questions 1 to %d, not %d", e.Questions, e.Question)
	case AnswerNeedsLines:
		return fmt.Sprintf("%d questions: answer each on its own line, <number>: <answer>", e.Questions)
	case AnswerTwice:
		return fmt.Sprintf("question %d is answered twice", e.Question)
	case AnswerTooLong:
		return fmt.Sprintf("the answer to question %d is longer than %d characters", e.Question, MaxAnswerRunes)
	}
	return "no answer"
}

// Unwrap makes the error an ErrQuestion.
func (e *AnswerTextError) Unwrap() error { return ErrQuestion }

// QuestionPick is one question's answer as an edit holds it (see
// AnswerQuestions): options by number, or the person's own text.
type QuestionPick struct {
	Options []int  `json:"options,omitempty"`
	Other   string `json:"other,omitempty"`
}

// ParseAnswer reads the typed answer text to question q, number n
// (1-based, for the error): see the package's typed answers. Empty text
// (spaces only) is the zero pick with ok false.
func ParseAnswer(q Question, n int, text string) (p QuestionPick, ok bool, err error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return QuestionPick{}, false, nil
	}
	if utf8.RuneCountInString(text) > MaxAnswerRunes {
		return QuestionPick{}, false, &AnswerTextError{Fault: AnswerTooLong, Question: n}
	}
	if len(q.Options) == 0 {
		return QuestionPick{Other: text}, true, nil
	}
	nums, isNums := optionNumbers(text)
	if !isNums {
		return QuestionPick{Other: text}, true, nil
	}
	seen := map[int]bool{}
	for _, k := range nums {
		if k < 1 || k > len(q.Options) {
			return QuestionPick{}, false, &AnswerTextError{Fault: AnswerNoSuchOption, Question: n, Option: k, Options: len(q.Options)}
		}
		if !seen[k] {
			seen[k] = true
			p.Options = append(p.Options, k)
		}
	}
	if len(p.Options) > 1 && !q.MultiSelect {
		return QuestionPick{}, false, &AnswerTextError{Fault: AnswerOneOption, Question: n}
	}
	return p, true, nil
}

// optionNumbers reads text as option numbers: every field (separated by
// commas, 、 or spaces) digits only, full-width ones folded. ok is false
// for any other text. A number too large to be an option is kept as
// large (it is refused as no option).
func optionNumbers(text string) (nums []int, ok bool) {
	fields := strings.FieldsFunc(text, func(r rune) bool {
		return r == ',' || r == '，' || r == '、' || unicode.IsSpace(r)
	})
	if len(fields) == 0 {
		return nil, false
	}
	for _, f := range fields {
		var b strings.Builder
		for _, r := range f {
			switch {
			case r >= '0' && r <= '9':
				b.WriteRune(r)
			case r >= '０' && r <= '９':
				b.WriteRune(r - '０' + '0')
			default:
				return nil, false
			}
		}
		s := strings.TrimLeft(b.String(), "0")
		if len(s) > 6 {
			s = "999999"
		}
		k, _ := strconv.Atoi(s) // "" (all zeros) is 0: no option
		nums = append(nums, k)
	}
	return nums, true
}

// ParseAnswers reads a typed answer to the questions qs (see the
// package's typed answers) and returns the edit AnswerQuestions takes:
// {"answers": {"#<n>": QuestionPick}}. A refused text is an
// *AnswerTextError.
func ParseAnswers(qs []Question, text string) (json.RawMessage, error) {
	picks := map[string]QuestionPick{}
	if len(qs) == 1 {
		p, ok, err := ParseAnswer(qs[0], 1, text)
		if err != nil {
			return nil, err
		}
		if ok {
			picks["#1"] = p
		}
	} else {
		segs := answerLines(text)
		for _, seg := range segs {
			n, rest, ok := numbered(seg)
			if !ok {
				return nil, &AnswerTextError{Fault: AnswerNeedsLines, Questions: len(qs)}
			}
			if n < 1 || n > len(qs) {
				return nil, &AnswerTextError{Fault: AnswerNoSuchQuestion, Question: n, Questions: len(qs)}
			}
			key := "#" + strconv.Itoa(n)
			if _, twice := picks[key]; twice {
				return nil, &AnswerTextError{Fault: AnswerTwice, Question: n}
			}
			p, ok, err := ParseAnswer(qs[n-1], n, rest)
			if err != nil {
				return nil, err
			}
			if ok {
				picks[key] = p
			}
		}
	}
	if len(picks) == 0 {
		return nil, &AnswerTextError{Fault: AnswerEmpty}
	}
	return json.Marshal(map[string]any{"answers": picks})
}

// answerLines splits the answer to several questions: its non-blank
// lines; a single line of several "<n>:" parts joined by ; or ； is split
// there too.
func answerLines(text string) []string {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 1 {
		parts := strings.FieldsFunc(lines[0], func(r rune) bool { return r == ';' || r == '；' })
		all := len(parts) > 1
		for _, p := range parts {
			if _, _, ok := numbered(p); !ok {
				all = false
			}
		}
		if all {
			return parts
		}
	}
	return lines
}

// numbered reads "<n>: <answer>" (or "<n>：<answer>"), n digits.
func numbered(s string) (n int, rest string, ok bool) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return r == ':' || r == '：' })
	if i <= 0 {
		return 0, "", false
	}
	nums, isNums := optionNumbers(strings.TrimSpace(s[:i]))
	if !isNums || len(nums) != 1 {
		return 0, "", false
	}
	_, size := utf8.DecodeRuneInString(s[i:])
	return nums[0], s[i+size:], true
}
