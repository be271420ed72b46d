package gate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/gate"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/waitfor"
)

// hookBody is Claude Code 2.1.328's PermissionRequest hook input for one
// call, as observed (../shared/reference/agent-hooks.md).
func hookBody(session, tool, input string) string {
	return `{"session_id":"` + session + `","transcript_path":"/home/dev/.claude/projects/x/` + session + `.jsonl",` +
		`"cwd":"/home/dev/proj","prompt_id":"p1","permission_mode":"default","effort":{"level":"medium"},` +
		`"hook_event_name":"PermissionRequest","tool_name":"` + tool + `","tool_input":` + input + `,` +
		`"permission_suggestions":[{"type":"addDirectories","directories":["build"],"destination":"session"}]}`
}

// hookServer serves the rig's gate over HTTP.
func hookServer(t *testing.T, r *rig) string {
	t.Helper()
	srv := httptest.NewServer(r.gate.HTTP(people))
	t.Cleanup(srv.Close)
	return srv.URL
}

// postHook posts a hook body in the background; the answer comes on the
// channel (status and body).
func postHook(t *testing.T, base, tok, body string) <-chan [2]string {
	t.Helper()
	return postHookTo(t, base, gate.HookPath, tok, body)
}

// postHookTo is postHook to the hook at path.
func postHookTo(t *testing.T, base, path, tok, body string) <-chan [2]string {
	t.Helper()
	ch := make(chan [2]string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // before the server closes: a request left waiting ends
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			ch <- [2]string{"error", err.Error()}
			return
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		ch <- [2]string{resp.Status, b.String()}
	}()
	return ch
}

func answer(t *testing.T, ch <-chan [2]string) (string, string) {
	t.Helper()
	select {
	case a := <-ch:
		return a[0], strings.TrimSpace(a[1])
	case <-time.After(30 * time.Second):
		t.Fatal("the hook was not answered")
	}
	return "", ""
}

// took stands for the time a person took in an answer ("after 0s").
var tookRE = regexp.MustCompile(` after [0-9hms.]+`)

// hookDecisions: a HIGH call shown on a card and decided; what Claude
// Code reads.
var hookDecisions = []struct {
	name    string
	verb    approval.Verb
	comment string
	want    string
}{
	{"allowed", approval.Approve, "",
		`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedInput":{"command":"rm -rf build","description":"clean"}}}}`},
	{"rejected", approval.Reject, "not now",
		`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"rejected by ou_456 after D: not now. Do not run it; ask the user what to do instead."}}}`},
}

func TestHookDecided(t *testing.T) {
	for _, tt := range hookDecisions {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			base := hookServer(t, r)
			ch := postHook(t, base, ciToken, hookBody("sess-0123456789", "Bash", `{"command":"rm -rf build","description":"clean"}`))
			a := r.card(t)
			if a.Tool() != "ci-claude/Bash" || a.ChatID != "oc_123" || a.Risk != approval.RiskHigh ||
				!strings.Contains(a.PreviewIn("en"), "From Claude Code session sess-012…, in /home/dev/proj") ||
				!strings.Contains(a.PreviewIn("zh"), "来自 Claude Code 会话 sess-012…，目录 /home/dev/proj") {
				t.Fatalf("the card: %s %s %s\n%s\n%s", a.Tool(), a.ChatID, a.Risk, a.PreviewIn("en"), a.PreviewIn("zh"))
			}
			if a.ExpiresAt.Sub(a.CreatedAt) != gate.DefaultAgentTimeout {
				t.Fatalf("an agent's approval waits %s, want %s", a.ExpiresAt.Sub(a.CreatedAt), gate.DefaultAgentTimeout)
			}
			r.decide(t, a, tt.verb, "ou_456", tt.comment)
			status, body := answer(t, ch)
			if status != "200 OK" || tookRE.ReplaceAllString(body, " after D") != tt.want {
				t.Fatalf("answer %s %s\nwant %s", status, body, tt.want)
			}
		})
	}
}

func TestHookLowRunsWithoutACard(t *testing.T) {
	r := newRig(t)
	status, body := answer(t, postHook(t, hookServer(t, r), ciToken, hookBody("s1", "Read", `{"file_path":"/srv/a.go"}`)))
	want := `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedInput":{"file_path":"/srv/a.go"}}}}`
	if status != "200 OK" || body != want {
		t.Fatalf("answer %s %s\nwant %s", status, body, want)
	}
	select {
	case a := <-r.shown:
		t.Fatalf("a LOW call showed a card: %s", a.ID)
	default:
	}
}

