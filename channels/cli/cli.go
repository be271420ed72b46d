package cli

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/words"
)

// Name is the channel's name in config, logs and session keys.
const Name = "cli"

// ChatID is the one chat of the terminal.
const ChatID = "local"

// Prompt is the chat's input prompt.
const Prompt = "> "

// ConfirmPrompt returns the approval prompt in lang ("zh" or "en"), from
// the catalogue of package words.
func ConfirmPrompt(lang string) string { return words.In(lang, words.CLIConfirm) }

// GrantPrompt is the approval prompt of a MEDIUM call that may allow the
// conversation the same request for window ("5m"): o (仅本次) approves
// once, s, y, yes or 确认 approve for the session, anything else rejects.
func GrantPrompt(lang, window string) string { return words.In(lang, words.CLIGrantPrompt, window) }

// Config is the YAML section chat: of the bot's config (`bot chat`).
type Config struct {
	// User names the person at the terminal in approvals and the audit
	// trail. Default: the OS user name, else "local".
	User string `json:"user" mapstructure:"user"`
	// Lang is the language of the chat's own sentences (the greeting
	// cmd/bot passes, the goodbye, the Ctrl+C notices): "zh" or "en".
	// Empty: "en"; `bot chat` fills an empty one with approval.lang, else
	// the locale.
	Lang string `json:"lang" mapstructure:"lang"`
	// TurnTimeout is how long the chat waits for a turn before it gives
	// the prompt back (the turn goes on, and what it says is printed when
	// it comes). Default 16m, a little longer than the agent's own turn
	// timeout.
	TurnTimeout time.Duration `json:"turn_timeout" mapstructure:"turn_timeout"`
	// Views are the pending cards the chat shows again by itself: when it
	// starts, an approval of its chat that waits with nobody asking (left
	// by an earlier run on a shared store, or by a turn that outlived the
	// turn timeout) is prompted for first. Not a YAML key: `bot chat`
	// gives the Presenter (channels.Assembly.Presenter). Required.
	Views channels.Views `json:"-" mapstructure:"-"`
}

// DefaultTurnTimeout is Config.TurnTimeout's default.
const DefaultTurnTimeout = 16 * time.Minute

// Chat is the terminal chat: a channels.Channel named "cli" and the REPL
// that drives it. Create it with New, register it with the router, start
// the router (which starts the chat with the router as its Handler), then
// call Run.
type Chat struct {
	cfg    Config
	in     io.Reader
	out    io.Writer
	styled bool             // both ends are terminals: a little bold and colour
	echo   bool             // the input is not a terminal: print each line read, so the output reads as a transcript
	intr   <-chan os.Signal // interrupts (Ctrl+C); nil: none
	greet  string           // printed before the first prompt; "": nothing
	// replies reads a reason after a refusal at the approval prompt
	// ("n wrong table", "取消 用 orders_archive 表").
	replies *approval.ReplyParser

	slot    channels.HandlerSlot // the router, from Start
	mu      sync.Mutex
	q       []event
	sig     chan struct{}
	started chan struct{}
	once    sync.Once
}

// event is something the router asked of the channel.
type event struct {
	turn    string // the message id of the turn it belongs to ("" unknown)
	out     *channels.Outgoing
	shown   *cards.View
	ref     string // the card reference of shown
	settled *cards.View
	delta   *string // a piece of a streamed answer (stream.go)
	end     *streamEnd
}

// Option configures a Chat.
type Option func(*Chat)

// WithInterrupts makes every value received on ch an interrupt, as Ctrl+C
// is (cmd/bot passes the channel it gets SIGINT on): at the approval
// prompt it rejects the approval and the chat goes on; at the input
// prompt it ends the chat (a goodbye, Run returns nil); while a turn runs
// it gives the prompt back (the turn goes on; what it says is printed
// when it comes). An interrupt never cancels a turn or a decision.
func WithInterrupts(ch <-chan os.Signal) Option {
	return func(c *Chat) { c.intr = ch }
}

// WithGreeting makes the chat print text (and a blank line) once, before
// its first prompt: cmd/bot says there what the bot can do and which
// requests to try. An empty text prints nothing.
func WithGreeting(text string) Option {
	return func(c *Chat) { c.greet = strings.TrimRight(text, "\n") }
}

