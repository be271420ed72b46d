package web_test

import (
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/agent/model"
	"github.com/hitlbot/hitlbot/internal/fakellm"
	"github.com/hitlbot/hitlbot/words"
)

// streamingServer is the stack whose agent is the OpenAI model, streaming,
// on a fake OpenAI server.
func streamingServer(t *testing.T) (*server, *fakellm.Server) {
	t.Helper()
	llm := fakellm.New(t)
	m, err := model.NewOpenAI(model.OpenAIConfig{BaseURL: llm.URL, Model: "m", APIKey: llm.APIKey(), Stream: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return newServerModel(t, m), llm
}

// index returns the position among every frame received of the first one
// that pred accepts, or -1.
func index(fs []frame, pred func(frame) bool) int {
	for i, f := range fs {
		if pred(f) {
			return i
		}
	}
	return -1
}

// The answer comes as agent.delta frames of one stream, in order, then the
// agent.message a seed client reads as before (kind answer, the whole
// text), naming the stream.
func TestStreamedAnswerFrames(t *testing.T) {
	s, llm := streamingServer(t)
	llm.Enqueue(fakellm.Reply{Text: "Seven orders are open.", Chunks: []string{"Seven ", "orders ", "are open."}})
	c := s.connect(t, "", "st1")
	c.message("st1", "what is open?")
	msg := c.expect("agent.message", func(f frame) bool { return f.str("kind") == "answer" })
	if msg.str("content") != "Seven orders are open." || msg.str("event") != "agent.message" || msg.str("stream_id") == "" {
		t.Fatalf("final message %v", msg)
	}
	var got []string
	for _, f := range c.seen() {
		if f.str("type") == "agent.delta" {
			if f.str("stream_id") != msg.str("stream_id") || f.str("event") != "agent.delta" || f.str("session_id") != "st1" {
				t.Fatalf("delta of another stream: %v", f)
			}
			got = append(got, f.str("content"))
		}
	}
	if strings.Join(got, "|") != "Seven |orders |are open." {
		t.Fatalf("deltas %q", got)
	}
	all := c.seen()
	if index(all, func(f frame) bool { return f.str("type") == "agent.delta" }) > index(all, func(f frame) bool { return f.str("type") == "agent.message" }) {
		t.Fatalf("the answer came before its deltas: %v", all)
	}
}

// Text before an approval streams and ends (its agent.message) before the
// confirmation frame; a model that fails mid-stream ends its stream with
// the error sentence, marked is_error, and no other notice.
func TestStreamEndsBeforeConfirmAndOnFailure(t *testing.T) {
	s, llm := streamingServer(t)
	llm.Enqueue(fakellm.Reply{Text: "Erasing the cache now.", ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "erase", Arguments: `{"target":"cache"}`}}},
		fakellm.Reply{Text: "Done and", Chunks: []string{"Done ", "and"}, CutAfter: 1})
	c := s.connect(t, "", "st2")
	c.message("st2", "erase the cache")
	confirm := c.expect("agent.user_confirm", nil)
	all := c.seen()
	end := index(all, func(f frame) bool {
		return f.str("type") == "agent.message" && f.str("content") == "Erasing the cache now." && f.str("stream_id") != ""
	})
	if end < 0 || end > index(all, func(f frame) bool { return f.str("type") == "agent.user_confirm" }) {
		t.Fatalf("the streamed text did not end before the confirmation: %v", all)
	}
	c.respond("st2", confirm.str("step_id"), true, "")
	sentence := words.Text(words.EN, words.ModelFailed)
	failed := c.expect("agent.message", func(f frame) bool { return f.str("stream_id") != "" && strings.HasSuffix(f.str("content"), sentence) })
	if failed.str("content") != "Done \n\n"+sentence || failed["is_error"] != true || failed.str("kind") != "notice" {
		t.Fatalf("failed stream's end %v", failed)
	}
	for _, f := range c.seen() {
		if f.str("type") == "agent.message" && f.str("stream_id") == "" && strings.Contains(f.str("content"), sentence) {
			t.Fatalf("the error was said twice: %v", f)
		}
	}
}
