package agentcli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Responses is a fake of the OpenAI Responses API (POST /v1/responses,
// streamed as server-sent events) as the Codex CLI uses it: it answers a
// request with no tool output in it with one scripted command call
// (exec_command, asking to run outside the sandbox, which makes Codex ask
// for approval), and a request that carries the call's output with a short
// text, which ends the turn. It records each output Codex sent back, which
// is what the model would read of the approval's answer.
type Responses struct {
	URL string

	mu      sync.Mutex
	command string
	why     string
	outputs []string
	calls   int
}

// NewResponses starts a fake whose call runs command, with why as the
// justification Codex shows (tool_input.description in its hooks).
func NewResponses(t testing.TB, command, why string) *Responses {
	r := &Responses{command: command, why: why}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL + "/v1"
	return r
}

// Outputs returns the tool outputs Codex sent back, in order.
func (r *Responses) Outputs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.outputs...)
}

// Calls is how many command calls the fake has handed out.
func (r *Responses) Calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// request is the part of a Responses request the fake reads.
type request struct {
	Input []struct {
		Type   string          `json:"type"`
		Output json.RawMessage `json:"output"`
	} `json:"input"`
}

func (r *Responses) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method == http.MethodGet { // GET /v1/models
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[]}`)
		return
	}
	if req.Method != http.MethodPost || req.URL.Path != "/v1/responses" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	var body request
	if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	answered := false
	r.mu.Lock()
	for _, in := range body.Input {
		if in.Type == "function_call_output" {
			answered = true
			var s string
			if json.Unmarshal(in.Output, &s) != nil {
				s = string(in.Output)
			}
			r.outputs = append(r.outputs, s)
		}
	}
	var item map[string]any
	if answered {
		item = map[string]any{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": "done", "annotations": []any{}}}}
	} else {
		r.calls++
		args, _ := json.Marshal(map[string]any{"cmd": r.command, "sandbox_permissions": "require_escalated", "justification": r.why})
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", r.calls), "call_id": fmt.Sprintf("call_%d", r.calls),
			"name": "exec_command", "arguments": string(args)}
	}
	r.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	usage := map[string]any{"input_tokens": 1, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 1, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 2}
	for _, ev := range []map[string]any{
		{"type": "response.created", "response": map[string]any{"id": "resp_1"}},
		{"type": "response.output_item.added", "output_index": 0, "item": item},
		{"type": "response.output_item.done", "output_index": 0, "item": item},
		{"type": "response.completed", "response": map[string]any{"id": "resp_1", "usage": usage}},
	} {
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], b)
	}
}
