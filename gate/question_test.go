package gate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// askQuestion is Claude Code's AskUserQuestion input: one single choice,
// one multi-select.
const askQuestion = `{"questions":[` +
	`{"question":"Which size?","header":"Size","options":[{"label":"Small","description":"fast"},{"label":"Large","description":"slow"}],"multiSelect":false},` +
	`{"question":"Which extras?","header":"Extras","options":[{"label":"Cache"},{"label":"Logs"},{"label":"Metrics"}],"multiSelect":true}]}`

// questionAnswers: a person's answer to the card (the edit a channel
// sends) and what Claude Code reads, per the reference sheet: allow, the
// original input plus answers keyed by question text.
var questionAnswers = []struct {
	name, edit, answers string
}{
	{"options", `{"answers":{"#1":{"options":[2]},"#2":{"options":[1,3]}}}`, `{"Which extras?":"Cache, Metrics","Which size?":"Large"}`},
	{"free text", `{"answers":{"#1":{"other":"Medium"}}}`, `{"Which size?":"Medium"}`},
	{"by question text", `{"answers":{"Which extras?":["Logs"]}}`, `{"Which extras?":"Logs"}`},
}

func TestHookQuestionAnswered(t *testing.T) {
	for _, tt := range questionAnswers {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			base := hookServer(t, r)
			ch := postHook(t, base, ciToken, hookBody("sess-q", "AskUserQuestion", askQuestion))
			a := r.card(t)
			if !a.IsQuestion() || a.Grantable() || !strings.Contains(a.SummaryIn("en"), "ci-claude asks you: Which size?") ||
				!strings.Contains(a.SummaryIn("zh"), "ci-claude 向你提问：Which size?") || !strings.Contains(a.PreviewIn("en"), "2. Large — slow") {
				t.Fatalf("the card: %s\n%s\n%s", a.Tool(), a.SummaryIn("en"), a.PreviewIn("en"))
			}
			o, err := r.engine.Decide(context.Background(), a.ID, approval.Decision{Verb: approval.Approve, Actor: "ou_456", Source: approval.SourceCard,
				PayloadSHA256: a.PayloadSHA256, Edits: map[string]json.RawMessage{"#1": json.RawMessage(tt.edit)}})
			if err != nil || o.Status != approval.StatusExecuted {
				t.Fatalf("the answer: %+v, %v", o, err)
			}
			status, body := answer(t, ch)
			want := `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedInput":{"answers":` + tt.answers +
				`,"questions":` + mustCanon(t, askQuestion)[len(`{"questions":`):]
			if status != "200 OK" || body != want+`}}}` {
				t.Fatalf("answer %s %s\nwant %s}}}", status, body, want)
			}
			// Answered once: the same answer again decides nothing.
			if o, _ := r.engine.Decide(context.Background(), a.ID, approval.Decision{Verb: approval.Approve, Actor: "ou_456", Source: approval.SourceCard,
				PayloadSHA256: a.PayloadSHA256, Edits: map[string]json.RawMessage{"#1": json.RawMessage(tt.edit)}}); o.Status == approval.StatusExecuted {
				t.Fatalf("answered twice: %+v", o)
			}
			recs, _ := r.trail.Records(context.Background(), string(a.ID))
			confirms := 0
			for _, rec := range recs {
				if rec.Event == audit.EventConfirm {
					confirms++
					if rec.Proposed != a.PayloadSHA256 {
						t.Fatalf("the confirm record does not name the question shown: %+v", rec)
					}
				}
			}
			if confirms != 1 {
				t.Fatalf("%d confirm records: %+v", confirms, recs)
			}
		})
	}
}

func mustCanon(t *testing.T, s string) string {
	t.Helper()
	c, err := approval.Canonicalize([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return string(c)
}

// questionRefusals: answers that decide nothing; the question stays open.
var questionRefusals = []struct {
	name   string
	actor  approval.UserID
	forged bool
	edit   string
	want   approval.Status
	err    string
}{
	{"another payload", "ou_456", true, `{"answers":{"#1":"Small"}}`, approval.StatusTampered, ""},
	{"someone the rule refuses", "ou_mallory", false, `{"answers":{"#1":"Small"}}`, approval.StatusUnauthorized, ""},
	{"the questions changed", "ou_456", false, `{"questions":[],"answers":{"#1":"Small"}}`, "", "only the answers may change"},
	{"no answer", "ou_456", false, `{"answers":{}}`, "", "no answer"},
}

func TestHookQuestionRefusedAnswers(t *testing.T) {
	r := newRig(t)
	base := hookServer(t, r)
	ch := postHook(t, base, ciToken, hookBody("sess-q", "AskUserQuestion", askQuestion))
	a := r.card(t)
	for _, tt := range questionRefusals {
		d := approval.Decision{Verb: approval.Approve, Actor: tt.actor, Source: approval.SourceCard, PayloadSHA256: a.PayloadSHA256,
			Edits: map[string]json.RawMessage{"#1": json.RawMessage(tt.edit)}}
		if tt.forged {
			d.PayloadSHA256 = strings.Repeat("ab", 32)
		}
		o, err := r.engine.Decide(context.Background(), a.ID, d)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("%s: %+v, %v", tt.name, o, err)
			}
		} else if err != nil || o.Status != tt.want {
			t.Fatalf("%s: %+v, %v", tt.name, o, err)
		}
		if p := r.pendingOf(t, a.ID); p.State != approval.StatePending {
			t.Fatalf("%s: the question is %s", tt.name, p.State)
		}
	}
	// A plain approve (a typed 确认, an old button) is no answer: the
	// question ends failed and Claude Code is denied, never allowed
	// without answers.
	r.decide(t, a, approval.Approve, "ou_456", "")
	status, body := answer(t, ch)
	if status != "200 OK" || !strings.Contains(body, `"behavior":"deny","message":"not allowed: approved without an answer`) {
		t.Fatalf("a plain approve: %s %s", status, body)
	}
}

