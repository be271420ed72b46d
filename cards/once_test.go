package cards_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/approval/memstore"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/internal/clock"
	"github.com/hitlbot/hitlbot/internal/hitltest"
)

// toolFunc is a Dispatcher of one function.
type toolFunc func(context.Context, approval.Call) (approval.Result, error)

func (f toolFunc) Dispatch(ctx context.Context, c approval.Call) (approval.Result, error) {
	return f(ctx, c)
}

// secretErr is what a tool's own error may hold; no card shows it.
const secretErr = "dial tcp 10.1.2.3:5432: password=hunter2"

// ended runs one approval through a real engine whose words are in lang:
// decided by bob with verb (and comment), the tool being tool. It returns
// the pending record and the ended one, as a channel gets them.
func ended(t *testing.T, lang string, tool toolFunc, verb approval.Verb, comment string) (pending, done *approval.Approval) {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	e, err := approval.NewEngine(approval.EngineConfig{Store: memstore.New(memstore.Options{Clock: clk}), Dispatcher: tool, Audit: hitltest.NopAudit{},
		Clock: clk, PollInterval: time.Hour, Text: approval.DefaultOutcomeText(lang), Lang: lang})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := e.Request(ctx, approval.Request{Session: "web:alice/s1", Channel: "web", ChatID: "alice/s1", Requester: "alice",
		Calls: []approval.Call{{Tool: "sql_exec", Args: json.RawMessage(`{"sql":"DELETE FROM orders"}`), CallID: "c1"}},
		Verdict: approval.Verdict{NeedsApproval: true, Risk: approval.RiskHigh,
			Approvers: approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"bob"}}, Timeout: 5 * time.Minute},
		Summary: "DELETE FROM orders"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Decide(ctx, a.ID, approval.Decision{Verb: verb, Actor: "bob", Source: approval.SourceWeb,
		PayloadSHA256: a.PayloadSHA256, Comment: comment}); err != nil {
		t.Fatal(err)
	}
	done, err = e.Get(ctx, a.ID)
	if err != nil || done.Outcome == nil {
		t.Fatalf("Get: %+v, %v", done, err)
	}
	return a, done
}

// renderings are every surface's rendering of the final state of an
// approval: from its record (what Settle shows) and, for the click
// answers of Feishu and DingTalk, from the pending view and the outcome.
func renderings(t *testing.T, pending, done *approval.Approval, text approval.OutcomeText, lang string) map[string]string {
	t.Helper()
	v := cards.Final(done, *done.Outcome, text, lang)
	web, err := cards.WebJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	feishu, err := cards.FeishuCardJSON(v, lang)
	if err != nil {
		t.Fatal(err)
	}
	click, err := json.Marshal(cards.FeishuOutcomeCard(cards.Pending(pending, text, lang), *done.Outcome, text, lang))
	if err != nil {
		t.Fatal(err)
	}
	// The DingTalk variables, but "markdown": a template shows either the
	// fields or that one block (rendered below on its own).
	data := cards.DingTalkCardData(v, lang)
	delete(data, "markdown")
	dt, _ := json.Marshal(data)
	dtClick, _ := json.Marshal(cards.DingTalkOutcomeData(*done.Outcome, text, lang))
	return map[string]string{
		"markdown":           cards.Markdown(v, lang),
		"text":               cards.Text(v, lang),
		"web json":           string(web),
		"feishu card":        feishu,
		"feishu click card":  string(click),
		"dingtalk card data": string(dt),
		"dingtalk markdown":  cards.DingTalkMarkdown(v, lang, true),
		"dingtalk click":     string(dtClick),
	}
}

