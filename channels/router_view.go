package channels

import (
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
)

// pendingView is the card of a waiting approval as the router shows it:
// in its language, times in its zone (RouterConfig.Zone).
func (r *Router) pendingView(a *approval.Approval) cards.View {
	v := cards.Pending(a, r.text, r.cfg.Lang)
	v.Zone = r.cfg.Zone
	return v
}