// hookRefusals: what /hooks/claude answers before asking anything.
var hookRefusals = []struct {
	name, method, tok, ctype, body string
	status                         int
	has                            string
}{
	{"no token", "POST", "", "application/json", hookBody("s", "Bash", `{"command":"ls"}`), 401, `"unauthorized"`},
	{"a wrong token", "POST", ciToken + "x", "application/json", hookBody("s", "Bash", `{"command":"ls"}`), 401, `"unauthorized"`},
	{"GET", "GET", ciToken, "", "", 405, `"method_not_allowed"`},
	{"not JSON", "POST", ciToken, "text/plain", hookBody("s", "Bash", `{"command":"ls"}`), 415, `"unsupported_media_type"`},
	{"not an object", "POST", ciToken, "application/json", `[1]`, 400, `"invalid_request"`},
	{"another event", "POST", ciToken, "application/json", `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`, 400, "hook_event_name must be PermissionRequest"},
	{"no event", "POST", ciToken, "application/json", `{"tool_name":"Bash","tool_input":{"command":"ls"}}`, 400, "hook_event_name"},
	{"no tool", "POST", ciToken, "application/json", `{"hook_event_name":"PermissionRequest","tool_input":{"command":"ls"}}`, 400, "tool_name is required"},
	{"a tool with a slash", "POST", ciToken, "application/json", `{"hook_event_name":"PermissionRequest","tool_name":"a/b","tool_input":{}}`, 400, "tool_name"},
	{"no input", "POST", ciToken, "application/json", `{"hook_event_name":"PermissionRequest","tool_name":"Bash"}`, 400, "tool_input must be a JSON object"},
	{"input a string", "POST", ciToken, "application/json", `{"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":"ls"}`, 400, "tool_input must be a JSON object"},
	{"a key twice", "POST", ciToken, "application/json", `{"hook_event_name":"PermissionRequest","tool_name":"Bash","tool_input":{"command":"ls","command":"rm -rf /"}}`, 400, "duplicate object key"},
	{"more after the object", "POST", ciToken, "application/json", hookBody("s", "Bash", `{"command":"ls"}`) + `{}`, 400, "more after its JSON object"},
	{"oversized", "POST", ciToken, "application/json", hookBody("s", "Bash", `{"command":"`+strings.Repeat("a", 1<<20)+`"}`), 413, `"too_large"`},
}

func TestHookRefusals(t *testing.T) {
	r := newRig(t)
	base := hookServer(t, r)
	for _, tt := range hookRefusals {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, base+gate.HookPath, strings.NewReader(tt.body))
			if tt.ctype != "" {
				req.Header.Set("Content-Type", tt.ctype)
			}
			if tt.tok != "" {
				req.Header.Set("Authorization", "Bearer "+tt.tok)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			if resp.StatusCode != tt.status || !strings.Contains(b.String(), tt.has) || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("%d %s (%s); want %d with %q", resp.StatusCode, b.String(), resp.Header.Get("Content-Type"), tt.status, tt.has)
			}
		})
	}
	select {
	case a := <-r.shown:
		t.Fatalf("a refused request showed a card: %s", a.ID)
	default:
	}
}

// hookAgents: ci-claude with a hook_timeout of 1s.
func hookAgents() []gate.AgentConfig {
	cs := append([]gate.AgentConfig(nil), agents...)
	cs[0].HookTimeout = time.Second
	return cs
}

// countEvents counts the records of event ev of approval id.
func countEvents(recs []audit.Record, id approval.ID, ev audit.Event) int {
	n := 0
	for _, r := range recs {
		if r.ApprovalID == string(id) && r.Event == ev {
			n++
		}
	}
	return n
}

// TestHookTimeoutWithdrawsTheApproval: nobody decides within
// hook_timeout: the hook is answered deny, and the approval is withdrawn
// at once (cancelled, every card settled with the reason: the agent
// stopped waiting and was told no), so it cannot be approved any more: a
// late approve runs nothing and is answered in words that say the agent
// was already told no. The same call asked again is a new approval.
func TestHookTimeoutWithdrawsTheApproval(t *testing.T) {
	r := newRigAgents(t, memstore.New(memstore.Options{}), hookAgents())
	// The hook's 1s runs on a clock of the test's: it passes when the
	// test says, however slow the machine.
	fc := clock.NewFake(time.Now())
	r.deps.Clock = fc
	r.withEngine(t, r.engine)
	base := hookServer(t, r)
	body := hookBody("sess-a", "Bash", `{"command":"git push origin main"}`)
	ch := postHook(t, base, ciToken, body)
	a := r.card(t)
	waitfor.True(t, "the hook request waiting", func() bool { return r.engine.Waiting(a.ID) })
	fc.Advance(time.Second)
	status, got := answer(t, ch)
	if status != "200 OK" || !strings.Contains(got, `"behavior":"deny","message":"nobody decided within 1s; approval `+string(a.ID)+` was withdrawn`) {
		t.Fatalf("answer after hook_timeout: %s %s", status, got)
	}
	p := r.pendingOf(t, a.ID)
	if p.State != approval.StateCancelled || p.Outcome == nil || !strings.Contains(p.Outcome.Content, "told not to run it") {
		t.Fatalf("the approval after the hook's answer: %s %+v", p.State, p.Outcome)
	}
	if n := countEvents(r.trail.All(), a.ID, audit.EventCancel); n != 1 {
		t.Fatalf("%d cancel records", n)
	}
	o := r.decide(t, p, approval.Approve, "ou_456", "")
	if o.Status != approval.StatusAlreadyDecided || !strings.Contains(o.Content, "told not to run it") || strings.Contains(o.Content, "may run") {
		t.Fatalf("a late approve: %+v", o)
	}
	if n := countEvents(r.trail.All(), a.ID, audit.EventConfirm); n != 0 {
		t.Fatalf("a late approve was confirmed (%d records)", n)
	}
	// Asked again, the call is a new request: a new card, never the
	// withdrawn one.
	again := postHook(t, base, ciToken, body)
	b := r.card(t)
	if b.ID == a.ID {
		t.Fatalf("the withdrawn approval was asked again: %s", b.ID)
	}
	r.decide(t, b, approval.Approve, "ou_456", "")
	if status, got := answer(t, again); status != "200 OK" || !strings.Contains(got, `"behavior":"allow"`) {
		t.Fatalf("the new request's answer: %s %s", status, got)
	}
}

