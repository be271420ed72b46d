package channels

import (
	"strings"
	"unicode"
	"unicode/utf8"

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
	CmdAnswer  CommandKind = "answer"  // 回答 [<code>] <answer> (answer [<code>] <answer>): a question's typed answer
)

// answerWords start the answer command (compared lowercased, after
// mentions).
var answerWords = []string{"回答", "answer", "/answer"}

// commonWords are English words of a code's form that begin ordinary
// sentences after "answer" ("answer this mail", "answer them with …"):
// the answer command takes such a word as a code only when it names an
// approval waiting in the chat (a code is random: one of these is rare).
var commonWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`this that them they with from your what when here back each both some
		only just like more then also very much will have soon fast next last once mine ours hers whom were been into
		over asap sure well good okay fine thus same such made make done must`) {
		commonWords[w] = true
	}
}

// commonWord reports whether code (lowercased) is one of commonWords, or
// a number (a year, an amount: "回答 2024 年底前完成"): a code of digits
// only is rare (about 1 in 170), a number at the start of an answer is
// not.
func commonWord(code string) bool {
	return commonWords[code] || strings.Trim(code, "0123456789") == ""
}

// Command is a parsed approval command.
type Command struct {
	Kind CommandKind
	// Arg is the command's argument as typed, lowercased: a code (cancel,
	// decide), "all" or a number (revoke); empty when it has none.
	Arg string
	// Reply is the decision of CmdDecide: approval.ReplyConfirm or
	// approval.ReplyCancel.
	Reply approval.Reply
	// Text is CmdAnswer's answer after its code (Arg, when the first word
	// after the command word may be a code), and Body the whole text after
	// the command word (the answer when Arg is no code): as typed,
	// lines kept (approval.ParseAnswers reads them).
	Text, Body string
}

// ParseCommand reads an approval command from a message's text: a
// command word after "/" (a full-width "／" counts) with its argument, or
// a confirm or cancel keyword of replies followed by exactly one short
// code ("确认 ab12", "cancel ab12"; an argument typed in full-width
// forms, "确认　ａｂ１２", is folded: codeWord). Mentions before it (@bot)
// are skipped. A "/" word it does not know is CmdNone (the agent's commands:
// /sql, /call, /tools …), so only the words above are taken from the
// agent. Anything else is CmdNone.
//
// The answer command is the word 回答 (answer, /answer) followed by a
// space or a colon, then the answer: "回答 ab12 2", "answer ab12 1,3",
// "回答 ab12\n1: 2\n2: 自己的话", "回答 2". Its Arg is the first word
// after it when that may be a code (approval.ValidCode; typed in
// full-width forms, ａｂ１２, it is folded to ab12), Text what
// follows that word, Body all of it: the router tells which (a code that
// names nothing waiting, followed by an answer, is told so, unless it is
// a number or one of commonWords: then it is part of the text).
func ParseCommand(text string, replies *approval.ReplyParser) Command {
	if c, ok := parseAnswer(text); ok {
		return c
	}
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
		arg = codeWord(strings.TrimRightFunc(fields[1], unicode.IsPunct))
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

// parseAnswer reads the answer command (see ParseCommand).
func parseAnswer(text string) (Command, bool) {
	rest := strings.TrimLeftFunc(strings.ReplaceAll(text, "／", "/"), unicode.IsSpace)
	for strings.HasPrefix(rest, "@") { // mentions (@bot, Feishu's @_user_1)
		i := strings.IndexFunc(rest, unicode.IsSpace)
		if i < 0 {
			return Command{}, false
		}
		rest = strings.TrimLeftFunc(rest[i:], unicode.IsSpace)
	}
	for _, w := range answerWords {
		if strings.EqualFold(strings.TrimSpace(rest), w) {
			return Command{Kind: CmdAnswer}, true
		}
		if len(rest) <= len(w) || !strings.EqualFold(rest[:len(w)], w) {
			continue
		}
		after, size := utf8.DecodeRuneInString(rest[len(w):])
		if !unicode.IsSpace(after) && after != ':' && after != '：' {
			continue
		}
		body := strings.TrimSpace(rest[len(w)+size:])
		if body == "" {
			return Command{Kind: CmdAnswer}, true
		}
		c := Command{Kind: CmdAnswer, Body: body, Text: body}
		first, tail := body, ""
		if i := strings.IndexFunc(body, unicode.IsSpace); i >= 0 {
			first, tail = body[:i], strings.TrimSpace(body[i:])
		}
		if code := codeWord(first); approval.ValidCode(code) {
			c.Arg, c.Text = code, tail
		}
		return c, true
	}
	return Command{}, false
}

// codeWord is word as a code is compared: full-width ASCII (ａｂ１２, typed
// by a Chinese input method in full-width mode) folded to ASCII, in lower
// case.
func codeWord(word string) string {
	return strings.ToLower(strings.Map(func(r rune) rune {
		if r >= '\uFF01' && r <= '\uFF5E' {
			return r - 0xFEE0
		}
		return r
	}, word))
}
