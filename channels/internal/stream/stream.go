// Package stream writes a streamed answer to a platform whose updates are
// rate-limited (Feishu's CardKit card, DingTalk's AI card): it coalesces
// the pieces of text into whole-text updates at most one per interval, in
// a goroutine of its own, so the turn that appends never waits for the
// platform, and it always ends the message (Close), even after a failed
// update, so nothing is left in streaming state.
package stream

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hitlbot/hitlbot/channels"
)

// Sink is a platform's streamed message. Its calls come from one goroutine,
// in order: Open once, Update any number of times, Close once (Close also
// when Open or an Update failed, unless Open never ran).
type Sink interface {
	// Open creates the message showing text, in streaming state.
	Open(ctx context.Context, text string) error
	// Update shows text, the whole text so far.
	Update(ctx context.Context, text string) error
	// Close shows text, the final text, and ends the streaming state;
	// failed marks the end of a model that failed.
	Close(ctx context.Context, text string, failed bool) error
}

// Writer coalesces the pieces of one streamed message into a Sink.
type Writer struct {
	sink     Sink
	interval time.Duration
	log      *slog.Logger

	mu     sync.Mutex
	text   strings.Builder
	final  *final
	kick   chan struct{}
	result chan error
	ctx    context.Context
	cancel context.CancelFunc
}

type final struct {
	text   string
	failed bool
}

// New starts a writer whose updates are at least interval apart (Open
// and Close included). Its goroutine ends with Finish (or Abort).
func New(sink Sink, interval time.Duration, log *slog.Logger) *Writer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{sink: sink, interval: interval, log: log, kick: make(chan struct{}, 1), result: make(chan error, 1), ctx: ctx, cancel: cancel}
	go w.run()
	return w
}

// Append adds a piece; it never blocks.
func (w *Writer) Append(piece string) {
	w.mu.Lock()
	w.text.WriteString(piece)
	w.mu.Unlock()
	w.poke()
}

// Finish ends the message with text and waits until the platform has it
// (Close returned) or ctx ends; then the writer is done.
func (w *Writer) Finish(ctx context.Context, text string, failed bool) error {
	w.mu.Lock()
	if w.final == nil {
		w.final = &final{text: text, failed: failed}
	}
	w.mu.Unlock()
	w.poke()
	select {
	case err := <-w.result:
		w.cancel()
		return err
	case <-ctx.Done():
		// The platform is slow: the writer goes on ending the message in
		// the background (its calls are bounded by their own timeouts).
		return ctx.Err()
	}
}

func (w *Writer) poke() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// errNotOpened is the result of a stream that ended before anything was
// shown and had nothing to show.
var errNotOpened = errors.New("stream: nothing to show")

func (w *Writer) run() {
	opened, broken := false, false
	sent := ""
	var last time.Time
	space := func() {
		if last.IsZero() {
			return
		}
		if d := w.interval - time.Since(last); d > 0 {
			t := time.NewTimer(d)
			<-t.C
		}
	}
	for range w.kick {
		w.mu.Lock()
		text, fin := w.text.String(), w.final
		w.mu.Unlock()
		if fin != nil {
			var err error
			switch {
			case !opened && fin.text == "":
				err = errNotOpened
			case !opened:
				if err = w.sink.Open(w.ctx, fin.text); err == nil {
					last = time.Now()
					space()
					err = w.sink.Close(w.ctx, fin.text, fin.failed)
				}
			default:
				space()
				err = w.sink.Close(w.ctx, fin.text, fin.failed)
				if err == nil && broken {
					w.log.Info("a streamed message ended after a failed update")
				}
			}
			w.result <- err
			return
		}
		if text == sent || text == "" || broken {
			continue
		}
		space()
		var err error
		if !opened {
			err = w.sink.Open(w.ctx, text)
			if err != nil {
				// Nothing was shown; the end will try to open it again
				// with the final text.
				w.log.Warn("opening a streamed message failed", "err", err)
				last = time.Now()
				continue
			}
			opened = true
		} else if err = w.sink.Update(w.ctx, text); err != nil {
			// Stop updating; the end still closes the message.
			w.log.Warn("updating a streamed message failed; its end will show the whole text", "err", err)
			broken = true
		}
		sent, last = text, time.Now()
		// Pieces that came during the update are sent next: poke again.
		w.mu.Lock()
		more := w.text.Len() != len(sent) || w.final != nil
		w.mu.Unlock()
		if more {
			w.poke()
		}
	}
}

// Answer is a channels.AnswerStream written through a Writer: what the
// Feishu and DingTalk channels return from OpenStream.
type Answer struct{ *Writer }

// Finish ends the answer with its final text (Writer.Finish), failed when
// the model failed.
func (a Answer) Finish(ctx context.Context, text string, how channels.StreamEnd) error {
	return a.Writer.Finish(ctx, text, how == channels.EndFailed)
}

var _ channels.AnswerStream = Answer{}
