package web_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels/web"
	"github.com/hitlbot/hitlbot/internal/waitfor"
)

// FuzzFrame sends arbitrary client frames over a real socket: the server
// answers JSON (an error frame for anything malformed), never crashes, and
// the same socket still answers a hello afterwards. Every server frame
// carries "event" equal to "type". "STEP" in an input stands for the step
// id of a confirmation pending in session "fz", so that inputs reach the
// decision path (with "type" or the seed's "event"). A frame that is not
// valid UTF-8 is refused with INVALID_MESSAGE and decides nothing.
func FuzzFrame(f *testing.F) {
	for _, seed := range []string{
		`{"type":"hello","session_id":"s1"}`,
		`{"type":"user.message","session_id":"s1","content":"hi"}`,
		`{"type":"user.response","session_id":"s1","step_id":"confirm_x_erase","content":{"confirmed":true,"message":""}}`,
		`{"type":"user.response","session_id":"s1","step_id":"","content":null}`,
		`{"type":"nope"}`, `[]`, `{`, `"x"`, `{"type":"user.message","session_id":"../..","content":"x"}`,
		`{"type":"user.message","session_id":"s1","content":{"a":1}}`,
		// The seed's frames (seeds/003), keyed by "event".
		`{"event":"user.message","session_id":"sess_abc123","timestamp":"2024-01-01T12:00:00.000Z","content":"删除重要文件"}`,
		`{"session_id":"fz","event":"user.response","step_id":"STEP","timestamp":"2024-01-01T12:00:00.000Z","content":{"confirmed":true,"message":"确认删除文件"}}`,
		`{"session_id":"fz","event":"user.response","step_id":"STEP","content":{"confirmed":false,"message":"操作超时，自动取消"}}`,
		`{"session_id":"fz","event":"user.response","step_id":"confirm_abc123_delete_file","content":{"confirmed":true}}`,
		`{"type":"user.response","session_id":"fz","step_id":"STEP","content":{"resolution":"retry","message":"db back"}}`,
		`{"type":"user.response","session_id":"fz","step_id":"STEP","content":{"resolution":"maybe","confirmed":true}}`,
		`{"type":"user.response","session_id":"fz","step_id":"STEP","content":{"resolution":7}}`,
		// Per-call decisions of a batch.
		`{"session_id":"fz","event":"user.response","step_id":"STEP","content":{"confirmed":true,"calls":{"c1":"approve","c2":"reject"}}}`,
		`{"session_id":"fz","event":"user.response","step_id":"STEP","content":{"confirmed":false,"calls":{"c1":"approve"}}}`,
		`{"session_id":"fz","event":"user.response","step_id":"STEP","content":{"confirmed":true,"calls":{"#1":1,"":null}}}`,
		`{"session_id":"fz","event":"user.response","step_id":"STEP","content":{"confirmed":true,"calls":["c1"]}}`,
		// Edits before approving.
		`{"session_id":"fz","event":"user.response","step_id":"STEP","content":{"confirmed":true,"edits":{"#1":{"target":"y"}}}}`,
		`{"session_id":"fz","event":"user.response","step_id":"STEP","content":{"confirmed":true,"edits":{"#1":[1]}}}`,
		`{"session_id":"fz","event":"user.response","step_id":"STEP","content":{"confirmed":false,"edits":{"#1":{"target":1}}}}`,
		`{"session_id":"fz","event":"user.response","step_id":"STEP","content":{"confirmed":true,"edits":{}}}`,
		`{"type":"user.response","event":"user.message","session_id":"fz","step_id":"STEP","content":{"confirmed":true}}`,
		`{"type":"user.response","event":"user.response","session_id":"fz","step_id":"STEP","content":{"confirmed":false,"message":"no"}}`,
		`{"event":"hello","session_id":"s1"}`, `{"event":"agent.user_confirm","session_id":"s1"}`, `{"event":7}`,
		// Not UTF-8.
		"{\"session_id\":\"fz\",\"event\":\"user.response\",\"step_id\":\"STEP\",\"content\":{\"confirmed\":true,\"message\":\"\xff\"}}",
		"{\"event\":\"user.message\",\"session_id\":\"s1\",\"content\":\"\xc3\x28\"}",
	} {
		f.Add(seed)
	}
	s := newServer(f)
	f.Fuzz(func(t *testing.T, raw string) {
		if len(raw) > 4096 {
			return // oversized frames close the socket by design (tested elsewhere)
		}
		c := s.connect(t, "", "fz")
		step := pendingStep(t, s, c)
		raw = strings.ReplaceAll(raw, "STEP", step)
		runs := s.erase.Runs.Load()
		c.sendRaw(raw)
		c.send(map[string]any{"type": "hello", "session_id": "fuzz-check"})
		c.expect("hello", func(fr frame) bool { return fr.str("session_id") == "fuzz-check" })
		if !utf8.ValidString(raw) {
			// Frames are handled in order: the refusal came before the hello.
			if e := c.expect("error", nil); e.str("code") != web.CodeInvalidMessage || e.str("step_id") != "" {
				t.Fatalf("not UTF-8: error %v", e)
			}
			if st := web.StepState(s.web, step); st != "open" {
				t.Fatalf("not UTF-8: the step is %s", st)
			}
			if n := s.erase.Runs.Load(); n != runs {
				t.Fatalf("not UTF-8: the tool ran")
			}
		}
		for _, fr := range c.seen() {
			if fr.str("event") == "" || fr.str("event") != fr.str("type") {
				t.Fatalf("frame %v: event %q, type %q", fr, fr.str("event"), fr.str("type"))
			}
		}
	})
}

// pendingStep returns the step id of the confirmation pending in session
// "fz" of the local user, asking for one when none is pending. c watches
// the session.
func pendingStep(t *testing.T, s *server, c *client) string {
	t.Helper()
	// An answer of an earlier input may still be being decided: wait for
	// it to end (the approval ends, or it is open again after a refusal).
	var a *approval.Approval
	waitfor.True(t, "no decision in flight in session fz", func() bool {
		var err error
		if a, err = s.engine.Pending(context.Background(), "web:local/fz"); err != nil {
			t.Fatal(err)
		}
		return a == nil || web.StepState(s.web, "confirm_"+string(a.ID)+"_erase") != "deciding"
	})
	if a != nil {
		// hello re-sent it.
		return c.expect("agent.user_confirm", func(fr frame) bool { return fr.meta("approval_id") == string(a.ID) }).str("step_id")
	}
	c.message("fz", "erase fz")
	return c.expect("agent.user_confirm", nil).str("step_id")
}