// WithReplies makes the chat read a reason at the approval prompt with p
// (cmd/bot passes the parser of approval.replies, so a configured cancel
// keyword leads a reason there too). Default: the default keywords.
func WithReplies(p *approval.ReplyParser) Option {
	return func(c *Chat) { c.replies = p }
}

// New returns a chat on in and out. It does no I/O.
func New(cfg Config, in io.Reader, out io.Writer, opts ...Option) (*Chat, error) {
	if cfg.User == "" {
		cfg.User = osUser()
	}
	if cfg.Lang == "" {
		cfg.Lang = string(words.EN)
	}
	lang, err := words.Parse(cfg.Lang)
	if err != nil {
		return nil, fmt.Errorf("cli: %w", err)
	}
	cfg.Lang = string(lang)
	if cfg.Views == nil {
		return nil, errors.New("cli: Config.Views is required (the Presenter's views: the chat prompts first for an approval left waiting)")
	}
	if cfg.TurnTimeout < 0 {
		return nil, errors.New("cli: turn_timeout must not be negative")
	}
	if cfg.TurnTimeout == 0 {
		cfg.TurnTimeout = DefaultTurnTimeout
	}
	c := &Chat{cfg: cfg, in: in, out: out, styled: isTerminal(in) && isTerminal(out), echo: !isTerminal(in),
		sig: make(chan struct{}, 1), started: make(chan struct{})}
	for _, o := range opts {
		o(c)
	}
	if c.replies == nil {
		p, err := approval.NewReplyParser(approval.DefaultReplyConfig())
		if err != nil {
			return nil, fmt.Errorf("cli: the default reply keywords: %w", err)
		}
		c.replies = p
	}
	return c, nil
}

func osUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "local"
}

// isTerminal reports whether f is a terminal (an *os.File on a tty).
func isTerminal(f any) bool {
	fd, ok := f.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(fd.Fd()))
}

// Run is the whole of `bot chat` for cmd/bot: it makes the chat, hands it
// to wire, runs the REPL, then calls the shutdown function wire returned.
// wire must register ch with the router and start the router (so that ch
// gets the router as its Handler) and the engine.
func Run(ctx context.Context, cfg Config, in io.Reader, out io.Writer, wire func(ch channels.Channel) (shutdown func(context.Context) error, err error), opts ...Option) error {
	c, err := New(cfg, in, out, opts...)
	if err != nil {
		return err
	}
	shutdown, err := wire(c)
	if err != nil {
		return err
	}
	err = c.Run(ctx)
	if shutdown != nil {
		if serr := shutdown(context.WithoutCancel(ctx)); serr != nil && err == nil {
			err = serr
		}
	}
	return err
}

// ---- channels.Channel

// Name returns "cli".
func (c *Chat) Name() string { return Name }

// Start stores the handler.
func (c *Chat) Start(ctx context.Context, h channels.Handler) error {
	if h == nil {
		return errors.New("cli.Start: nil handler")
	}
	c.slot.Set(h)
	c.once.Do(func() { close(c.started) })
	return nil
}

// Close does nothing: the REPL ends with its input or its context.
func (c *Chat) Close(ctx context.Context) error { return nil }

// Ready reports whether the chat has been started.
func (c *Chat) Ready() error {
	if c.slot.Handler() == nil {
		return errors.New("cli: not started")
	}
	return nil
}

// Send queues what the bot says for the REPL to print. It never blocks.
func (c *Chat) Send(ctx context.Context, to channels.Target, out channels.Outgoing) error {
	c.push(event{turn: to.ReplyTo, out: &out})
	return nil
}

// ShowApproval queues the approval for the REPL, which prompts for it.
func (c *Chat) ShowApproval(ctx context.Context, to channels.Target, v cards.View) (approval.CardRef, error) {
	ref := "cli-" + string(v.ApprovalID)
	c.push(event{shown: &v, ref: ref})
	return approval.CardRef{Channel: Name, ChatID: to.ChatID, MessageID: ref}, nil
}

// FoldsResults marks the terminal as a channel whose reader gets a tool's
// result in the answer printed after it (channels.ResultFolder): a result
// is printed on its own line only when no answer follows.
func (c *Chat) FoldsResults() {}

