package web

import (
	"context"
	"crypto/rand"
	"sync"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels"
)

// deltaFrame is a piece of a streamed answer.
type deltaFrame struct {
	Type      string `json:"type"`
	Event     string `json:"event"`
	SessionID string `json:"session_id"`
	StreamID  string `json:"stream_id"`
	Content   string `json:"content"`
	ReplyTo   string `json:"reply_to,omitempty"`
	Timestamp string `json:"timestamp"`
}

// OpenStream starts a streamed answer (channels.Streamer): each piece is
// an agent.delta frame to the sockets watching the chat now (pieces are
// not kept for a socket that joins later), and the end is the
// agent.message a client without streaming reads as before, with the
// stream's id.
func (w *Web) OpenStream(_ context.Context, to channels.Target) (channels.AnswerStream, error) {
	user, sid, err := splitChatID(to.ChatID)
	if err != nil {
		return nil, err
	}
	return &webStream{w: w, to: to, user: user, sid: sid, id: "st_" + rand.Text()}, nil
}

// webStream is one streamed answer on the page.
type webStream struct {
	w    *Web
	to   channels.Target
	user approval.UserID
	sid  string
	id   string
	once sync.Once
}

// Append sends a piece at once: a frame on a socket is cheap, and the
// socket's writer queues it.
func (s *webStream) Append(text string) {
	frame := mustJSON(deltaFrame{Type: typeDelta, Event: typeDelta, SessionID: s.sid, StreamID: s.id, Content: text,
		ReplyTo: s.to.ReplyTo, Timestamp: s.w.now()})
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if c := s.w.chats[s.to.ChatID]; c != nil {
		for k := range c.conns {
			k.enqueue(frame)
		}
	}
}

// Finish sends the whole text as the agent.message that ends the stream:
// kind answer, or a notice marked is_error when the model failed.
func (s *webStream) Finish(_ context.Context, text string, how channels.StreamEnd) error {
	kind, failed := channels.OutAnswer, how == channels.EndFailed
	if failed {
		kind = channels.OutNotice
	}
	s.once.Do(func() {
		frame := mustJSON(messageFrame{Type: typeAgentMessage, Event: typeAgentMessage, SessionID: s.sid, Kind: string(kind), Content: text,
			ReplyTo: s.to.ReplyTo, IsError: failed, Timestamp: s.w.now(), StreamID: s.id})
		s.w.mu.Lock()
		s.w.deliverLocked(s.w.chatLocked(s.to.ChatID, s.user, s.sid), frame)
		s.w.mu.Unlock()
	})
	return nil
}

var _ channels.Streamer = (*Web)(nil)
