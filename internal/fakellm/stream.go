package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// stream answers reply as server-sent events, the way OpenAI streams a
// chat completion (see the package documentation).
func (s *Server) stream(w http.ResponseWriter, r *http.Request, n int, model string, reply Reply) {
	if model == "" {
		model = "fake-model"
	}
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	id := fmt.Sprintf("chatcmpl-fake-%d", n)
	send := func(delta map[string]any, finish any) bool {
		b, err := json.Marshal(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": 1767225600, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		})
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	hold := func() bool {
		if reply.Hold == nil {
			return true
		}
		select {
		case <-reply.Hold:
			return true
		case <-r.Context().Done():
		case <-s.done:
		}
		return false
	}
	if !send(map[string]any{"role": "assistant", "content": ""}, nil) {
		return
	}
	pieces := reply.Chunks
	if len(pieces) == 0 {
		pieces = Split(reply.Text, 4)
	}
	held := false
	for i, p := range pieces {
		if !send(map[string]any{"content": p}, nil) {
			return
		}
		if i == 0 {
			held = true
			if !hold() {
				return
			}
		}
		if reply.CutAfter > 0 && i+1 >= reply.CutAfter {
			return // the connection ends here: no finish reason, no [DONE]
		}
	}
	if reply.StreamError != "" {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": reply.StreamError, "type": "server_error", "param": nil, "code": nil}})
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
		return
	}
	if !held && !hold() {
		return
	}
	finish := "stop"
	for i, c := range reply.ToolCalls {
		cid := c.ID
		if cid == "" {
			cid = fmt.Sprintf("call_%d_%d", n, i+1)
		}
		if !send(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": cid, "type": "function", "function": map[string]any{"name": c.Name, "arguments": ""},
		}}}, nil) {
			return
		}
		for _, a := range Split(c.Arguments, 7) {
			if !send(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": a}}}}, nil) {
				return
			}
		}
		finish = "tool_calls"
	}
	if reply.FinishReason != "" {
		finish = reply.FinishReason
	}
	if !send(map[string]any{}, finish) {
		return
	}
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// Split cuts s into pieces of at most n runes (never inside a rune); the
// pieces join to s. Empty s gives no piece.
func Split(s string, n int) []string {
	if n <= 0 {
		n = 1
	}
	var out []string
	r := []rune(s)
	for len(r) > 0 {
		k := min(n, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}
