package feishu

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/larksuite/oapi-sdk-go/v3/event/dispatcher/callback"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/channels"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
)

// formClicks are form submits as Feishu sends them (action.value the
// pressed button's, action.form_value the inputs') and the card action
// each must reach the handler as: the reason, trimmed, as the comment, on
// either button; no reason, or one that is not a string, is no comment
// and still a decision.
var formClicks = []struct {
	name     string
	decision string
	form     map[string]any // nil: a click on a card without a form
	comment  string
}{
	{"reject with a reason", "reject", map[string]any{"reason": "  wrong table, use orders_archive \n"}, "wrong table, use orders_archive"},
	{"approve with a reason", "approve", map[string]any{"reason": "checked with the DBA"}, "checked with the DBA"},
	{"reject with the field left empty", "reject", map[string]any{"reason": ""}, ""},
	{"a reason that is not a string", "reject", map[string]any{"reason": 42}, ""},
	{"a form without the field", "reject", map[string]any{"other": "x"}, ""},
	{"a card without a form", "reject", nil, ""},
	{"oversized, with control characters", "reject", map[string]any{"reason": " \x1b[2J" + strings.Repeat("很长", 3000) + "\x00\n"}, "\x1b[2J" + strings.Repeat("很长", 3000) + "\x00"},
}

// TestFormSubmitReachesTheHandler: each form submit reaches the handler
// as CardAction{Verb, Comment: the reason}, with the button's ids.
func TestFormSubmitReachesTheHandler(t *testing.T) {
	fake := feishutest.New()
	defer fake.Close()
	ch, err := New(testConfig(fake), quiet)
	if err != nil {
		t.Fatal(err)
	}
	h := &recorder{}
	if err := ch.Start(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	defer ch.Close(context.Background())
	const id, hash = approval.ID("ap_0123abcd_00112233445566778899aabbccddeeff"), "687bf776a9a8a686ed54664f300d82dfcc055757d0f813a8aaf44041bcf1531a"
	for i, tc := range formClicks {
		e := feishutest.CardActionEvent{EventID: nextID("ev_form"), Operator: "ou_bob", MessageID: "om_card", ChatID: "oc_g",
			Value:     map[string]any{"kind": "approval", "approval_id": string(id), "decision": tc.decision, "payload_sha256": hash},
			FormValue: tc.form, Name: tc.decision}
		r, err := fake.Push(e.JSON(), 5*time.Second)
		if err != nil || r.StatusCode != 200 || !strings.Contains(string(r.Data), `"toast"`) {
			t.Fatalf("%s: push: %+v %v", tc.name, r, err)
		}
		got := h.actions()
		if len(got) != i+1 {
			t.Fatalf("%s: %d actions handled, want %d", tc.name, len(got), i+1)
		}
		want := channels.CardAction{Channel: Name, ChatID: "oc_g", MessageID: "om_card", EventID: e.EventID, UserID: "ou_bob",
			ApprovalID: id, Verb: approval.Verb(tc.decision), PayloadSHA256: hash, Comment: tc.comment}
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got[i], want)
		}
	}
}

// A form submit's payload is the one Feishu documents: form_value and
// the button's name beside the value.
func TestFakeSendsFormValues(t *testing.T) {
	e := feishutest.CardActionEvent{EventID: "ev", Operator: "ou_a", MessageID: "om", ChatID: "oc", Value: map[string]any{"k": "v"},
		FormValue: map[string]any{"reason": "why"}, Name: "reject"}
	var p struct {
		Event struct {
			Action map[string]any `json:"action"`
		} `json:"event"`
	}
	if err := json.Unmarshal(e.JSON(), &p); err != nil {
		t.Fatal(err)
	}
	a := p.Event.Action
	if fv, _ := a["form_value"].(map[string]any); fv["reason"] != "why" || a["name"] != "reject" || a["tag"] != "button" || a["timezone"] == "" {
		t.Fatalf("action %v", a)
	}
	if v, _ := a["value"].(map[string]any); v["k"] != "v" {
		t.Fatalf("value %v", a["value"])
	}
	plain := feishutest.CardActionEvent{EventID: "ev", Value: "x"}.JSON()
	if strings.Contains(string(plain), "form_value") {
		t.Fatalf("a click without a form carries form_value: %s", plain)
	}
}

