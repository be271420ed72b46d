package feishu

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent/model"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
	"github.com/hitlbot/hitlbot/internal/fakellm"
	"github.com/hitlbot/hitlbot/internal/hitltest"
	"github.com/hitlbot/hitlbot/words"
)

// streamingRig is a rig whose agent is the OpenAI model, streaming, on a
// fake OpenAI server.
func streamingRig(t *testing.T, mod ...func(*Config, *hitltest.Tool)) (*rig, *fakellm.Server) {
	t.Helper()
	llm := fakellm.New(t)
	m, err := model.NewOpenAI(model.OpenAIConfig{BaseURL: llm.URL, Model: "m", APIKey: llm.APIKey(), Stream: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return newRigWith(t, rigOptions{model: m}, mod...), llm
}

// entity returns the fake's only card entity, once there is one.
func (g *rig) entity(t *testing.T, cond func(feishutest.CardEntity) bool, what string) feishutest.CardEntity {
	t.Helper()
	var e feishutest.CardEntity
	eventually(t, what, func() bool {
		es := g.fake.CardEntities()
		if len(es) == 0 {
			return false
		}
		if len(es) > 1 {
			t.Fatalf("%d card entities, want one: %+v", len(es), es)
		}
		e = es[0]
		return cond(e)
	})
	return e
}

// shows is the text a card entity's answer element shows now.
func shows(e feishutest.CardEntity) string {
	if n := len(e.Contents); n > 0 {
		return e.Contents[n-1]
	}
	return e.Initial[streamElement]
}

// noRefusals fails the test if the fake refused any CardKit call: the bot
// kept the rate, the sequence and the streaming rules.
func (g *rig) noRefusals(t *testing.T) {
	t.Helper()
	if r := g.fake.CardKitRefusals(); len(r) > 0 {
		t.Fatalf("CardKit refused %d calls: %q", len(r), r)
	}
}

// The answer streams into one CardKit card: created in streaming mode,
// sent once as the reply, updated with the whole text so far, and at the
// end given the whole answer and switched out of streaming mode. No text
// message repeats it.
func TestStreamedAnswerCard(t *testing.T) {
	g, llm := streamingRig(t)
	hold := make(chan struct{})
	answer := strings.Repeat("Orders 17 to 40 are open; ", 8) + "nothing else is pending."
	llm.Enqueue(fakellm.Reply{Text: answer, Chunks: fakellm.Split(answer, 3), Hold: hold})
	msg := g.say(t, "p2p", "oc_s1", "ou_alice", "what is open?", nil)

	// While the model is held after its first piece, the card is out and streaming.
	e := g.entity(t, func(e feishutest.CardEntity) bool { return e.Sent == 1 }, "the streaming card is sent")
	if !e.Streaming || e.Initial[streamElement] != "Ord" {
		t.Fatalf("card in flight: %+v", e)
	}
	var sent int
	for _, c := range g.calls("reply") {
		if c.MessageID == msg.MessageID && c.MsgType == "interactive" && strings.Contains(c.Content, e.ID) {
			sent++
		}
	}
	if sent != 1 {
		t.Fatalf("the card entity was sent as a reply %d times", sent)
	}
	close(hold)

	e = g.entity(t, func(e feishutest.CardEntity) bool { return !e.Streaming }, "streaming mode is switched off")
	if len(e.Contents) == 0 || shows(e) != answer {
		t.Fatalf("the card's last text is not the answer: %q", e.Contents)
	}
	for i := 1; i < len(e.Contents); i++ {
		if !strings.HasPrefix(e.Contents[i], e.Contents[i-1]) {
			t.Errorf("update %d does not extend the one before: %q then %q", i, e.Contents[i-1], e.Contents[i])
		}
	}
	if n := len(fakellm.Split(answer, 3)); len(e.Contents) >= n {
		t.Errorf("%d updates for %d pieces: the pieces were not coalesced", len(e.Contents), n)
	}
	g.noRefusals(t)
	if n := g.replied(msg.MessageID, "nothing else is pending"); n != 0 {
		t.Errorf("the answer was also sent as text %d times", n)
	}
}

// When the model asks for an approval after some text, the streamed card
// is finished (streaming off) before the approval's card is sent; the
// answer after the decision streams into a card of its own.
func TestStreamEndsBeforeApprovalCard(t *testing.T) {
	g, llm := streamingRig(t)
	llm.Enqueue(fakellm.Reply{Text: "I will erase the orders table.", ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "erase", Arguments: `{"target":"orders"}`}}},
		fakellm.Text("The orders table is erased."))
	g.say(t, "p2p", "oc_s2", "ou_alice", "erase the orders", nil)
	var a *approval.Approval
	eventually(t, "the approval's card is out", func() bool {
		p, err := g.engine.Pending(context.Background(), channels.SessionKey(g.scope, Name, "oc_s2", "ou_alice", ""))
		if err != nil {
			t.Fatal(err)
		}
		a = p
		return p != nil && len(p.Cards) > 0
	})
	es := g.fake.CardEntities()
	if len(es) != 1 || es[0].Streaming || shows(es[0]) != "I will erase the orders table." {
		t.Fatalf("the streamed card is not finished when the approval card is out: %+v", es)
	}
	var cardAt feishutest.Call
	for _, c := range g.fake.Calls() {
		if strings.Contains(c.Content, string(a.ID)) {
			cardAt = c
			break
		}
	}
	if cardAt.At.Before(es[0].Closed) {
		t.Fatalf("the approval card (%v) was sent before the stream ended (%v)", cardAt.At, es[0].Closed)
	}
	if resp, _ := g.click(t, a, "ou_alice", buttonValue(a, "approve")); resp.Toast == nil || resp.Toast.Type != "success" {
		t.Fatalf("click: %+v", resp)
	}
	eventually(t, "the answer after the decision streams into a second card, finished", func() bool {
		es := g.fake.CardEntities()
		return len(es) == 2 && !es[1].Streaming && shows(es[1]) == "The orders table is erased."
	})
	if g.erase.Runs.Load() != 1 {
		t.Fatalf("runs %d", g.erase.Runs.Load())
	}
	g.noRefusals(t)
}

