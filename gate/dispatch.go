package gate

import (
	"context"
	"strings"

	"github.com/hitlbot/hitlbot/approval"
)

// Dispatcher runs approved calls: an agent's call ("ci-claude/Bash") is
// only allowed, never run (the agent runs it); every other call goes to
// Next (hitlbot's tool registry).
type Dispatcher struct {
	// Next runs hitlbot's own tools.
	Next approval.Dispatcher
}

var _ approval.Dispatcher = Dispatcher{}

// IsAgentCall reports whether tool names another agent's call.
func IsAgentCall(tool string) bool { return strings.Contains(tool, "/") }

// Dispatch allows an agent's call and passes every other on.
func (d Dispatcher) Dispatch(ctx context.Context, c approval.Call) (approval.Result, error) {
	if IsAgentCall(c.Tool) {
		agent, _, _ := strings.Cut(c.Tool, "/")
		if approval.IsQuestionCall(c.Tool) {
			lines := answerLines(c.Args)
			if lines == "" {
				return approval.Result{Tool: c.Tool, CallID: c.CallID, Status: approval.StatusFailed, Content: notAnswered, IsError: true}, nil
			}
			// The answers are what the cards show of the answered question.
			return approval.Result{Tool: c.Tool, CallID: c.CallID, Status: approval.StatusExecuted, Content: lines}, nil
		}
		return approval.Result{Tool: c.Tool, CallID: c.CallID, Status: approval.StatusExecuted, Content: "allowed: " + agent + " runs it"}, nil
	}
	return d.Next.Dispatch(ctx, c)
}
