package gate

import (
	"bytes"
	"encoding/json"
)

// CodexHookPath is where a Codex PermissionRequest hook posts. Codex
// 0.169.0 runs hooks as commands (its input on stdin, its answer on
// stdout), so the hook is curl sending stdin here with the agent's token
// (docs/agents.md: "Codex"). Codex's input is Claude Code's (session_id, cwd,
// hook_event_name, tool_name "Bash", tool_input {command, description})
// plus turn_id and model, and it runs the hook in its approval path only:
// in its terminal UI and app-server sessions, not in `codex exec`, whose
// approval policy is always never.
const CodexHookPath = "/hooks/codex"

// hookClient is the program a PermissionRequest hook answers: the answers
// differ in what each program accepts.
type hookClient int

const (
	// claudeCode accepts allow with updatedInput (the input shown, which
	// may be an approver's edit).
	claudeCode hookClient = iota
	// codex fails closed on an answer holding updatedInput or
	// updatedPermissions (its schema reserves them; internal/agentcli's
	// TestCodexHookContract): a bare allow runs the command as Codex asked
	// it, also when the approver chose the card's standing rule (hitlbot
	// keeps the rule; Codex is not told).
	codex
)

// String names the program on a card ("From Codex session …").
func (c hookClient) String() string {
	if c == codex {
		return "Codex"
	}
	return "Claude Code"
}

// decision is the hook's decision for answer ans of a request whose
// canonical input was asked.
func (c hookClient) decision(ans Answer, asked json.RawMessage) HookDecision {
	if ans.Status != StatusAllowed {
		return HookDecision{Behavior: "deny", Message: ans.Message}
	}
	if c == claudeCode {
		d := HookDecision{Behavior: "allow", UpdatedInput: ans.Input}
		if len(ans.Always) > 0 {
			d.UpdatedPermissions = []json.RawMessage{ans.Always}
		}
		return d
	}
	if !bytes.Equal(bytes.TrimSpace(ans.Input), bytes.TrimSpace(asked)) {
		// An approver allowed an edited call; Codex can only run its own.
		return HookDecision{Behavior: "deny", Message: ans.Message + ", but only changed to " + string(ans.Input) +
			", which Codex cannot apply to its call. Do not run the original; ask again with exactly that input."}
	}
	return HookDecision{Behavior: "allow"}
}
