package dingtalk

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-dingtalk/dingtalk-stream-sdk-go/payload"

	"github.com/hitlbot/hitlbot/agent/model"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/dingtalk/dingtalktest"
	"github.com/hitlbot/hitlbot/internal/fakellm"
	"github.com/hitlbot/hitlbot/words"
)

const aiTemplate = "ai-tpl.schema"

// streamingRig is a rig with an AI card template whose agent is the OpenAI
// model, streaming, on a fake OpenAI server.
func streamingRig(t *testing.T) (*rig, *fakellm.Server) {
	t.Helper()
	llm := fakellm.New(t)
	m, err := model.NewOpenAI(model.OpenAIConfig{BaseURL: llm.URL, Model: "m", APIKey: llm.APIKey(), Stream: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return newRigModel(t, func(c *Config) { c.AICardTemplateID = aiTemplate }, memstore.New(memstore.Options{}), m), llm
}

func (g *rig) noAIRefusals(t *testing.T) {
	t.Helper()
	if r := g.fake.AIRefusals(); len(r) > 0 {
		t.Fatalf("DingTalk refused %d card calls: %q", len(r), r)
	}
}

func last(c dingtalktest.AICard) string {
	if len(c.Contents) == 0 {
		return ""
	}
	return c.Contents[len(c.Contents)-1]
}

// The answer streams into one AI card: delivered processing, streamed with
// the whole text so far, finalised with the answer, then finished. No text
// message repeats it.
func TestStreamedAnswerAICard(t *testing.T) {
	g, llm := streamingRig(t)
	hold := make(chan struct{})
	answer := strings.Repeat("三个订单仍在处理中，", 6) + "其余已完成。"
	llm.Enqueue(fakellm.Reply{Text: answer, Chunks: fakellm.Split(answer, 2), Hold: hold})
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid_s1", "alice", "what is open?", true))

	var c dingtalktest.AICard
	eventually(t, "the AI card is delivered and streaming", func() bool {
		cs := g.fake.AICards()
		if len(cs) == 1 {
			c = cs[0]
		}
		return len(cs) == 1 && len(c.Contents) > 0
	})
	if c.Template != aiTemplate || c.FlowStatus != "1" || c.Finalized || c.Contents[0] != "三个" {
		t.Fatalf("card in flight: %+v", c)
	}
	close(hold)
	eventually(t, "the card is finished", func() bool {
		c = g.fake.AICards()[0]
		return c.FlowStatus == "3"
	})
	if !c.Finalized || c.Error || last(c) != answer {
		t.Fatalf("finished card: %+v", c)
	}
	if n := len(fakellm.Split(answer, 2)); len(c.Contents) >= n {
		t.Errorf("%d streaming calls for %d pieces: the pieces were not coalesced", len(c.Contents), n)
	}
	g.noAIRefusals(t)
	if n := g.fake.CountText("其余已完成"); n != 0 {
		t.Errorf("the answer was also sent as text %d times", n)
	}
}

// When the model asks for an approval after some text, the AI card is
// finalised before the approval's card is delivered; a model that fails
// mid-stream ends its card with the error sentence, isError and flowStatus 5.
func TestAICardEndsBeforeApprovalAndOnFailure(t *testing.T) {
	g, llm := streamingRig(t)
	llm.Enqueue(fakellm.Reply{Text: "I will erase the orders.", ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "erase", Arguments: `{"target":"orders"}`}}},
		fakellm.Reply{Text: "Erased and", Chunks: []string{"Erased ", "and"}, CutAfter: 1})
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid_s2", "alice", "erase the orders", true))
	eventually(t, "the approval card is delivered", func() bool {
		n := 0
		for _, c := range g.fake.Calls("/v1.0/card/instances/createAndDeliver") {
			if c.Body["cardTemplateId"] == "tpl.schema" {
				n++
			}
		}
		return n == 1
	})
	cs := g.fake.AICards()
	if len(cs) != 1 || !cs[0].Finalized || cs[0].FlowStatus != "3" || last(cs[0]) != "I will erase the orders." {
		t.Fatalf("the AI card is not finished when the approval card is out: %+v", cs)
	}
	a, err := g.engine.Pending(context.Background(), channels.SessionKey(channels.ScopePerChat, Name, "cid_s2", "alice", ""))
	if err != nil || a == nil {
		t.Fatalf("pending: %v, %v", a, err)
	}
	g.fake.Push(payload.CardInstanceCallbackTopic, click(string(a.ID), "alice", "confirm", string(a.ID), a.PayloadSHA256))
	sentence := words.Text(words.EN, words.ModelFailed)
	eventually(t, "the failed answer's card is finished as failed", func() bool {
		cs := g.fake.AICards()
		return len(cs) == 2 && cs[1].FlowStatus == "5"
	})
	c := g.fake.AICards()[1]
	if !c.Finalized || !c.Error || last(c) != "Erased \n\n"+sentence {
		t.Fatalf("failed card: %+v", c)
	}
	g.noAIRefusals(t)
	if n := g.fake.CountText(sentence); n != 0 {
		t.Errorf("the error was also sent as text %d times", n)
	}
}

