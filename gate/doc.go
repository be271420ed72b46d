// Package gate lets other agents ask hitlbot's people for approval: Claude
// Code (its --permission-prompt-tool), Codex, any program. An agent names
// the call it wants to make ({tool_name, input, tool_use_id}); hitlbot
// shows it on a card in the chat ops chose for that agent, the right
// person decides, and the agent gets the answer: allowed (with the input
// that was shown) or denied with a sentence it can act on. hitlbot never
// runs these calls; the agent does, once allowed.
//
// A request is an approval like any other (approval.Engine): the same
// policy vocabulary, approver rules, four eyes, expiry, claim, audit and
// replicas. Its one call is named "<agent>/<tool>" ("ci-claude/Bash"): a
// slash no tool of hitlbot's own can have, so Dispatcher answers such a
// call "allowed" instead of running anything, and a card says "Allowed"
// where it would say "Executed".
//
// Where things are:
//   - config.go: agents[] (who may ask, with which token, where the card
//     goes, the policy by tool pattern).
//   - rules.go: the pattern policy (Claude Code's permission-rule
//     vocabulary); preview.go: what the person reads of a call.
//   - gate.go: Gate (Ask, Wait, Get), the answers, the per-agent cap.
//   - mcp.go: the MCP server at /mcp (request_approval, create_approval,
//     get_approval, wait_approval).
//   - http.go: POST /api/approvals and GET /api/approvals/{id}?wait= for
//     agents, with their tokens.
//   - claude.go: POST /hooks/claude, Claude Code's PermissionRequest hook:
//     each request its own approval (a lane), answered within the
//     agent's hook_timeout.
//   - question.go: Claude Code's AskUserQuestion as a question card; the
//     person's answer is an edit that Editor checks, allowed as
//     updatedInput with "answers".
//   - codex.go: POST /hooks/codex, Codex's: the same, answered as Codex
//     accepts (never updatedInput).
//   - standing.go: standing rules ("always allow Bash(npm test:*) for
//     this agent"): the card's offer from Claude Code's
//     permission_suggestions, Claude Code's rule matching, and the calls
//     a rule allows without a card.
package gate
