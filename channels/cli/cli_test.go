package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/cli"
	"github.com/hitlbot/hitlbot/channels/internal/chattest"
	"github.com/hitlbot/hitlbot/gate"
	"github.com/hitlbot/hitlbot/internal/hitltest"
)

var quiet = slog.New(slog.DiscardHandler)

// script is the model: "erase X" calls the tool on X, a tool result is
// summarised, "slow" is answered once the test sends on gate (asked is
// told when it waits), anything else is echoed.
func script(asked, gate chan struct{}) *hitltest.Model {
	return &hitltest.Model{NoIDs: true, Hook: func(ctx context.Context, req agent.Request) (agent.Response, bool, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == agent.RoleTool || last.Content != "slow" {
			return agent.Response{}, false, nil
		}
		asked <- struct{}{}
		select {
		case <-gate:
			return agent.Response{Message: agent.Message{Role: agent.RoleAssistant, Content: "slow answer"}}, true, nil
		case <-ctx.Done():
			return agent.Response{}, true, &agent.ModelError{Public: "The language model failed; please try again.", Err: ctx.Err()}
		}
	}}
}

// output is a writer the test can read while the chat writes.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor waits until the output holds s n times.
func (o *output) waitFor(t *testing.T, s string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(o.String(), s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("no %q (×%d) in the output:\n%s", s, n, o.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

type harness struct {
	engine *approval.Engine
	audit  *hitltest.Trail
	erase  *hitltest.Tool
	out    *output
	done   chan error
	cancel context.CancelFunc
	intr   chan os.Signal                      // Ctrl+C
	model  struct{ asked, gate chan struct{} } // the script's "slow" turn
}

// start wires the real parts the way cmd/bot does, through cli.Run, and
// runs the chat on in in the background.
func start(t *testing.T, in io.Reader, opts ...cli.Option) *harness {
	t.Helper()
	return startEffectModel(t, in, approval.EffectDestructive, nil, opts...)
}

// startEffect is start with erase's effect (EffectWrite: MEDIUM, whose
// approval may grant the conversation a window).
func startEffect(t *testing.T, in io.Reader, effect approval.Effect, opts ...cli.Option) *harness {
	t.Helper()
	return startEffectModel(t, in, effect, nil, opts...)
}

// startModel is start whose agent answers with m (nil: the script).
func startModel(t *testing.T, in io.Reader, m agent.Model, opts ...cli.Option) *harness {
	t.Helper()
	return startEffectModel(t, in, approval.EffectDestructive, m, opts...)
}

// startEffectModel is start with erase's effect and the agent's model m
// (nil: the script).
func startEffectModel(t *testing.T, in io.Reader, effect approval.Effect, m agent.Model, opts ...cli.Option) *harness {
	t.Helper()
	return startBeside(t, in, effect, m, nil, nil, opts...)
}

// startBeside is startEffectModel under the approval policy pc (nil: the
// default one), with the channels beside registered too (an approvers'
// chat of another platform).
func startBeside(t *testing.T, in io.Reader, effect approval.Effect, m agent.Model, pc *approval.PolicyConfig, beside []channels.Channel, opts ...cli.Option) *harness {
	t.Helper()
	return startTools(t, in, effect, nil, m, pc, beside, opts...)
}

// startTools is startBeside with more tools in the registry beside erase.
func startTools(t *testing.T, in io.Reader, effect approval.Effect, more []agent.Tool, m agent.Model, pc *approval.PolicyConfig,
	beside []channels.Channel, opts ...cli.Option) *harness {
	t.Helper()
	h := &harness{erase: hitltest.NewTool("erase", effect), out: &output{}, done: make(chan error, 1), audit: &hitltest.Trail{},
		intr: make(chan os.Signal, 1)}
	h.erase.Result = hitltest.TargetResult
	h.model.asked, h.model.gate = make(chan struct{}, 1), make(chan struct{})
	var model agent.Model = script(h.model.asked, h.model.gate)
	if m != nil {
		model = m
	}
	// The stack as `bot chat` builds it (channels.Assemble), before the
	// chat, which is given the presenter's views.
	st := hitltest.New(t, hitltest.Config{Model: model, Tools: append([]agent.Tool{h.erase}, more...), Audit: h.audit, Policy: pc,
		// Other agents' calls as the server wires them (questions).
		Engine: func(ec *approval.EngineConfig) {
			ec.Dispatcher, ec.Editor = gate.Dispatcher{Next: ec.Dispatcher}, gate.Editor{Next: ec.Editor}
		}})
	h.engine = st.Engine
	wire := func(ch channels.Channel) (func(context.Context) error, error) {
		for _, c := range append([]channels.Channel{ch}, beside...) {
			if err := st.Registry.Register(c); err != nil {
				return nil, err
			}
		}
		ctx, cancel := context.WithCancel(st.Ctx)
		if err := st.Router.Start(ctx); err != nil {
			cancel()
			return nil, err
		}
		return func(sctx context.Context) error {
			defer cancel()
			return errorsJoin(st.Router.Close(sctx), st.Loop.Close(sctx))
		}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	t.Cleanup(cancel)
	opts = append([]cli.Option{cli.WithInterrupts(h.intr)}, opts...)
	go func() {
		h.done <- cli.Run(ctx, cli.Config{User: "alice", Views: st.Presenter}, in, h.out, wire, opts...)
	}()
	return h
}

func errorsJoin(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// ended waits for the chat to end and returns its error.
func (h *harness) ended(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("the chat did not end; output:\n%s", h.out.String())
	}
	return nil
}

// only returns the one approval the chat asked for.
func (h *harness) only(t *testing.T) *approval.Approval {
	t.Helper()
	ids := h.audit.Requested()
	if len(ids) != 1 {
		t.Fatalf("approvals requested: %v", ids)
	}
	a, err := h.engine.Get(context.Background(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestQuestionAnswered(t *testing.T) {
	in, w := io.Pipe()
	h := start(t, in)
	h.out.waitFor(t, cli.Prompt, 1)
	fmt.Fprintln(w, "hello there")
	h.out.waitFor(t, "echo: hello there\n", 1)
	h.out.waitFor(t, cli.Prompt, 2)
	w.Close() // end of input at the main prompt
	if err := h.ended(t); err != nil {
		t.Fatal(err)
	}
	// The input is a pipe, not a terminal: each line read is echoed, so
	// the output reads as a transcript.
	if got := h.out.String(); got != "> hello there\necho: hello there\n> \nBye.\n" {
		t.Fatalf("output %q", got)
	}
}

// TestGreeting: a greeting is printed once, before the first prompt, and
// followed by a blank line; without one the chat starts with its prompt
// (TestQuestionAnswered).
func TestGreeting(t *testing.T) {
	for _, tc := range []struct{ name, greet, want string }{
		{"one line", "Hello.", "Hello.\n\n> hello\necho: hello\n> \nBye.\n"},
		{"trailing newlines", "Hello.\nTry: x\n\n", "Hello.\nTry: x\n\n> hello\necho: hello\n> \nBye.\n"},
		{"empty", "", "> hello\necho: hello\n> \nBye.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, w := io.Pipe()
			h := start(t, in, cli.WithGreeting(tc.greet))
			h.out.waitFor(t, cli.Prompt, 1)
			fmt.Fprintln(w, "hello")
			h.out.waitFor(t, cli.Prompt, 2)
			w.Close()
			if err := h.ended(t); err != nil {
				t.Fatal(err)
			}
			if got := h.out.String(); got != tc.want {
				t.Fatalf("output %q, want %q", got, tc.want)
			}
		})
	}
}

func TestApprovedRunsOnce(t *testing.T) {
	in, w := io.Pipe()
	h := start(t, in)
	h.out.waitFor(t, cli.Prompt, 1)
	fmt.Fprintln(w, "erase orders")
	h.out.waitFor(t, cli.ConfirmPrompt("en"), 1)
	card := h.out.String()
	for _, want := range []string{"HIGH", "erase", `{"target":"orders"}`} {
		if !strings.Contains(card, want) {
			t.Fatalf("the prompt does not show %q:\n%s", want, card)
		}
	}
	if h.erase.Runs.Load() != 0 {
		t.Fatal("ran before the answer")
	}
	fmt.Fprintln(w, "y")
	h.out.waitFor(t, "summary: erase orders done (run 1)\n", 1)
	h.out.waitFor(t, cli.Prompt, 2)
	w.Close()
	if err := h.ended(t); err != nil {
		t.Fatal(err)
	}
	if h.erase.Runs.Load() != 1 {
		t.Fatalf("runs = %d", h.erase.Runs.Load())
	}
	// The result once: in the answer, not on a line of its own too.
	out := h.out.String()
	if strings.Count(out, "erase orders done (run 1)") != 1 || strings.Contains(out, "✓ erase:") {
		t.Fatalf("the tool result is not said exactly once in:\n%s", out)
	}
	if a := h.only(t); a.State != approval.StateExecuted || a.DecidedVia != approval.SourceCLI || a.DecidedBy != "alice" {
		t.Fatalf("record %+v", a)
	}
}

func TestNoRejects(t *testing.T) {
	for _, answer := range []string{"n", "", "maybe"} {
		in, w := io.Pipe()
		h := start(t, in)
		fmt.Fprintln(w, "erase orders")
		h.out.waitFor(t, cli.ConfirmPrompt("en"), 1)
		fmt.Fprintln(w, answer)
		h.out.waitFor(t, "summary: Not run: declined by", 1)
		w.Close()
		if err := h.ended(t); err != nil {
			t.Fatal(err)
		}
		if h.erase.Runs.Load() != 0 {
			t.Fatalf("%q: ran", answer)
		}
		if st := h.only(t).State; st != approval.StateRejected {
			t.Fatalf("%q: state %s", answer, st)
		}
	}
}

func TestEOFAtApprovalRejects(t *testing.T) {
	in, w := io.Pipe()
	h := start(t, in)
	fmt.Fprintln(w, "erase orders")
	h.out.waitFor(t, cli.ConfirmPrompt("en"), 1)
	w.Close()
	if err := h.ended(t); err != nil {
		t.Fatal(err)
	}
	out := h.out.String()
	if h.erase.Runs.Load() != 0 || !strings.Contains(out, "summary: Not run: declined by") {
		t.Fatalf("runs %d, output:\n%s", h.erase.Runs.Load(), out)
	}
	if st := h.only(t).State; st != approval.StateRejected {
		t.Fatalf("state %s", st)
	}
}

// TestCtxEndAtApprovalRejects: the end of ctx (SIGTERM) at the approval
// prompt rejects the approval and ends the chat.
func TestCtxEndAtApprovalRejects(t *testing.T) {
	in, w := io.Pipe()
	defer w.Close()
	h := start(t, in)
	fmt.Fprintln(w, "erase orders")
	h.out.waitFor(t, cli.ConfirmPrompt("en"), 1)
	h.cancel() // SIGTERM
	if err := h.ended(t); err != nil {
		t.Fatal(err)
	}
	if st := h.only(t).State; st != approval.StateRejected || h.erase.Runs.Load() != 0 {
		t.Fatalf("state %s, runs %d", st, h.erase.Runs.Load())
	}
}

// TestScript pipes a whole script at once, as `bot chat < script` does.
func TestScript(t *testing.T) {
	h := start(t, strings.NewReader("hello\nerase orders\nyes\nerase users\n确认\nbye"))
	if err := h.ended(t); err != nil {
		t.Fatal(err)
	}
	out := h.out.String()
	for _, want := range []string{"echo: hello\n", "summary: erase orders done (run 1)\n", "summary: erase users done (run 2)\n", "echo: bye\n"} {
		if !strings.Contains(out, want) {
			t.Fatalf("no %q in:\n%s", want, out)
		}
	}
	t.Log("transcript:\n" + out)
	if strings.Contains(out, "\x1b[") {
		t.Fatalf("terminal control sequences in piped output:\n%q", out)
	}
	if h.erase.Runs.Load() != 2 {
		t.Fatalf("runs = %d", h.erase.Runs.Load())
	}
}

func TestRunBeforeStart(t *testing.T) {
	c, err := cli.New(cli.Config{Views: hitltest.Views(t)}, strings.NewReader(""), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(context.Background()); err == nil {
		t.Fatal("Run before Start succeeded")
	}
	if _, err := cli.New(cli.Config{Lang: "fr", Views: hitltest.Views(t)}, nil, nil); err == nil {
		t.Fatal("an unknown language was accepted")
	}
	// The views are given when the chat is made, never found later.
	if _, err := cli.New(cli.Config{}, nil, nil); err == nil || !strings.Contains(err.Error(), "Views") {
		t.Fatalf("a chat without views: %v", err)
	}
}

// TestInterruptAtApprovalRejects: Ctrl+C at the approval prompt is a
// rejection (seeds/002): the outcome is printed, the tool never runs, and
// the chat goes on with the next line.
func TestInterruptAtApprovalRejects(t *testing.T) {
	in, w := io.Pipe()
	defer w.Close()
	h := start(t, in)
	fmt.Fprintln(w, "erase orders")
	h.out.waitFor(t, cli.ConfirmPrompt("en"), 1)
	h.intr <- os.Interrupt
	h.out.waitFor(t, "Ctrl+C: declining it.\n", 1)
	h.out.waitFor(t, "[Declined; nothing was run]\n", 1)
	h.out.waitFor(t, "summary: Not run: declined by", 1)
	h.out.waitFor(t, cli.Prompt, 2)
	if st := h.only(t).State; st != approval.StateRejected || h.erase.Runs.Load() != 0 {
		t.Fatalf("state %s, runs %d", st, h.erase.Runs.Load())
	}
	fmt.Fprintln(w, "still here?")
	h.out.waitFor(t, "echo: still here?\n", 1)
	w.Close()
	if err := h.ended(t); err != nil {
		t.Fatal(err)
	}
	if out := h.out.String(); strings.Contains(out, "language model failed") || strings.Contains(out, "! ") {
		t.Fatalf("an error in:\n%s", out)
	}
}

// TestInterruptAtPromptEnds: Ctrl+C at the input prompt ends the chat
// cleanly with a goodbye.
func TestInterruptAtPromptEnds(t *testing.T) {
	in, w := io.Pipe()
	defer w.Close()
	h := start(t, in)
	fmt.Fprintln(w, "hello")
	h.out.waitFor(t, "echo: hello\n", 1)
	h.out.waitFor(t, cli.Prompt, 2)
	h.intr <- os.Interrupt
	if err := h.ended(t); err != nil {
		t.Fatalf("Ctrl+C at the prompt: %v", err)
	}
	if got := h.out.String(); got != "> hello\necho: hello\n> \nBye.\n" {
		t.Fatalf("output %q", got)
	}
}

// TestInterruptDuringTurn: Ctrl+C while a turn runs gives the prompt back
// and does not stop the turn: its answer comes, and no model failure is
// reported; Ctrl+C at the prompt then ends the chat.
func TestInterruptDuringTurn(t *testing.T) {
	in, w := io.Pipe()
	defer w.Close()
	h := start(t, in)
	fmt.Fprintln(w, "slow")
	<-h.model.asked
	h.intr <- os.Interrupt
	h.out.waitFor(t, "(Ctrl+C: the turn goes on", 1)
	h.out.waitFor(t, cli.Prompt, 2)
	h.model.gate <- struct{}{}
	h.out.waitFor(t, "slow answer\n", 1)
	h.out.waitFor(t, cli.Prompt, 3)
	h.intr <- os.Interrupt
	if err := h.ended(t); err != nil {
		t.Fatal(err)
	}
	if out := h.out.String(); strings.Contains(out, "language model failed") || !strings.HasSuffix(out, "Bye.\n") {
		t.Fatalf("output:\n%s", out)
	}
}

type refusalTest struct {
	answer string
	reason string // the decision's comment ("": none)
}

var refusalTests = []refusalTest{
	{"n wrong table", "wrong table"},
	{"no: not today", "not today"},
	{"N, Use ORDERS_Archive", "Use ORDERS_Archive"},
	{"取消 用 orders_archive 表", "用 orders_archive 表"},
	{"cancel：用 orders_archive 表", "用 orders_archive 表"},
	{"n", ""},
	{"no problem", ""}, // rejects (not y), with no reason
	{"确认 wrong table", ""},
}

// TestRefusalWithReason: a cancel keyword followed by a reason at the
// approval prompt rejects with that reason: the record keeps it, and the
// model is told who declined and why.
func TestRefusalWithReason(t *testing.T) {
	for _, test := range refusalTests {
		t.Run(test.answer, func(t *testing.T) {
			in, w := io.Pipe()
			h := start(t, in)
			fmt.Fprintln(w, "erase orders")
			h.out.waitFor(t, cli.ConfirmPrompt("en"), 1)
			fmt.Fprintln(w, test.answer)
			told := "summary: Not run: declined by alice. "
			if test.reason != "" {
				told = "summary: Not run: declined by alice: " + test.reason + ". "
			}
			h.out.waitFor(t, told, 1)
			w.Close()
			if err := h.ended(t); err != nil {
				t.Fatal(err)
			}
			a := h.only(t)
			if h.erase.Runs.Load() != 0 || a.State != approval.StateRejected || a.Comment != test.reason || a.DecidedVia != approval.SourceCLI {
				t.Fatalf("runs %d, record %+v", h.erase.Runs.Load(), a)
			}
		})
	}
}

// TestRefusalWithConfiguredKeyword: with WithReplies, a configured cancel
// keyword leads a reason at the approval prompt; a default one no longer
// does (it still rejects, as anything but y does).
func TestRefusalWithConfiguredKeyword(t *testing.T) {
	p, err := approval.NewReplyParser(approval.ReplyConfig{Confirm: []string{"好"}, Cancel: []string{"算了"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, test := range []refusalTest{{"算了 明天再说", "明天再说"}, {"取消 明天再说", ""}} {
		in, w := io.Pipe()
		h := start(t, in, cli.WithReplies(p))
		fmt.Fprintln(w, "erase orders")
		h.out.waitFor(t, cli.ConfirmPrompt("en"), 1)
		fmt.Fprintln(w, test.answer)
		h.out.waitFor(t, "summary: Not run: declined by alice", 1)
		w.Close()
		if err := h.ended(t); err != nil {
			t.Fatal(err)
		}
		if a := h.only(t); a.State != approval.StateRejected || a.Comment != test.reason {
			t.Fatalf("%q: record %+v", test.answer, a)
		}
	}
}

// TestGrantPrompt: a MEDIUM call prompts for 仅本次 / 本会话允许; "o"
// approves once (the record says so, nothing is granted: the same request
// prompts again), "s" approves for the session (the same request then
// runs without a prompt).
func TestGrantPrompt(t *testing.T) {
	in, w := io.Pipe()
	h := startEffect(t, in, approval.EffectWrite)
	h.out.waitFor(t, cli.Prompt, 1)
	prompt := cli.GrantPrompt("en", "5m")
	fmt.Fprintln(w, "erase orders")
	h.out.waitFor(t, prompt, 1)
	fmt.Fprintln(w, "o")
	h.out.waitFor(t, cli.Prompt, 2)
	fmt.Fprintln(w, "erase orders")
	h.out.waitFor(t, prompt, 2)
	fmt.Fprintln(w, "s")
	h.out.waitFor(t, cli.Prompt, 3)
	fmt.Fprintln(w, "erase orders")
	h.out.waitFor(t, "Auto-approved: the same request was approved by alice ", 1)
	h.out.waitFor(t, cli.Prompt, 4)
	w.Close()
	if err := h.ended(t); err != nil {
		t.Fatal(err)
	}
	if n := h.erase.Runs.Load(); n != 3 {
		t.Fatalf("runs = %d, want 3", n)
	}
	if strings.Count(h.out.String(), prompt) != 2 {
		t.Fatalf("prompts:\n%s", h.out.String())
	}
	grants := map[approval.GrantChoice]int{}
	for _, r := range h.audit.All() {
		if r.Event == "confirm" {
			grants[approval.GrantChoice(r.Grant)]++
		}
	}
	if grants[approval.GrantOnce] != 1 || grants[approval.GrantSession] != 1 {
		t.Fatalf("confirm records' grants = %v", grants)
	}
}

// TestCommandInChat: /help at the prompt is answered by the router and
// the prompt comes back at once (no turn to wait for).
func TestCommandInChat(t *testing.T) {
	in, w := io.Pipe()
	h := start(t, in)
	h.out.waitFor(t, cli.Prompt, 1)
	fmt.Fprintln(w, "/help")
	h.out.waitFor(t, "/revoke <n> or /revoke all", 1)
	h.out.waitFor(t, cli.Prompt, 2)
	w.Close()
	if err := h.ended(t); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(h.out.String(), "no answer") {
		t.Fatalf("the chat waited for a turn:\n%s", h.out.String())
	}
}

// TestApproveInFromTheTerminal: the chat user's HIGH call is decided in a
// Feishu approvers' chat (approve_in): the terminal shows where it waits
// and asks nothing; when someone there approves, the call runs once and
// the terminal prints how it ended, then the answer.
func TestApproveInFromTheTerminal(t *testing.T) {
	pc := approval.DefaultPolicyConfig()
	pc.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverChat}}
	pc.ApproveIn = map[string]approval.Place{"HIGH": {Channel: "feishu", ChatID: "oc_ops"}}
	rec := &chattest.Recorder{}
	in, w := io.Pipe()
	h := startBeside(t, in, approval.EffectDestructive, nil, &pc, []channels.Channel{rec})
	h.out.waitFor(t, cli.Prompt, 1)
	fmt.Fprintln(w, "erase orders")
	h.out.waitFor(t, "Waiting for approval in the approvers' chat", 1)
	a := h.only(t)
	o, err := h.engine.Decide(context.Background(), a.ID, approval.Decision{Verb: approval.Approve, Actor: "ou_carol", Source: approval.SourceCard,
		PayloadSHA256: a.PayloadSHA256, Channel: "feishu", ChatID: "oc_ops"})
	if err != nil || o.Status != approval.StatusExecuted {
		t.Fatalf("the approvers' chat's approve = %+v, %v", o, err)
	}
	h.out.waitFor(t, "summary: erase orders done (run 1)\n", 1)
	h.out.waitFor(t, cli.Prompt, 2)
	w.Close()
	if err := h.ended(t); err != nil {
		t.Fatal(err)
	}
	if out := h.out.String(); strings.Contains(out, cli.ConfirmPrompt("en")) {
		t.Fatalf("the terminal asked to decide:\n%s", out)
	}
	if shown, _ := rec.Views(); len(shown) != 1 || shown[0].Approve == nil || h.erase.Runs.Load() != 1 {
		t.Fatalf("the approvers' chat was shown %+v; %d runs", shown, h.erase.Runs.Load())
	}
}

// TestLateTypedReplyAnswered: a 确认 typed at the input prompt after the
// approval was decided at its own prompt is told it was already decided,
// and the prompt comes back at once (it decided nothing, ran nothing, and
// the assistant does not read it).
func TestLateTypedReplyAnswered(t *testing.T) {
	in, w := io.Pipe()
	h := start(t, in)
	h.out.waitFor(t, cli.Prompt, 1)
	fmt.Fprintln(w, "erase orders")
	h.out.waitFor(t, cli.ConfirmPrompt("en"), 1)
	fmt.Fprintln(w, "y")
	h.out.waitFor(t, "summary: erase orders done (run 1)\n", 1)
	h.out.waitFor(t, cli.Prompt, 2)
	fmt.Fprintln(w, "确认")
	h.out.waitFor(t, "! This approval has already been decided: Executed\n", 1)
	h.out.waitFor(t, cli.Prompt, 3)
	w.Close()
	if err := h.ended(t); err != nil {
		t.Fatal(err)
	}
	if h.erase.Runs.Load() != 1 || strings.Contains(h.out.String(), "echo: 确认") {
		t.Fatalf("runs %d; output:\n%s", h.erase.Runs.Load(), h.out.String())
	}
}