// End to end through the router: the requester rejects from the card's
// form with a reason. The click answers the final card showing the
// reason, the record and the settled card keep it, nothing runs.
func TestRejectWithAReasonEndsTheCardWithIt(t *testing.T) {
	g := newRig(t)
	a, card := g.pending(t, "oc_p2p_reason", "ou_alice", "orders")
	if !strings.Contains(mustJSON(t, card), `"tag":"form"`) || !strings.Contains(mustJSON(t, card), `"name":"reason"`) {
		t.Fatalf("the pending card has no reason form: %s", mustJSON(t, card))
	}
	const reason = "wrong table, use orders_archive"
	e := feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: "ou_alice", MessageID: a.Cards[0].MessageID, ChatID: a.ChatID,
		Value: buttonValue(a, "reject"), FormValue: map[string]any{"reason": "  " + reason + "\n"}, Name: "reject"}
	resp := g.clickEvent(t, e)
	if resp.Toast == nil || resp.Card == nil {
		t.Fatalf("answer %+v", resp)
	}
	answered := mustJSON(t, resp.Card.Data)
	if !strings.Contains(answered, "Comment: "+reason+"\\n") || !strings.Contains(answered, `"template":"carmine"`) || strings.Contains(answered, `"tag":"form"`) {
		t.Fatalf("answered card %s", answered)
	}
	got, err := g.engine.Get(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != approval.StateRejected || got.Comment != reason || got.DecidedBy != "ou_alice" {
		t.Fatalf("record: state %s, comment %q, by %s", got.State, got.Comment, got.DecidedBy)
	}
	eventually(t, "the card is patched to rejected with the reason", func() bool {
		for _, c := range g.calls("patch") {
			if c.MessageID == a.Cards[0].MessageID && strings.Contains(c.Content, `"template":"carmine"`) && strings.Contains(c.Content, "Comment: "+reason) {
				// The answer and the patch say the same.
				return c.Content == answered
			}
		}
		return false
	})
	if n := g.erase.Runs.Load(); n != 0 {
		t.Fatalf("a rejected call ran %d times", n)
	}
}

// An oversized reason full of control characters never breaks the click:
// the rejection is recorded with the reason cleaned and cut (the engine's
// bound), and the answered card shows exactly that.
func TestOversizedReasonIsCleaned(t *testing.T) {
	g := newRig(t)
	a, _ := g.pending(t, "oc_p2p_long", "ou_alice", "orders")
	raw := "\x1b[2J\u202e" + strings.Repeat("line\r\n\x00", 2000)
	e := feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: "ou_alice", MessageID: a.Cards[0].MessageID, ChatID: a.ChatID,
		Value: buttonValue(a, "reject"), FormValue: map[string]any{"reason": raw}, Name: "reject"}
	resp := g.clickEvent(t, e)
	got, err := g.engine.Get(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != approval.StateRejected {
		t.Fatalf("state %s", got.State)
	}
	// The engine keeps MaxNoteRunes runes and marks the cut with "…".
	if n := utf8.RuneCountInString(got.Comment); n != approval.MaxNoteRunes+1 || !strings.HasSuffix(got.Comment, "…") {
		t.Fatalf("recorded comment of %d runes: %q", n, got.Comment)
	}
	for _, r := range got.Comment {
		if unicode.IsControl(r) || r == '\u202e' {
			t.Fatalf("recorded comment holds %U: %q", r, got.Comment)
		}
	}
	if resp.Card == nil {
		t.Fatalf("answer %+v", resp)
	}
	answered := mustJSON(t, resp.Card.Data)
	if strings.Contains(answered, `\u0000`) || strings.Contains(answered, `\r`) || strings.Contains(answered, `\u001b`) || !strings.Contains(answered, "Comment: [2Jline line") {
		t.Fatalf("answered card %s", answered)
	}
}

// clickEvent pushes a prepared card click and decodes the answer.
func (g *rig) clickEvent(t *testing.T, e feishutest.CardActionEvent) *callback.CardActionTriggerResponse {
	t.Helper()
	code, data, _ := g.push(t, e.JSON())
	if code != 200 {
		t.Fatalf("click ack %d: %s", code, data)
	}
	var resp callback.CardActionTriggerResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		t.Fatalf("callback answer %q: %v", data, err)
	}
	return &resp
}

// A reason typed before 确认 is kept as the approver's comment: the call
// runs, the record and the answered card keep the comment.
func TestApproveWithAReasonKeepsIt(t *testing.T) {
	g := newRig(t)
	a, _ := g.pending(t, "oc_p2p_ok", "ou_alice", "orders")
	const note = "checked with the DBA"
	e := feishutest.CardActionEvent{EventID: nextID("ev_click"), Operator: "ou_alice", MessageID: a.Cards[0].MessageID, ChatID: a.ChatID,
		Value: buttonValue(a, "approve"), FormValue: map[string]any{"reason": note}, Name: "approve"}
	resp := g.clickEvent(t, e)
	if resp.Card == nil {
		t.Fatalf("answer %+v", resp)
	}
	if answered := mustJSON(t, resp.Card.Data); !strings.Contains(answered, "Comment: "+note) || !strings.Contains(answered, `"template":"green"`) {
		t.Fatalf("answered card %s", answered)
	}
	got, err := g.engine.Get(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != approval.StateExecuted || got.Comment != note || g.erase.Runs.Load() != 1 {
		t.Fatalf("record: state %s, comment %q, runs %d", got.State, got.Comment, g.erase.Runs.Load())
	}
}
