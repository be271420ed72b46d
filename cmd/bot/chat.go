package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/cli"
	"github.com/hitlbot/hitlbot/words"
)

// cmdChat is `bot chat`: the same agent, store, tools and audit trail as
// the server, with the terminal as its only channel. It works with a pipe
// as stdin; the end of the input ends the chat (a pending approval prompt
// is then rejected).
//
// Ctrl+C (SIGINT) belongs to the chat, not to ctx: at the approval prompt
// it rejects the approval and the chat goes on, at the input prompt it
// ends the chat (exit 0), while a turn runs it gives the prompt back. It
// never cancels the agent, so no turn is cut short and reported as a
// failure of the model. SIGTERM still ends ctx and the chat.
func cmdChat(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, c := newFlags("chat", stderr)
	if st := parse(fs, args); st >= 0 {
		return st
	}
	// main's signal.NotifyContext would end ctx on SIGINT (and with it the
	// engine and every turn): take SIGINT away from it, for the chat alone.
	signal.Reset(os.Interrupt)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	cfg := loadConfig(c.options(), stderr)
	if cfg == nil {
		return 1
	}
	ccfg := cfg.Channels.CLI.Config
	ccfg.Lang = cfg.ChatLang()
	// The chat is the process's one surface: the server's own words (the
	// agent's, the router's, the outcome words) are in its language too.
	if cfg.Approval.Lang == "" {
		cfg.Approval.Lang = ccfg.Lang
	}
	interrupts := make(chan os.Signal, 1)
	relayDone := make(chan struct{})
	defer close(relayDone)
	go func() {
		for {
			select {
			case s := <-sigs:
				select {
				case interrupts <- s:
				default:
					// The chat has not taken the last Ctrl+C yet (a tool
					// is running, or it is shutting down): another one
					// ends the process at once, as a second one does in serve.
					fmt.Fprintln(stderr, words.In(ccfg.Lang, words.CLIInterruptedAgain))
					os.Exit(130)
				}
			case <-relayDone:
				return
			}
		}
	}()
	level := cfg.Log.Level
	if level == "info" || level == "debug" {
		level = "warn" // the terminal is for the chat; say only what goes wrong
	}
	log := newLogger(stderr, level)
	routeLibraryLogs(log) // go-redis's, the log package's, MySQL's lines as JSON records too
	core, err := newCore(ctx, cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "bot: %v\n", err)
		return 1
	}
	// The approval prompt reads a reason after the configured cancel
	// keywords too ("算了 明天再说"), as typed replies do.
	replies, err := approval.NewReplyParser(cfg.Approval.Replies)
	if err != nil {
		core.shutdown(context.Background())
		fmt.Fprintf(stderr, "bot: approval.replies: %v\n", err)
		return 1
	}
	ccfg.Views = core.views // the chat prompts first for an approval left waiting
	err = cli.Run(ctx, ccfg, stdin, stdout, func(ch channels.Channel) (func(context.Context) error, error) {
		if err := core.channels.Register(ch); err != nil {
			return nil, err
		}
		if err := core.start(ctx); err != nil {
			return nil, err
		}
		return func(sctx context.Context) error {
			sctx, cancel := context.WithTimeout(sctx, cfg.Server.ShutdownTimeout)
			defer cancel()
			core.shutdown(sctx)
			return nil
		}, nil
	}, cli.WithInterrupts(interrupts), cli.WithGreeting(greeting(words.Of(ccfg.Lang), demoOn(cfg))), cli.WithReplies(replies))
	if err != nil {
		core.shutdown(context.Background())
		fmt.Fprintf(stderr, "bot chat: %v\n", err)
		return 1
	}
	return 0
}
