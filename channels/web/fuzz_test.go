package web_test

import (
	"testing"
)

// FuzzFrame sends arbitrary client frames over a real socket: the server
// answers JSON (an error frame for anything malformed), never crashes, and
// the same socket still answers a hello afterwards.
func FuzzFrame(f *testing.F) {
	for _, seed := range []string{
		`{"type":"hello","session_id":"s1"}`,
		`{"type":"user.message","session_id":"s1","content":"hi"}`,
		`{"type":"user.response","session_id":"s1","step_id":"confirm_x_erase","content":{"confirmed":true,"message":""}}`,
		`{"type":"user.response","session_id":"s1","step_id":"","content":null}`,
		`{"type":"nope"}`, `[]`, `{`, `"x"`, `{"type":"user.message","session_id":"../..","content":"x"}`,
		`{"type":"user.message","session_id":"s1","content":{"a":1}}`,
	} {
		f.Add(seed)
	}
	s := newServer(f)
	f.Fuzz(func(t *testing.T, raw string) {
		if len(raw) > 4096 {
			return // oversized frames close the socket by design (tested elsewhere)
		}
		c := s.connect(t, "", "")
		c.sendRaw(raw)
		c.send(map[string]any{"type": "hello", "session_id": "fuzz-check"})
		c.expect("hello", func(fr frame) bool { return fr.str("session_id") == "fuzz-check" })
	})
}
