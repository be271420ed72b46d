package feishu

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
	"github.com/hitlbot/hitlbot/internal/hitltest"
	"github.com/hitlbot/hitlbot/tools/mcptool"
	"github.com/hitlbot/hitlbot/tools/mcptool/mcptest"
)

// elicitRig is the Feishu rig with the tools of an MCP server (mcptest,
// over streamable HTTP: stateless is the 2026-07-28 revision, whose
// elicitation comes in the call's result; stateful the legacy one, whose
// elicitation is a request of the server's) in its registry, the model
// calling its tool "ask", and the server's elicitations asked by the
// rig's engine, as `bot serve` wires them. "ask" says it only reads:
// from a trusted server it runs at once, from another it waits for
// approval (destructive).
func elicitRig(t *testing.T, stateless, trusted bool, callTimeout time.Duration, mod ...func(*Config, *hitltest.Tool)) (*rig, *mcptest.Server) {
	t.Helper()
	return elicitRigOn(t, rigOptions{}, stateless, trusted, callTimeout, mod...)
}

// elicitRigOn is elicitRig with the rig's options o (a shared fake and
// store: one replica of several).
func elicitRigOn(t *testing.T, o rigOptions, stateless, trusted bool, callTimeout time.Duration, mod ...func(*Config, *hitltest.Tool)) (*rig, *mcptest.Server) {
	t.Helper()
	srv := mcptest.New()
	hs := httptest.NewServer(srv.Handler("", stateless))
	t.Cleanup(hs.Close)
	var g *rig
	m := mcptool.Start(context.Background(), []mcptool.ServerConfig{{Name: "t", URL: hs.URL, CallTimeout: callTimeout, Trusted: trusted}}, mcptool.Options{Logger: quiet,
		Elicit: func(ctx context.Context, server, message string, schema any) (approval.ElicitAnswer, error) {
			return g.engine.Elicit(ctx, server, message, schema)
		}})
	t.Cleanup(func() { _ = m.Close() })
	if st := m.Status()[0]; !st.Up {
		t.Fatalf("the MCP server is down: %s", st.Err)
	}
	o.tools, o.model = m.Tools(), &hitltest.Model{Tools: []string{"t__ask"}}
	g = newRigWith(t, o, mod...)
	return g, srv
}

// askApproved asks the model to call t__ask in chat as user, approves
// the call on its card unless it runs at once (a trusted server's read)
// and returns the question the server's elicitation then puts in the
// chat, with its card.
func (g *rig) askApproved(t *testing.T, chat, user string, atOnce bool) (*approval.Approval, map[string]any) {
	t.Helper()
	g.say(t, "p2p", chat, user, "t__ask web", nil)
	session := channels.SessionKey(g.scope, Name, chat, approval.UserID(user), "")
	if !atOnce {
		var call *approval.Approval
		eventually(t, "the tool call's card is out", func() bool {
			call, _ = g.engine.Pending(context.Background(), session)
			return call != nil && len(call.Cards) > 0 && call.Tool() == "t__ask"
		})
		g.click(t, call, user, buttonValue(call, "approve"))
	}
	var q *approval.Approval
	eventually(t, "the server's question is asked in the chat", func() bool {
		q, _ = g.engine.Pending(context.Background(), session)
		return q != nil && q.IsElicitation() && len(q.Cards) > 0
	})
	for _, c := range g.calls("create") {
		if c.MsgType == "interactive" && c.ReceiveID == chat && strings.Contains(c.Content, string(q.ID)) {
			var card map[string]any
			if err := json.Unmarshal([]byte(c.Content), &card); err != nil {
				t.Fatal(err)
			}
			if err := feishutest.CheckCard(c.Content); err != nil {
				t.Fatalf("Feishu would refuse the question's card: %v", err)
			}
			return q, card
		}
	}
	t.Fatalf("no card of the question %s", q.ID)
	return nil, nil
}

// answerEvent is user's press of button on the question's card with form.
func answerEvent(t *testing.T, q *approval.Approval, card map[string]any, user, button string, form map[string]any) feishutest.CardActionEvent {
	return feishutest.CardActionEvent{EventID: nextID("ev_el"), Operator: user, MessageID: q.Cards[0].MessageID, ChatID: q.ChatID,
		Value: cardButton(t, card, button), FormValue: form, Name: button}
}

// says reports whether a message the bot sent to chat says sub.
func (g *rig) says(chat, sub string) bool {
	for _, c := range append(g.calls("create"), g.calls("reply")...) {
		if c.ReceiveID != chat && c.ReceiveID != "" {
			continue
		}
		var v any
		if json.Unmarshal([]byte(c.Content), &v) == nil && strings.Contains(mustText(v), sub) {
			return true
		}
	}
	return false
}

// mustText joins every string in v.
func mustText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		var b strings.Builder
		for _, e := range x {
			b.WriteString(mustText(e) + "\n")
		}
		return b.String()
	case []any:
		var b strings.Builder
		for _, e := range x {
			b.WriteString(mustText(e) + "\n")
		}
		return b.String()
	}
	return ""
}