var _ channels.ResultFolder = (*Chat)(nil)

// SettleApproval queues the approval's final state for the REPL to print.
func (c *Chat) SettleApproval(ctx context.Context, ref approval.CardRef, v cards.View) error {
	c.push(event{settled: &v})
	return nil
}

func (c *Chat) push(e event) {
	c.mu.Lock()
	c.q = append(c.q, e)
	c.mu.Unlock()
	select {
	case c.sig <- struct{}{}:
	default:
	}
}

func (c *Chat) pop() (event, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.q) == 0 {
		return event{}, false
	}
	e := c.q[0]
	c.q = c.q[1:]
	return e, true
}

// ---- the REPL

// Run reads lines from the input and chats until the input ends, an
// interrupt comes at the input prompt, or ctx ends; each is a normal end
// (nil, after a goodbye). Start must have been called (the router's Start
// does it). Each line is a message to the agent; the chat prints what the
// agent says and waits for the turn to end before the next prompt. An
// approval prompts "确认执行? [y/N]": y, yes or 确认 approves, anything else
// rejects (a cancel keyword followed by a reason, "n wrong table", rejects
// with that reason), and so do an interrupt (the chat then goes on), the end of the
// input and ctx ending.
//
// A goroutine reads the input; if the input never ends, it stays blocked
// in Read after Run returns (stdin: until the process exits).
func (c *Chat) Run(ctx context.Context) error {
	select {
	case <-c.started:
	default:
		return errors.New("cli: Run before Start: register the chat with the router and start the router first")
	}
	lines := make(chan string)
	done := make(chan struct{})
	defer close(done)
	go readLines(c.in, lines, done)

	r := &repl{c: c, h: c.slot.Handler(), lines: lines}
	return r.run(ctx)
}

