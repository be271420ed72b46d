package dingtalk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/open-dingtalk/dingtalk-stream-sdk-go/card"
	"github.com/open-dingtalk/dingtalk-stream-sdk-go/payload"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/audit"
	"github.com/hitlbot/hitlbot/approval/errkind"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/dingtalk/dingtalktest"
	"github.com/hitlbot/hitlbot/gate"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/hitltest"
	"github.com/hitlbot/hitlbot/words"
)

// Another agent's question (Claude Code's AskUserQuestion through the
// gate's hook) answered on DingTalk, on the card's inputs or by a typed
// answer, through the stack `bot serve` assembles and the real stream
// SDK against the fake.

const (
	ciToken = "ci-token-0123456789abcdef"
	// questionInput: a single choice and a multi-select.
	questionInput = `{"questions":[` +
		`{"question":"Which size?","header":"Size","options":[{"label":"Small","description":"fast"},{"label":"Large","description":"slow"}]},` +
		`{"question":"Which extras?","options":[{"label":"Cache"},{"label":"Logs"},{"label":"Metrics"}],"multiSelect":true}]}`
	questionChat = "cid_q"
)

// answerButton is the question card's 回答 button as the template has it
// (docs/dingtalk.md): a 回传请求 with the constant action "answer", the
// variables approval_id and payload_sha256, and the inputs answer_<n>,
// shown while answer_buttons is "true".
var answerButton = dingtalktest.Button{ID: "answer", Const: map[string]string{"action": "answer"},
	Vars: []string{"approval_id", "payload_sha256"}, VisibleIf: "answer_buttons"}

// questionRig is the DingTalk channel in the stack, with the gate's hook
// served for agent ci (cards to group cid_q, staff-1 its requester, the
// only one who may answer) and the audit trail.
type questionRig struct {
	fake  *dingtalktest.Fake
	eng   *approval.Engine
	trail *hitltest.Trail
	hooks string
}

func newQuestionRig(t *testing.T, lang string) *questionRig {
	t.Helper()
	g := &questionRig{fake: dingtalktest.New(t), trail: &hitltest.Trail{}}
	clicks := clock.NewFake(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC))
	g.fake.SetCallbackClock(clicks.Now)
	ch, err := New(Config{ClientID: "app-key", ClientSecret: "app-secret", CardTemplateID: "tpl.schema",
		APIBaseURL: g.fake.URL(), WebhookBaseURL: g.fake.URL(), Lang: lang, HTTPTimeout: 5 * time.Second, Clock: clicks}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	st := hitltest.New(t, hitltest.Config{Store: memstore.New(memstore.Options{}), Tools: []agent.Tool{hitltest.NewTool("erase", approval.EffectDestructive)},
		Audit: g.trail, Lang: lang,
		// Other agents' calls as `bot serve` wires them.
		Engine: func(ec *approval.EngineConfig) {
			ec.Dispatcher, ec.Editor = gate.Dispatcher{Next: ec.Dispatcher}, gate.Editor{Next: ec.Editor}
		}})
	st.Register(t, ch)
	st.Start(t)
	g.fake.WaitConn(5 * time.Second)
	g.eng = st.Engine
	pol, err := approval.NewPolicy(approval.DefaultPolicyConfig())
	if err != nil {
		t.Fatal(err)
	}
	gt, err := gate.New([]gate.AgentConfig{{Name: "ci", TokenEnv: "CI_TOKEN", ApproveIn: gate.Place{Channel: Name, ChatID: questionChat},
		Requester: "staff-1", Policy: map[string]gate.RuleConfig{"*": {Risk: "MEDIUM"}}}},
		gate.Deps{Engine: st.Engine, Policy: func() *approval.Policy { return pol }, Audit: g.trail, Lang: lang,
			Getenv: func(k string) string { return map[string]string{"CI_TOKEN": ciToken}[k] }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gt.HTTP(http.NotFoundHandler()))
	t.Cleanup(srv.Close)
	g.hooks = srv.URL
	return g
}

// ask posts Claude Code's hook asking questionInput and returns where its
// answer comes, and the card's outTrackId once the card is out.
func (g *questionRig) ask(t *testing.T) (<-chan string, string) {
	t.Helper()
	body := `{"session_id":"s1","cwd":"/home/dev/proj","permission_mode":"default","hook_event_name":"PermissionRequest",` +
		`"tool_name":"AskUserQuestion","tool_input":` + questionInput + `}`
	out := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", g.hooks+gate.HookPath, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+ciToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		out <- strings.TrimSpace(b.String())
	}()
	var track string
	eventually(t, "the question's card", func() bool {
		for _, c := range g.fake.Calls("/v1.0/card/instances/createAndDeliver") {
			if c.Body["openSpaceId"] == "dtv1.card//IM_GROUP."+questionChat {
				track, _ = c.Body["outTrackId"].(string)
			}
		}
		// The call is recorded before the fake has taken the card: wait
		// for the card itself.
		return track != "" && g.fake.CardView(track, "staff-1")["approval_id"] != ""
	})
	return out, track
}

