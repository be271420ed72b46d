package cli_test

import (
	"fmt"
	"io"
	"testing"

	"github.com/hitlbot/hitlbot/agent/model"
	"github.com/hitlbot/hitlbot/channels/cli"
	"github.com/hitlbot/hitlbot/internal/fakellm"
	"github.com/hitlbot/hitlbot/words"
)

// The terminal prints the answer as it comes: the first piece while the
// model still holds the rest, then the rest on the same line.
func TestStreamedAnswerPrinted(t *testing.T) {
	llm := fakellm.New(t)
	m, err := model.NewOpenAI(model.OpenAIConfig{BaseURL: llm.URL, Model: "m", APIKey: llm.APIKey(), Stream: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	llm.Enqueue(fakellm.Reply{Text: "Three rows match.", Chunks: []string{"Three ", "rows match."}, Hold: hold},
		fakellm.Reply{Text: "Half and", Chunks: []string{"Half ", "and"}, CutAfter: 1})
	in, w := io.Pipe()
	h := startModel(t, in, m)
	h.out.waitFor(t, cli.Prompt, 1)
	fmt.Fprintln(w, "how many?")
	h.out.waitFor(t, "> how many?\nThree ", 1) // printed while the model holds the rest
	close(hold)
	h.out.waitFor(t, "Three rows match.\n> ", 1)
	fmt.Fprintln(w, "again")
	sentence := words.Text(words.EN, words.ModelFailed)
	h.out.waitFor(t, "Half \n! "+sentence+"\n> ", 1)
	w.Close()
	if err := h.ended(t); err != nil {
		t.Fatal(err)
	}
}
