package approval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Questions. Claude Code asks its user with the tool AskUserQuestion; its
// PermissionRequest hook (package gate) sends that call like any other,
// as one call "<agent>/AskUserQuestion" whose arguments are the tool's
// input: {"questions":[{"question","header","options":[{"label",
// "description"}],"multiSelect"}]}. Such an approval is a question: its
// cards show the questions, their options and a free-text answer, and a
// person answers instead of approving. The answer is an edit of the
// call's arguments (Decision.Edits, checked by the gate's EditChecker
// with AnswerQuestions): the original input plus "answers", keyed by
// question text, a multi-select's labels joined with ", " as Claude Code
// joins a list. So the answer is claimed, bound to the hash the card
// showed, audited and settled on every card as any approval is.

// QuestionTool is the name of Claude Code's tool that asks its user.
const QuestionTool = "AskUserQuestion"

// Bounds of a question approval: what a card can show, and an answer.
const (
	// MaxQuestions bounds the questions of one question approval (an
	// MCP server's elicitation asks up to this many fields);
	// MaxAskQuestions those of an AskUserQuestion call (the gate's bound).
	MaxQuestions       = 16
	MaxAskQuestions    = 8
	MaxQuestionOptions = 20
	MaxAnswerRunes     = 1000
	maxQuestionRunes   = 1000
	maxOptionRunes     = 300
)

// Question is one question of an AskUserQuestion call.
type Question struct {
	Question    string           `json:"question"`
	Header      string           `json:"header,omitempty"`
	Options     []QuestionOption `json:"options,omitempty"`
	MultiSelect bool             `json:"multiSelect,omitempty"`
}

// QuestionOption is one option of a Question.
type QuestionOption struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// IsQuestionCall reports whether tool names another agent's
// AskUserQuestion call ("<agent>/AskUserQuestion").
func IsQuestionCall(tool string) bool {
	_, t, ok := strings.Cut(tool, "/")
	return ok && t == QuestionTool
}

// IsQuestion reports whether a is a question: one call of another
// agent's AskUserQuestion.
func (a *Approval) IsQuestion() bool {
	return a != nil && len(a.Calls) == 1 && IsQuestionCall(a.Calls[0].Tool)
}

// ErrQuestion is the cause of a question input or an answer refused.
var ErrQuestion = errors.New("question")

