package channels

import (
	"strings"
	"unicode"

	"github.com/hitlbot/hitlbot/approval"
)

// CommandKind names one of the approval commands the router answers in
// the chat, before the agent (see Router.HandleMessage).
type CommandKind string

// Command kinds.
const (
	CmdNone    CommandKind = ""
	CmdHelp    CommandKind = "help"    // /help
	CmdPending CommandKind = "pending" // /pending
	CmdCancel  CommandKind = "cancel"  // /cancel <code>
	CmdGrants  CommandKind = "grants"  // /grants
	CmdRevoke  CommandKind = "revoke"  // /revoke <n|all>
	CmdDecide  CommandKind = "decide"  // 确认 <code> / 取消 <code> (confirm / cancel <code>)
)

// Command is a parsed approval command.
type Command struct {
	Kind CommandKind
	// Arg is the command's argument as typed, lowercased: a code (cancel,
	// decide), "all" or a number (revoke); empty when it has none.
	Arg string
	// Reply is the decision of CmdDecide: approval.ReplyConfirm or
	// approval.ReplyCancel.
	Reply approval.Reply
}

// ParseCommand reads an approval command from a message's text: a
// command word after "/" (a full-width "／" counts) with its argument, or
// a confirm or cancel keyword of replies followed by exactly one short
// code ("确认 ab12", "cancel ab12"). Mentions before it (@bot) are
// skipped. A "/" word it does not know is CmdNone (the agent's commands:
// /sql, /call, /tools …), so only the words above are taken from the
// agent. Anything else is CmdNone.
func ParseCommand(text string, replies *approval.ReplyParser) Command {
	fields := strings.Fields(strings.ReplaceAll(text, "／", "/"))
	for len(fields) > 0 && strings.HasPrefix(fields[0], "@") {
		fields = fields[1:]
	}
	if len(fields) == 0 || len(fields) > 2 {
		return Command{}
	}
	word := strings.ToLower(fields[0])
	arg := ""
	if len(fields) == 2 {
		arg = strings.ToLower(strings.TrimRightFunc(fields[1], unicode.IsPunct))
	}
	if strings.HasPrefix(word, "/") {
		switch word {
		case "/help":
			return only(CmdHelp, arg)
		case "/pending":
			return only(CmdPending, arg)
		case "/grants":
			return only(CmdGrants, arg)
		case "/revoke":
			return Command{Kind: CmdRevoke, Arg: arg}
		case "/cancel":
			return Command{Kind: CmdCancel, Arg: arg}
		}
		return Command{}
	}
	if arg == "" || !approval.ValidCode(arg) || replies == nil {
		return Command{}
	}
	switch r := replies.Parse(fields[0]); r {
	case approval.ReplyConfirm, approval.ReplyCancel:
		return Command{Kind: CmdDecide, Arg: arg, Reply: r}
	}
	return Command{}
}

// only is a command that takes no argument: with one, it is not the
// command (the text goes to the agent).
func only(k CommandKind, arg string) Command {
	if arg != "" {
		return Command{}
	}
	return Command{Kind: k}
}
