package feishu

import (
	"context"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/approval/redisstore"
	"github.com/hitlbot/hitlbot/internal/hitltest"
	"github.com/hitlbot/hitlbot/internal/testredis"
)

// TestGrantButtons, through the fake Feishu and the real SDK: a MEDIUM
// card has two approve buttons (仅本次 / 本会话允许) whose values carry the
// grant, and its code. A click on 仅本次 runs the call and grants nothing
// (the same request asks again); a click on 本会话允许 grants the window:
// the same request then runs without a card and the chat is told who
// approved it; /grants lists it and /revoke all ends it, so the request
// asks again. On the memory store and on Redis.
func TestGrantButtons(t *testing.T) {
	stores := map[string]func(t *testing.T) approval.Store{
		"memory": func(*testing.T) approval.Store { return memstore.New(memstore.Options{}) },
		"redis": func(t *testing.T) approval.Store {
			c, prefix := testredis.Start(t)
			s, err := redisstore.New(c, redisstore.Options{Prefix: prefix, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
	for name, mk := range stores {
		t.Run(name, func(t *testing.T) {
			g := newRigWith(t, rigOptions{store: mk(t), tool: hitltest.NewTool("erase", approval.EffectWrite)})
			a, card := g.pending(t, "oc_p2p", "ou_alice", "orders")
			js := mustJSON(t, card)
			for _, want := range []string{`"Approve once"`, `"Allow for this session (5m)"`, `"grant":"once"`, `"grant":"session"`, "\\nCode: "} {
				if !strings.Contains(js, want) {
					t.Fatalf("the MEDIUM card lacks %s:\n%s", want, js)
				}
			}
			once := buttonValue(a, "approve")
			once["grant"] = "once"
			g.click(t, a, "ou_alice", once)
			eventually(t, "approved once", func() bool { return g.state(t, a.ID) == approval.StateExecuted })
			rec, err := g.engine.Get(context.Background(), a.ID)
			if err != nil || rec.Grant != approval.GrantOnce || g.erase.Runs.Load() != 1 {
				t.Fatalf("after 仅本次: %+v, %v, %d runs", rec, err, g.erase.Runs.Load())
			}

			b, _ := g.pending(t, "oc_p2p", "ou_alice", "orders")
			if b.ID == a.ID {
				t.Fatal("the same request did not ask again after 仅本次")
			}
			session := buttonValue(b, "approve")
			session["grant"] = "session"
			g.click(t, b, "ou_alice", session)
			eventually(t, "approved for the session", func() bool { return g.state(t, b.ID) == approval.StateExecuted })

			// The same request runs at once, and the chat is told why.
			g.say(t, "p2p", "oc_p2p", "ou_alice", "erase orders", nil)
			eventually(t, "the granted call runs", func() bool { return g.erase.Runs.Load() == 3 })
			eventually(t, "the chat is told it was auto-approved", func() bool {
				return g.sentTextContains("Auto-approved: the same request was approved by ou_alice ")
			})
			if p, _ := g.engine.Pending(context.Background(), b.Session); p != nil {
				t.Fatalf("the granted call asked: %+v", p)
			}

			g.say(t, "p2p", "oc_p2p", "ou_alice", "/grants", nil)
			eventually(t, "/grants answers", func() bool { return g.sentTextContains("1. erase: ") })
			g.say(t, "p2p", "oc_p2p", "ou_alice", "/revoke all", nil)
			eventually(t, "/revoke all answers", func() bool { return g.sentTextContains("Revoked 1 grant(s)") })
			c, _ := g.pending(t, "oc_p2p", "ou_alice", "orders")
			if c.ID == b.ID || c.State != approval.StatePending {
				t.Fatalf("after /revoke all the request did not ask: %+v", c)
			}
		})
	}
}

// sentTextContains reports whether a text the bot sent (a reply or a new
// message) contains sub.
func (g *rig) sentTextContains(sub string) bool {
	for _, op := range []string{"reply", "create"} {
		for _, c := range g.calls(op) {
			if c.MsgType == "text" && strings.Contains(c.Content, sub) {
				return true
			}
		}
	}
	return false
}