// readLines sends each line of in (without its line end) to lines, then
// closes it. It reads a line only once the previous one was taken, so
// nothing is read ahead of the prompt that asks for it.
func readLines(in io.Reader, lines chan<- string, done <-chan struct{}) {
	defer close(lines)
	br := bufio.NewReader(in)
	for {
		s, err := br.ReadString('\n')
		if s != "" || err == nil {
			s = strings.TrimRight(s, "\r\n")
			select {
			case lines <- s:
			case <-done:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

type repl struct {
	streamed string // what the open streamed answer printed so far (stream.go)
	c        *Chat
	h        channels.Handler
	lines    <-chan string
	eof      bool
}

// errQuit ends the REPL: the input ended or ctx did. errInterrupt is an
// interrupt (Ctrl+C) while a line was asked for.
var (
	errQuit      = errors.New("quit")
	errInterrupt = errors.New("interrupt")
)

func (r *repl) run(ctx context.Context) error {
	if r.c.greet != "" {
		r.printf("%s\n\n", r.c.greet)
	}
	err := r.loop(ctx)
	if errors.Is(err, errQuit) || errors.Is(err, errInterrupt) {
		r.printf("%s\n", r.words().bye)
		return nil
	}
	return err
}

func (r *repl) loop(ctx context.Context) error {
	for {
		if err := r.offerPending(ctx); err != nil {
			return err
		}
		r.printf("%s", r.bold(Prompt))
		line, err := r.readLine(ctx, true)
		if err != nil {
			r.printf("\n")
			return err
		}
		text := strings.TrimSpace(line)
		if text == "" {
			continue
		}
		id := "cli_" + rand.Text()
		m := channels.Message{Channel: Name, ChatID: ChatID, ChatType: "p2p", UserID: approval.UserID(r.c.cfg.User),
			UserName: r.c.cfg.User, MessageID: id, Text: text, CreatedAt: time.Now()}
		if err := r.h.HandleMessage(ctx, m); err != nil {
			// Said in words, as a refused decision is (decide): never
			// the Go error text.
			r.printf("! %s\n", approval.UserMessageIn(err, r.c.cfg.Lang))
			continue
		}
		if err := r.awaitTurn(ctx, id); err != nil {
			return err
		}
	}
}

// readLine returns the next input line. While it waits at the main prompt
// (idle), it prints what arrives and takes approvals. It returns errQuit
// at the end of the input or of ctx, errInterrupt on an interrupt.
func (r *repl) readLine(ctx context.Context, idle bool) (string, error) {
	if r.eof {
		return "", errQuit
	}
	for {
		if idle {
			printed := false
			for {
				ev, ok := r.c.pop()
				if !ok {
					break
				}
				if !printed {
					r.printf("\n")
					printed = true
				}
				if _, err := r.handle(ctx, ev, ""); err != nil {
					return "", err
				}
			}
			if printed {
				r.printf("%s", r.bold(Prompt))
			}
		}
		var sig <-chan struct{}
		if idle {
			sig = r.c.sig
		}
		select {
		case line, ok := <-r.lines:
			if !ok {
				r.eof = true
				return "", errQuit
			}
			if r.c.echo {
				r.printf("%s\n", line)
			}
			return line, nil
		case <-ctx.Done():
			return "", errQuit
		case <-r.c.intr:
			return "", errInterrupt
		case <-sig:
		}
	}
}

// awaitTurn prints what the turn says until it ends (an answer or an error
// notice of the turn), the turn timeout passes, an interrupt comes (both
// give the prompt back; the turn goes on), or ctx ends.
func (r *repl) awaitTurn(ctx context.Context, turn string) error {
	timer := time.NewTimer(r.c.cfg.TurnTimeout)
	defer timer.Stop()
	for {
		for {
			ev, ok := r.c.pop()
			if !ok {
				break
			}
			end, err := r.handle(ctx, ev, turn)
			if err != nil {
				return err
			}
			if end {
				return nil
			}
		}
		select {
		case <-r.c.sig:
		case <-ctx.Done():
			return errQuit
		case <-timer.C:
			r.printf("%s\n", r.words().noAnswerYet)
			return nil
		case <-r.c.intr:
			r.printf("\n%s\n", r.words().turnGoesOn)
			return nil
		}
	}
}

// handle prints one event (prompting for an approval) and reports whether
// it ends the turn named turn.
func (r *repl) handle(ctx context.Context, ev event, turn string) (end bool, err error) {
	switch {
	case ev.shown != nil && ev.shown.WaitsIn != "":
		// The status of an approval decided in an approvers' chat
		// (approve_in): nothing to answer here; its end follows.
		r.printf("\n%s", cards.Text(*ev.shown, r.c.cfg.Lang))
	case ev.shown != nil:
		return false, r.confirm(ctx, *ev.shown, ev.ref)
	case ev.settled != nil:
		r.printf("[%s]\n", ev.settled.StatusText)
		if len(ev.settled.Resolve) > 0 {
			return false, r.resolve(ctx, *ev.settled)
		}
	case ev.delta != nil, ev.end != nil:
		return r.stream(ev, turn), nil
	case ev.out != nil:
		o := ev.out
		mine := turn != "" && (ev.turn == turn || ev.turn == "")
		switch o.Kind {
		case channels.OutToolResult:
			mark := "✓"
			if o.IsError {
				mark = "✗"
			}
			r.printf("%s %s: %s\n", mark, o.Tool, o.Text)
		case channels.OutAnswer:
			r.printf("%s\n", o.Text)
			return mine, nil
		default:
			if o.IsError {
				r.printf("! %s\n", o.Text)
				return mine, nil
			}
			r.printf("%s\n", o.Text)
		}
	}
	return false, nil
}

// offerPending prompts for an approval of this chat that waits with
// nobody asking (left by an earlier run on a shared store, or by a turn
// that outlived the turn timeout), so that no message is sent while one
// waits.
func (r *repl) offerPending(ctx context.Context) error {
	v, err := r.c.cfg.Views.PendingView(ctx, channels.Target{Channel: Name, ChatID: ChatID, UserID: approval.UserID(r.c.cfg.User)})
	if err != nil || v == nil {
		return nil
	}
	return r.confirm(ctx, *v, "cli-"+string(v.ApprovalID))
}

// confirm shows an approval and asks for the decision. An interrupt, the
// end of the input and the end of ctx reject it; after an interrupt the
// chat goes on (the outcome and the rest of the turn are printed), the end
// of ctx ends the REPL, and after the end of the input the rest of the
// turn is still printed.
func (r *repl) confirm(ctx context.Context, v cards.View, ref string) error {
	card := cards.Text(v, r.c.cfg.Lang)
	if r.c.styled && v.Risk >= approval.RiskHigh {
		card = "\x1b[31m" + card + "\x1b[0m"
	}
	r.printf("\n%s", card)
	if v.Answer != nil {
		return r.answer(ctx, v, ref)
	}
	r.printf("%s", r.bold(PromptFor(v, r.c.cfg.Lang)))
	line, err := r.readLine(ctx, false)
	verb, comment, grant := approval.Reject, "", approval.GrantUnset
	switch {
	case errors.Is(err, errInterrupt):
		r.printf("\n%s\n", r.words().interruptRejects)
	case err != nil:
		r.printf("\n")
	default:
		var approve bool
		if approve, grant = Choice(v, line); approve {
			verb = approval.Approve
		} else {
			comment = r.c.reason(line)
		}
	}
	return r.decide(ctx, channels.CardAction{MessageID: ref, ApprovalID: v.ApprovalID, Verb: verb,
		PayloadSHA256: v.PayloadSHA256, Comment: comment, Grant: grant})
}

// decide hands the chat user's answer a (its approval, verb, hash and what
// goes with them) to the router as a click of this chat, and says why when
// it decided nothing (not allowed, already decided, the store down): the
// approval's card is not settled by such an attempt. The end of ctx ends
// the REPL.
func (r *repl) decide(ctx context.Context, a channels.CardAction) error {
	_, err := r.decideWhy(ctx, a)
	return err
}

// decideWhy is decide, reporting too whether the engine refused a
// question's answer itself (approval.ErrQuestion: a field of the wrong
// type; said as AnswerRefusal words it), so that it can be asked again.
func (r *repl) decideWhy(ctx context.Context, a channels.CardAction) (answerRefused bool, err error) {
	a.Channel, a.ChatID, a.EventID, a.UserID = Name, ChatID, "cli_"+rand.Text(), approval.UserID(r.c.cfg.User)
	o, derr := r.h.HandleCardAction(context.WithoutCancel(ctx), a)
	switch {
	case derr != nil && errors.Is(derr, approval.ErrQuestion):
		r.printf("! %s\n", channels.AnswerRefusal(r.c.cfg.Lang, derr, ""))
		answerRefused = true
	case derr != nil:
		r.printf("! %s\n", approval.UserMessageIn(derr, r.c.cfg.Lang))
	case !o.Status.Final():
		r.printf("! %s\n", o.Content)
	}
	if ctx.Err() != nil {
		return false, errQuit
	}
	return answerRefused, nil
}

// chatWords are the chat's own sentences in one language.
type chatWords struct {
	bye, interruptRejects, turnGoesOn, noAnswerYet string
}

// words returns the chat's sentences in its language, from the catalogue
// of package words.
func (r *repl) words() chatWords {
	l := words.Of(r.c.cfg.Lang)
	return chatWords{
		bye:              words.Text(l, words.CLIBye),
		interruptRejects: words.Text(l, words.CLIInterruptRejects),
		turnGoesOn:       words.Text(l, words.CLITurnGoesOn),
		noAnswerYet:      words.Text(l, words.CLINoAnswerYet),
	}
}

// reason returns the reason of a refusal typed at the approval prompt: the
// text after a cancel keyword ("n wrong table", "no: not today", "取消 用
// orders_archive 表"; approval.ReplyParser.ParseReason), else "".
func (c *Chat) reason(line string) string {
	if r, reason := c.replies.ParseReason(line); r == approval.ReplyCancel {
		return reason
	}
	return ""
}

// isOnce and isSession read the two approve answers of a MEDIUM prompt.
// PromptFor is the approval prompt of card v: y / N; o / s / N for a
// MEDIUM call that may grant; y / a / N when the card offers another
// agent's standing rule (always).
func PromptFor(v cards.View, lang string) string {
	switch {
	case v.ApproveAlways != nil:
		return AlwaysPrompt(lang, v)
	case v.ApproveOnce != nil:
		return GrantPrompt(lang, v.GrantWindow)
	}
	return ConfirmPrompt(lang)
}

// AlwaysPrompt is the approval prompt of a card that offers another
// agent's standing rule.
func AlwaysPrompt(lang string, v cards.View) string {
	rule, agent := "", ""
	if v.ApproveAlways != nil {
		rule, agent = v.AlwaysRule, v.AlwaysAgent
	}
	return words.In(lang, words.CLIAlwaysPrompt, rule, agent)
}

// Choice reads the answer line to card v's prompt: whether it approves,
// and with which grant choice (a for always only where the card offers
// it; o and s only where it may grant). Anything else rejects, the line
// being the reason.
func Choice(v cards.View, line string) (bool, approval.GrantChoice) {
	switch {
	case v.ApproveAlways != nil && isAlways(line):
		return true, approval.GrantAlways
	case v.ApproveOnce != nil && isOnce(line):
		return true, approval.GrantOnce
	case isYes(line) || (v.ApproveOnce != nil && isSession(line)):
		if v.ApproveOnce != nil {
			return true, approval.GrantSession
		}
		return true, approval.GrantUnset
	}
	return false, approval.GrantUnset
}

func isAlways(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "a", "always", "以后都允许":
		return true
	}
	return false
}

func isOnce(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "o", "once", "仅本次":
		return true
	}
	return false
}

func isSession(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "s", "session", "本会话允许":
		return true
	}
	return false
}

func isYes(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "y", "yes", "确认":
		return true
	}
	return false
}

