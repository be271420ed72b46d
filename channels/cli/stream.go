package cli

import (
	"context"
	"strings"

	"github.com/hitlbot/hitlbot/channels"
)

// streamEnd is the end of a streamed answer, for the REPL.
type streamEnd struct {
	text string
	how  channels.StreamEnd
}

// OpenStream starts a streamed answer (channels.Streamer): the REPL prints
// each piece as it comes, on one growing line, and the end completes it.
func (c *Chat) OpenStream(_ context.Context, to channels.Target) (channels.AnswerStream, error) {
	return &cliStream{c: c, turn: to.ReplyTo}, nil
}

// cliStream is one streamed answer in the terminal.
type cliStream struct {
	c    *Chat
	turn string
}

// Append queues a piece for the REPL to print; it never blocks.
func (s *cliStream) Append(text string) {
	s.c.push(event{turn: s.turn, delta: &text})
}

// Finish queues the end of the answer; it never blocks.
func (s *cliStream) Finish(_ context.Context, text string, how channels.StreamEnd) error {
	s.c.push(event{turn: s.turn, end: &streamEnd{text: text, how: how}})
	return nil
}

// stream prints a piece of a streamed answer, or its end, and reports
// whether that ends the turn named turn (the answer, or the model's
// failure, as when they come whole).
func (r *repl) stream(ev event, turn string) bool {
	if ev.delta != nil {
		r.printf("%s", *ev.delta)
		r.streamed += *ev.delta
		return false
	}
	e := ev.end
	printed := r.streamed
	r.streamed = ""
	switch rest, ok := strings.CutPrefix(e.text, printed); {
	case e.how == channels.EndFailed:
		// The text is what streamed and the error sentence after it.
		sentence := strings.TrimSpace(strings.TrimPrefix(e.text, printed))
		if printed != "" {
			r.printf("\n")
		}
		r.printf("! %s\n", sentence)
	case ok:
		r.printf("%s\n", rest)
	default:
		// The final text is not what streamed (the model revised it):
		// print it whole on a line of its own.
		r.printf("\n%s\n", e.text)
	}
	mine := turn != "" && (ev.turn == turn || ev.turn == "")
	return mine && e.how != channels.EndMore
}

var _ channels.Streamer = (*Chat)(nil)
