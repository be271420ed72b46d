package channels_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hitlbot/hitlbot/agent"
	. "github.com/hitlbot/hitlbot/channels"
)

// streamFake is a fakeChannel that streams: it records each stream's
// pieces and end; openErr and finishErr make those fail.
type streamFake struct {
	*fakeChannel
	openErr, finishErr error

	smu     sync.Mutex
	streams []*fakeStream
}

type fakeStream struct {
	f      *streamFake
	pieces []string
	ended  string // "<how>:<text>"
}

func (s *streamFake) OpenStream(context.Context, Target) (AnswerStream, error) {
	if s.openErr != nil {
		return nil, s.openErr
	}
	st := &fakeStream{f: s}
	s.smu.Lock()
	s.streams = append(s.streams, st)
	s.smu.Unlock()
	return st, nil
}

func (st *fakeStream) Append(text string) {
	st.f.smu.Lock()
	defer st.f.smu.Unlock()
	st.pieces = append(st.pieces, text)
}

func (st *fakeStream) Finish(_ context.Context, text string, how StreamEnd) error {
	st.f.smu.Lock()
	defer st.f.smu.Unlock()
	if st.f.finishErr != nil {
		return st.f.finishErr
	}
	st.ended = fmt.Sprintf("%d:%s", how, text)
	return nil
}

func (s *streamFake) got() []string {
	s.smu.Lock()
	defer s.smu.Unlock()
	var out []string
	for _, st := range s.streams {
		out = append(out, strings.Join(st.pieces, "|")+" => "+st.ended)
	}
	return out
}

// say plays the events of a turn to the router for channel name.
func say(t *testing.T, r *Presenter, name string, evs ...agent.Say) {
	t.Helper()
	in := agent.Inbound{Channel: name, ChatID: "c1", MessageID: "m1", User: "alice"}
	for _, e := range evs {
		if err := r.Say(context.Background(), in, e); err != nil {
			t.Fatalf("say %s: %v", e.Kind, err)
		}
	}
}

func TestRouterStreams(t *testing.T) {
	d := func(s string) agent.Say { return agent.Say{Kind: agent.SayDelta, Text: s} }
	answer := agent.Say{Kind: agent.SayAnswer, Text: "ab"}
	more := agent.Say{Kind: agent.SayStreamEnd}
	failed := agent.Say{Kind: agent.SayStreamEnd, Text: "The model failed.", IsError: true}
	ended := agent.Say{Kind: agent.SayTurnEnded, Result: &agent.TurnResult{}}
	for _, tc := range []struct {
		name               string
		openErr, finishErr error
		evs                []agent.Say
		streams            []string // what each stream got
		sent               []string // what was sent as messages
	}{
		{name: "answer", evs: []agent.Say{d("a"), d("b"), answer, ended},
			streams: []string{fmt.Sprintf("a|b => %d:ab", EndAnswer)}},
		{name: "tool calls follow", evs: []agent.Say{d("a"), d("b"), more, ended},
			streams: []string{fmt.Sprintf("a|b => %d:ab", EndMore)}},
		{name: "two messages in a turn", evs: []agent.Say{d("a"), more, d("b"), answer, ended},
			streams: []string{fmt.Sprintf("a => %d:a", EndMore), fmt.Sprintf("b => %d:ab", EndAnswer)}},
		{name: "model failed", evs: []agent.Say{d("a"), d("b"), failed, ended},
			streams: []string{fmt.Sprintf("a|b => %d:ab\n\nThe model failed.", EndFailed)}},
		{name: "left open", evs: []agent.Say{d("a"), ended},
			streams: []string{fmt.Sprintf("a => %d:a", EndMore)}},
		{name: "cannot open", openErr: errors.New("no scope"), evs: []agent.Say{d("a"), d("b"), answer, ended},
			sent: []string{"answer: ab"}},
		{name: "cannot open, failed", openErr: errors.New("no scope"), evs: []agent.Say{d("a"), failed, ended},
			sent: []string{"notice: The model failed."}},
		{name: "cannot finish", finishErr: errors.New("gone"), evs: []agent.Say{d("a"), d("b"), answer, ended},
			streams: []string{"a|b => "}, sent: []string{"answer: ab"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t, nil)
			sf := &streamFake{fakeChannel: newFake("sfake"), openErr: tc.openErr, finishErr: tc.finishErr}
			if err := g.reg.Register(sf); err != nil {
				t.Fatal(err)
			}
			say(t, g.pres, "sfake", tc.evs...)
			if got := sf.got(); strings.Join(got, "\n") != strings.Join(tc.streams, "\n") {
				t.Errorf("streams %q, want %q", got, tc.streams)
			}
			if got := sf.texts(); strings.Join(got, "\n") != strings.Join(tc.sent, "\n") {
				t.Errorf("sent %q, want %q", got, tc.sent)
			}
		})
	}
}

// A channel that does not stream gets what it got before: no piece, the
// answer, and a failure mid-stream as the error notice it stands for.
func TestRouterNoStreamer(t *testing.T) {
	g := newRig(t, nil)
	say(t, g.pres, "fake",
		agent.Say{Kind: agent.SayDelta, Text: "a"}, agent.Say{Kind: agent.SayStreamEnd},
		agent.Say{Kind: agent.SayDelta, Text: "b"}, agent.Say{Kind: agent.SayStreamEnd, Text: "The model failed.", IsError: true},
		agent.Say{Kind: agent.SayDelta, Text: "c"}, agent.Say{Kind: agent.SayAnswer, Text: "c"},
		agent.Say{Kind: agent.SayTurnEnded, Result: &agent.TurnResult{}})
	if got, want := g.ch.texts(), []string{"notice: The model failed.", "answer: c"}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("sent %q, want %q", got, want)
	}
}
