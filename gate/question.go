package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/clip"
	"github.com/hitlbot/hitlbot/internal/redact"
	"github.com/hitlbot/hitlbot/words"
)

// Questions: Claude Code's AskUserQuestion (approval/question.go). The
// hook asks it as any call, in its lane, always with a person (no policy,
// no grant answers a question), and its card asks the questions. The
// person's answer is an edit of the call (Decision.Edits) that Editor
// checks: the input as asked plus "answers"; the claim binds it to the
// hash the card showed, so it is taken once, audited (confirm with the
// proposed hash) and every card ends answered. The agent is allowed with
// updatedInput = that answered input, as Claude Code expects. A plain
// approve (a typed 确认, a button of an older card) answers nothing: the
// Dispatcher fails it, and the agent is denied, never allowed without
// answers.

// Editor is the engine's approval.EditChecker: an answer to another
// agent's question is checked here (approval.AnswerQuestions); every
// other edit goes to Next (hitlbot's tools; nil: no other call may be
// edited, as another agent's call may not).
type Editor struct {
	// Next checks edits of hitlbot's own calls.
	Next approval.EditChecker
}

var _ approval.EditChecker = Editor{}

// errNotEditable refuses an edit of another agent's call that is no
// question: it is allowed as shown, or not at all.
var errNotEditable = errors.New("another agent's call cannot be edited")

// CheckEdit implements approval.EditChecker.
func (e Editor) CheckEdit(ctx context.Context, a *approval.Approval, c approval.Call, args json.RawMessage) (approval.EditedCall, error) {
	if approval.IsQuestionCall(c.Tool) {
		answered, err := approval.AnswerQuestions(c.Args, args)
		if err != nil {
			return approval.EditedCall{}, err
		}
		return approval.EditedCall{Args: answered, Summary: c.Summary, SummaryZH: c.SummaryZH, Risk: a.Risk,
			Reason: a.Reason, ReasonZH: a.ReasonZH, Approvers: a.Approvers}, nil
	}
	if IsAgentCall(c.Tool) || e.Next == nil {
		return approval.EditedCall{}, errNotEditable
	}
	return e.Next.CheckEdit(ctx, a, c, args)
}

// notAnswered is the result of a question approved without an answer.
const notAnswered = "approved without an answer; answer the question on its card (or decline it)"

// questionPreview is what a person reads of an AskUserQuestion call: per
// question its number, header, text and options ("1. Small — fast"),
// a multi-select marked; summary "<first question>".
func questionPreview(qs []approval.Question, lang string) (summary, preview string) {
	var b strings.Builder
	for i, q := range qs {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(strconv.Itoa(i+1) + ". ")
		if h := cleanLine(q.Header, 60); h != "" {
			b.WriteString("[" + h + "] ")
		}
		b.WriteString(redact.Clean(q.Question, 500))
		if q.MultiSelect {
			b.WriteString(" " + words.In(lang, words.QuestionMulti))
		}
		for j, o := range q.Options {
			b.WriteString("\n   " + strconv.Itoa(j+1) + ". " + cleanLine(o.Label, 200))
			if d := cleanLine(o.Description, 300); d != "" {
				b.WriteString(" — " + d)
			}
		}
	}
	return clip.FirstLine(redact.Clean(qs[0].Question, 200)), b.String()
}

// questionTimedOut is the deny of a question nobody answered within the
// hook's wait.
func questionTimedOut(wait fmt.Stringer, ans Answer) string {
	return fmt.Sprintf("nobody answered the question within %s; approval %s was withdrawn and its cards say so. "+
		"Go on without the answer, or ask again if it is still needed (a new question).", wait, ans.ID)
}

// answerLines are the answers of an answered AskUserQuestion input, one
// line per question answered, in the questions' order: "question →
// answer", redacted; "" when it holds no answer.
func answerLines(args json.RawMessage) string {
	ans := approval.QuestionAnswers(args)
	qs, err := approval.ParseQuestions(args)
	if ans == nil || err != nil {
		return ""
	}
	var lines []string
	for _, q := range qs {
		if a, ok := ans[q.Question]; ok {
			lines = append(lines, cleanLine(q.Question, 200)+" → "+cleanLine(a, 500))
		}
	}
	return strings.Join(lines, "\n")
}
