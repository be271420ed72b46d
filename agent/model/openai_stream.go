package model

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/hitlbot/hitlbot/agent"
)

// errStreamCut is the cause of a stream that ended (the connection closed,
// or [DONE] came) before any choice said why it finished: the answer is
// incomplete, so it is a failure, never a shorter answer.
var errStreamCut = errors.New("openai: the answer's stream ended before it finished")

// errStreamRefused marks a streamed request the server refused before its
// first event: it does not stream (see OpenAIConfig.Stream); the request
// is sent again whole.
var errStreamRefused = errors.New("openai: the server does not stream answers")

// refusesStreams reports whether err, the failure of a streamed request
// before any chunk, says the server does not take stream: true: an HTTP
// status that refuses the request's form (400 Bad Request, 404, 405, 415,
// 422, 501). Authentication, rate limits, timeouts and server errors are
// failures of their own and are not retried whole.
func refusesStreams(err error) bool {
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.StatusCode {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusUnsupportedMediaType,
		http.StatusUnprocessableEntity, http.StatusNotImplemented:
		return true
	}
	return false
}

// completeStream is Complete with stream: true. The server's events are
// read by the SDK's server-sent-events decoder and assembled by its
// accumulator (content, refusal, tool calls from their deltas by index);
// each piece of content is handed to delta as it comes. The result is the
// same Response the JSON answer would give.
func (m *OpenAI) completeStream(ctx context.Context, params openai.ChatCompletionNewParams, delta func(string), start time.Time) (agent.Response, error) {
	stream := m.svc.NewStreaming(ctx, params)
	defer func() { _ = stream.Close() }()
	var acc openai.ChatCompletionAccumulator
	finish := ""
	chunks := 0
	for stream.Next() {
		chunk := stream.Current()
		chunks++
		if !acc.AddChunk(chunk) {
			return agent.Response{}, agent.NewModelError(publicFailed, errors.New("openai: a chunk of the answer's stream could not be assembled"))
		}
		for _, c := range chunk.Choices {
			if c.Index != 0 {
				continue
			}
			if c.Delta.Content != "" && delta != nil {
				delta(c.Delta.Content)
			}
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
	}
	if err := stream.Err(); err != nil {
		if chunks == 0 && refusesStreams(err) {
			return agent.Response{}, fmt.Errorf("%w: %w", errStreamRefused, m.modelError(ctx, err))
		}
		merr := m.modelError(ctx, err)
		m.logger.Warn("model completion failed", "model", m.cfg.Model, "duration", time.Since(start), "chunks", chunks, "err", merr.Err)
		return agent.Response{}, merr
	}
	if finish == "" && chunks == 0 && ctx.Err() == nil {
		// Not one event: the server answered something that is no
		// event stream (a whole JSON answer, an empty body).
		return agent.Response{}, fmt.Errorf("%w: no event in the answer", errStreamRefused)
	}
	if finish == "" {
		m.logger.Warn("model completion failed", "model", m.cfg.Model, "duration", time.Since(start), "chunks", chunks, "err", errStreamCut)
		return agent.Response{}, agent.NewModelError(publicFailed, errStreamCut)
	}
	if len(acc.Choices) == 0 {
		return agent.Response{}, agent.NewModelError(publicFailed, errors.New("openai: the response has no choices"))
	}
	out := assistantMessage(acc.Choices[0].Message)
	m.logger.Debug("model completion", "model", m.cfg.Model, "duration", time.Since(start), "stream", true,
		"chunks", chunks, "finish_reason", finish, "tool_calls", len(out.ToolCalls))
	return agent.Response{Message: out}, nil
}
