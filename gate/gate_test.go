package gate_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/gate"
	"github.com/hitlbot/hitlbot/internal/hitltest"
)

const (
	ciToken    = "ci-token-0123456789abcdef"
	otherToken = "other-token-0123456789abcdef"
	soloToken  = "solo-token-0123456789abcdef"
)

// shown is a Notifier that hands every new approval to the test.
type shown chan *approval.Approval

func (shown) Progress(context.Context, *approval.Approval) error { return nil }
func (shown) Escalate(context.Context, *approval.Approval, int) ([]approval.CardRef, error) {
	return nil, nil
}
func (shown) Remind(context.Context, *approval.Approval, int) error { return nil }

func (s shown) Show(_ context.Context, a *approval.Approval) ([]approval.CardRef, error) {
	s <- a
	return []approval.CardRef{{Channel: a.Channel, ChatID: a.ChatID, MessageID: "card-" + string(a.ID)}}, nil
}
func (s shown) Settle(context.Context, *approval.Approval, approval.Outcome) error { return nil }

// rig is a gate on an engine with the memory store.
type rig struct {
	gate   *gate.Gate
	engine *approval.Engine
	shown  shown
	trail  *hitltest.Trail
	ci     *gate.Agent
	other  *gate.Agent
	cfgs   []gate.AgentConfig
	deps   gate.Deps
}

// agents are the rig's agents: ci (the example policy, cards to
// Feishu chat oc_123, requester ou_456) and other.
var agents = []gate.AgentConfig{
	{Name: "ci-claude", TokenEnv: "CI_TOKEN", ApproveIn: gate.Place{Channel: "feishu", ChatID: "oc_123"}, Requester: "ou_456",
		Policy:     map[string]gate.RuleConfig{"Read|Glob|Grep": {Risk: "LOW"}, "Bash(rm *)|Bash(git push*)": {Risk: "HIGH"}, "*": {Risk: "MEDIUM"}},
		MaxPending: 2, CallbackHosts: []string{"127.0.0.1"}},
	{Name: "other", TokenEnv: "OTHER_TOKEN", ApproveIn: gate.Place{Channel: "feishu", ChatID: "oc_999"}, Requester: "ou_1"},
	{Name: "solo", TokenEnv: "SOLO_TOKEN", ApproveIn: gate.Place{Channel: "feishu", ChatID: "oc_9"}, Requester: "ou_9", MaxPending: 1},
}

func newRig(t testing.TB, mod ...func(*approval.PolicyConfig)) *rig {
	return newRigOn(t, memstore.New(memstore.Options{}), mod...)
}

// newRigOn is newRig on store s (a replica of a shared store).
func newRigOn(t testing.TB, s approval.Store, mod ...func(*approval.PolicyConfig)) *rig {
	t.Helper()
	return newRigAgents(t, s, agents, mod...)
}