// hookAnswer waits for the hook's answer and returns the answers of its
// updatedInput ("" when it holds none).
func hookAnswer(t *testing.T, out <-chan string) (body, answers string) {
	t.Helper()
	select {
	case body = <-out:
	case <-time.After(30 * time.Second):
		t.Fatal("the hook was not answered")
	}
	var r struct {
		Out struct {
			Decision struct {
				Behavior     string `json:"behavior"`
				UpdatedInput struct {
					Answers   json.RawMessage `json:"answers"`
					Questions json.RawMessage `json:"questions"`
				} `json:"updatedInput"`
			} `json:"decision"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || r.Out.Decision.Behavior != "allow" || len(r.Out.Decision.UpdatedInput.Questions) == 0 {
		t.Fatalf("the hook's answer %s (%v)", body, err)
	}
	return body, string(r.Out.Decision.UpdatedInput.Answers)
}

// privateText is the status_text a click's ACK shows its clicker alone;
// it fails when the ACK changes the card for everyone.
func privateText(t *testing.T, ack map[string]any) string {
	t.Helper()
	public, private := ackCard(t, ack)
	if public != nil {
		t.Fatalf("the click changed the card for everyone: %v", public)
	}
	s, _ := private["status_text"].(string)
	return s
}

func (g *questionRig) state(t *testing.T, id string) approval.State {
	t.Helper()
	a, err := g.eng.Get(context.Background(), approval.ID(id))
	if err != nil {
		t.Fatal(err)
	}
	return a.State
}

// TestQuestionAnsweredOnTheCard: the question's card carries its
// questions as template variables and the answer block; clicks with the
// inputs decide once: a bad option number, someone who may not answer and
// a forged hash (audited) decide nothing and the clicker alone reads why;
// the answer (an option and a multi-select) reaches the agent as
// updatedInput, audited once, and the card ends showing the answers.
func TestQuestionAnsweredOnTheCard(t *testing.T) {
	for _, lang := range []string{"en", "zh"} {
		t.Run(lang, func(t *testing.T) {
			g := newQuestionRig(t, lang)
			out, track := g.ask(t)
			view := g.fake.CardView(track, "staff-1")
			if view["answer_buttons"] != "true" || view["buttons"] != "false" || view["questions"] != "2" || view["q1_text"] != "[Size] Which size?" ||
				view["q1_options"] != "1. Small — fast\n2. Large — slow" || view["q2_text"] != "Which extras? "+words.In(lang, words.QuestionMulti) ||
				view["q3_shown"] != "false" || view["answer_1"] != "" || !strings.Contains(view["typed_hint"], "回答 "+view["code"]) || view["code"] == "" {
				t.Fatalf("the card %v", view)
			}
			id := view["approval_id"]
			good := map[string]string{"answer_1": "2", "answer_2": "1, 3"}
			// A number that is no option: refused, said to the clicker.
			ack := g.fake.Push(payload.CardInstanceCallbackTopic, g.fake.Click(track, "staff-1", questionChat, answerButton, map[string]string{"answer_1": "3"}))
			if got, want := privateText(t, ack), words.In(lang, words.QuestionBadOption, 1, 2, 3); got != want || g.state(t, id) != approval.StatePending {
				t.Fatalf("a bad option: %q, want %q; state %s", got, want, g.state(t, id))
			}
			// Someone who may not answer.
			ack = g.fake.Push(payload.CardInstanceCallbackTopic, g.fake.Click(track, "staff-9", questionChat, answerButton, good))
			if got := privateText(t, ack); !strings.Contains(got, words.In(lang, words.OutcomeUnauthorized)) || g.state(t, id) != approval.StatePending {
				t.Fatalf("an unauthorized answer: %q; state %s", got, g.state(t, id))
			}
			// The answer.
			ack = g.fake.Push(payload.CardInstanceCallbackTopic, g.fake.Click(track, "staff-1", questionChat, answerButton, good))
			if public, _ := ackCard(t, ack); public["answer_buttons"] != "false" || public["final"] != "true" {
				t.Fatalf("the answer's ACK %v", public)
			}
			body, answers := hookAnswer(t, out)
			if answers != `{"Which extras?":"Cache, Metrics","Which size?":"Large"}` {
				t.Fatalf("the agent read %s", body)
			}
			eventually(t, "the card ends showing the answers", func() bool {
				v := g.fake.CardView(track, "staff-1")
				return v["final"] == "true" && v["status"] == string(approval.StatusExecuted) && v["q1_answer"] == "Large" &&
					v["q2_answer"] == "Cache, Metrics" && v["answer_buttons"] == "false" && strings.Contains(v["result"], "Which size? → Large")
			})
			if n := g.count(audit.EventConfirm, id); n != 1 {
				t.Fatalf("audit: %d confirms: %+v", n, g.trail.All())
			}
		})
	}
}

// count counts the audit records of event about approval id.
func (g *questionRig) count(event audit.Event, id string) int {
	n := 0
	for _, r := range g.trail.All() {
		if r.Event == event && string(r.ApprovalID) == id {
			n++
		}
	}
	return n
}

// TestQuestionForgedHash: an answer click whose payload_sha256 is not the
// card's (a client sending what the card never showed) decides nothing,
// is audited as tampered, and the question can still be answered.
func TestQuestionForgedHash(t *testing.T) {
	g := newQuestionRig(t, "en")
	out, track := g.ask(t)
	v := g.fake.CardView(track, "staff-1")
	forged := map[string]string{"action": "answer", "approval_id": v["approval_id"], "payload_sha256": strings.Repeat("ab", 32), "answer_1": "1"}
	ack := g.fake.Push(payload.CardInstanceCallbackTopic, dingtalktest.CardCallback(track, "staff-1", questionChat, "answer", forged))
	if got := privateText(t, ack); got != words.In("en", words.OutcomeTampered) || g.state(t, v["approval_id"]) != approval.StatePending {
		t.Fatalf("a forged hash: %q, state %s", got, g.state(t, v["approval_id"]))
	}
	if n := g.count(audit.EventTampered, v["approval_id"]); n != 1 {
		t.Fatalf("audit: %d tampered records: %+v", n, g.trail.All())
	}
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), questionChat, "staff-1", " 回答 "+v["code"]+"\n1: 1", true))
	if _, answers := hookAnswer(t, out); answers != `{"Which size?":"Small"}` {
		t.Fatalf("the agent read %s", answers)
	}
}

// TestQuestionAnsweredByTyping: in the group, "@bot 回答 <code>" with one
// line per question answers the card's questions (a multi-select with
// two options); the bot says the answers back, the agent reads them and
// the card ends answered.
func TestQuestionAnsweredByTyping(t *testing.T) {
	g := newQuestionRig(t, "zh")
	out, track := g.ask(t)
	code := g.fake.CardView(track, "staff-1")["code"]
	// DingTalk removes the mention and leaves the space before it.
	g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), questionChat, "staff-1", " 回答 "+code+"\n1: 自己定\n2: 2,3", true))
	body, answers := hookAnswer(t, out)
	if answers != `{"Which extras?":"Logs, Metrics","Which size?":"自己定"}` {
		t.Fatalf("the agent read %s", body)
	}
	eventually(t, "the answer said back", func() bool { return g.fake.CountText("已回答：ci 现在会收到回答。") == 1 })
	eventually(t, "the card ends answered", func() bool {
		v := g.fake.CardView(track, "staff-1")
		return v["final"] == "true" && v["q2_answer"] == "Logs, Metrics"
	})
}

// TestQuestionTypedRefusals: a typed answer with a number that is no
// option, and one by someone who may not answer, decide nothing; each is
// told why in the chat's language.
func TestQuestionTypedRefusals(t *testing.T) {
	for _, tc := range []struct{ lang, user, text, want string }{
		{"en", "staff-1", "回答 %s\n1: 5", words.In("en", words.QuestionBadOption, 1, 2, 5)},
		{"zh", "staff-1", "回答 %s\n1: 5", words.In("zh", words.QuestionBadOption, 1, 2, 5)},
		{"en", "staff-9", "answer %s\n1: 1", words.In("en", words.OutcomeUnauthorized)},
		{"zh", "staff-9", "回答 %s\n1: 1", words.In("zh", words.OutcomeUnauthorized)},
	} {
		t.Run(tc.lang+" "+tc.user, func(t *testing.T) {
			g := newQuestionRig(t, tc.lang)
			_, track := g.ask(t)
			v := g.fake.CardView(track, "staff-1")
			text := strings.Replace(tc.text, "%s", v["code"], 1)
			g.fake.Push(payload.BotMessageCallbackTopic, g.fake.BotMessage(nextID(), questionChat, tc.user, " "+text, true))
			eventually(t, "the refusal", func() bool { return g.fake.CountText(tc.want) == 1 })
			if st := g.state(t, v["approval_id"]); st != approval.StatePending {
				t.Fatalf("state %s", st)
			}
		})
	}
}

// gatedHandler answers a click only once released.
type gatedHandler struct {
	got     chan channels.CardAction
	release chan struct{}
	err     error
}

func (h gatedHandler) HandleMessage(context.Context, channels.Message) error { return nil }
func (h gatedHandler) HandleCardAction(_ context.Context, a channels.CardAction) (approval.Outcome, error) {
	h.got <- a
	<-h.release
	return approval.Outcome{}, h.err
}

// TestSlowRefusedAnswerRestoresTheAnswerBlock: an answer click answered
// "processing" (the answer block hidden for everyone) whose answer is then
// refused puts the question card back: the answer block, not the approve
// buttons, and the clicker alone reads why. The click carried the inputs
// as {typed} answers.
func TestSlowRefusedAnswerRestoresTheAnswerBlock(t *testing.T) {
	refused := approval.E("approval.Decide", errkind.Invalid, "ap_1",
		fmt.Errorf("%w: call 1: %w", approval.ErrEdit, &approval.AnswerTextError{Fault: approval.AnswerNoSuchOption, Question: 1, Option: 3, Options: 2}))
	h := gatedHandler{got: make(chan channels.CardAction, 1), release: make(chan struct{}), err: refused}
	clk := clock.NewFake(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC))
	c, f := newUnit(t, h, func(cfg *Config) { cfg.Clock = clk })
	req := cardRequest("staff-1", "answer")
	req.CardActionData.CardPrivateData.Params["answer_1"] = "3"
	req.CardActionData.CardPrivateData.Params["answer_2"] = " "
	resp := make(chan *card.CardResponse, 1)
	go func() {
		r, _ := c.in.onCardCallback(context.Background(), req)
		resp <- r
	}()
	a := <-h.got
	if a.Verb != approval.Approve || string(a.Edits["#1"]) != `{"answers":{"#1":{"typed":"3"}}}` {
		t.Fatalf("the click %+v %s", a, a.Edits["#1"])
	}
	eventually(t, "the click waits", func() bool { return clk.Timers() > 0 })
	clk.Advance(time.Minute)
	r := <-resp
	if r.CardData == nil || r.CardData.CardParamMap["answer_buttons"] != "false" || r.CardData.CardParamMap["status"] != cards.DingTalkStatusProcessing {
		t.Fatalf("processing %+v", r)
	}
	close(h.release)
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	calls := f.Calls("/v1.0/card/instances")
	if len(calls) != 1 {
		t.Fatalf("%d card updates: %+v", len(calls), calls)
	}
	p := cardParams(t, calls[0])
	priv, _ := calls[0].Body["privateData"].(map[string]any)["staff-1"].(map[string]any)["cardParamMap"].(map[string]any)
	if p["status"] != "pending" || p["buttons"] != "false" || p["answer_buttons"] != "true" ||
		priv["status_text"] != words.In("en", words.QuestionBadOption, 1, 2, 3) {
		t.Fatalf("restored %v, privately %v", p, priv)
	}
}

// TestEmptyAnswerDecidesNothing: an answer click with every input empty
// reaches no decision; the clicker alone is told.
func TestEmptyAnswerDecidesNothing(t *testing.T) {
	h := &scriptedHandler{}
	c, _ := newUnit(t, h, nil)
	req := cardRequest("staff-1", "answer")
	req.CardActionData.CardPrivateData.Params["answer_1"] = "  "
	r, err := c.in.onCardCallback(context.Background(), req)
	if err != nil || r.CardData != nil || r.UserPrivateData == nil ||
		r.UserPrivateData.CardParamMap["status_text"] != words.In("en", words.QuestionNothing, "回答") || len(h.got) != 0 {
		t.Fatalf("%+v %v; decided %v", r, err, h.got)
	}
	// An input that is not text is no click DingTalk sends.
	req.CardActionData.CardPrivateData.Params["answer_1"] = 2.0
	if r, _ := c.in.onCardCallback(context.Background(), req); r.CardData != nil || len(h.got) != 0 {
		t.Fatalf("a number input: %+v; decided %v", r, h.got)
	}
}