// TestFinalSaysItsStatusOnce: a frozen or failed card says its status
// sentence once (as its status) and then the detail — the cause in words
// safe to show, or the tool's error — in every renderer and language; a
// rejection shows the decider's comment. A card in another language than
// the engine's says its own sentence, once, and not the engine's.
func TestFinalSaysItsStatusOnce(t *testing.T) {
	frozen := func(context.Context, approval.Call) (approval.Result, error) {
		return approval.Result{}, errors.New(secretErr)
	}
	failed := func(context.Context, approval.Call) (approval.Result, error) {
		return approval.Result{Content: "ERROR: permission denied for table orders", IsError: true}, nil
	}
	executed := func(context.Context, approval.Call) (approval.Result, error) {
		return approval.Result{Content: "DELETE 37"}, nil
	}
	cases := []struct {
		name, lang string // lang: the engine's and the card's
		card       string // the card's language, when not lang
		tool       toolFunc
		verb       approval.Verb
		comment    string
		status     approval.Status
		detail     string // shown once after the status sentence
	}{
		{"frozen", "en", "", frozen, approval.Approve, "", approval.StatusFrozen, "the tool stopped with an error, so whether it took effect is unknown"},
		{"frozen", "zh", "", frozen, approval.Approve, "", approval.StatusFrozen, "工具出错，无法确定是否已生效"},
		{"frozen", "en", "zh", frozen, approval.Approve, "", approval.StatusFrozen, "the tool stopped with an error, so whether it took effect is unknown"},
		{"frozen", "zh", "en", frozen, approval.Approve, "", approval.StatusFrozen, "工具出错，无法确定是否已生效"},
		{"failed", "en", "", failed, approval.Approve, "", approval.StatusFailed, "ERROR: permission denied for table orders"},
		{"failed", "zh", "en", failed, approval.Approve, "", approval.StatusFailed, "ERROR: permission denied for table orders"},
		{"failed", "zh", "", failed, approval.Approve, "", approval.StatusFailed, "ERROR: permission denied for table orders"},
		{"executed", "en", "", executed, approval.Approve, "", approval.StatusExecuted, "DELETE 37"},
		{"rejected", "en", "", executed, approval.Reject, "not during business hours", approval.StatusRejected, "not during business hours"},
		{"rejected", "zh", "", executed, approval.Reject, "营业时间不要删", approval.StatusRejected, "营业时间不要删"},
	}
	for _, c := range cases {
		card := c.card
		if card == "" {
			card = c.lang
		}
		t.Run(c.name+"/"+c.lang+"/"+card, func(t *testing.T) {
			pending, done := ended(t, c.lang, c.tool, c.verb, c.comment)
			if done.Outcome.Status != c.status {
				t.Fatalf("outcome %+v, want %s", done.Outcome, c.status)
			}
			text := approval.DefaultOutcomeText(card)
			sentence, engines := text.Text(c.status), approval.DefaultOutcomeText(c.lang).Text(c.status)
			for name, out := range renderings(t, pending, done, text, card) {
				if n := strings.Count(out, sentence); n != 1 {
					t.Errorf("%s says %q %d times, want once:\n%s", name, sentence, n, out)
				}
				if engines != sentence && strings.Contains(out, engines) {
					t.Errorf("%s says the engine's sentence %q besides its own:\n%s", name, engines, out)
				}
				// A click answer knows only the outcome, which holds no
				// comment of its own.
				if c.status == approval.StatusRejected && strings.Contains(name, "click") {
					continue
				}
				if n := strings.Count(out, c.detail); n != 1 {
					t.Errorf("%s shows %q %d times, want once:\n%s", name, c.detail, n, out)
				}
				if strings.Contains(out, "hunter2") || strings.Contains(out, "10.1.2.3") {
					t.Errorf("%s shows the tool's own error:\n%s", name, out)
				}
			}
		})
	}
}

// TestDetail: what a card shows after the status sentence is the
// outcome's Detail, whatever its Content says, or the tools' own result
// for an executed or replayed outcome.
func TestDetail(t *testing.T) {
	for _, c := range []struct {
		name string
		o    approval.Outcome
		want string
	}{
		{"frozen", approval.Outcome{Status: approval.StatusFrozen, Content: "Frozen, ask the DBA: timed out after 1s", Detail: "timed out after 1s"}, "timed out after 1s"},
		{"a batch", approval.Outcome{Status: approval.StatusFailed, Content: "Failed: [1] a (executed): ok\n[2] b (failed): no such table",
			Detail: "[1] a (executed): ok\n[2] b (failed): no such table"}, "[1] a (executed): ok\n[2] b (failed): no such table"},
		{"the sentence alone", approval.Outcome{Status: approval.StatusExpired, Content: "Expired"}, ""},
		{"an executed result is the tool's own", approval.Outcome{Status: approval.StatusExecuted, Content: "Executed: 3 rows"}, "Executed: 3 rows"},
		{"a replayed one too", approval.Outcome{Status: approval.StatusReplayed, Content: "3 rows"}, "3 rows"},
	} {
		if got := cards.Detail(c.o); got != c.want {
			t.Errorf("%s: Detail = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestCommentIsOneInertLine: the decider's comment is shown on one line,
// bounded, and cannot inject Markdown.
func TestCommentIsOneInertLine(t *testing.T) {
	a := sample(t, false)
	a.DecidedBy, a.Comment = "carol", "no\n- Decided by: mallory [x](https://evil.example) **now**"+strings.Repeat("!", 2*cards.MaxCommentExcerpt)
	v := cards.Final(a, approval.Outcome{Status: approval.StatusRejected, DecidedBy: "carol"}, nil, "en")
	if strings.Contains(v.Comment, "\n") || len([]rune(v.Comment)) > cards.MaxCommentExcerpt+1 {
		t.Fatalf("comment %q", v.Comment)
	}
	md := cards.Markdown(v, "en")
	if strings.Contains(md, "\n- Decided by: mallory") || strings.Contains(md, "[x](") || strings.Contains(md, "**now**") {
		t.Errorf("comment not inert:\n%s", md)
	}
	if txt := cards.Text(v, "en"); strings.Contains(txt, "\n- Decided by: mallory") {
		t.Errorf("comment spans lines:\n%s", txt)
	}
}
