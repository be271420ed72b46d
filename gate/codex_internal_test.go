package gate

import (
	"encoding/json"
	"testing"
)

// codexDecisions: what each program reads of an answer. Codex refuses an
// answer holding updatedInput, so an approver's edit, which Claude Code
// runs, is a denial for Codex that says what was allowed.
var codexDecisions = []struct {
	name   string
	client hookClient
	ans    Answer
	asked  string
	want   string
}{
	{"claude allowed", claudeCode, Answer{Status: StatusAllowed, Input: json.RawMessage(`{"command":"ls"}`)}, `{"command":"ls"}`,
		`{"behavior":"allow","updatedInput":{"command":"ls"}}`},
	{"claude allowed an edit", claudeCode, Answer{Status: StatusAllowed, Input: json.RawMessage(`{"command":"ls -l"}`)}, `{"command":"ls"}`,
		`{"behavior":"allow","updatedInput":{"command":"ls -l"}}`},
	{"codex allowed", codex, Answer{Status: StatusAllowed, Input: json.RawMessage(`{"command":"ls"}`), Message: "allowed by ou_a after 3s"}, `{"command":"ls"}`,
		`{"behavior":"allow"}`},
	{"codex allowed an edit", codex, Answer{Status: StatusAllowed, Input: json.RawMessage(`{"command":"ls -l"}`), Message: "allowed by ou_a after 3s"}, `{"command":"ls"}`,
		`{"behavior":"deny","message":"allowed by ou_a after 3s, but only changed to {\"command\":\"ls -l\"}, which Codex cannot apply to its call. Do not run the original; ask again with exactly that input."}`},
	{"codex rejected", codex, Answer{Status: StatusDenied, Message: "rejected by ou_a after 3s. Do not run it; ask the user what to do instead."}, `{"command":"ls"}`,
		`{"behavior":"deny","message":"rejected by ou_a after 3s. Do not run it; ask the user what to do instead."}`},
}

func TestCodexDecision(t *testing.T) {
	for _, tt := range codexDecisions {
		b, err := json.Marshal(tt.client.decision(tt.ans, json.RawMessage(tt.asked)))
		if err != nil || string(b) != tt.want {
			t.Errorf("%s: %s, %v\nwant %s", tt.name, b, err, tt.want)
		}
	}
}
