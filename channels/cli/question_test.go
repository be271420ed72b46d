package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels/cli"
	"github.com/hitlbot/hitlbot/internal/waitfor"
	"github.com/hitlbot/hitlbot/words"
)

const questionInput = `{"questions":[` +
	`{"question":"Which size?","header":"Size","options":[{"label":"Small"},{"label":"Large"}],"multiSelect":false},` +
	`{"question":"Which extras?","header":"Extras","options":[{"label":"Cache"},{"label":"Logs"},{"label":"Metrics"}],"multiSelect":true}]}`

// askQuestion asks another agent's question in the chat (as the gate
// does), alice its requester and approver.
func (h *harness) askQuestion(t *testing.T) *approval.Approval {
	t.Helper()
	canon, _, err := approval.HashCall("ci-claude/AskUserQuestion", json.RawMessage(questionInput))
	if err != nil {
		t.Fatal(err)
	}
	session := approval.SessionKey("cli:" + cli.ChatID + "#agent:ci")
	a, err := h.engine.Request(context.Background(), approval.Request{ID: approval.NewID(session), Session: session, Channel: cli.Name, ChatID: cli.ChatID,
		Requester: "alice", Calls: []approval.Call{{Tool: "ci-claude/AskUserQuestion", Args: canon, Summary: "ci-claude asks you: Which size?"}},
		Verdict: approval.Verdict{NeedsApproval: true, Risk: approval.RiskMedium, Timeout: time.Hour}, Summary: "ci-claude asks you: Which size?",
		Preview: "1. [Size] Which size?\n   1. Small\n   2. Large"})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// cliAnswers: what the person types at each question, and the answers
// Claude Code reads ("": declined).
var cliAnswers = []struct {
	name   string
	lines  []string
	want   string
	status approval.State
}{
	{"options and a multi-select", []string{"2", "1, 3"}, `{"Which extras?":"Cache, Metrics","Which size?":"Large"}`, approval.StateExecuted},
	{"free text", []string{"Medium please", ""}, `{"Which size?":"Medium please"}`, approval.StateExecuted},
	{"every question skipped declines", []string{"", ""}, "", approval.StateRejected},
}

func TestQuestionAnsweredInTheChat(t *testing.T) {
	for _, tt := range cliAnswers {
		t.Run(tt.name, func(t *testing.T) {
			in, w := io.Pipe()
			h := start(t, in)
			h.out.waitFor(t, cli.Prompt, 1)
			a := h.askQuestion(t)
			h.out.waitFor(t, words.In("en", words.QuestionCLIPrompt, 1), 1)
			if out := h.out.String(); !strings.Contains(out, "Which size?") || strings.Contains(out, cli.ConfirmPrompt("en")) {
				t.Fatalf("the question's prompt:\n%s", out)
			}
			fmt.Fprintln(w, tt.lines[0])
			h.out.waitFor(t, words.In("en", words.QuestionCLIPrompt, 2), 1)
			fmt.Fprintln(w, tt.lines[1])
			var got *approval.Approval
			waitfor.True(t, "the question ended", func() bool {
				var err error
				if got, err = h.engine.Get(context.Background(), a.ID); err != nil {
					t.Fatal(err)
				}
				return got.State.Terminal()
			})
			if got.State != tt.status {
				t.Fatalf("state %s, want %s\n%s", got.State, tt.status, h.out.String())
			}
			if tt.want != "" {
				var in struct {
					Answers json.RawMessage `json:"answers"`
				}
				_ = json.Unmarshal(got.Calls[0].Args, &in)
				if string(in.Answers) != tt.want || got.DecidedBy != "alice" || got.DecidedVia != approval.SourceCLI {
					t.Fatalf("record %s by %s via %s", got.Calls[0].Args, got.DecidedBy, got.DecidedVia)
				}
			}
			w.Close()
			_ = h.ended(t)
		})
	}
}

// TestQuestionRefusedAnswerAskedAgain: a number that is no option of the
// question, or several for a single choice, is refused in words (the
// typed answer's rules, approval.ParseAnswer) and the question is asked
// again; the answer typed then counts.
func TestQuestionRefusedAnswerAskedAgain(t *testing.T) {
	in, w := io.Pipe()
	h := start(t, in)
	h.out.waitFor(t, cli.Prompt, 1)
	a := h.askQuestion(t)
	ask1 := words.In("en", words.QuestionCLIPrompt, 1)
	h.out.waitFor(t, ask1, 1)
	fmt.Fprintln(w, "3")
	h.out.waitFor(t, ask1, 2)
	fmt.Fprintln(w, "1, 2")
	h.out.waitFor(t, ask1, 3)
	fmt.Fprintln(w, "1")
	h.out.waitFor(t, words.In("en", words.QuestionCLIPrompt, 2), 1)
	fmt.Fprintln(w, "")
	var got *approval.Approval
	waitfor.True(t, "the question ended", func() bool {
		var err error
		if got, err = h.engine.Get(context.Background(), a.ID); err != nil {
			t.Fatal(err)
		}
		return got.State.Terminal()
	})
	out := h.out.String()
	for _, want := range []string{"there is no option 3", "Question 1 takes one option only"} {
		if !strings.Contains(out, want) {
			t.Errorf("the chat lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(string(got.Calls[0].Args), `"answers":{"Which size?":"Small"}`) {
		t.Fatalf("record %s (%s)", got.Calls[0].Args, got.State)
	}
	w.Close()
	_ = h.ended(t)
}