// A model that fails mid-stream: the card ends with what came and the
// error sentence, out of streaming mode; no separate notice.
func TestStreamFailureEndsTheCard(t *testing.T) {
	g, llm := streamingRig(t)
	llm.Enqueue(fakellm.Reply{Text: "The first half and", Chunks: []string{"The first ", "half ", "and"}, CutAfter: 2})
	msg := g.say(t, "p2p", "oc_s3", "ou_alice", "go", nil)
	sentence := words.Text(words.EN, words.ModelFailed)
	e := g.entity(t, func(e feishutest.CardEntity) bool { return !e.Streaming }, "the failed stream is switched off")
	if last := shows(e); last != "The first half \n\n"+sentence {
		t.Fatalf("the card ends with %q", last)
	}
	g.noRefusals(t)
	if n := g.replied(msg.MessageID, sentence); n != 0 {
		t.Errorf("the error was also sent as a notice %d times", n)
	}
}

// The rules model (and any model that does not stream) answers as before:
// a text reply, no card entity.
func TestNoStreamNoCardEntity(t *testing.T) {
	g := newRig(t)
	msg := g.say(t, "p2p", "oc_s4", "ou_alice", "hello there", nil)
	eventually(t, "the echo is replied as text", func() bool { return g.replied(msg.MessageID, "echo: hello there") == 1 })
	if es := g.fake.CardEntities(); len(es) != 0 {
		t.Fatalf("card entities without streaming: %+v", es)
	}
}

// The fake enforces CardKit's rules, so the tests above prove something:
// an eleventh operation on a card within a second, a sequence that does not
// grow, and a content update after streaming ended are refused.
func TestFakeCardKitRules(t *testing.T) {
	g := newRig(t)
	var mu sync.Mutex
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	g.fake.SetCardKitClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	tick := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	g.ch.api.cfg.MaxRetries = 0
	ctx := context.Background()
	s := &cardStream{c: g.ch, to: channels.Target{Channel: Name, ChatID: "oc_rules"}}
	if err := s.Open(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	var ae *APIError
	for i := range feishutest.CardKitOpsPerSecond {
		if err := s.Update(ctx, strings.Repeat("a", i+2)); err != nil {
			t.Fatalf("update %d within the rate: %v", i+1, err)
		}
	}
	if err := s.Update(ctx, "over"); !asAPIError(err, &ae) || !ae.Throttled() {
		t.Fatalf("an eleventh update in a second: %v", err)
	}
	tick(time.Second)
	s.seq = 1
	if err := s.Update(ctx, "again"); !asAPIError(err, &ae) || ae.Code != feishutest.CardKitSequenceCode {
		t.Fatalf("a sequence that does not grow: %v", err)
	}
	s.seq = g.fake.CardEntities()[0].Seq
	if err := s.Close(ctx, "done", false); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := s.Update(ctx, "late"); !asAPIError(err, &ae) || ae.Code != feishutest.CardKitStreamingOffCode {
		t.Fatalf("an update after streaming ended: %v", err)
	}
	if n := len(g.fake.CardKitRefusals()); n != 3 {
		t.Fatalf("%d refusals recorded, want 3: %q", n, g.fake.CardKitRefusals())
	}
}

// stream_interval: 300ms by default, at least 100ms; negative turns
// streaming off (the answer comes whole).
func TestStreamIntervalConfig(t *testing.T) {
	fake := feishutest.New()
	t.Cleanup(fake.Close)
	cfg := testConfig(fake)
	c, err := New(cfg, quiet)
	if err != nil || c.cfg.StreamInterval != DefaultStreamInterval {
		t.Fatalf("default: %v, %v", err, c)
	}
	cfg.StreamInterval = 50 * time.Millisecond
	if _, err := New(cfg, quiet); err == nil || !strings.Contains(err.Error(), "stream_interval") {
		t.Fatalf("50ms: %v", err)
	}
	cfg.StreamInterval = -1
	c, err = New(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.OpenStream(context.Background(), channels.Target{Channel: Name, ChatID: "oc_x"}); err == nil {
		t.Fatal("streaming off still opened a stream")
	}
}
