package channels_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/gate"
	"github.com/hitlbot/hitlbot/internal/hitltest"
	"github.com/hitlbot/hitlbot/words"
)

// TestTypedConfirmDoesNotAnswerAQuestion: a typed 确认 while another
// agent's question waits in the chat decides nothing (it has no answer):
// the sender is told where to answer, and the question stays open; a
// typed 取消 declines it.
func TestTypedConfirmDoesNotAnswerAQuestion(t *testing.T) {
	g := newRig(t, nil)
	args := json.RawMessage(`{"questions":[{"question":"Which size?","options":[{"label":"Small"},{"label":"Large"}]}]}`)
	a, err := g.engine.Request(context.Background(), approval.Request{ID: approval.NewID("fake:c1"), Session: "fake:c1", Channel: "fake", ChatID: "c1",
		Requester: "alice", Calls: []approval.Call{{Tool: "ci/AskUserQuestion", Args: args}},
		Verdict: approval.Verdict{NeedsApproval: true, Risk: approval.RiskMedium, Timeout: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	g.send(t, msg("alice", "确认"))
	g.barrier(t, "alice")
	if st := g.state(t, a.ID); st != approval.StatePending || !g.ch.hasText("notice", words.In("en", words.QuestionElsewhere)) {
		t.Fatalf("state %s; texts %v", st, g.ch.texts())
	}
	code, err := g.engine.ChatCode(context.Background(), a)
	if err != nil || code == "" {
		t.Fatalf("code %q, %v", code, err)
	}
	g.send(t, msg("alice", "确认 "+code))
	g.barrier(t, "alice")
	if st := g.state(t, a.ID); st != approval.StatePending {
		t.Fatalf("state after 确认 %s: %s; texts %v", code, st, g.ch.texts())
	}
	g.send(t, msg("alice", "取消"))
	g.drain()
	if st := g.state(t, a.ID); st != approval.StateRejected {
		t.Fatalf("state after 取消: %s", st)
	}
}

// newQuestionRig is newRig (in lang) whose engine answers other agents'
// questions as `bot serve` wires it (gate's Dispatcher and Editor).
func newQuestionRig(t *testing.T, lang string) *rig {
	t.Helper()
	g := &rig{ch: newFake("fake"), erase: hitltest.NewTool("erase", approval.EffectDestructive), model: &hitltest.Model{}}
	st := hitltest.New(t, hitltest.Config{Model: g.model, Tools: []agent.Tool{g.erase}, Lang: lang,
		Engine: func(ec *approval.EngineConfig) {
			ec.Dispatcher, ec.Editor = gate.Dispatcher{Next: ec.Dispatcher}, gate.Editor{Next: ec.Editor}
		}})
	st.Register(t, g.ch)
	g.fill(st)
	return g
}

const (
	oneQuestion  = `{"questions":[{"question":"Which size?","options":[{"label":"Small"},{"label":"Large"}]}]}`
	twoQuestions = `{"questions":[{"question":"Which size?","options":[{"label":"Small"},{"label":"Large"}]},` +
		`{"question":"Which extras?","options":[{"label":"Cache"},{"label":"Logs"},{"label":"Metrics"}],"multiSelect":true}]}`
)

// ask asks args (AskUserQuestion's input) of agent ci in chat c1, alice
// the only one who may answer, and returns it with its code.
func (g *rig) ask(t *testing.T, args string) (*approval.Approval, string) {
	t.Helper()
	canon, err := approval.Canonicalize([]byte(args))
	if err != nil {
		t.Fatal(err)
	}
	session := approval.SessionKey("fake:c1#agent:ci")
	a, err := g.engine.Request(context.Background(), approval.Request{ID: approval.NewID(session), Session: session, Channel: "fake", ChatID: "c1",
		Requester: "alice", Calls: []approval.Call{{Tool: "ci/AskUserQuestion", Args: canon}},
		Verdict: approval.Verdict{NeedsApproval: true, Risk: approval.RiskMedium, Timeout: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	code, err := g.engine.ChatCode(context.Background(), a)
	if err != nil || code == "" {
		t.Fatalf("code %q, %v", code, err)
	}
	return a, code
}

// answersOf returns the answers a's record holds.
func (g *rig) answersOf(t *testing.T, id approval.ID) (approval.State, string) {
	t.Helper()
	a, err := g.engine.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var in struct {
		Answers json.RawMessage `json:"answers"`
	}
	_ = json.Unmarshal(a.Calls[0].Args, &in)
	return a.State, string(in.Answers)
}

// TestTypedAnswer: the answer command answers another agent's question
// in the chat: option numbers as the card shows them (several for a
// multi-select, one line per question on a card of several), free text,
// with or without the code; the answer is claimed as the sender's and
// said back. A text the parser refuses, and someone who may not answer,
// answer nothing, each told why in the chat's language.
func TestTypedAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, args, text, answers string
	}{
		{"an option", oneQuestion, "回答 %s 2", `{"Which size?":"Large"}`},
		{"no code", oneQuestion, "@bot answer Medium please", `{"Which size?":"Medium please"}`},
		{"a multi-select, one line per question", twoQuestions, "回答 %s\n1: 1\n2: 1,3", `{"Which extras?":"Cache, Metrics","Which size?":"Small"}`},
		{"semicolons", twoQuestions, "回答：%s 2：2；1：自己定", `{"Which extras?":"Logs","Which size?":"自己定"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newQuestionRig(t, "en")
			a, code := g.ask(t, tc.args)
			text := tc.text
			if strings.Contains(text, "%s") {
				text = fmt.Sprintf(text, code)
			}
			g.send(t, msg("alice", text))
			g.drain()
			if st, ans := g.answersOf(t, a.ID); st != approval.StateExecuted || ans != tc.answers {
				t.Fatalf("state %s, answers %s; texts %v", st, ans, g.ch.texts())
			}
			if !g.ch.hasText("notice", "Answered: ci reads the answer now.\nWhich size? →") && !g.ch.hasText("notice", "Answered: ci reads the answer now.\nWhich extras? →") {
				t.Fatalf("texts %v", g.ch.texts())
			}
			if g.model.Seen(text) != 0 {
				t.Fatal("the answer reached the model")
			}
		})
	}
}

func TestTypedAnswerRefused(t *testing.T) {
	for _, tc := range []struct {
		lang, user, args, text, want string
	}{
		{"en", "alice", oneQuestion, "回答 %s 3", "Question 1 has options 1 to 2; there is no option 3. Nothing was answered"},
		{"zh", "alice", oneQuestion, "回答 %s 3", "问题 1 的选项是 1 到 2，没有选项 3。未作回答"},
		{"en", "alice", oneQuestion, "回答 %s 1,2", "Question 1 takes one option only"},
		{"zh", "alice", oneQuestion, "回答 %s 1,2", "问题 1 只能选一个选项"},
		{"en", "alice", twoQuestions, "回答 %s 2", "This card asks several questions: answer each on its own line after the code"},
		{"zh", "alice", twoQuestions, "回答 %s 2", "这张卡片有多个问题"},
		{"en", "alice", oneQuestion, "回答 %s", "That answers nothing: reply 回答 "},
		{"zh", "alice", oneQuestion, "回答 %s", "没有回答任何问题"},
		{"en", "bob", oneQuestion, "回答 %s 2", "You may not decide this approval (who may approve: only the person who asked)"},
		{"zh", "bob", oneQuestion, "回答 %s 2", "你无权处理此审批（可确认人：仅申请人本人）"},
	} {
		t.Run(tc.lang+" "+tc.user+" "+tc.text, func(t *testing.T) {
			g := newQuestionRig(t, tc.lang)
			a, code := g.ask(t, tc.args)
			g.send(t, msg(approval.UserID(tc.user), fmt.Sprintf(tc.text, code)))
			g.drain()
			if st, ans := g.answersOf(t, a.ID); st != approval.StatePending || ans != "" {
				t.Fatalf("state %s, answers %s", st, ans)
			}
			found := false
			for _, s := range g.ch.texts() {
				found = found || strings.Contains(s, tc.want)
			}
			if !found {
				t.Fatalf("texts %v, want %q", g.ch.texts(), tc.want)
			}
		})
	}
}

// TestAnswerWithoutQuestionGoesToAgent: "answer …" with no question
// waiting in the chat is the agent's.
func TestAnswerWithoutQuestionGoesToAgent(t *testing.T) {
	g := newQuestionRig(t, "en")
	g.send(t, msg("alice", "answer this mail please"))
	g.barrier(t, "alice")
	if g.model.Seen("answer this mail please") != 1 {
		t.Fatalf("the model did not see it; texts %v", g.ch.texts())
	}
}

// TestPendingSaysHowToAnswerAQuestion: /pending with a question waiting
// says that a question is answered with 回答 <code>, in the reader's
// language; with none, only 确认 / 取消.
func TestPendingSaysHowToAnswerAQuestion(t *testing.T) {
	for _, tc := range []struct{ lang, want string }{
		{"en", "a question: 回答 <code> <answer>"},
		{"zh", "提问：回答 <代码> <回答>"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			g := newQuestionRig(t, tc.lang)
			g.ask(t, oneQuestion)
			g.send(t, msg("alice", "/pending"))
			g.drain()
			if !g.ch.hasText("answer", tc.want) {
				t.Fatalf("texts %v", g.ch.texts())
			}
		})
	}
}

// TestAnswerNamingNoQuestion: the answer command in its strict form (a
// word of a code's form, then an answer) whose code names nothing
// waiting in the chat is told so, in the chat's language, and reaches
// neither the agent nor a question that waits (a mistyped code is never
// taken as part of the answer); a sentence that only begins with
// "answer" (its first word no code, a common word, or nothing after it)
// is the agent's, or the waiting question's answer, as before.
func TestAnswerNamingNoQuestion(t *testing.T) {
	for _, tc := range []struct {
		lang, text, want string
		waiting          bool
	}{
		{"en", "answer zzzz 2", "No question waits with code zzzz in this chat; /pending lists what waits.", false},
		{"zh", "回答 zzzz 1", "本群没有代码为 zzzz 的待回答问题；/pending 列出等待中的请求。", false},
		{"en", "@bot answer zz99 Large", "No question waits with code zz99 in this chat", true},
		{"zh", "回答：zzzz 2", "本群没有代码为 zzzz 的待回答问题", true},
	} {
		t.Run(tc.lang+" "+tc.text, func(t *testing.T) {
			g := newQuestionRig(t, tc.lang)
			var a *approval.Approval
			if tc.waiting {
				a, _ = g.ask(t, oneQuestion)
			}
			g.send(t, msg("alice", tc.text))
			g.drain()
			if !g.ch.hasText("answer", tc.want) {
				t.Fatalf("texts %v, want %q", g.ch.texts(), tc.want)
			}
			if g.model.Seen(tc.text) != 0 {
				t.Fatal("the command reached the model")
			}
			if a != nil {
				if st, ans := g.answersOf(t, a.ID); st != approval.StatePending || ans != "" {
					t.Fatalf("the waiting question: %s, answers %s", st, ans)
				}
			}
		})
	}
	for _, text := range []string{"answer me this: what is 2+2", "answer this mail please", "answer zzzz", "Answer that question for me"} {
		t.Run("agent "+text, func(t *testing.T) {
			g := newQuestionRig(t, "en")
			g.send(t, msg("alice", text))
			g.barrier(t, "alice")
			if g.model.Seen(text) != 1 {
				t.Fatalf("the model did not see it; texts %v", g.ch.texts())
			}
		})
	}
}

// fullWidth writes s's ASCII letters and digits in their full-width forms
// (ａｂ１２), as a Chinese input method in full-width mode types them.
func fullWidth(s string) string {
	return strings.Map(func(r rune) rune {
		if r > ' ' && r < 0x7f {
			return r + 0xFEE0
		}
		return r
	}, s)
}

// TestTypedAnswerFullWidth: a Chinese input method types the answer
// command with full-width spaces (U+3000), a full-width colon, and in
// full-width mode the code's letters and digits too (ａｂ１２): the code is
// the code all the same, and the answer after it is the answer, never
// the code and the answer together as one free-text answer.
func TestTypedAnswerFullWidth(t *testing.T) {
	for _, tc := range []struct {
		name, text, answers string
	}{
		{"full-width spaces", "回答　%[1]s　2", `{"Which size?":"Large"}`},
		{"full-width colon", "回答：%[1]s　2", `{"Which size?":"Large"}`},
		{"full-width code", "回答　%[2]s　2", `{"Which size?":"Large"}`},
		{"full-width code, free text", "回答　%[2]s　Medium please", `{"Which size?":"Medium please"}`},
		{"upper-case full-width code", "回答　%[3]s　2", `{"Which size?":"Large"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newQuestionRig(t, "zh")
			a, code := g.ask(t, oneQuestion)
			text := fmt.Sprintf(tc.text, code, fullWidth(code), fullWidth(strings.ToUpper(code)))
			g.send(t, msg("alice", text))
			g.drain()
			if st, ans := g.answersOf(t, a.ID); st != approval.StateExecuted || ans != tc.answers {
				t.Fatalf("%q: state %s, answers %s; texts %v", text, st, ans, g.ch.texts())
			}
		})
	}
	t.Run("full-width code naming nothing", func(t *testing.T) {
		g := newQuestionRig(t, "zh")
		a, _ := g.ask(t, oneQuestion)
		g.send(t, msg("alice", "回答　"+fullWidth("zz99")+"　Large"))
		g.drain()
		if !g.ch.hasText("answer", "本群没有代码为 zz99 的待回答问题") {
			t.Fatalf("texts %v", g.ch.texts())
		}
		if st, ans := g.answersOf(t, a.ID); st != approval.StatePending || ans != "" {
			t.Fatalf("the waiting question: %s, answers %s", st, ans)
		}
	})
}

// TestTypedAnswerStartingWithANumber: a free-text answer without a code
// often starts with a number of four digits (a year, an amount: "回答 2024
// 年底前完成", "回答 1000 台"); a code is random, and one of only digits
// is rare, so such a number is a code only when it names an approval
// waiting in the chat, as a common word: else it is the answer to the
// question waiting, or (none waiting) the agent's.
func TestTypedAnswerStartingWithANumber(t *testing.T) {
	for _, tc := range []struct{ text, answers string }{
		{"回答 2024 年底前完成", `{"Which size?":"2024 年底前完成"}`},
		{"answer 1000 units", `{"Which size?":"1000 units"}`},
	} {
		t.Run(tc.text, func(t *testing.T) {
			g := newQuestionRig(t, "zh")
			a, _ := g.ask(t, oneQuestion)
			g.send(t, msg("alice", tc.text))
			g.drain()
			if st, ans := g.answersOf(t, a.ID); st != approval.StateExecuted || ans != tc.answers {
				t.Fatalf("state %s, answers %s; texts %v", st, ans, g.ch.texts())
			}
		})
	}
	t.Run("agent", func(t *testing.T) {
		g := newQuestionRig(t, "en")
		text := "answer 2024 budget questions"
		g.send(t, msg("alice", text))
		g.barrier(t, "alice")
		if g.model.Seen(text) != 1 {
			t.Fatalf("the model did not see it; texts %v", g.ch.texts())
		}
	})
}