// newRigAgents is newRigOn with the agents given.
func newRigAgents(t testing.TB, s approval.Store, agents []gate.AgentConfig, mod ...func(*approval.PolicyConfig)) *rig {
	t.Helper()
	r := &rig{shown: make(shown, 16), trail: &hitltest.Trail{}}
	eng, err := approval.NewEngine(approval.EngineConfig{Store: s, Notifier: r.shown,
		Dispatcher: gate.Dispatcher{Next: agent.NewRegistry()}, Editor: gate.Editor{}, Audit: r.trail, Logger: slog.New(slog.DiscardHandler), PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pc := approval.DefaultPolicyConfig()
	for _, m := range mod {
		m(&pc)
	}
	pol, err := approval.NewPolicy(pc)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CI_TOKEN": ciToken, "OTHER_TOKEN": otherToken, "SOLO_TOKEN": soloToken}
	r.engine, r.cfgs = eng, agents
	r.deps = gate.Deps{Engine: eng, Policy: func() *approval.Policy { return pol }, Audit: r.trail, Lang: "en",
		Getenv: func(k string) string { return env[k] }}
	r.withEngine(t, eng)
	return r
}

// withEngine makes the rig's gate ask e (the rig's engine, or one that
// wraps it).
func (r *rig) withEngine(t testing.TB, e gate.Engine) {
	t.Helper()
	d := r.deps
	d.Engine = e
	g, err := gate.New(r.cfgs, d)
	if err != nil {
		t.Fatal(err)
	}
	r.gate = g
	r.ci, _ = g.Authenticate(ciToken)
	r.other, _ = g.Authenticate(otherToken)
}

func (r *rig) card(t *testing.T) *approval.Approval {
	t.Helper()
	select {
	case a := <-r.shown:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("no card was shown")
	}
	return nil
}

// pendingOf reads approval id, to decide it.
func (r *rig) pendingOf(t *testing.T, id approval.ID) *approval.Approval {
	t.Helper()
	a, err := r.engine.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (r *rig) decide(t *testing.T, a *approval.Approval, verb approval.Verb, who approval.UserID, comment string) approval.Outcome {
	t.Helper()
	o, err := r.engine.Decide(context.Background(), a.ID, approval.Decision{Verb: verb, Actor: who, Source: approval.SourceCard,
		PayloadSHA256: a.PayloadSHA256, Comment: comment})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestAuthenticate(t *testing.T) {
	r := newRig(t)
	for _, tok := range []string{"", "ci-token", ciToken + "x", strings.ToUpper(ciToken)} {
		if _, ok := r.gate.Authenticate(tok); ok {
			t.Errorf("token %q authenticated", tok)
		}
	}
	if r.ci == nil || r.ci.Name() != "ci-claude" || r.other == nil || r.other.Name() != "other" {
		t.Fatal("the agents' own tokens do not authenticate them")
	}
}

func TestAskAllowedAfterApproval(t *testing.T) {
	r := newRig(t)
	input := json.RawMessage(`{"command": "rm -rf build", "description": "clean"}`)
	ans, err := r.gate.Ask(context.Background(), r.ci, gate.Ask{Tool: "Bash", Input: input, Key: "toolu_1"})
	if err != nil || ans.Status != gate.StatusPending || ans.Risk != "HIGH" {
		t.Fatalf("ask: %+v, %v", ans, err)
	}
	a := r.card(t)
	if a.ID != ans.ID || a.Channel != "feishu" || a.ChatID != "oc_123" || a.Requester != "ou_456" || a.Tool() != "ci-claude/Bash" ||
		!strings.Contains(a.Summary, "ci-claude asks to run Bash") || !strings.Contains(a.Reason, "agent ci-claude's policy: Bash(rm *)") {
		t.Fatalf("the card's approval: %+v", a)
	}
	// Each card says it in its own language, and what the call is.
	if !strings.Contains(a.SummaryIn("zh"), "ci-claude 请求执行 Bash") || a.Calls[0].SummaryIn("zh") != a.SummaryZH ||
		!strings.Contains(a.AboutIn("zh"), "另一个智能体（ci-claude）") || !strings.Contains(a.AboutIn("en"), "another agent (ci-claude)") {
		t.Fatalf("the card's approval in Chinese: summary %q, about %q / %q", a.SummaryZH, a.About, a.AboutZH)
	}
	// A retry with the same tool_use_id: the same approval, no second card.
	again, err := r.gate.Ask(context.Background(), r.ci, gate.Ask{Tool: "Bash", Input: input, Key: "toolu_1"})
	if err != nil || again.ID != ans.ID || again.Status != gate.StatusPending {
		t.Fatalf("retry: %+v, %v", again, err)
	}
	select {
	case a := <-r.shown:
		t.Fatalf("a retry showed a second card: %s", a.ID)
	default:
	}
	done := make(chan gate.Answer, 1)
	go func() {
		ans, err := r.gate.Wait(context.Background(), r.ci, ans.ID, time.Minute)
		if err != nil {
			t.Error(err)
		}
		done <- ans
	}()
	if o := r.decide(t, a, approval.Approve, "ou_456", ""); o.Status != approval.StatusExecuted {
		t.Fatalf("decision: %+v", o)
	}
	got := <-done
	want := `{"behavior":"allow","updatedInput":{"command":"rm -rf build","description":"clean"}}`
	if got.Status != gate.StatusAllowed || string(got.Behavior()) != want {
		t.Fatalf("answer %+v\nbehavior %s\nwant     %s", got, got.Behavior(), want)
	}
	// The agent is told who allowed it and how long that took.
	if m := tookRE.ReplaceAllString(got.Message, " after D"); m != "allowed by ou_456 after D" {
		t.Fatalf("message %q", got.Message)
	}
}

// denialTests: how each end of an approval reads to the agent.
var denialTests = []struct {
	name string
	end  func(t *testing.T, r *rig, a *approval.Approval)
	want string
}{
	{"rejected with a reason", func(t *testing.T, r *rig, a *approval.Approval) {
		r.decide(t, a, approval.Reject, "ou_456", "not in a change window")
	}, `{"behavior":"deny","message":"rejected by ou_456 after D: not in a change window. Do not run it; ask the user what to do instead."}`},
	{"cancelled", func(t *testing.T, r *rig, a *approval.Approval) {
		if _, err := r.engine.Cancel(context.Background(), a.ID, "ou_456", approval.SourceAPI, ""); err != nil {
			t.Fatal(err)
		}
	}, `{"behavior":"deny","message":"cancelled before anyone decided. Do not run it."}`},
}

func TestAskDenied(t *testing.T) {
	for _, tt := range denialTests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			ans, err := r.gate.Ask(context.Background(), r.ci, gate.Ask{Tool: "Write", Input: json.RawMessage(`{"file_path":"/etc/hosts","content":"x"}`)})
			if err != nil {
				t.Fatal(err)
			}
			tt.end(t, r, r.card(t))
			got, err := r.gate.Wait(context.Background(), r.ci, ans.ID, time.Minute)
			if err != nil || got.Status != gate.StatusDenied || tookRE.ReplaceAllString(string(got.Behavior()), " after D") != tt.want {
				t.Fatalf("answer %+v, %v\nbehavior %s\nwant     %s", got, err, got.Behavior(), tt.want)
			}
		})
	}
}

func TestLowIsAllowedAtOnceAndAudited(t *testing.T) {
	r := newRig(t)
	ans, err := r.gate.Ask(context.Background(), r.ci, gate.Ask{Tool: "Read", Input: json.RawMessage(`{"file_path":"/srv/a.go"}`), Key: "toolu_r"})
	if err != nil || ans.Status != gate.StatusAllowed || ans.ID != "" || string(ans.Input) != `{"file_path":"/srv/a.go"}` {
		t.Fatalf("a LOW read: %+v, %v", ans, err)
	}
	select {
	case a := <-r.shown:
		t.Fatalf("a LOW read showed a card: %s", a.ID)
	default:
	}
	found := false
	for _, rec := range r.trail.All() {
		if rec.Event == audit.EventAutoAllow && rec.Tool == "ci-claude/Read" && rec.Actor == "ci-claude" && rec.PayloadSHA256 != "" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no auto_allow record: %+v", r.trail.All())
	}
}

func TestAnotherAgentsApprovalIsNotFound(t *testing.T) {
	r := newRig(t)
	ans, err := r.gate.Ask(context.Background(), r.ci, gate.Ask{Tool: "Bash", Input: json.RawMessage(`{"command":"make deploy"}`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []func() (gate.Answer, error){
		func() (gate.Answer, error) { return r.gate.Get(context.Background(), r.other, ans.ID) },
		func() (gate.Answer, error) { return r.gate.Wait(context.Background(), r.other, ans.ID, time.Second) },
		func() (gate.Answer, error) { return r.gate.Get(context.Background(), r.ci, "ap_nope") },
	} {
		if got, err := f(); !errors.Is(err, gate.ErrNotFound) {
			t.Errorf("got %+v, %v; want not found", got, err)
		}
	}
}

func TestInvalidAndBusy(t *testing.T) {
	r := newRig(t)
	for _, q := range []gate.Ask{
		{Tool: "", Input: json.RawMessage(`{}`)},
		{Tool: "a/b", Input: json.RawMessage(`{}`)},
		{Tool: "Bash", Input: json.RawMessage(`[1]`)},
		{Tool: "Bash", Input: json.RawMessage(`{"a":1,"a":2}`)},
		{Tool: "Bash", Input: json.RawMessage(`{`)},
	} {
		if _, err := r.gate.Ask(context.Background(), r.ci, q); !errors.Is(err, gate.ErrInvalid) {
			t.Errorf("%+v: err %v, want invalid", q, err)
		}
	}
	// MaxPending 2: two waits in flight, the third is refused.
	ans, err := r.gate.Ask(context.Background(), r.ci, gate.Ask{Tool: "Bash", Input: json.RawMessage(`{"command":"make"}`)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Two waits that each take a slot and keep it: a wait refused
	// because the probe below held a slot at that moment tries again, so
	// that in the end both hold theirs (without that, one refused wait
	// left the probe a free slot for ever).
	for range 2 {
		go func() {
			for ctx.Err() == nil {
				if _, err := r.gate.Wait(ctx, r.ci, ans.ID, time.Minute); !errors.Is(err, gate.ErrBusy) {
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	// A third wait (it changes nothing, unlike a new request, which would
	// supersede the approval they wait on) is refused once both hold
	// their slots.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := r.gate.Wait(context.Background(), r.ci, ans.ID, time.Millisecond)
		if errors.Is(err, gate.ErrBusy) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a third request while two wait: %v, want busy", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := r.gate.Ask(context.Background(), r.ci, gate.Ask{Tool: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}); !errors.Is(err, gate.ErrBusy) {
		t.Fatalf("a new request while two wait: %v, want busy", err)
	}
}

// TestGrantForTheSameCall: an approved MEDIUM call grants the window (the
// policy's grant_window) for exactly that call of that agent: asked again,
// it is allowed at once; another input asks.
func TestGrantForTheSameCall(t *testing.T) {
	r := newRig(t)
	q := gate.Ask{Tool: "WebFetch", Input: json.RawMessage(`{"url":"https://example.com/status"}`)}
	ans, err := r.gate.Ask(context.Background(), r.ci, q)
	if err != nil || ans.Status != gate.StatusPending || ans.Risk != "MEDIUM" {
		t.Fatalf("first: %+v, %v", ans, err)
	}
	r.decide(t, r.card(t), approval.Approve, "ou_456", "")
	if got, err := r.gate.Wait(context.Background(), r.ci, ans.ID, time.Minute); err != nil || got.Status != gate.StatusAllowed {
		t.Fatalf("first answer: %+v, %v", got, err)
	}
	again, err := r.gate.Ask(context.Background(), r.ci, q)
	if err != nil || again.Status != gate.StatusAllowed || again.ID != "" {
		t.Fatalf("the same call within the grant window: %+v, %v", again, err)
	}
	other, err := r.gate.Ask(context.Background(), r.ci, gate.Ask{Tool: "WebFetch", Input: json.RawMessage(`{"url":"https://example.com/admin"}`)})
	if err != nil || other.Status != gate.StatusPending {
		t.Fatalf("another input: %+v, %v", other, err)
	}
}

// TestExpiryIsADenial: nobody decides within the agent's timeout (which
// wins over the policy's timeouts); the waiting agent is denied with
// "expired".
func TestExpiryIsADenial(t *testing.T) {
	cs := append([]gate.AgentConfig(nil), agents...)
	cs[0].Timeout = time.Second
	r := newRigAgents(t, memstore.New(memstore.Options{}), cs, func(pc *approval.PolicyConfig) {
		pc.Timeouts = map[string]time.Duration{"MEDIUM": time.Hour}
	})
	ans, err := r.gate.Ask(context.Background(), r.ci, gate.Ask{Tool: "Write", Input: json.RawMessage(`{"file_path":"/tmp/a","content":"x"}`)})
	if err != nil || ans.Status != gate.StatusPending {
		t.Fatalf("ask: %+v, %v", ans, err)
	}
	got, err := r.gate.Wait(context.Background(), r.ci, ans.ID, time.Minute)
	if err != nil || got.Status != gate.StatusDenied || got.State != approval.StateExpired {
		t.Fatalf("answer %+v, %v", got, err)
	}
	want := `{"behavior":"deny","message":"expired: nobody decided within 1s. Do not run it; ask again if it is still needed."}`
	if string(got.Behavior()) != want {
		t.Fatalf("behavior %s\nwant     %s", got.Behavior(), want)
	}
}

// TestTamperedOrRefusedDecisionDecidesNothing: a decision bound to another
// payload than the one shown, and one by a person the approver rule
// refuses, each decide nothing (both audited); the agent keeps waiting,
// and the requester's decision on the shown payload allows exactly that
// input.
func TestTamperedOrRefusedDecisionDecidesNothing(t *testing.T) {
	r := newRig(t)
	input := json.RawMessage(`{"command":"git push --force origin main"}`)
	ans, err := r.gate.Ask(context.Background(), r.ci, gate.Ask{Tool: "Bash", Input: input, Key: "toolu_t"})
	if err != nil || ans.Status != gate.StatusPending {
		t.Fatalf("ask: %+v, %v", ans, err)
	}
	a := r.card(t)
	done := make(chan gate.Answer, 1)
	go func() {
		got, err := r.gate.Wait(context.Background(), r.ci, ans.ID, time.Minute)
		if err != nil {
			t.Error(err)
		}
		done <- got
	}()
	forged := *a
	forged.PayloadSHA256 = strings.Repeat("ab", 32)
	if o := r.decide(t, &forged, approval.Approve, "ou_456", ""); o.Status != approval.StatusTampered {
		t.Fatalf("a decision on another payload: %+v", o)
	}
	if o := r.decide(t, a, approval.Approve, "ou_mallory", ""); o.Status != approval.StatusUnauthorized {
		t.Fatalf("a decision by someone the rule refuses: %+v", o)
	}
	select {
	case got := <-done:
		t.Fatalf("the agent got an answer before a valid decision: %+v", got)
	case <-time.After(100 * time.Millisecond):
	}
	if got, err := r.gate.Get(context.Background(), r.ci, ans.ID); err != nil || got.Status != gate.StatusPending {
		t.Fatalf("after the refused decisions: %+v, %v", got, err)
	}
	events := map[audit.Event]bool{}
	recs, _ := r.trail.Records(context.Background(), string(ans.ID))
	for _, rec := range recs {
		events[rec.Event] = true
	}
	if !events[audit.EventTampered] || !events[audit.EventUnauthorized] {
		t.Fatalf("the audit trail of the refused decisions: %+v", recs)
	}
	r.decide(t, a, approval.Approve, "ou_456", "")
	got := <-done
	if got.Status != gate.StatusAllowed || string(got.Behavior()) != `{"behavior":"allow","updatedInput":{"command":"git push --force origin main"}}` {
		t.Fatalf("the answer: %+v %s", got, got.Behavior())
	}
}

// TestAgentsSharingAChat: two agents whose cards go to one approvers'
// chat each wait for their own approval: the second's request does not
// replace the first's (each agent's approvals have a session of their
// own), and each is decided on its own.
func TestAgentsSharingAChat(t *testing.T) {
	shared := append([]gate.AgentConfig(nil), agents...)
	shared[1].ApproveIn = shared[0].ApproveIn
	r := newRigAgents(t, memstore.New(memstore.Options{}), shared)
	first, err := r.gate.Ask(context.Background(), r.ci, gate.Ask{Tool: "Bash", Input: json.RawMessage(`{"command":"rm -rf dist"}`), Key: "k1"})
	if err != nil || first.Status != gate.StatusPending {
		t.Fatalf("ci-claude asks: %+v, %v", first, err)
	}
	second, err := r.gate.Ask(context.Background(), r.other, gate.Ask{Tool: "Bash", Input: json.RawMessage(`{"command":"make deploy"}`), Key: "k2"})
	if err != nil || second.Status != gate.StatusPending {
		t.Fatalf("other asks: %+v, %v", second, err)
	}
	a, b := r.card(t), r.card(t)
	if a.ChatID != b.ChatID || a.Session == b.Session {
		t.Fatalf("the two cards: chats %s, %s; sessions %s, %s", a.ChatID, b.ChatID, a.Session, b.Session)
	}
	if got, err := r.gate.Get(context.Background(), r.ci, first.ID); err != nil || got.Status != gate.StatusPending {
		t.Fatalf("ci-claude's approval after the other agent asked in the same chat: %+v, %v", got, err)
	}
	r.decide(t, r.pendingOf(t, second.ID), approval.Reject, "ou_1", "not today")
	r.decide(t, r.pendingOf(t, first.ID), approval.Approve, "ou_456", "")
	if got, _ := r.gate.Get(context.Background(), r.ci, first.ID); got.Status != gate.StatusAllowed {
		t.Fatalf("ci-claude's answer: %+v", got)
	}
	if got, _ := r.gate.Get(context.Background(), r.other, second.ID); got.Status != gate.StatusDenied {
		t.Fatalf("the other agent's answer: %+v", got)
	}
}

// reusedKey are requests under the key toolu_01 after Bash {"command":"ls
// build"} was asked with it: another input, another tool with the same
// input, and one the policy would allow at once (LOW). Each is an
// idempotency conflict, never the earlier answer.
var reusedKey = []gate.Ask{
	{Tool: "Bash", Input: json.RawMessage(`{"command":"rm -rf / --no-preserve-root"}`), Key: "toolu_01"},
	{Tool: "Write", Input: json.RawMessage(`{"command":"ls build"}`), Key: "toolu_01"},
	{Tool: "Read", Input: json.RawMessage(`{"file_path":"/etc/shadow"}`), Key: "toolu_01"},
}

// TestKeyNamesOnePayload: a key names one request. Reused with another
// tool or input, while its approval waits and after it was approved, it
// is refused as a conflict (audited), shows no card and changes nothing;
// the same request again is the retry it always was.
func TestKeyNamesOnePayload(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	ls := gate.Ask{Tool: "Bash", Input: json.RawMessage(`{"command":"ls build"}`), Key: "toolu_01"}
	ans, err := r.gate.Ask(ctx, r.ci, ls)
	if err != nil || ans.Status != gate.StatusPending {
		t.Fatalf("ask: %+v, %v", ans, err)
	}
	a := r.card(t)
	conflicts := func(when string) {
		t.Helper()
		for _, q := range reusedKey {
			got, err := r.gate.Ask(ctx, r.ci, q)
			if !errors.Is(err, gate.ErrKeyConflict) || approval.KindOf(err) != errkind.Conflict {
				t.Fatalf("%s: %s %s under the same key: %+v, %v; want an idempotency conflict", when, q.Tool, q.Input, got, err)
			}
		}
		select {
		case x := <-r.shown:
			t.Fatalf("%s: a reused key showed a card: %s %s", when, x.ID, x.Calls[0].Args)
		default:
		}
	}
	conflicts("while it waits")
	if got, err := r.gate.Get(ctx, r.ci, ans.ID); err != nil || got.Status != gate.StatusPending {
		t.Fatalf("the approval after the conflicts: %+v, %v", got, err)
	}
	r.decide(t, a, approval.Approve, "ou_456", "")
	conflicts("after the approval")
	again, err := r.gate.Ask(ctx, r.ci, ls)
	if err != nil || again.Status != gate.StatusAllowed || string(again.Input) != `{"command":"ls build"}` {
		t.Fatalf("the same request again: %+v, %v", again, err)
	}
	if got, err := r.gate.Get(ctx, r.ci, ans.ID); err != nil || got.Status != gate.StatusAllowed || string(got.Input) != `{"command":"ls build"}` {
		t.Fatalf("get_approval after the conflicts: %+v, %v", got, err)
	}
	n := 0
	recs, _ := r.trail.Records(ctx, string(ans.ID))
	for _, rec := range recs {
		if rec.Event == audit.EventTampered && rec.Actor == "ci-claude" && rec.Source == "agent" && rec.Outcome == "idempotency_conflict" &&
			rec.PayloadSHA256 != a.PayloadSHA256 {
			n++
		}
	}
	if n != 2*len(reusedKey) {
		t.Fatalf("%d conflict records, want %d: %+v", n, 2*len(reusedKey), recs)
	}
	// Keys are each agent's own: another agent's toolu_01 is another request.
	mine, err := r.gate.Ask(ctx, r.other, reusedKey[0])
	if err != nil || mine.Status != gate.StatusPending || mine.ID == ans.ID {
		t.Fatalf("another agent's request with the key: %+v, %v", mine, err)
	}
	if x := r.card(t); x.ID != mine.ID || x.Tool() != "other/Bash" {
		t.Fatalf("another agent's card: %s %s", x.ID, x.Tool())
	}
}

// edited is an Engine whose approvals read as if an approver had edited
// their call: bound to another payload, the proposed one kept.
type edited struct{ gate.Engine }

func (e edited) Get(ctx context.Context, id approval.ID) (*approval.Approval, error) {
	a, err := e.Engine.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	b := *a
	b.ProposedSHA256, b.PayloadSHA256 = a.PayloadSHA256, strings.Repeat("e", 64)
	return &b, nil
}

// TestKeyRetryAfterAnEdit: the key names the call as the agent asked it,
// whatever an approver's edit bound the approval to.
func TestKeyRetryAfterAnEdit(t *testing.T) {
	r := newRig(t)
	q := gate.Ask{Tool: "Bash", Input: json.RawMessage(`{"command":"make deploy"}`), Key: "toolu_e"}
	ans, err := r.gate.Ask(context.Background(), r.ci, q)
	if err != nil || ans.Status != gate.StatusPending {
		t.Fatalf("ask: %+v, %v", ans, err)
	}
	r.card(t)
	r.withEngine(t, edited{r.engine})
	if again, err := r.gate.Ask(context.Background(), r.ci, q); err != nil || again.ID != ans.ID {
		t.Fatalf("the retry: %+v, %v; want %s", again, err, ans.ID)
	}
	q.Input = json.RawMessage(`{"command":"make deploy-prod"}`)
	if got, err := r.gate.Ask(context.Background(), r.ci, q); !errors.Is(err, gate.ErrKeyConflict) {
		t.Fatalf("another input: %+v, %v; want an idempotency conflict", got, err)
	}
}

// noInput are inputs that are no input: absent, or JSON null.
var noInput = []json.RawMessage{nil, json.RawMessage(``), json.RawMessage(`null`), json.RawMessage(" null\n")}

// TestInputIsRequired: a request without an input is refused and shows
// nothing; {} (a tool without arguments) is an input.
func TestInputIsRequired(t *testing.T) {
	r := newRig(t)
	for _, in := range noInput {
		got, err := r.gate.Ask(context.Background(), r.ci, gate.Ask{Tool: "Bash", Input: in, Key: "toolu_in"})
		if !errors.Is(err, gate.ErrInvalid) || !strings.Contains(err.Error(), "input is required") {
			t.Errorf("input %q: %+v, %v; want invalid: input is required", in, got, err)
		}
	}
	select {
	case x := <-r.shown:
		t.Fatalf("a request without an input showed a card: %s %s", x.ID, x.Calls[0].Args)
	default:
	}
	ans, err := r.gate.Ask(context.Background(), r.ci, gate.Ask{Tool: "Bash", Input: json.RawMessage(`{}`), Key: "toolu_in"})
	if err != nil || ans.Status != gate.StatusPending {
		t.Fatalf("input {}: %+v, %v", ans, err)
	}
	if a := r.card(t); string(a.Calls[0].Args) != `{}` {
		t.Fatalf("input {}: the card's call %s", a.Calls[0].Args)
	}
}
