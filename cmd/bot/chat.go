package main

import (
	"context"
	"fmt"
	"io"

	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/cli"
)

// cmdChat is `bot chat`: the same agent, store, tools and audit trail as
// the server, with the terminal as its only channel. It works with a pipe
// as stdin; the end of the input ends the chat (a pending approval prompt
// is then rejected).
func cmdChat(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, c := newFlags("chat", stderr)
	if st := parse(fs, args); st >= 0 {
		return st
	}
	cfg := loadConfig(c.options(), stderr)
	if cfg == nil {
		return 1
	}
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
	ccfg := cfg.Channels.CLI.Config
	if ccfg.Lang == "" {
		ccfg.Lang = cfg.Approval.Lang
	}
	err = cli.Run(ctx, ccfg, stdin, stdout, func(ch channels.Channel) (func(context.Context) error, error) {
		if err := core.router.Register(ch); err != nil {
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
	})
	if err != nil {
		core.shutdown(context.Background())
		fmt.Fprintf(stderr, "bot chat: %v\n", err)
		return 1
	}
	return 0
}
