package cli_test

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels/cli"
	"github.com/hitlbot/hitlbot/words"
)

// TestFrozenResolvedInChat: in bot chat, an approved call whose effect is
// unknown prints its frozen state and offers the choice; "r <note>"
// retries it (the tool runs exactly once more, recorded as resolved from
// the chat), and the model's follow-up is printed.
func TestFrozenResolvedInChat(t *testing.T) {
	in, w := io.Pipe()
	h := start(t, in)
	h.out.waitFor(t, cli.Prompt, 1)
	h.erase.Unknown.Store(1)
	fmt.Fprintln(w, "erase orders")
	h.out.waitFor(t, cli.ConfirmPrompt("en"), 1)
	fmt.Fprintln(w, "y")
	h.out.waitFor(t, words.In("en", words.CLIResolvePrompt), 1)
	if n := h.erase.Runs.Load(); n != 1 {
		t.Fatalf("runs = %d", n)
	}
	fmt.Fprintln(w, "r the database is back")
	h.out.waitFor(t, "the retry ended executed", 1)
	w.Close()
	if err := h.ended(t); err != nil {
		t.Fatal(err)
	}
	if n := h.erase.Runs.Load(); n != 2 {
		t.Fatalf("the tool ran %d times, want 2", n)
	}
	out := h.out.String()
	if !strings.Contains(out, "[Retried: Executed]") {
		t.Fatalf("no retried state in:\n%s", out)
	}
	if a := h.only(t); a.State != approval.StateExecuted || a.Outcome.Resolution != approval.ResolveRetry || a.DecidedVia != approval.SourceCLI ||
		a.Comment != "the database is back" {
		t.Fatalf("record %+v", a)
	}
}
