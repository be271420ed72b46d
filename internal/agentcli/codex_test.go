package agentcli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// codexContract is the PermissionRequest hook contract of the pinned Codex
// CLI as observed (docs/agents.md): what each answer of the hook makes
// Codex do. hitlbot's /hooks/codex relies on each row.
var codexContract = []struct {
	name    string
	answer  string
	hook    string // the hook run's status
	ran     bool   // the command ran
	asked   bool   // Codex fell back to its own approval prompt
	toModel string // in the tool output the model reads
}{
	{name: "allow runs the command, nobody else is asked",
		answer: `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}`,
		hook:   "completed", ran: true},
	{name: "deny runs nothing and the model reads the message",
		answer: `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"rejected by alice"}}}`,
		hook:   "blocked", toModel: "rejected by alice"},
	{name: "an allow with updatedInput fails closed: Codex asks its own prompt",
		answer: `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedInput":{"command":"true"}}}}`,
		hook:   "failed", asked: true},
}

func TestCodexHookContract(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the Codex CLI")
	}
	for _, tc := range codexContract {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			marker := filepath.Join(dir, "ran")
			answer := filepath.Join(dir, "answer.json")
			input := filepath.Join(dir, "input.json")
			if err := os.WriteFile(answer, []byte(tc.answer), 0o600); err != nil {
				t.Fatal(err)
			}
			model := NewResponses(t, "touch "+marker, "touch a file for the test")
			codex := NewCodex(t, CodexConfig{ModelURL: model.URL, HookTimeout: 30,
				HookCommand: "cat > " + input + "; cat " + answer})
			turn := codex.Run(t, "touch the file", 3*time.Minute)
			if !slices.Equal(turn.Hooks, []string{tc.hook}) {
				t.Errorf("hook runs = %v, want [%s]", turn.Hooks, tc.hook)
			}
			if _, err := os.Stat(marker); (err == nil) != tc.ran {
				t.Errorf("command ran = %v, want %v (turn %+v)", err == nil, tc.ran, turn)
			}
			if asked := len(turn.Asked) > 0; asked != tc.asked {
				t.Errorf("Codex asked its own client: %v, want %v", turn.Asked, tc.asked)
			}
			if tc.toModel != "" && !strings.Contains(strings.Join(model.Outputs(), "\n"), tc.toModel) {
				t.Errorf("the model read %q, want it to hold %q", model.Outputs(), tc.toModel)
			}
			// What the hook was given: the shape /hooks/codex parses.
			b, err := os.ReadFile(input)
			if err != nil {
				t.Fatalf("the hook got no input: %v", err)
			}
			for _, k := range []string{`"hook_event_name":"PermissionRequest"`, `"tool_name":"Bash"`, `"session_id":`, `"turn_id":`, `"cwd":`, `"tool_input":{"command":"touch ` + marker} {
				if !strings.Contains(string(b), k) {
					t.Errorf("hook input lacks %s: %s", k, b)
				}
			}
		})
	}
}
