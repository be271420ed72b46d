package agent_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/agent/model"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/fakellm"
	"github.com/hitlbot/hitlbot/internal/waitfor"
	catalogue "github.com/hitlbot/hitlbot/words"
)

// streamingModel is the OpenAI model, streaming, on a fake server.
func streamingModel(t *testing.T, s *fakellm.Server) agent.Model {
	t.Helper()
	m, err := model.NewOpenAI(model.OpenAIConfig{BaseURL: s.URL, Model: "m", APIKey: s.APIKey(), Stream: true, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// events returns the kinds of the turn's events and the text of its deltas, joined.
func (s *speaker) streamed() ([]agent.SayKind, string, []agent.Say) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var k []agent.SayKind
	var b strings.Builder
	for _, e := range s.events {
		if e.Kind == agent.SayDelta {
			b.WriteString(e.Text)
			if len(k) > 0 && k[len(k)-1] == agent.SayDelta {
				continue // one entry per run of deltas
			}
		}
		k = append(k, e.Kind)
	}
	return k, b.String(), append([]agent.Say(nil), s.events...)
}

func TestStreamedAnswer(t *testing.T) {
	s := fakellm.New(t)
	s.Enqueue(fakellm.Reply{Text: "Three tasks are open.", Chunks: []string{"Three ", "tasks ", "are open."}})
	h := newHarness(t, streamingModel(t, s))
	r := result(t, h.submit(t, "s1", "what is open?"))
	if r.Text != "Three tasks are open." || r.Err != nil {
		t.Fatalf("result = %+v", r)
	}
	kinds, text, evs := h.speak.streamed()
	want := []agent.SayKind{agent.SayDelta, agent.SayAnswer, agent.SayTurnEnded}
	if fmt.Sprint(kinds) != fmt.Sprint(want) || text != "Three tasks are open." {
		t.Fatalf("events %v (deltas %q), want %v", kinds, text, want)
	}
	if n := strings.Count(fmt.Sprint(evs), "delta"); n != 3 {
		t.Errorf("%d deltas, want one per piece (3): %+v", n, evs)
	}
}

// The text the model writes before its tool calls streams, and its
// message ends before the approval's card is out; the answer after the
// decision streams as a message of its own.
func TestStreamEndsBeforeTheApproval(t *testing.T) {
	s := fakellm.New(t)
	s.Enqueue(fakellm.Reply{Text: "I will erase the orders.", ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "erase", Arguments: `{"target":"orders"}`}}},
		fakellm.Text("Done: the orders are gone."))
	h := newHarness(t, streamingModel(t, s))
	ch := h.submit(t, "s1", "erase the orders")
	a := h.nextApproval(t)
	if o := h.decide(t, a, approval.Approve); o.Status != approval.StatusExecuted {
		t.Fatalf("decision = %+v", o)
	}
	r := result(t, ch)
	if r.Text != "Done: the orders are gone." || h.del.Runs.Load() != 1 {
		t.Fatalf("result %+v, runs %d", r, h.del.Runs.Load())
	}
	kinds, text, _ := h.speak.streamed()
	want := []agent.SayKind{agent.SayDelta, agent.SayStreamEnd, agent.SayAwaiting, agent.SayToolResult, agent.SayDelta, agent.SayAnswer, agent.SayTurnEnded}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	if text != "I will erase the orders.Done: the orders are gone." {
		t.Errorf("deltas %q", text)
	}
}

// A model that fails mid-stream ends the streamed message with the error
// sentence, in the turn's language, and says no separate notice.
func TestStreamCutEndsWithTheErrorSentence(t *testing.T) {
	s := fakellm.New(t)
	s.Enqueue(fakellm.Reply{Text: "Half an answer and", Chunks: []string{"Half ", "an answer ", "and"}, CutAfter: 2})
	h := newHarness(t, streamingModel(t, s), func(c *agent.LoopConfig) { c.Lang = "zh" })
	r := result(t, h.submit(t, "s1", "go"))
	sentence := catalogue.Text(catalogue.ZH, catalogue.ModelFailed)
	if r.Err == nil || r.Text != sentence {
		t.Fatalf("result = %+v", r)
	}
	kinds, text, evs := h.speak.streamed()
	want := []agent.SayKind{agent.SayDelta, agent.SayStreamEnd, agent.SayTurnEnded}
	if fmt.Sprint(kinds) != fmt.Sprint(want) || text != "Half an answer " {
		t.Fatalf("events %v (deltas %q), want %v", kinds, text, want)
	}
	end := evs[len(evs)-2]
	if !end.IsError || end.Text != sentence {
		t.Fatalf("stream_end = %+v, want the error sentence %q", end, sentence)
	}
}

// A model that does not stream (the rules, OpenAI with stream off) says
// what it said before: no delta, no stream_end.
func TestNoStreamNoDeltas(t *testing.T) {
	s := fakellm.New(t)
	s.Enqueue(fakellm.Text("whole answer"))
	m, err := model.NewOpenAI(model.OpenAIConfig{BaseURL: s.URL, Model: "m", APIKey: s.APIKey()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, m)
	result(t, h.submit(t, "s1", "hi"))
	kinds, _, _ := h.speak.streamed()
	if want := []agent.SayKind{agent.SayAnswer, agent.SayTurnEnded}; fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
}

// A turn whose answer is showing as it is written is not silent: the slow
// notice ("still working") waits while the model streams.
func TestNoSlowNoticeWhileStreaming(t *testing.T) {
	s := fakellm.New(t)
	hold := make(chan struct{})
	s.Enqueue(fakellm.Reply{Text: "A long answer.", Chunks: []string{"A ", "long answer."}, Hold: hold})
	clk := clock.NewFake(time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC))
	h := newHarness(t, streamingModel(t, s), func(c *agent.LoopConfig) { c.Clock, c.SlowNotice = clk, 20*time.Second })
	ch := h.submit(t, "s1", "tell me")
	waitfor.True(t, "the first piece", func() bool { _, text, _ := h.speak.streamed(); return text == "A " })
	clk.Advance(20 * time.Second)
	// The watcher woke, saw the answer streaming, and waits again.
	waitfor.True(t, "the slow notice's timer is set again", func() bool { return clk.Timers() == 1 })
	close(hold)
	result(t, ch)
	kinds, _, _ := h.speak.streamed()
	if want := []agent.SayKind{agent.SayDelta, agent.SayAnswer, agent.SayTurnEnded}; fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v (no notice)", kinds, want)
	}
}