// TestHookParallelRequests: Claude Code asks for two calls at once; each
// gets its own approval and card, pending side by side in the chat with
// its own code, and each decision answers its own request.
func TestHookParallelRequests(t *testing.T) {
	r := newRig(t)
	base := hookServer(t, r)
	first := postHook(t, base, ciToken, hookBody("sess-p", "Bash", `{"command":"rm -rf dist"}`))
	second := postHook(t, base, ciToken, hookBody("sess-p", "Bash", `{"command":"rm -rf out"}`))
	a, b := r.card(t), r.card(t)
	if a.ID == b.ID || a.Session == b.Session || a.ChatID != b.ChatID {
		t.Fatalf("the two cards: %s (%s), %s (%s)", a.ID, a.Session, b.ID, b.Session)
	}
	ctx := context.Background()
	waiting, err := r.engine.ChatPending(ctx, "feishu", "oc_123")
	if err != nil || len(waiting) != 2 {
		t.Fatalf("pending in the chat: %d, %v", len(waiting), err)
	}
	ca, _ := r.engine.ChatCode(ctx, a)
	cb, _ := r.engine.ChatCode(ctx, b)
	if ca == "" || cb == "" || ca == cb {
		t.Fatalf("codes %q and %q", ca, cb)
	}
	dist := a
	if strings.Contains(string(b.Calls[0].Args), "dist") {
		dist, b = b, a
	}
	r.decide(t, b, approval.Reject, "ou_456", "keep out")
	r.decide(t, dist, approval.Approve, "ou_456", "")
	if _, got := answer(t, first); !strings.Contains(got, `"behavior":"allow","updatedInput":{"command":"rm -rf dist"}`) {
		t.Fatalf("the first request's answer: %s", got)
	}
	if _, got := answer(t, second); !strings.Contains(got, `"behavior":"deny","message":"rejected by ou_456 after`) || !strings.Contains(got, "keep out") {
		t.Fatalf("the second request's answer: %s", got)
	}
}

func TestHookInputParse(t *testing.T) {
	in, err := gate.ParseHookInput([]byte(hookBody("s-1", "Bash", `{"command":"ls"}`)))
	if err != nil || in.SessionID != "s-1" || in.Cwd != "/home/dev/proj" || in.ToolName != "Bash" || string(in.ToolInput) != `{"command":"ls"}` ||
		!json.Valid(in.PermissionSuggestions) {
		t.Fatalf("%+v, %v", in, err)
	}
}

// TestCodexHookPath: /hooks/codex asks as /hooks/claude does (the card
// names Codex's session) and answers as Codex accepts: a bare allow.
func TestCodexHookPath(t *testing.T) {
	r := newRig(t)
	base := hookServer(t, r)
	body := `{"session_id":"019ac0de-1234","turn_id":"t1","transcript_path":null,"cwd":"/home/dev/proj","hook_event_name":"PermissionRequest",` +
		`"model":"gpt-5","permission_mode":"default","tool_name":"Bash","tool_input":{"command":"rm -rf build","description":"clean"}}`
	ch := postHookTo(t, base, gate.CodexHookPath, ciToken, body)
	a := r.card(t)
	if !strings.Contains(a.PreviewIn("en"), "From Codex session 019ac0de…, in /home/dev/proj") || !strings.Contains(a.PreviewIn("zh"), "来自 Codex 会话 019ac0de…") {
		t.Fatalf("the card:\n%s\n%s", a.PreviewIn("en"), a.PreviewIn("zh"))
	}
	r.decide(t, a, approval.Approve, "ou_456", "")
	status, got := answer(t, ch)
	if want := `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}`; status != "200 OK" || got != want {
		t.Fatalf("answer %s %s\nwant %s", status, got, want)
	}
	// Without a token, like /hooks/claude: 401.
	resp, err := http.Post(base+gate.CodexHookPath, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %s", resp.Status)
	}
}
