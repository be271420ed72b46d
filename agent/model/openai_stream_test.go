package model

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/internal/fakellm"
	catalogue "github.com/hitlbot/hitlbot/words"
)

func streamOn(c *OpenAIConfig) { c.Stream = true }

// collect returns a request whose Delta appends to *pieces.
func collect(req agent.Request, pieces *[]string) agent.Request {
	req.Delta = func(s string) { *pieces = append(*pieces, s) }
	return req
}

func TestOpenAIStreamText(t *testing.T) {
	s := fakellm.New(t)
	s.Enqueue(fakellm.Reply{Text: "Hello, 世界! Three rows match.", Chunks: []string{"Hello, ", "世界! ", "Three rows match."}})
	m, _ := newTestOpenAI(t, s, streamOn)
	var pieces []string
	resp, err := m.Complete(context.Background(), collect(userAsks("hi"), &pieces))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if got := resp.Message.Content; got != "Hello, 世界! Three rows match." {
		t.Errorf("content = %q", got)
	}
	if want := []string{"Hello, ", "世界! ", "Three rows match."}; strings.Join(pieces, "|") != strings.Join(want, "|") {
		t.Errorf("deltas = %q, want %q", pieces, want)
	}
	if len(resp.Message.ToolCalls) != 0 {
		t.Errorf("tool calls = %v", resp.Message.ToolCalls)
	}
	reqs := s.Requests()
	if len(reqs) != 1 || !reqs[0].Chat.Stream {
		t.Fatalf("the request did not ask for a stream: %+v", reqs)
	}
}

func TestOpenAIStreamToolCallsAssembled(t *testing.T) {
	s := fakellm.New(t)
	s.Enqueue(fakellm.Reply{Text: "Creating both.", ToolCalls: []fakellm.ToolCall{
		{ID: "call_a", Name: "task_create", Arguments: `{"title":"write the report","due":"friday"}`},
		{ID: "call_b", Name: "task_create", Arguments: `{"title":"第二个任务"}`},
	}})
	m, _ := newTestOpenAI(t, s, streamOn)
	req := userAsks("two tasks")
	req.Tools = []agent.ToolSpec{taskCreateSpec()}
	var pieces []string
	resp, err := m.Complete(context.Background(), collect(req, &pieces))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if strings.Join(pieces, "") != "Creating both." || resp.Message.Content != "Creating both." {
		t.Errorf("deltas %q, content %q", pieces, resp.Message.Content)
	}
	calls := resp.Message.ToolCalls
	if len(calls) != 2 {
		t.Fatalf("calls = %+v", calls)
	}
	if calls[0].ID != "call_a" || calls[0].Name != "task_create" || string(calls[0].Args) != `{"title":"write the report","due":"friday"}` {
		t.Errorf("call 0 = %+v (args %s)", calls[0], calls[0].Args)
	}
	if calls[1].ID != "call_b" || string(calls[1].Args) != `{"title":"第二个任务"}` || calls[1].Confidence != 1 {
		t.Errorf("call 1 = %+v (args %s)", calls[1], calls[1].Args)
	}
}

func TestOpenAIStreamCutIsAFailure(t *testing.T) {
	s := fakellm.New(t)
	s.Enqueue(fakellm.Reply{Text: "This answer never ends", Chunks: []string{"This ", "answer ", "never ends"}, CutAfter: 2})
	m, _ := newTestOpenAI(t, s, streamOn)
	var pieces []string
	_, err := m.Complete(context.Background(), collect(userAsks("hi"), &pieces))
	me := wantModelError(t, err, catalogue.ModelFailed)
	if !errors.Is(me, errStreamCut) {
		t.Errorf("cause = %v, want the cut stream", me.Err)
	}
	if strings.Join(pieces, "") != "This answer " {
		t.Errorf("deltas before the cut = %q", pieces)
	}
}

func TestOpenAIStreamErrorEvent(t *testing.T) {
	s := fakellm.New(t)
	s.SetAPIKey("sk-secret-stream")
	s.Enqueue(fakellm.Reply{Text: "Half", StreamError: "The server had an error while processing your request (sk-secret-stream)."})
	m, logs := newTestOpenAI(t, s, streamOn)
	var pieces []string
	_, err := m.Complete(context.Background(), collect(userAsks("hi"), &pieces))
	wantModelError(t, err, catalogue.ModelFailed)
	if strings.Join(pieces, "") != "Half" {
		t.Errorf("deltas = %q", pieces)
	}
	if strings.Contains(err.Error(), "sk-secret-stream") || strings.Contains(logs.String(), "sk-secret-stream") {
		t.Errorf("the key leaked: %v / %s", err, logs)
	}
}

func TestOpenAIStreamHTTPErrorBeforeTheStream(t *testing.T) {
	s := fakellm.New(t)
	s.Enqueue(fakellm.Status(401, "bad key"))
	m, _ := newTestOpenAI(t, s, func(c *OpenAIConfig) { c.Stream = true; c.MaxRetries = -1 })
	var pieces []string
	_, err := m.Complete(context.Background(), collect(userAsks("hi"), &pieces))
	wantModelError(t, err, catalogue.ModelAuth)
	if len(pieces) != 0 {
		t.Errorf("deltas = %q", pieces)
	}
}

func TestOpenAIStreamOffNeverCallsDelta(t *testing.T) {
	s := fakellm.New(t)
	s.Enqueue(fakellm.Text("whole"))
	m, _ := newTestOpenAI(t, s, nil)
	var pieces []string
	resp, err := m.Complete(context.Background(), collect(userAsks("hi"), &pieces))
	if err != nil || resp.Message.Content != "whole" {
		t.Fatalf("Complete = %+v, %v", resp, err)
	}
	if len(pieces) != 0 {
		t.Errorf("deltas with stream off: %q", pieces)
	}
	if s.Requests()[0].Chat.Stream {
		t.Error("stream off asked for a stream")
	}
}

