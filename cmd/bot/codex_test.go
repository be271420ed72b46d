package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/internal/agentcli"
)

// codexHookCommand is the PermissionRequest hook docs/agents.md gives Codex:
// curl sends the hook's input (stdin) to hitlbot's /hooks/codex with the
// agent's token from the environment and prints the answer. --fail-with-body
// makes a refusal (401, 400) a failed hook, which Codex treats as no
// decision.
const codexHookCommand = `curl -sS --fail-with-body --max-time 1800 -H "Authorization: Bearer $HITLBOT_AGENT_TOKEN" ` +
	`-H "Content-Type: application/json" --data-binary @- %s/hooks/codex`

// TestCodexHook runs the real Codex CLI (0.169.0, from npm) with hitlbot's
// /hooks/codex as its PermissionRequest hook (a curl command, as
// docs/agents.md says), the model a local fake asking for one command
// outside the sandbox, and the approvers' chat on a fake Feishu, all through `bot
// serve`: approved on the card, the command runs and Codex asks nobody
// else; rejected, nothing runs and the model reads who rejected it.
func TestCodexHook(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the Codex CLI from npm")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed: docs/agents.md's Codex hook is a curl command")
	}
	s, fake := serveHookAgent(t)
	run := func(verb, event string) (agentcli.Turn, *agentcli.Responses, string) {
		marker := filepath.Join(t.TempDir(), "ran-"+verb)
		model := agentcli.NewResponses(t, "touch "+marker, "touch a file for the test")
		codex := agentcli.NewCodex(t, agentcli.CodexConfig{ModelURL: model.URL, HookTimeout: 600,
			HookCommand: strings.Replace(codexHookCommand, "%s", s.base, 1)})
		codex.Env = append(codex.Env, "HITLBOT_AGENT_TOKEN="+agentToken)
		done := make(chan agentcli.Turn, 1)
		go func() { done <- codex.Run(t, "touch the file", 4*time.Minute) }()
		n := map[string]int{"approve": 1, "reject": 2}[verb]
		// Codex starts, asks the model, then runs the hook: give it time.
		waitFor(t, 2*time.Minute, "the Codex turn's card", func() bool {
			select {
			case turn := <-done:
				t.Fatalf("the Codex turn ended before a card was shown: %+v\nbot serve's log:\n%s", turn, s.stderr.String())
			default:
			}
			seen := 0
			for _, c := range fake.Calls() {
				if c.MsgType == "interactive" && c.Op == "create" && strings.Contains(c.Content, "ci-claude asks to run") {
					seen++
				}
			}
			return seen >= n
		})
		card := agentCard(t, fake, n)
		if !strings.Contains(card.Content, "From Codex session") || !strings.Contains(card.Content, "touch "+marker) {
			t.Fatalf("the card: %s", card.Content)
		}
		click(t, fake, card, verb, "ou_alice", event)
		select {
		case turn := <-done:
			return turn, model, marker
		case <-time.After(5 * time.Minute):
			t.Fatal("the Codex turn did not end")
		}
		return agentcli.Turn{}, nil, ""
	}

	turn, _, marker := run("approve", "ev-codex-allow")
	if !slices.Equal(turn.Hooks, []string{"completed"}) || len(turn.Asked) != 0 {
		t.Fatalf("the approved turn: %+v (hooks want [completed], nobody else asked)", turn)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the approved command did not run: %v", err)
	}

	turn, model, marker := run("reject", "ev-codex-deny")
	if !slices.Equal(turn.Hooks, []string{"blocked"}) || len(turn.Asked) != 0 {
		t.Fatalf("the rejected turn: %+v (hooks want [blocked], nobody else asked)", turn)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the rejected command ran: %v", err)
	}
	if out := strings.Join(model.Outputs(), "\n"); !strings.Contains(out, "rejected by ou_alice after ") {
		t.Fatalf("the model read %q; want the rejection", out)
	}
	if strings.Contains(s.stderr.String(), agentToken) {
		t.Fatal("the agent's token reached the log")
	}
}
