// Package cli is `bot chat`: a terminal chat on the same agent, router and
// approval engine as the server, as a channels.Channel named "cli" (one
// chat, "local"; the user is Config.User, by default the OS user name).
//
// # Wiring (cmd/bot)
//
//	err := cli.Run(ctx, cli.Config{User: …, Lang: …}, os.Stdin, os.Stdout,
//		func(ch channels.Channel) (func(context.Context) error, error) {
//			// build the registry, router, engine and loop as for serve (channels.Assemble), then:
//			registry.Register(ch)
//			engine.Start(ctx)
//			router.Start(ctx) // starts ch with the router as its Handler
//			return func(ctx context.Context) error { return errors.Join(router.Close(ctx), loop.Close(ctx)) }, nil
//		})
//
// Ctrl+C is given to the chat with WithInterrupts (a channel fed by
// signal.Notify for os.Interrupt), not by ending ctx: ending ctx would
// stop the engine and every turn, and a turn cut short reports a failure
// of the model that did not fail. An interrupt at the confirmation prompt
// rejects the approval (as the seed's "Y/n with Ctrl+C as a rejection"):
// the outcome is printed and the chat goes on. At the input prompt it ends
// the chat ("Bye.", Run returns nil), as the end of the input (Ctrl+D)
// does. While a turn runs it gives the prompt back; the turn goes on and
// what it says is printed when it comes. ctx should end on SIGTERM: at the
// confirmation prompt that rejects too, then the chat ends. The same steps
// by hand: New, Register, start the router, Chat.Run.
//
// # The REPL
//
// The prompt is "> ". Each line is a message to the agent (through the
// router, like any chat message); what the agent says is printed (tool
// results as "✓ tool: result"), and the next prompt comes once the turn
// has ended: its answer, or a notice that reports an error (the router
// does not say when a turn ends; everything the agent says carries the
// message id of its turn as Target.ReplyTo, so the chat knows which turn
// spoke). Config.TurnTimeout bounds the wait.
//
// An approval prints its card (cards.Text: risk, tool, summary, the
// sanitised preview of the arguments, who may approve, expiry) and asks
// "确认执行? [y/N]". y, yes or 确认 approves; anything else rejects, and so
// do Ctrl+C, the end of the input and the end of ctx. A cancel keyword
// followed by a reason ("n wrong table", "no: not today", "取消 用
// orders_archive 表"; the keywords of approval.replies, given with
// WithReplies) rejects with that reason as the decision's comment, which
// the record, the audit trail and the model's tool reply keep. The decision goes through
// the router's HandleCardAction as the terminal user, so the audit trail
// records the source "cli". An approval of this chat that waits with
// nobody asking (left by an earlier run on a shared Redis store) is asked
// about before the next prompt, so no message is sent while one waits.
//
// It works with a pipe as stdin (`bot chat < script`): lines are read one
// at a time, only when a prompt asks for one, and echoed to the output so
// it reads as a transcript. Bold and colour are used only when both stdin
// and stdout are terminals (golang.org/x/term).
package cli
