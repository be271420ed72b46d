package agent

import (
	"context"

	"github.com/hitlbot/hitlbot/approval"
	catalogue "github.com/hitlbot/hitlbot/words"
)

// sayGranted tells the chat that a call ran without asking because a live
// grant covers it: who approved the same request, and how long ago
// ("Auto-approved: the same request was approved by 张三 4 minutes ago."),
// naming the approval that granted it (the turn went private before it
// when that approval was private: privacy.go).
func (l *Loop) sayGranted(ctx context.Context, ts *turnState, g *approval.Grant) {
	if g == nil {
		return
	}
	lang, _ := catalogue.Parse(l.cfg.Lang)
	ago := catalogue.Ago(lang, l.cfg.Clock.Now().Sub(g.ApprovedAt))
	l.sayTurn(ctx, ts, Say{Kind: SayNotice, Text: catalogue.Text(lang, catalogue.GrantAutoApproved, g.ApprovedBy, ago), Approval: g.ApprovalID})
}
