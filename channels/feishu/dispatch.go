package feishu

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"

	dispatcher "github.com/hitlbot/hitlbot/third_party/larkdispatch"
	larkcore "github.com/larksuite/oapi-sdk-go/v3/core"
	larkevent "github.com/larksuite/oapi-sdk-go/v3/event"
	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher/callback"
	larkim "github.com/larksuite/oapi-sdk-go/v3/service/im/v1"
)

// sdkDispatcher is the process's one SDK event dispatcher. Its handlers
// find their Channel in the context (withIntake): the long connection
// calls it with a context derived from the one Start gives the SDK client,
// the webhook with the request's.
//
// One per process, built while the package initialises, because
// dispatcher.NewEventDispatcher writes "[Info] [event-dispatch is ready]"
// to os.Stdout with the SDK's own default logger before a logger can be
// given to it: a plain-text line among the JSON log lines. The dispatcher
// is built with os.Stdout pointed at a pipe that is then discarded; at
// package initialisation nothing else runs, so no other writer is
// affected. After it, every SDK log line goes through sdkLogger.
var sdkDispatcher = newDispatcher()

type channelKey struct{}

// withIntake tells the dispatcher's handlers which Channel an event is
// for.
func withIntake(ctx context.Context, c *intake) context.Context {
	return context.WithValue(ctx, channelKey{}, c)
}

var errNoChannel = errors.New("feishu: event without its channel in the context")

func intakeOf(ctx context.Context) (*intake, error) {
	if c, ok := ctx.Value(channelKey{}).(*intake); ok && c != nil {
		return c, nil
	}
	slog.Default().ErrorContext(ctx, "feishu: the SDK dispatched an event without its channel; not handled (an SDK change?)")
	return nil, errNoChannel
}

// handlerError is an error of the bot's own handling of a well-formed
// event (the router refused it, the channel is not started): the webhook
// answers it with 500 so that Feishu delivers the event again, where a
// payload that does not decode is the sender's fault (400).
type handlerError struct{ err error }

func (e handlerError) Error() string { return e.err.Error() }
func (e handlerError) Unwrap() error { return e.err }

func newDispatcher() *dispatcher.EventDispatcher {
	restore := muteStdout()
	d := dispatcher.NewEventDispatcher("", "")
	restore()
	ack := func(context.Context) error { return nil }
	d.OnP2MessageReceiveV1(func(ctx context.Context, ev *larkim.P2MessageReceiveV1) error {
		c, err := intakeOf(ctx)
		if err != nil {
			return handlerError{err}
		}
		if err := c.onMessage(ctx, ev); err != nil {
			return handlerError{err}
		}
		return nil
	}).
		OnP2CardActionTrigger(func(ctx context.Context, ev *callback.CardActionTriggerEvent) (*callback.CardActionTriggerResponse, error) {
			c, err := intakeOf(ctx)
			if err != nil {
				return nil, handlerError{err}
			}
			return c.onCardAction(ctx, ev)
		}).
		// Events a console often subscribes along: acked and ignored, so
		// the long connection does not answer 500 and make Feishu retry.
		OnP2MessageReadV1(func(ctx context.Context, _ *larkim.P2MessageReadV1) error { return ack(ctx) }).
		OnP2ChatMemberBotAddedV1(func(ctx context.Context, _ *larkim.P2ChatMemberBotAddedV1) error { return ack(ctx) }).
		OnP2ChatMemberBotDeletedV1(func(ctx context.Context, _ *larkim.P2ChatMemberBotDeletedV1) error { return ack(ctx) }).
		OnP2ChatAccessEventBotP2pChatEnteredV1(func(ctx context.Context, _ *larkim.P2ChatAccessEventBotP2pChatEnteredV1) error { return ack(ctx) }).
		OnP2MessageReactionCreatedV1(func(ctx context.Context, _ *larkim.P2MessageReactionCreatedV1) error { return ack(ctx) }).
		OnP2MessageReactionDeletedV1(func(ctx context.Context, _ *larkim.P2MessageReactionDeletedV1) error { return ack(ctx) })
	// Only Handle (not used: the webhook checks and decrypts requests
	// itself, then calls Do) logs through this one.
	d.InitConfig(larkevent.WithLogger(sdkLogger{}), larkevent.WithLogLevel(larkcore.LogLevelInfo))
	return d
}

// muteStdout points os.Stdout at a pipe until the returned func is
// called, which restores it and discards what was written. Only for
// package initialisation (see sdkDispatcher).
func muteStdout() (restore func()) {
	r, w, err := os.Pipe()
	if err != nil {
		return func() {}
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, r)
		r.Close()
		close(done)
	}()
	return func() {
		os.Stdout = old
		w.Close()
		<-done
	}
}
