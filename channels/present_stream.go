package channels

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hitlbot/hitlbot/agent"
)

// Streamer is implemented by a channel that shows the model's answer as it
// is written (the web page, Feishu's CardKit card, DingTalk's AI card, the
// terminal). The presenter opens one stream per streamed message of a turn
// (the deltas of one model round) and ends it with the answer, or with the
// text streamed so far when the model goes on with tool calls (an approval's
// card may follow: it comes after the stream ended), or with the error
// sentence appended when the model failed. A channel that is not a Streamer
// gets the answer and the notices as before.
type Streamer interface {
	// OpenStream starts a streamed message in to's chat. It must not
	// block on the platform for long: the turn waits for it.
	OpenStream(ctx context.Context, to Target) (AnswerStream, error)
}

// AnswerStream is one streamed message.
type AnswerStream interface {
	// Append adds a piece of text to the message. It must not block on
	// the platform: a stream coalesces pieces into the updates its
	// platform's rate limits allow.
	Append(text string)
	// Finish ends the message: text is its whole final text (the answer,
	// or what was streamed, plus the error sentence when the model
	// failed), how says why it ends. When it returns nil, the platform
	// shows text and nothing of the message is left streaming. It blocks
	// until then, or until ctx ends.
	Finish(ctx context.Context, text string, how StreamEnd) error
}

// StreamEnd is how a streamed message ends.
type StreamEnd int

// How a streamed message ends.
const (
	EndAnswer StreamEnd = iota // it is the model's answer: the turn ends with it
	EndMore                    // the model goes on (tool calls; an approval's card may follow)
	EndFailed                  // the model failed: text ends with the error sentence, and the turn ends
)

// finishTimeout bounds the end of a streamed message.
const finishTimeout = 30 * time.Second

// openStreams are the streamed messages being written, by the target of
// their turn (one at a time per turn).
type openStreams struct {
	mu sync.Mutex
	m  map[Target]*openStream
}

// openStream is a streamed message and what was streamed into it; broken
// when it could not be opened (its deltas are dropped, and what ends it is
// said as a message instead).
type openStream struct {
	s      AnswerStream
	text   strings.Builder
	broken bool
}

// take removes and returns to's open stream, if any.
func (o *openStreams) take(to Target) *openStream {
	o.mu.Lock()
	defer o.mu.Unlock()
	st := o.m[to]
	delete(o.m, to)
	return st
}

// sayStream handles the events of a turn that concern streamed messages:
// it reports whether s was said (handled) or is left to the usual path.
func (p *Presenter) sayStream(ctx context.Context, ch Channel, to Target, s agent.Say) (bool, error) {
	log := func() *slog.Logger {
		return p.log.With("channel", to.Channel, "chat_id", to.ChatID, "msg_id", to.ReplyTo)
	}
	switch s.Kind {
	case agent.SayDelta:
		sr, ok := ch.(Streamer)
		if !ok {
			return true, nil // the answer says it all
		}
		p.streams.mu.Lock()
		if p.streams.m == nil {
			p.streams.m = map[Target]*openStream{}
		}
		st := p.streams.m[to]
		if st == nil {
			st = &openStream{}
			as, err := sr.OpenStream(ctx, to)
			if err != nil {
				log().Warn("opening a streamed message failed; the answer will come whole", "err", err)
				st.broken = true
			}
			st.s = as
			p.streams.m[to] = st
		}
		p.streams.mu.Unlock()
		st.text.WriteString(s.Text)
		if !st.broken {
			st.s.Append(s.Text)
		}
		return true, nil
	case agent.SayStreamEnd:
		st := p.streams.take(to)
		if st != nil && !st.broken {
			final, how := st.text.String(), EndMore
			if s.IsError {
				how = EndFailed
			}
			if s.IsError && s.Text != "" {
				if final != "" {
					final += "\n\n"
				}
				final += s.Text
			}
			err := p.finish(ctx, st, final, how)
			if err == nil {
				return true, nil
			}
			log().Warn("ending a streamed message failed", "err", err)
		}
		if s.Text == "" {
			return true, nil
		}
		// Where nothing streamed, the failure is the notice it stands for.
		return true, ch.Send(ctx, to, Outgoing{Kind: OutNotice, Text: s.Text, IsError: s.IsError})
	case agent.SayAnswer:
		st := p.streams.take(to)
		if st == nil || st.broken {
			return false, nil
		}
		if err := p.finish(ctx, st, s.Text, EndAnswer); err != nil {
			log().Warn("ending a streamed message failed; sending the answer whole", "err", err)
			return false, nil
		}
		return true, nil
	case agent.SayTurnEnded:
		// A stream the turn left open (it should not) is ended with what
		// it holds: nothing is left streaming.
		if st := p.streams.take(to); st != nil && !st.broken {
			if err := p.finish(ctx, st, st.text.String(), EndMore); err != nil {
				log().Warn("ending a streamed message failed", "err", err)
			}
		}
	}
	return false, nil
}

// finish ends a stream within finishTimeout.
func (p *Presenter) finish(ctx context.Context, st *openStream, text string, how StreamEnd) error {
	ctx, cancel := context.WithTimeout(ctx, finishTimeout)
	defer cancel()
	return st.s.Finish(ctx, text, how)
}
