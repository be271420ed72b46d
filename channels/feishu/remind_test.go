package feishu

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/internal/clock"
)

// remindCase is one approval a Feishu reminder is tested on.
type remindCase struct {
	name string
	edit func(*approval.PolicyConfig)
	// wantWhat: the reminder says what the call would do (not for a
	// private approval).
	wantWhat bool
}

var remindCases = []remindCase{
	{"open", func(c *approval.PolicyConfig) {}, true},
	{"private", func(c *approval.PolicyConfig) {
		c.Privacy = map[string]approval.Privacy{"HIGH": approval.PrivacyGroup}
	}, false},
}

// TestRemindersFeishu: ou_alice asks in oc_team for a call ou_bob and
// ou_carol may approve; nobody decides. At 50 % of the window the team
// chat gets one text message that mentions both (<at user_id>, as the
// fake reads it) with the approval's code and who asked, and at 90 % a
// second; a sweep in between sends nothing. A private approval's
// reminder never says what the call would do.
func TestRemindersFeishu(t *testing.T) {
	for _, c := range remindCases {
		t.Run(c.name, func(t *testing.T) {
			clk := clock.NewFake(time.Now().UTC())
			g := newRigWith(t, rigOptions{clock: clk, reminders: []float64{0.5, 0.9}, editPolicy: func(p *approval.PolicyConfig) {
				p.Approvers = map[string]approval.ApproverConfig{"HIGH": {Mode: approval.ApproverUsers, Users: []string{"ou_bob", "ou_carol"}}}
				c.edit(p)
			}})
			g.say(t, "group", "oc_team", "ou_alice", "erase orders", map[string]string{"@_user_1": "ou_bot"})
			var a *approval.Approval
			eventually(t, "an approval is pending with its cards", func() bool {
				p, err := g.engine.Pending(context.Background(), channels.SessionKey(g.scope, Name, "oc_team", "ou_alice", ""))
				if err != nil {
					t.Fatal(err)
				}
				a = p
				return p != nil && len(p.Cards) >= 1
			})
			window := a.ExpiresAt.Sub(a.CreatedAt)
			reminders := func() []string {
				var out []string
				for _, s := range g.texts("oc_team") {
					if strings.Contains(s, "Reminder") {
						out = append(out, s)
					}
				}
				return out
			}
			sweep := func() {
				t.Helper()
				if _, err := g.engine.Sweep(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			clk.Advance(window/2 - time.Second)
			sweep()
			if got := reminders(); len(got) != 0 {
				t.Fatalf("reminded before 50 %%: %q", got)
			}
			clk.Advance(time.Second)
			sweep()
			sweep()
			got := reminders()
			if len(got) != 1 {
				t.Fatalf("at 50 %%: %d reminders %q, want 1", len(got), got)
			}
			code := approval.CodeIn([]*approval.Approval{a}, a)
			if !strings.Contains(got[0], code) || !strings.Contains(got[0], "ou_alice") {
				t.Fatalf("reminder %q lacks the code %s or who asked", got[0], code)
			}
			if says := strings.Contains(got[0], "erase"); says != c.wantWhat {
				t.Fatalf("reminder %q names the call: %v, want %v", got[0], says, c.wantWhat)
			}
			var mentions [][]string
			for _, call := range g.calls("create") {
				if call.MsgType == "text" && len(call.Mentions) > 0 {
					mentions = append(mentions, call.Mentions)
				}
			}
			if len(mentions) != 1 || !slices.Equal(mentions[0], []string{"ou_bob", "ou_carol"}) {
				t.Fatalf("mentions %v, want one message mentioning ou_bob and ou_carol", mentions)
			}
			clk.Advance(window * 3 / 10)
			sweep()
			if got := reminders(); len(got) != 1 {
				t.Fatalf("at 80 %%: %d reminders", len(got))
			}
			clk.Advance(window / 10)
			sweep()
			if got := reminders(); len(got) != 2 {
				t.Fatalf("at 90 %%: %d reminders, want 2", len(got))
			}
		})
	}
}
