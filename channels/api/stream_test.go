package api_test

import (
	"net/http"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/agent/model"
	"github.com/hitlbot/hitlbot/internal/fakellm"
	"github.com/hitlbot/hitlbot/words"
)

// The API stays request/response when the model streams: the response
// carries the whole answer; a model that fails mid-stream ends the request
// with its error sentence, as a model that fails whole does.
func TestStreamingModelAnswersWhole(t *testing.T) {
	llm := fakellm.New(t)
	m, err := model.NewOpenAI(model.OpenAIConfig{BaseURL: llm.URL, Model: "m", APIKey: llm.APIKey(), Stream: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(s *setup) { s.loop = func(c *agent.LoopConfig) { c.Model = m } })
	llm.Enqueue(fakellm.Reply{Text: "Seven orders are open.", Chunks: []string{"Seven ", "orders ", "are open."}},
		fakellm.Reply{Text: "Half and", Chunks: []string{"Half ", "and"}, CutAfter: 1})
	st, r := h.chat(tokAlice, map[string]any{"message": "what is open?", "conversationId": "c-stream"})
	if st != http.StatusOK || r.Text != "Seven orders are open." {
		t.Fatalf("status %d, response %+v", st, r)
	}
	st, r = h.chat(tokAlice, map[string]any{"message": "and now?", "conversationId": "c-stream"})
	if sentence := words.Text(words.EN, words.ModelFailed); r.Text != sentence {
		t.Fatalf("status %d, response %+v, want the error sentence %q", st, r, sentence)
	}
}