// Without an AI template, and with a model that does not stream, answers
// come as text, as before.
func TestNoAITemplateNoStream(t *testing.T) {
	llm := fakellm.New(t)
	m, err := model.NewOpenAI(model.OpenAIConfig{BaseURL: llm.URL, Model: "m", APIKey: llm.APIKey(), Stream: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := newRigModel(t, nil, memstore.New(memstore.Options{}), m)
	llm.Enqueue(fakellm.Text("plain whole answer"))
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), "cid_s3", "alice", "hi", true))
	eventually(t, "the answer as text", func() bool { return g.fake.CountText("plain whole answer") == 1 })
	if cs := g.fake.AICards(); len(cs) != 0 {
		t.Fatalf("AI cards without a template: %+v", cs)
	}
}

// The fake enforces the streaming rules, so the tests above prove
// something: a sixth call in a second, an unknown card, a wrong key and a
// call after the stream was finalised are refused.
func TestFakeAIStreamRules(t *testing.T) {
	g := newRig(t, func(c *Config) { c.AICardTemplateID = aiTemplate })
	var mu sync.Mutex
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	g.fake.SetAIClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	ctx := context.Background()
	a := &aiCard{c: g.ch, to: channels.Target{Channel: Name, ChatID: "cid_rules", UserID: "alice"}, id: "answer-rules"}
	if err := a.Open(ctx, "a"); err != nil { // create + one streaming call
		t.Fatal(err)
	}
	for i := 1; i < dingtalktest.AIStreamOpsPerSecond; i++ {
		if err := a.Update(ctx, strings.Repeat("a", i+1)); err != nil {
			t.Fatalf("call %d within the rate: %v", i+1, err)
		}
	}
	if err := a.Update(ctx, "over"); err == nil || !strings.Contains(err.Error(), "QpsLimit") {
		t.Fatalf("a sixth call in a second: %v", err)
	}
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	if err := (&aiCard{c: g.ch, id: "answer-unknown"}).Update(ctx, "x"); err == nil {
		t.Fatal("an unknown card was streamed to")
	}
	if err := a.Close(ctx, "done", false); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := a.Update(ctx, "late"); err == nil || !strings.Contains(err.Error(), "streamFinalized") {
		t.Fatalf("a call after the stream was finalised: %v", err)
	}
	if n := len(g.fake.AIRefusals()); n != 3 {
		t.Fatalf("%d refusals, want 3: %q", n, g.fake.AIRefusals())
	}
}

// stream_interval: 500ms by default, at least 200ms; no AI template, no
// stream.
func TestAIStreamConfig(t *testing.T) {
	cfg := Config{ClientID: "k", ClientSecret: "s"}
	c, err := New(cfg, quiet)
	if err != nil || c.cfg.StreamInterval != DefaultStreamInterval {
		t.Fatalf("default: %v", err)
	}
	if _, err := c.OpenStream(context.Background(), channels.Target{Channel: Name, ChatID: "cid"}); err == nil {
		t.Fatal("a stream without an AI template")
	}
	cfg.StreamInterval = 100 * time.Millisecond
	if _, err := New(cfg, quiet); err == nil || !strings.Contains(err.Error(), "stream_interval") {
		t.Fatalf("100ms: %v", err)
	}
}