func (r *repl) printf(format string, args ...any) {
	_, _ = fmt.Fprintf(r.c.out, format, args...)
}

func (r *repl) bold(s string) string {
	if !r.c.styled {
		return s
	}
	return "\x1b[1m" + s + "\x1b[0m"
}

var _ channels.Channel = (*Chat)(nil)

// answer asks another agent's question (v.Questions) one by one: a line
// of option numbers (several with commas, for a multi-select) chooses
// options, any other text is the person's own answer, an empty line skips
// the question; a number that is no option, or several for a single
// choice, is refused and the question asked again (approval.ParseAnswer). Every question skipped declines it (reject); an
// interrupt, the end of the input and of ctx decline it too. The answer
// goes to the router as the edit a card's form makes (the engine checks
// it against the questions and claims it on the hash shown); an answer
// the engine refuses (approval.ErrQuestion: an MCP server's field of the
// wrong type, a required one left empty) is said, and the questions are
// asked again: the question still waits, and this chat is where it is
// answered.
func (r *repl) answer(ctx context.Context, v cards.View, ref string) error {
	lang := r.c.cfg.Lang
	reject := channels.CardAction{MessageID: ref, ApprovalID: v.ApprovalID, Verb: approval.Reject, PayloadSHA256: v.PayloadSHA256}
	for {
		r.printf("%s\n", words.In(lang, words.QuestionCLIAskAll))
		picks := map[string]any{}
		for i, qv := range v.Questions {
			q := questionOf(qv)
			for {
				r.printf("%s", r.bold(words.In(lang, words.QuestionCLIPrompt, i+1)+": "))
				line, err := r.readLine(ctx, false)
				if err != nil {
					if errors.Is(err, errInterrupt) {
						r.printf("\n%s\n", r.words().interruptRejects)
					} else {
						r.printf("\n")
					}
					return r.decide(ctx, reject)
				}
				// The typed answer's rules, as in a chat (回答 <code> …): a
				// number that is no option is refused and asked again.
				p, ok, err := approval.ParseAnswer(q, i+1, line)
				if err != nil {
					r.printf("%s\n", channels.AnswerRefusal(lang, err, ""))
					continue
				}
				if ok {
					picks["#"+strconv.Itoa(i+1)] = p
				}
				break
			}
		}
		if len(picks) == 0 {
			return r.decide(ctx, reject)
		}
		edit, err := json.Marshal(map[string]any{"answers": picks})
		if err != nil {
			return err
		}
		a := reject
		a.Verb, a.Edits = approval.Approve, map[string]json.RawMessage{"#1": edit}
		if refused, err := r.decideWhy(ctx, a); !refused || err != nil {
			return err
		}
	}
}

// questionOf is the question a card's view shows, as the typed answer's
// rules read it (its options' labels, whether it takes several).
func questionOf(v cards.QuestionView) approval.Question {
	q := approval.Question{Question: v.Question, Header: v.Header, MultiSelect: v.Multi}
	for _, o := range v.Options {
		q.Options = append(q.Options, approval.QuestionOption{Label: o.Label, Description: o.Description})
	}
	return q
}
