package channels_test

import (
	"context"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/approval/memstore"
	. "github.com/hitlbot/hitlbot/channels"
)

// pendingFails is a store whose look-up of a session's pending approval
// fails as when Redis is down.
type pendingFails struct{ approval.Store }

func (pendingFails) Pending(context.Context, approval.SessionKey) (*approval.Approval, error) {
	return nil, approval.E("test.Pending", errkind.Unavailable, "", approval.ErrUnavailable)
}

// TestStoreFailureSaidInTheConfiguredLanguage: a typed 确认 whose pending
// approval cannot be looked up is answered with the sentence for an
// unavailable store, in the router's language.
func TestStoreFailureSaidInTheConfiguredLanguage(t *testing.T) {
	for _, tc := range []struct{ lang, want string }{
		{"en", "Approvals are temporarily unavailable; nothing was run."},
		{"zh", "审批服务暂时不可用，未执行任何操作"},
		{"zh-CN", "审批服务暂时不可用，未执行任何操作"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			store := pendingFails{memstore.New(memstore.Options{})}
			g := newRig(t, store, func(c *RouterConfig) { c.Lang = tc.lang })
			g.send(t, msg("alice", "确认"))
			eventually(t, "the notice", func() bool { return g.ch.hasText("notice", tc.want) })
			if g.model.Seen("确认") != 0 {
				t.Fatal("the typed reply reached the model")
			}
		})
	}
}
