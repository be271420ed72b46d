package cli_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/cli"
	"github.com/hitlbot/hitlbot/internal/hitltest"
	"github.com/hitlbot/hitlbot/words"
)

// refusingHandler refuses every message with a Go error, as the router
// does for an unknown channel or an unexpected error of Loop.Submit.
type refusingHandler struct{}

var errRaw = errors.New("channels: agent.Submit: queue for session cli:local is full")

func (refusingHandler) HandleMessage(context.Context, channels.Message) error { return errRaw }
func (refusingHandler) HandleCardAction(context.Context, channels.CardAction) (approval.Outcome, error) {
	return approval.Outcome{}, errRaw
}

// TestRefusedMessageSaidInWords: a message the router refuses is said in
// the chat's language (approval.UserMessageIn), never as the Go error.
func TestRefusedMessageSaidInWords(t *testing.T) {
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			out := &output{}
			c, err := cli.New(cli.Config{Lang: lang, Views: hitltest.Views(t)}, strings.NewReader("hello\n"), out)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Start(context.Background(), refusingHandler{}); err != nil {
				t.Fatal(err)
			}
			_ = c.Run(context.Background())
			got := out.String()
			if want := "! " + words.In(lang, words.ErrOther) + "\n"; !strings.Contains(got, want) {
				t.Fatalf("output %q, want %q", got, want)
			}
			if strings.Contains(got, errRaw.Error()) {
				t.Fatalf("the Go error reached the person: %q", got)
			}
		})
	}
}
