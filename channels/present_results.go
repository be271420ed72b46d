package channels

import (
	"context"
	"sync"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
)

// ResultFolder is implemented by a channel whose people read a tool's
// result in the agent's answer that follows it, and an approved call's on
// its card (Feishu, DingTalk): saying the result as a message of its own
// too would show it twice. The presenter then holds each tool result of a
// turn and drops it when an answer comes after it; a result no answer
// followed (the model failed, the turn stopped to wait for another
// approval) is said when the turn ends, so no result is lost.
type ResultFolder interface {
	Channel
	// FoldsResults marks the channel; it does nothing.
	FoldsResults()
}

// maxHeldResults bounds the results held for one conversation; older ones
// beyond it are said at once.
const maxHeldResults = 32

// heldResults are the tool results of running turns held for a
// ResultFolder channel, by conversation (a session runs one turn at a
// time).
type heldResults struct {
	mu sync.Mutex
	m  map[approval.SessionKey][]heldResult
}

type heldResult struct {
	to  Target
	out Outgoing
}

// hold keeps out for the turn of in; it returns a result to say now when
// the conversation already holds maxHeldResults.
func (h *heldResults) hold(in agent.Inbound, to Target, out Outgoing) (heldResult, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[approval.SessionKey][]heldResult{}
	}
	q := append(h.m[in.Session], heldResult{to, out})
	var over heldResult
	spill := len(q) > maxHeldResults
	if spill {
		over, q = q[0], q[1:]
	}
	h.m[in.Session] = q
	return over, spill
}

// take removes and returns the results held for in's conversation.
func (h *heldResults) take(in agent.Inbound) []heldResult {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.m[in.Session]
	delete(h.m, in.Session)
	return q
}

// foldResult handles s for a ResultFolder channel ch, before anything else
// of Say: a tool result is held (said reports true: nothing more to do);
// an answer drops what is held; the turn's end says what no answer
// followed.
func (p *Presenter) foldResult(ctx context.Context, ch Channel, in agent.Inbound, to Target, s agent.Say) (said bool, err error) {
	if _, ok := ch.(ResultFolder); !ok {
		return false, nil
	}
	switch s.Kind {
	case agent.SayToolResult:
		out := Outgoing{Kind: OutToolResult, Text: s.Text, Tool: s.Tool, Args: s.Args, IsError: s.IsError}
		if over, spill := p.held.hold(in, to, out); spill {
			return true, ch.Send(ctx, over.to, over.out)
		}
		return true, nil
	case agent.SayAnswer:
		p.held.take(in)
	case agent.SayTurnEnded:
		var errs []error
		for _, h := range p.held.take(in) {
			if err := ch.Send(ctx, h.to, h.out); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			p.log.Warn("saying a tool result no answer followed failed", "channel", in.Channel, "chat_id", in.ChatID, "err", errs[0])
		}
	}
	return false, nil
}