// ParseQuestions reads the questions of an AskUserQuestion input: 1 to
// MaxQuestions, each with a non-empty text unique among them, at most
// MaxQuestionOptions options with non-empty labels unique in the
// question. Anything else is an error wrapping ErrQuestion.
func ParseQuestions(args json.RawMessage) ([]Question, error) {
	var in struct {
		Questions []Question `json:"questions"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, fmt.Errorf("%w: the input is not {\"questions\": [...]}: %v", ErrQuestion, err)
	}
	if len(in.Questions) == 0 || len(in.Questions) > MaxQuestions {
		return nil, fmt.Errorf("%w: 1 to %d questions, not %d", ErrQuestion, MaxQuestions, len(in.Questions))
	}
	seen := map[string]bool{}
	for i, q := range in.Questions {
		if strings.TrimSpace(q.Question) == "" || utf8.RuneCountInString(q.Question) > maxQuestionRunes || seen[q.Question] {
			return nil, fmt.Errorf("%w: question %d has no text, is too long or is asked twice", ErrQuestion, i+1)
		}
		seen[q.Question] = true
		if len(q.Options) > MaxQuestionOptions || utf8.RuneCountInString(q.Header) > maxOptionRunes {
			return nil, fmt.Errorf("%w: question %d has more than %d options or a long header", ErrQuestion, i+1, MaxQuestionOptions)
		}
		labels := map[string]bool{}
		for j, o := range q.Options {
			if strings.TrimSpace(o.Label) == "" || labels[o.Label] || utf8.RuneCountInString(o.Label) > maxOptionRunes ||
				utf8.RuneCountInString(o.Description) > maxQuestionRunes {
				return nil, fmt.Errorf("%w: question %d, option %d has no label, a label twice or too long a text", ErrQuestion, i+1, j+1)
			}
			labels[o.Label] = true
		}
	}
	return in.Questions, nil
}

// QuestionAnswers returns the answers an answered AskUserQuestion input
// holds (question text -> answer); nil when it holds none.
func QuestionAnswers(args json.RawMessage) map[string]string {
	var in struct {
		Answers map[string]string `json:"answers"`
	}
	if json.Unmarshal(args, &in) != nil || len(in.Answers) == 0 {
		return nil
	}
	return in.Answers
}

// AnswerQuestions returns the AskUserQuestion input args (canonical) with
// the answers picks give, canonical: args' keys as they are, and
// "answers" keyed by question text. picks is an object whose one key is
// "answers" (besides, optionally, args' own keys with their values as in
// args: the whole input sent back); under it each question, named by its
// text or "#<n>" (1-based), takes one of:
//   - a string: the answer as written (an option's label, or free text);
//   - a list of strings: the labels chosen (one, unless multiSelect),
//     joined with ", ";
//   - {"options": [n, …], "other": "…"}: the options chosen by number
//     (1-based; one unless multiSelect) and free text; on a multi-select
//     the text is one more value, else it stands instead of the option;
//   - {"typed": "…"}: the text a person typed for it (a DingTalk card's
//     input), read by ParseAnswer: option numbers, else free text; a
//     refused text is its *AnswerTextError, returned as it is.
//
// At least one question must be answered, each at most once, each answer
// non-empty and at most MaxAnswerRunes runes. An MCP server's field left
// unanswered takes its default (QuestionDefaults) when it has one. Anything else is an error
// wrapping ErrQuestion, which says what is wrong.
func AnswerQuestions(args, picks json.RawMessage) (json.RawMessage, error) {
	qs, err := ParseQuestions(args)
	if err != nil {
		return nil, err
	}
	var orig, sent map[string]json.RawMessage
	if err := json.Unmarshal(args, &orig); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrQuestion, err)
	}
	if err := json.Unmarshal(picks, &sent); err != nil || sent == nil {
		return nil, fmt.Errorf("%w: the answer is not a JSON object", ErrQuestion)
	}
	for k, v := range sent {
		if k == "answers" {
			continue
		}
		o, ok := orig[k]
		if !ok || !sameJSON(o, v) {
			return nil, fmt.Errorf("%w: only the answers may change (%q differs)", ErrQuestion, k)
		}
	}
	var by map[string]json.RawMessage
	if err := json.Unmarshal(sent["answers"], &by); err != nil || by == nil {
		return nil, fmt.Errorf("%w: answers must be an object of question -> answer", ErrQuestion)
	}
	answers := map[string]string{}
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		i := questionIndex(qs, k)
		if i < 0 {
			return nil, fmt.Errorf("%w: no question %q", ErrQuestion, clipRunes(k, 60))
		}
		q := qs[i]
		if _, twice := answers[q.Question]; twice {
			return nil, fmt.Errorf("%w: question %d answered twice", ErrQuestion, i+1)
		}
		s, err := readAnswer(q, i+1, by[k])
		var te *AnswerTextError
		if errors.As(err, &te) {
			return nil, te // worded for the person (channels.AnswerRefusal)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: question %d: %v", ErrQuestion, i+1, err)
		}
		if s == "" {
			continue
		}
		if utf8.RuneCountInString(s) > MaxAnswerRunes {
			return nil, fmt.Errorf("%w: question %d: the answer is longer than %d characters", ErrQuestion, i+1, MaxAnswerRunes)
		}
		answers[q.Question] = s
	}
	if len(answers) == 0 {
		return nil, fmt.Errorf("%w: no answer to any question", ErrQuestion)
	}
	if isElicitInput(orig) {
		// An MCP server's field left empty takes its default, as the
		// questions showed it: the answer says what is sent.
		for i, d := range QuestionDefaults(args) {
			if _, ok := answers[qs[i].Question]; !ok && d != "" {
				answers[qs[i].Question] = d
			}
		}
	}
	raw, err := json.Marshal(answers)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrQuestion, err)
	}
	orig["answers"] = raw
	out, err := json.Marshal(orig)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrQuestion, err)
	}
	if isElicitInput(orig) {
		// An MCP server's elicitation: the answers must be of its
		// fields' types (elicit.go), or the person is told which is not.
		if _, err := ElicitContent(out); err != nil {
			return nil, err
		}
	}
	return Canonicalize(out)
}

// questionIndex finds the question k names: its text, or "#<n>".
func questionIndex(qs []Question, k string) int {
	for i, q := range qs {
		if q.Question == k {
			return i
		}
	}
	if n, err := strconv.Atoi(strings.TrimPrefix(k, "#")); err == nil && strings.HasPrefix(k, "#") && strconv.Itoa(n) == k[1:] && n >= 1 && n <= len(qs) {
		return n - 1
	}
	return -1
}

// readAnswer reads one question's answer (see AnswerQuestions); "" when it
// answers nothing (no option, no text).
func readAnswer(q Question, n int, raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	var vals []string
	switch {
	case len(raw) > 0 && raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		vals = []string{s}
	case len(raw) > 0 && raw[0] == '[':
		if err := json.Unmarshal(raw, &vals); err != nil {
			return "", fmt.Errorf("the answer is not a list of strings")
		}
	case len(raw) > 0 && raw[0] == '{':
		var p struct {
			Options []int   `json:"options"`
			Other   string  `json:"other"`
			Typed   *string `json:"typed"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return "", fmt.Errorf("the answer is not {options, other} or {typed}")
		}
		if p.Typed != nil {
			if len(p.Options) > 0 || p.Other != "" {
				return "", fmt.Errorf("typed goes alone")
			}
			pick, _, err := ParseAnswer(q, n, *p.Typed)
			if err != nil {
				return "", err
			}
			p.Options, p.Other = pick.Options, pick.Other
		}
		for _, n := range p.Options {
			if n < 1 || n > len(q.Options) {
				return "", fmt.Errorf("no option %d", n)
			}
			vals = append(vals, q.Options[n-1].Label)
		}
		if other := strings.TrimSpace(p.Other); other != "" {
			if q.MultiSelect {
				vals = append(vals, other)
			} else {
				vals = []string{other}
			}
		}
	default:
		return "", fmt.Errorf("the answer must be a string, a list or {options, other}")
	}
	var kept []string
	for _, v := range vals {
		if v = strings.TrimSpace(v); v != "" {
			kept = append(kept, v)
		}
	}
	if len(kept) > 1 && !q.MultiSelect {
		return "", fmt.Errorf("one option only: the question is not multi-select")
	}
	return strings.Join(kept, ", "), nil
}

// sameJSON reports whether two JSON values are the same value.
func sameJSON(a, b json.RawMessage) bool {
	ca, err1 := Canonicalize(a)
	cb, err2 := Canonicalize(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
