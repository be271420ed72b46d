package channels

import (
	"context"
	"fmt"

	"github.com/hitlbot/hitlbot/approval"
)

// directTo returns whom the card of a goes to when its approve_in is
// Direct: the people its approver rule lists who may approve it, but its
// requester, who has the status card in their own chat.
func directTo(a *approval.Approval) []approval.UserID {
	var out []approval.UserID
	for _, u := range a.Approvers.Users {
		if u != a.Requester && a.Allows(u, approval.Approve, false) {
			out = append(out, u)
		}
	}
	return out
}

// showDirect sends the card of a, whose approve_in is Direct, with its
// buttons and without a code (a typed code names an approval of a chat),
// to each person directTo names, in their 1:1 chat with the bot, through
// the approvers' channel (PrivateChannel.ShowApprovalTo). It fails when
// the card reached nobody, or the channel cannot send it so.
func (p *Presenter) showDirect(ctx context.Context, a *approval.Approval) ([]approval.CardRef, error) {
	to := Target{Channel: a.ApproveIn.Channel}
	users := directTo(a)
	if len(users) == 0 {
		return nil, fmt.Errorf("show approval %s 1:1: its rule lists nobody but the requester", a.ID)
	}
	// The whole card: as a private approval's own when it is private.
	refs, err := p.showTo(ctx, a, to, users, p.pendingView(a), a.Private())
	if err != nil {
		return nil, err
	}
	p.log.Debug("approval shown 1:1", "channel", to.Channel, "approval_id", a.ID, "cards", len(refs))
	return refs, nil
}