// bodyTransport answers every request with body as server-sent events.
type bodyTransport struct{ body string }

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(b.body)), Request: r}, nil
}

// FuzzOpenAIStream feeds the streamed answer's reader (the SDK's decoder
// and accumulator, and completeStream) any body: it never panics, fails
// with a ModelError only, and an answer it accepts is exactly the pieces it
// handed on.
func FuzzOpenAIStream(f *testing.F) {
	f.Add("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	f.Add("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"t\",\"arguments\":\"{\\\"a\\\"\"}}]}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\":1}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n")
	f.Add("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":5000000,\"function\":{\"arguments\":\"x\"}}]}}]}\n\n")
	f.Add("data: {\"error\":{\"message\":\"boom\"}}\n\n")
	f.Add("event: ping\ndata: \n\n: comment\n\ndata: [DONE]\n\n")
	f.Add("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"cut\"}}]}\n")
	f.Add("data: not json\n\n")
	f.Fuzz(func(t *testing.T, body string) {
		m, err := NewOpenAI(OpenAIConfig{BaseURL: "http://fuzz.invalid/v1", Model: "m", Stream: true, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		m.svc = openai.NewChatCompletionService(option.WithHTTPClient(&http.Client{Transport: bodyTransport{body}}),
			option.WithBaseURL("http://fuzz.invalid/v1"), option.WithMaxRetries(0))
		var pieces []string
		resp, err := m.Complete(context.Background(), collect(userAsks("hi"), &pieces))
		if err != nil {
			var me *agent.ModelError
			if !errors.As(err, &me) {
				t.Fatalf("error %T is not a ModelError: %v", err, err)
			}
			return
		}
		if resp.Message.Role != agent.RoleAssistant {
			t.Fatalf("role = %q", resp.Message.Role)
		}
		if got := strings.Join(pieces, ""); got != resp.Message.Content && resp.Message.Content != "" {
			// A refusal stands for empty content; otherwise the pieces are the content.
			t.Fatalf("deltas %q != content %q", got, resp.Message.Content)
		}
	})
}

// streamRefusals are servers that do not take stream: true, each
// answering the streamed request in its own way before any event.
var streamRefusals = []struct {
	name  string
	reply fakellm.Reply
}{
	{"400 stream not supported", fakellm.Status(400, "stream is not supported")},
	{"422", fakellm.Status(422, "unknown field stream")},
	{"a whole JSON answer", fakellm.Reply{Body: `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}]}`}},
}

// TestOpenAIStreamRefusedFallsBackWhole: a server that refuses the
// streamed request before any event is asked again at once without
// streaming, the answer arrives whole (no deltas), the warning says how
// to stop trying, and the next request is sent whole from the start.
func TestOpenAIStreamRefusedFallsBackWhole(t *testing.T) {
	for _, tc := range streamRefusals {
		t.Run(tc.name, func(t *testing.T) {
			s := fakellm.New(t)
			s.Enqueue(tc.reply)
			s.Enqueue(fakellm.Text("whole"))
			s.Enqueue(fakellm.Text("again"))
			m, logs := newTestOpenAI(t, s, func(c *OpenAIConfig) { c.Stream = true; c.MaxRetries = -1 })
			var pieces []string
			resp, err := m.Complete(context.Background(), collect(userAsks("hi"), &pieces))
			if err != nil || resp.Message.Content != "whole" {
				t.Fatalf("Complete = %+v, %v; want the whole answer", resp, err)
			}
			if len(pieces) != 0 {
				t.Errorf("deltas = %q", pieces)
			}
			if resp, err := m.Complete(context.Background(), userAsks("hi")); err != nil || resp.Message.Content != "again" {
				t.Fatalf("the next Complete = %+v, %v", resp, err)
			}
			reqs := s.Requests()
			if len(reqs) != 3 || !reqs[0].Chat.Stream || reqs[1].Chat.Stream || reqs[2].Chat.Stream {
				t.Fatalf("requests streamed %v; want the first only", streams(reqs))
			}
			if !strings.Contains(logs.String(), "set model.openai.stream: false") {
				t.Errorf("no warning with the fix in the log:\n%s", logs)
			}
		})
	}
}

// TestOpenAIStreamFailuresAreNotRefusals: a 401, a 429 and a 500 before
// the stream are failures of their own, not a server that does not
// stream: the next request streams again.
func TestOpenAIStreamFailuresAreNotRefusals(t *testing.T) {
	for _, code := range []int{401, 429, 500} {
		s := fakellm.New(t)
		s.Enqueue(fakellm.Status(code, "no"))
		s.Enqueue(fakellm.Text("fine"))
		m, _ := newTestOpenAI(t, s, func(c *OpenAIConfig) { c.Stream = true; c.MaxRetries = -1 })
		if _, err := m.Complete(context.Background(), userAsks("hi")); err == nil {
			t.Fatalf("%d: no error", code)
		}
		if _, err := m.Complete(context.Background(), userAsks("hi")); err != nil {
			t.Fatal(err)
		}
		if reqs := s.Requests(); len(reqs) != 2 || !reqs[1].Chat.Stream {
			t.Fatalf("%d: requests streamed %v; want both", code, streams(reqs))
		}
	}
}

func streams(reqs []fakellm.Request) []bool {
	out := make([]bool, len(reqs))
	for i, r := range reqs {
		out[i] = r.Chat.Stream
	}
	return out
}