// TestElicitationAnsweredOnTheCard: end to end through the stack `bot
// serve` builds, on both revisions: the model calls an MCP tool, the call
// is approved on its card, the server elicits, a question card appears
// in the chat; someone the approver rule refuses decides nothing, a
// wrong-typed answer is refused with a sentence saying which field and
// why, and the requester's answer in the form reaches the server as typed
// content; the tool's result reaches the turn.
func TestElicitationAnsweredOnTheCard(t *testing.T) {
	for _, tt := range []struct {
		chat              string
		stateless, atOnce bool
	}{{"oc_el_new", true, false}, {"oc_el_legacy", false, false}, {"oc_el_now", true, true}, {"oc_el_now_legacy", false, true}} {
		g, srv := elicitRig(t, tt.stateless, tt.atOnce, 0)
		chat := tt.chat
		q, card := g.askApproved(t, chat, "ou_alice", tt.atOnce)
		if got := mustJSON(t, card); !strings.Contains(got, "Environment") || !strings.Contains(got, "Production (prod)") ||
			strings.Contains(got, "<b>") {
			t.Fatalf("the question's card %s", got)
		}
		form := map[string]any{"q_1": "2", "q_2": "1", "other_4": "3"}
		if resp := g.clickEvent(t, answerEvent(t, q, card, "ou_mallory", "answer", form)); resp.Card != nil || g.state(t, q.ID) != approval.StatePending {
			t.Fatalf("someone the rule refuses answered: %+v", resp)
		}
		bad := map[string]any{"q_1": "2", "q_2": "1", "other_4": "three"}
		resp := g.clickEvent(t, answerEvent(t, q, card, "ou_alice", "answer", bad))
		if resp.Toast == nil || resp.Toast.Content != `replicas: "three" is not a number.` || g.state(t, q.ID) != approval.StatePending {
			t.Fatalf("a wrong-typed answer: %+v", resp.Toast)
		}
		g.clickEvent(t, answerEvent(t, q, card, "ou_alice", "answer", form))
		eventually(t, "the tool's result reaches the chat", func() bool {
			return g.says(chat, `"content":{"env":"prod","notify":true,"replicas":3}`)
		})
		if g.state(t, q.ID) != approval.StateExecuted || srv.Calls("ask") != 1 {
			t.Fatalf("question %s, the server's tool ran %d times", g.state(t, q.ID), srv.Calls("ask"))
		}
	}
}

// TestElicitationDeclinedOrExpired: the question's Decline is the
// server's decline; a question nobody answers expires before its call's
// timeout, and the server is told cancel.
func TestElicitationDeclinedOrExpired(t *testing.T) {
	g, _ := elicitRig(t, true, false, 0)
	q, card := g.askApproved(t, "oc_el_d", "ou_alice", false)
	g.clickEvent(t, answerEvent(t, q, card, "ou_alice", "decline", nil))
	eventually(t, "the decline reaches the server and the turn", func() bool { return g.says("oc_el_d", `{"action":"decline","content":null}`) })

	g, _ = elicitRig(t, false, false, 3*time.Second)
	q, _ = g.askApproved(t, "oc_el_x", "ou_alice", false)
	eventually(t, "the expiry reaches the server and the turn", func() bool { return g.says("oc_el_x", `{"action":"cancel","content":null}`) })
	if st := g.state(t, q.ID); st != approval.StateExpired {
		t.Fatalf("the question is %s, want expired", st)
	}
}

// TestElicitationWrongTypeInChinese: the refusal of a wrong-typed answer
// is in the channel's language.
func TestElicitationWrongTypeInChinese(t *testing.T) {
	g, _ := elicitRig(t, true, false, 0, func(c *Config, _ *hitltest.Tool) { c.Lang = "zh" })
	q, card := g.askApproved(t, "oc_el_zh", "ou_alice", false)
	resp := g.clickEvent(t, answerEvent(t, q, card, "ou_alice", "answer", map[string]any{"q_1": "1", "other_4": "11"}))
	if resp.Toast == nil || resp.Toast.Content != "notify：此项必须回答。" {
		t.Fatalf("toast %+v", resp.Toast)
	}
	resp = g.clickEvent(t, answerEvent(t, q, card, "ou_alice", "answer", map[string]any{"q_1": "1", "q_2": "2", "other_4": "11"}))
	if resp.Toast == nil || resp.Toast.Content != "replicas：回答不能大于 10。" {
		t.Fatalf("toast %+v", resp.Toast)
	}
}

// TestElicitationAnsweredOnAnotherReplica: two replicas on one Redis
// store (webhook mode, one app): the MCP call runs on replica A, which
// asks the server's form and waits for its answer; the answer is clicked
// on replica B, which never saw the card. B takes the answer (a
// wrong-typed one refused there too), and A's wait learns it through the
// store: the server gets the typed content, the turn its result, and the
// tool runs once.
func TestElicitationAnsweredOnAnotherReplica(t *testing.T) {
	fake := feishutest.New()
	t.Cleanup(fake.Close)
	opts := rigOptions{fake: fake, store: redisStore(t), webhook: true}
	a, srv := elicitRigOn(t, opts, true, true, 0)
	b := newRigWith(t, opts)
	q, card := a.askApproved(t, "oc_el_replica", "ou_alice", true)
	if _, ok := b.ch.cards.shown(q.Cards[0].MessageID); ok {
		t.Fatal("replica B knows the card: the test does not test a miss")
	}
	bad := map[string]any{"q_1": "2", "q_2": "1", "other_4": "11"}
	if resp := b.clickEvent(t, answerEvent(t, q, card, "ou_alice", "answer", bad)); resp.Toast == nil ||
		resp.Toast.Content != "replicas: the answer must be at most 10." || b.state(t, q.ID) != approval.StatePending {
		t.Fatalf("a wrong-typed answer on B: %+v", resp.Toast)
	}
	b.clickEvent(t, answerEvent(t, q, card, "ou_alice", "answer", map[string]any{"q_1": "2", "q_2": "1", "other_4": "3"}))
	eventually(t, "the tool's result reaches the chat", func() bool {
		return a.says("oc_el_replica", `"content":{"env":"prod","notify":true,"replicas":3}`)
	})
	if a.state(t, q.ID) != approval.StateExecuted || srv.Calls("ask") != 1 {
		t.Fatalf("question %s, the server's tool ran %d times", a.state(t, q.ID), srv.Calls("ask"))
	}
}
