package feishu

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
)

const questionInput = `{"questions":[` +
	`{"question":"Which size?","header":"Size","options":[{"label":"Small"},{"label":"Large"}],"multiSelect":false},` +
	`{"question":"Which extras?","header":"Extras","options":[{"label":"Cache"},{"label":"Logs"},{"label":"Metrics"}],"multiSelect":true}]}`

// askQuestion asks a question of another agent (as the gate does) in
// chat, decided by requester, and returns it with its card.
func (g *rig) askQuestion(t *testing.T, chat, requester string) (*approval.Approval, map[string]any) {
	t.Helper()
	canon, _, err := approval.HashCall("ci-claude/AskUserQuestion", json.RawMessage(questionInput))
	if err != nil {
		t.Fatal(err)
	}
	session := approval.SessionKey("feishu:" + chat + "#agent:ci")
	a, err := g.engine.Request(context.Background(), approval.Request{ID: approval.NewID(session), Session: session,
		Channel: Name, ChatID: chat, Requester: approval.UserID(requester),
		Calls:   []approval.Call{{Tool: "ci-claude/AskUserQuestion", Args: canon, Summary: "ci-claude asks you: Which size?"}},
		Verdict: approval.Verdict{NeedsApproval: true, Risk: approval.RiskMedium, Reason: "MEDIUM", Timeout: time.Hour}, Summary: "ci-claude asks you: Which size?"})
	if err != nil {
		t.Fatal(err)
	}
	var card map[string]any
	eventually(t, "the question's card is sent", func() bool {
		for _, c := range g.calls("create") {
			if c.MsgType == "interactive" && strings.Contains(c.Content, string(a.ID)) {
				return json.Unmarshal([]byte(c.Content), &card) == nil
			}
		}
		return false
	})
	got, err := g.engine.Get(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got, card
}

// questionClicks: what a person does on the question's card, and the
// answers Claude Code then reads.
var questionClicks = []struct {
	name, button string
	form         map[string]any
	want         string
}{
	{"a chosen option and a multi-select", "answer", map[string]any{"q_1": "2", "q_2": []any{"1", "3"}, "other_1": "", "other_2": ""},
		`{"Which extras?":"Cache, Metrics","Which size?":"Large"}`},
	{"free text", "answer", map[string]any{"other_1": "Medium, please"}, `{"Which size?":"Medium, please"}`},
}

// TestQuestionAnsweredOnTheCard: the question's card (a form Feishu
// accepts) answered by its approver: the answer is claimed once, the
// record holds the input with the answers, and the settled card says
// them; a replayed click, a forged hash and someone the rule refuses
// decide nothing.
func TestQuestionAnsweredOnTheCard(t *testing.T) {
	for _, tt := range questionClicks {
		t.Run(tt.name, func(t *testing.T) {
			g := newRig(t)
			a, card := g.askQuestion(t, "oc_q", "ou_alice")
			if err := feishutest.CheckCard(mustJSON(t, card)); err != nil {
				t.Fatalf("Feishu would refuse the card: %v", err)
			}
			val := cardButton(t, card, tt.button)
			click := feishutest.CardActionEvent{EventID: nextID("ev_q"), Operator: "ou_alice", MessageID: a.Cards[0].MessageID, ChatID: a.ChatID,
				Value: val, FormValue: tt.form, Name: tt.button}
			forged := click
			forged.EventID, forged.Value = nextID("ev_q"), map[string]any{"kind": "approval", "approval_id": string(a.ID), "decision": "answer",
				"payload_sha256": strings.Repeat("ab", 32)}
			mallory := click
			mallory.EventID, mallory.Operator = nextID("ev_q"), "ou_mallory"
			for _, e := range []feishutest.CardActionEvent{forged, mallory} {
				if resp := g.clickEvent(t, e); resp.Card != nil || g.state(t, a.ID) != approval.StatePending {
					t.Fatalf("a refused answer decided: %+v", resp)
				}
			}
			resp := g.clickEvent(t, click)
			if resp.Card == nil || !strings.Contains(mustJSON(t, resp.Card.Data), "Answered: ci-claude reads the answer now") {
				t.Fatalf("answer %+v", resp)
			}
			got, err := g.engine.Get(context.Background(), a.ID)
			if err != nil {
				t.Fatal(err)
			}
			var in struct {
				Answers json.RawMessage `json:"answers"`
			}
			_ = json.Unmarshal(got.Calls[0].Args, &in)
			if got.State != approval.StateExecuted || got.ProposedSHA256 != a.PayloadSHA256 || string(in.Answers) != tt.want {
				t.Fatalf("record %s %s", got.State, got.Calls[0].Args)
			}
			// The same click again (Feishu's retry) decides nothing more.
			if resp := g.clickEvent(t, click); resp.Card != nil && strings.Contains(mustJSON(t, resp.Card.Data), `"form"`) {
				t.Fatalf("a replayed click: %+v", resp)
			}
			eventually(t, "the card is settled with the answer", func() bool {
				for _, c := range g.calls("patch") {
					if strings.Contains(c.Content, "Answered: ci-claude") && strings.Contains(c.Content, "Which size?") && strings.Contains(c.Content, "→") {
						return true
					}
				}
				return false
			})
		})
	}
}

// TestQuestionEmptyAnswerDecidesNothing: an Answer pressed with nothing
// chosen or typed is an error toast; the question stays open.
func TestQuestionEmptyAnswerDecidesNothing(t *testing.T) {
	g := newRig(t)
	a, card := g.askQuestion(t, "oc_q", "ou_alice")
	e := feishutest.CardActionEvent{EventID: nextID("ev_q"), Operator: "ou_alice", MessageID: a.Cards[0].MessageID, ChatID: a.ChatID,
		Value: cardButton(t, card, "answer"), FormValue: map[string]any{"other_1": " "}, Name: "answer"}
	if resp := g.clickEvent(t, e); resp.Card != nil || g.state(t, a.ID) != approval.StatePending {
		t.Fatalf("an empty answer decided: %+v", resp)
	}
	_ = cards.AnswerDecision
}

// TestQuestionAnsweredByTyping: on Feishu too a message answers a
// question ("@bot 回答 <code>", one line per question): the answer is the
// sender's, the bot says it back in the thread, and the card settles
// answered.
func TestQuestionAnsweredByTyping(t *testing.T) {
	g := newRig(t)
	a, _ := g.askQuestion(t, "oc_q", "ou_alice")
	code, err := g.engine.ChatCode(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	e := g.say(t, "group", "oc_q", "ou_alice", "@_user_1 回答 "+code+"\n1: 2\n2: 1,3", map[string]string{"@_user_1": "ou_bot"})
	eventually(t, "the answer said back", func() bool { return g.replied(e.MessageID, "Answered: ci-claude reads the answer now.") == 1 })
	got, err := g.engine.Get(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != approval.StateExecuted || got.DecidedBy != "ou_alice" ||
		approval.QuestionAnswers(got.Calls[0].Args)["Which extras?"] != "Cache, Metrics" || approval.QuestionAnswers(got.Calls[0].Args)["Which size?"] != "Large" {
		t.Fatalf("record %s by %s: %s", got.State, got.DecidedBy, got.Calls[0].Args)
	}
}
