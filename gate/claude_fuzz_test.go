package gate_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/gate"
)

// FuzzHookInput: whatever body Claude Code's hook (or anyone with an
// agent's token) posts, ParseHookInput never panics, accepts only a
// PermissionRequest with a tool_name and a tool_input object (else an
// ErrInvalid), and the endpoint answers 2xx or 4xx, never 5xx.
func FuzzHookInput(f *testing.F) {
	for _, s := range []string{
		hookBody("s", "Bash", `{"command":"ls"}`),
		hookBody("s", "Read", `{"file_path":"/a"}`),
		hookBody("", "Grep", `{"pattern":"x"}`),
		`{"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"ls","command":"rm"}}`,
		`{"hook_event_name":"PermissionRequest","tool_name":"a/b","tool_input":{}}`,
		`{"hook_event_name":"PermissionRequest","tool_name":"Glob","tool_input":[]}`,
		`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{}}`,
		`{"hook_event_name":"PermissionRequest","tool_name":"Glob","tool_input":{}} 1`,
		`null`, `[]`, `"x"`, `{`, ``,
	} {
		f.Add(s)
	}
	r := newRig(f)
	h := r.gate.HTTP(people)
	f.Fuzz(func(t *testing.T, body string) {
		in, err := gate.ParseHookInput([]byte(body))
		if err != nil && !errors.Is(err, gate.ErrInvalid) {
			t.Fatalf("%q: %v is not ErrInvalid", body, err)
		}
		if err != nil {
			return
		}
		if in.HookEventName != "PermissionRequest" || strings.TrimSpace(in.ToolName) == "" || in.ToolInput == nil {
			t.Fatalf("%q accepted as %+v", body, in)
		}
		if risk, _ := riskOf(in.ToolName); risk != "LOW" {
			return // a card would wait for a person
		}
		req := httptest.NewRequest("POST", gate.HookPath, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+ciToken)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= http.StatusInternalServerError || w.Code < http.StatusOK {
			t.Fatalf("%q: %d %s", body, w.Code, w.Body.String())
		}
	})
}

// riskOf is the risk the rig's ci-claude policy gives a tool by name
// alone: LOW for Read, Glob and Grep.
func riskOf(tool string) (string, bool) {
	switch tool {
	case "Read", "Glob", "Grep":
		return "LOW", true
	}
	return "", false
}
