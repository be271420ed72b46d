package dingtalk

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/open-dingtalk/dingtalk-stream-sdk-go/payload"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/channels/dingtalk/dingtalktest"
	"github.com/hitlbot/hitlbot/gate"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/hitltest"
	"github.com/hitlbot/hitlbot/tools/mcptool"
	"github.com/hitlbot/hitlbot/tools/mcptool/mcptest"
	"github.com/hitlbot/hitlbot/words"
)

// elicitChat is the group the elicitation tests talk in.
const elicitChat = "cid_el"

// elicitRig is the DingTalk channel in the stack `bot serve` builds
// (hitltest), with the tools of a trusted MCP server (mcptest, over
// streamable HTTP) in its registry, the model calling its tool "ask" (a
// read: it runs at once) and the server's elicitations asked by the
// stack's engine, as `bot serve` wires them (mcptool.Options.Elicit; the
// gate's Dispatcher and Editor, which answer questions).
func elicitRig(t *testing.T, lang string) (*dingtalktest.Fake, *approval.Engine, *mcptest.Server) {
	t.Helper()
	srv := mcptest.New()
	hs := httptest.NewServer(srv.Handler("", true))
	t.Cleanup(hs.Close)
	var eng *approval.Engine
	m := mcptool.Start(context.Background(), []mcptool.ServerConfig{{Name: "t", URL: hs.URL, Trusted: true}}, mcptool.Options{Logger: quiet,
		Elicit: func(ctx context.Context, server, message string, schema any) (approval.ElicitAnswer, error) {
			return eng.Elicit(ctx, server, message, schema)
		}})
	t.Cleanup(func() { _ = m.Close() })
	if st := m.Status()[0]; !st.Up {
		t.Fatalf("the MCP server is down: %s", st.Err)
	}
	fake := dingtalktest.New(t)
	clicks := clock.NewFake(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC))
	fake.SetCallbackClock(clicks.Now)
	ch, err := New(Config{ClientID: "app-key", ClientSecret: "app-secret", CardTemplateID: "tpl.schema",
		APIBaseURL: fake.URL(), WebhookBaseURL: fake.URL(), Lang: lang, HTTPTimeout: 5 * time.Second, Clock: clicks}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	st := hitltest.New(t, hitltest.Config{Store: memstore.New(memstore.Options{}), Tools: m.Tools(),
		Model: &hitltest.Model{Tools: []string{"t__ask"}}, Lang: lang,
		Engine: func(ec *approval.EngineConfig) {
			ec.Dispatcher, ec.Editor = gate.Dispatcher{Next: ec.Dispatcher}, gate.Editor{Next: ec.Editor}
		}})
	st.Register(t, ch)
	st.Start(t)
	fake.WaitConn(5 * time.Second)
	eng = st.Engine
	return fake, eng, srv
}

// askElicitation has staff-1 ask the model, in the group, to call t__ask,
// and returns the server's question once its card is out, with its code.
func askElicitation(t *testing.T, fake *dingtalktest.Fake, eng *approval.Engine) (*approval.Approval, string) {
	t.Helper()
	fake.Push(payload.BotMessageCallbackTopic, fake.BotMessage(nextID(), elicitChat, "staff-1", " t__ask web", true))
	var track string
	eventually(t, "the server's question card", func() bool {
		for _, c := range fake.Calls("/v1.0/card/instances/createAndDeliver") {
			if c.Body["openSpaceId"] == "dtv1.card//IM_GROUP."+elicitChat {
				track, _ = c.Body["outTrackId"].(string)
			}
		}
		return track != "" && fake.CardView(track, "staff-1")["approval_id"] != ""
	})
	v := fake.CardView(track, "staff-1")
	q, err := eng.Get(context.Background(), approval.ID(v["approval_id"]))
	if err != nil || !q.IsElicitation() {
		t.Fatalf("the card's approval %v is no elicitation: %v", q, err)
	}
	return q, v["code"]
}

// TestElicitationAnsweredByTypingOnDingTalk: an MCP server's form asked
// on DingTalk is answered by the typed answer command in the group
// ("回答 <code>" then one line per field, by the question numbers the
// card shows): a wrong-typed value is refused with which field and why
// and answers nothing; the answer then reaches the server as typed
// content (an option's value, a boolean, a number), and the tool's result
// the turn.
func TestElicitationAnsweredByTypingOnDingTalk(t *testing.T) {
	fake, eng, srv := elicitRig(t, "zh")
	q, code := askElicitation(t, fake, eng)
	fake.Push(payload.BotMessageCallbackTopic, fake.BotMessage(nextID(), elicitChat, "staff-1", " 回答 "+code+"\n1: 2\n2: 1\n4: 11", true))
	eventually(t, "the refusal", func() bool { return fake.CountText("replicas：回答不能大于 10。") == 1 })
	if a, _ := eng.Get(context.Background(), q.ID); a.State != approval.StatePending || srv.Calls("ask") != 0 {
		t.Fatalf("a wrong-typed answer: %s, the tool ran %d times", a.State, srv.Calls("ask"))
	}
	fake.Push(payload.BotMessageCallbackTopic, fake.BotMessage(nextID(), elicitChat, "staff-1", " 回答 "+code+"\n1: 2\n2: 1\n4: 3", true))
	eventually(t, "the tool's result reaches the chat", func() bool {
		return fake.CountText(`"content":{"env":"prod","notify":true,"replicas":3}`) == 1
	})
	if a, _ := eng.Get(context.Background(), q.ID); a.State != approval.StateExecuted || srv.Calls("ask") != 1 {
		t.Fatalf("question %s, the server's tool ran %d times", a.State, srv.Calls("ask"))
	}
}

// TestAnswerNamingNoQuestionOnDingTalk: a typed answer command whose
// code names nothing waiting in the group is told so (en, zh), and the
// question waiting there stays open; a sentence that only begins with
// "answer" is the agent's.
func TestAnswerNamingNoQuestionOnDingTalk(t *testing.T) {
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			fake, eng, _ := elicitRig(t, lang)
			q, _ := askElicitation(t, fake, eng)
			fake.Push(payload.BotMessageCallbackTopic, fake.BotMessage(nextID(), elicitChat, "staff-1", " answer zzzz 2", true))
			want := words.In(lang, words.QuestionNoSuchCode, "zzzz")
			eventually(t, "told no question waits with that code", func() bool { return fake.CountText(want) == 1 })
			if a, _ := eng.Get(context.Background(), q.ID); a.State != approval.StatePending || strings.Contains(string(a.Calls[0].Args), `"answers"`) {
				t.Fatalf("the waiting question: %s %s", a.State, a.Calls[0].Args)
			}
		})
	}
}