// TestHookQuestionTimesOut: nobody answers within hook_timeout: deny,
// saying nobody answered the question.
func TestHookQuestionTimesOut(t *testing.T) {
	r := newRigAgents(t, memstore.New(memstore.Options{}), hookAgents())
	fc := clock.NewFake(time.Now())
	r.deps.Clock = fc
	r.withEngine(t, r.engine)
	base := hookServer(t, r)
	ch := postHook(t, base, ciToken, hookBody("sess-t", "AskUserQuestion", askQuestion))
	a := r.card(t)
	waitfor.True(t, "the hook request waiting", func() bool { return r.engine.Waiting(a.ID) })
	fc.Advance(time.Second)
	status, got := answer(t, ch)
	if status != "200 OK" || !strings.Contains(got, `"behavior":"deny","message":"nobody answered the question within 1s`) {
		t.Fatalf("answer after hook_timeout: %s %s", status, got)
	}
}

// TestQuestionAlwaysAsks: a policy that would allow AskUserQuestion at
// once, or a session grant, never answers it without a person.
func TestQuestionAlwaysAsks(t *testing.T) {
	cs := append([]gate.AgentConfig(nil), agents...)
	cs[0].Policy = map[string]gate.RuleConfig{"*": {Risk: "LOW"}}
	r := newRigAgents(t, memstore.New(memstore.Options{}), cs)
	ans, err := r.gate.Ask(context.Background(), r.ci, gate.Ask{Tool: "AskUserQuestion", Input: json.RawMessage(askQuestion)})
	if err != nil || ans.Status != gate.StatusPending {
		t.Fatalf("a LOW question: %+v, %v", ans, err)
	}
	if _, err := r.gate.Ask(context.Background(), r.ci, gate.Ask{Tool: "AskUserQuestion", Input: json.RawMessage(`{"questions":[]}`)}); err == nil {
		t.Fatal("a question without questions was asked")
	}
	// More than an AskUserQuestion takes (an MCP server's form may ask
	// more: approval.MaxQuestions) is refused.
	var qs []string
	for i := range approval.MaxAskQuestions + 1 {
		qs = append(qs, fmt.Sprintf(`{"question":"q%d?"}`, i))
	}
	if _, err := r.gate.Ask(context.Background(), r.ci, gate.Ask{Tool: "AskUserQuestion", Input: json.RawMessage(`{"questions":[` + strings.Join(qs, ",") + `]}`)}); !errors.Is(err, gate.ErrInvalid) {
		t.Fatalf("%d questions: %v", len(qs), err)
	}
}

// TestPermissionPromptToolQuestion: the same question asked through
// request_approval's contract (Claude Code's --permission-prompt-tool):
// the behavior carries the answered input.
func TestPermissionPromptToolQuestion(t *testing.T) {
	r := newRig(t)
	ans, err := r.gate.Ask(context.Background(), r.ci, gate.Ask{Tool: "AskUserQuestion", Input: json.RawMessage(askQuestion), Key: "toolu_q"})
	if err != nil || ans.Status != gate.StatusPending {
		t.Fatalf("ask: %+v, %v", ans, err)
	}
	a := r.card(t)
	if _, err := r.engine.Decide(context.Background(), a.ID, approval.Decision{Verb: approval.Approve, Actor: "ou_456", Source: approval.SourceCard,
		PayloadSHA256: a.PayloadSHA256, Edits: map[string]json.RawMessage{"#1": json.RawMessage(`{"answers":{"#2":["Logs","Metrics"]}}`)}}); err != nil {
		t.Fatal(err)
	}
	got, err := r.gate.Wait(context.Background(), r.ci, ans.ID, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"behavior":"allow","updatedInput":{"answers":{"Which extras?":"Logs, Metrics"},"questions":` + mustCanon(t, askQuestion)[len(`{"questions":`):]
	if string(got.Behavior()) != want+"}" {
		t.Fatalf("behavior %s\nwant      %s}", got.Behavior(), want)
	}
	// A retry of the same key (the same question) gets the same answer.
	again, err := r.gate.Ask(context.Background(), r.ci, gate.Ask{Tool: "AskUserQuestion", Input: json.RawMessage(askQuestion), Key: "toolu_q"})
	if err != nil || string(again.Behavior()) != string(got.Behavior()) {
		t.Fatalf("retry: %s, %v", again.Behavior(), err)
	}
}

// TestQuestionExpiryIsADenial: a question nobody answered before its
// approval expired is denied, saying nobody answered it.
func TestQuestionExpiryIsADenial(t *testing.T) {
	cs := append([]gate.AgentConfig(nil), agents...)
	cs[0].Timeout = time.Second
	r := newRigAgents(t, memstore.New(memstore.Options{}), cs)
	ans, err := r.gate.Ask(context.Background(), r.ci, gate.Ask{Tool: "AskUserQuestion", Input: json.RawMessage(askQuestion)})
	if err != nil || ans.Status != gate.StatusPending {
		t.Fatalf("ask: %+v, %v", ans, err)
	}
	got, err := r.gate.Wait(context.Background(), r.ci, ans.ID, time.Minute)
	if err != nil || got.State != approval.StateExpired ||
		string(got.Behavior()) != `{"behavior":"deny","message":"expired: nobody answered the question within 1s. Go on without the answer, or ask again if it is still needed."}` {
		t.Fatalf("answer %+v %s, %v", got, got.Behavior(), err)
	}
}
