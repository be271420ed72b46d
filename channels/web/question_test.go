package web_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels/web"
)

const questionInput = `{"questions":[` +
	`{"question":"Which size?","header":"Size","options":[{"label":"Small"},{"label":"Large"}],"multiSelect":false},` +
	`{"question":"Which extras?","header":"Extras","options":[{"label":"Cache"},{"label":"Logs"},{"label":"Metrics"}],"multiSelect":true}]}`

// TestQuestionAnsweredOnThePage: another agent's question shown in a web
// chat carries its questions and the answer button on its card; the
// page's answer (content.edits of answers, as app.js sends it) is taken
// once: an empty one is INVALID_MESSAGE and leaves the step open; the
// record then holds the input with the answers.
func TestQuestionAnsweredOnThePage(t *testing.T) {
	s := newServer(t)
	c := s.connect(t, "", "s1")
	canon, _, err := approval.HashCall("ci-claude/AskUserQuestion", json.RawMessage(questionInput))
	if err != nil {
		t.Fatal(err)
	}
	session := approval.SessionKey("web:" + web.LocalUser + "/s1#agent:ci")
	a, err := s.engine.Request(context.Background(), approval.Request{ID: approval.NewID(session), Session: session, Channel: web.Name,
		ChatID: web.LocalUser + "/s1", Requester: web.LocalUser,
		Calls:   []approval.Call{{Tool: "ci-claude/AskUserQuestion", Args: canon, Summary: "ci-claude asks you: Which size?"}},
		Verdict: approval.Verdict{NeedsApproval: true, Risk: approval.RiskMedium, Timeout: time.Hour}, Summary: "ci-claude asks you: Which size?"})
	if err != nil {
		t.Fatal(err)
	}
	conf := c.expect("agent.user_confirm", nil)
	card, _ := json.Marshal(conf["card"])
	if !strings.Contains(string(card), `"questions":[{"header":"Size"`) || !strings.Contains(string(card), `"answer":{"approval_id"`) ||
		strings.Contains(string(card), `"approve":`) {
		t.Fatalf("the card %s", card)
	}
	step := conf.str("step_id")
	answer := func(picks any) {
		c.send(map[string]any{"type": "user.response", "session_id": "s1", "step_id": step,
			"content": map[string]any{"confirmed": true, "edits": map[string]any{"#1": map[string]any{"answers": picks}}}})
	}
	answer(map[string]any{})
	if e := c.expect("error", withCode(web.CodeInvalidMessage)); !strings.Contains(e.str("message"), "no answer") {
		t.Fatalf("an empty answer: %v", e)
	}
	answer(map[string]any{"#1": map[string]any{"options": []int{1}}, "#2": map[string]any{"options": []int{2}, "other": "Traces"}})
	if done := c.expect("agent.confirm_resolved", withStep(step)); done.str("status") != string(approval.StatusExecuted) {
		t.Fatalf("resolved %v", done)
	}
	got, err := s.engine.Get(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	var in struct {
		Answers json.RawMessage `json:"answers"`
	}
	_ = json.Unmarshal(got.Calls[0].Args, &in)
	if got.State != approval.StateExecuted || string(in.Answers) != `{"Which extras?":"Logs, Traces","Which size?":"Small"}` || got.DecidedBy != web.LocalUser {
		t.Fatalf("record %s %s by %s", got.State, got.Calls[0].Args, got.DecidedBy)
	}
}
