package feishu

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/hitltest"
	"github.com/hitlbot/hitlbot/words"
)

// textsWith counts the text messages the bot sent that contain sub.
func (g *rig) textsWith(sub string) int {
	n := 0
	for _, op := range []string{"reply", "create"} {
		for _, c := range g.calls(op) {
			if c.MsgType == "text" && strings.Contains(c.Content, sub) {
				n++
			}
		}
	}
	return n
}

// TestToolResultShownOnce, through the fake Feishu: an approved call's
// result is on its card and in the answer after it, and is not said as a
// message of its own too; when the model fails after the call ran, no
// answer says the result, so it is said as a message when the turn ends.
func TestToolResultShownOnce(t *testing.T) {
	t.Run("answered", func(t *testing.T) {
		g := newRig(t)
		a, _ := g.pending(t, "oc_p2p", "ou_alice", "orders")
		g.click(t, a, "ou_alice", buttonValue(a, "approve"))
		eventually(t, "the answer", func() bool { return g.sentTextContains("summary: erase done (run 1)") })
		if n := g.textsWith("🔧 erase"); n != 0 {
			t.Fatalf("the tool result was also said as a message of its own (%d)", n)
		}
	})
	t.Run("the model fails after the call", func(t *testing.T) {
		m := &hitltest.Model{}
		m.Hook = func(_ context.Context, req agent.Request) (agent.Response, bool, error) {
			if req.Messages[len(req.Messages)-1].Role == agent.RoleTool {
				return agent.Response{}, true, agent.NewModelError(words.ModelFailed, errors.New("the model is down"))
			}
			return agent.Response{}, false, nil
		}
		g := newRigWith(t, rigOptions{model: m})
		a, _ := g.pending(t, "oc_p2p", "ou_alice", "orders")
		g.click(t, a, "ou_alice", buttonValue(a, "approve"))
		eventually(t, "executed", func() bool { return g.state(t, a.ID) == approval.StateExecuted })
		eventually(t, "the result said when the turn ended", func() bool { return g.textsWith("🔧 erase") == 1 })
	})
}
