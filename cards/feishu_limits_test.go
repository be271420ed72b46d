package cards_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
)

// bigBatch is a pending HIGH approval of n calls, each as large as a
// card shows: editable arguments of nearly MaxFeishuArgsInput runes
// (Chinese, three bytes each, and quotes that JSON escapes), a long
// summary, and the longest preview.
func bigBatch(t *testing.T, n int) *approval.Approval {
	t.Helper()
	created := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	var calls []approval.Call
	for i := range n {
		arg := strings.Repeat("删除\"", (cards.MaxFeishuArgsInput-40)/3)
		args, _ := json.Marshal(map[string]string{"sql": arg})
		c := approval.Call{Tool: fmt.Sprintf("sql_exec_%d", i), Args: args, CallID: fmt.Sprintf("c%d", i),
			Summary: strings.Repeat("DELETE FROM orders 影响行 ", 20), SummaryZH: strings.Repeat("删除订单表中的数据行 ", 30)}
		_, h, err := approval.HashCall(c.Tool, c.Args)
		if err != nil {
			t.Fatal(err)
		}
		c.PayloadSHA256 = h
		calls = append(calls, c)
	}
	preview := strings.Repeat("DELETE FROM orders WHERE 状态 = '已取消' <b>&</b>\n", 400)
	return &approval.Approval{
		ID: testID, Session: "feishu:oc_1/ou_alice", Channel: "feishu", ChatID: "oc_1", Requester: "ou_alice",
		Approvers: approval.ApproverRule{Mode: approval.ApproverUsers, Users: []approval.UserID{"ou_bob", "ou_carol"}},
		Calls:     calls, PayloadSHA256: approval.BatchHash(calls), Risk: approval.RiskHigh,
		Summary: strings.Repeat("a batch ", 200), SummaryZH: strings.Repeat("一批调用 ", 200), Preview: preview, PreviewZH: preview,
		Reason: strings.Repeat("DELETE removes rows; ", 20), ReasonZH: strings.Repeat("DELETE 会删除数据行；", 20),
		CreatedAt: created, ExpiresAt: created.Add(5 * time.Minute), State: approval.StatePending,
	}
}

// feishuLimitBatches are the batch sizes whose cards must keep Feishu's
// limits: the small ones, those around where the full card outgrows
// them, and the largest batch a card announces (MaxCardCalls).
var feishuLimitBatches = []int{1, 2, 8, 17, 18, 19, 32, cards.MaxCardCalls}

// Every Feishu card of a batch, up to the largest a card announces, keeps
// Feishu's limits as the fake keeps them (at most 200 components, the
// message's request body at most 30 KB, the form rules), pending,
// processing and final, in both languages; a pending card stays
// decidable: its form still has the approve and reject buttons.
func TestFeishuCardsKeepTheLimits(t *testing.T) {
	for _, n := range feishuLimitBatches {
		for _, lang := range []string{"zh", "en"} {
			t.Run(fmt.Sprintf("%d calls %s", n, lang), func(t *testing.T) {
				a := bigBatch(t, n)
				pending := cards.Pending(a, nil, lang)
				final := cards.ApplyOutcome(pending, approval.Outcome{Status: approval.StatusExecuted, DecidedBy: "ou_bob",
					Content: strings.Repeat("结果 ", 300)}, nil, lang)
				for name, card := range map[string]map[string]any{
					"pending":    cards.FeishuCard(pending, lang),
					"processing": cards.FeishuProcessingCard(pending, lang),
					"final":      cards.FeishuCard(final, lang),
				} {
					content, _ := json.Marshal(card)
					// The create request's body, as the SDK sends it.
					body, _ := json.Marshal(map[string]any{"receive_id": "oc_0123456789abcdef0123456789abcdef", "msg_type": "interactive",
						"content": string(content), "uuid": "card-0123456789012345678901234567890123456789"})
					if err := feishutest.CheckCardLimits(body, string(content)); err != nil {
						t.Errorf("%s: Feishu would refuse the card: %v", name, err)
					}
					if err := feishutest.CheckCard(string(content)); err != nil {
						t.Errorf("%s: Feishu would refuse the card's form: %v", name, err)
					}
					if name == "pending" && (!strings.Contains(string(content), `"name":"approve"`) || !strings.Contains(string(content), `"name":"reject"`)) {
						t.Errorf("the pending card of %d calls cannot be decided: %s", n, content)
					}
				}
			})
		}
	}
}
