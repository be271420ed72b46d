package cards

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/words"
)

// Per-call decisions in a batch. A pending Feishu card of several calls
// holds, in its form, one select_static per call (named FeishuCallField(n),
// options run = "approve" and do not run = "reject", "approve" chosen
// first); the 确认 button submits them with the reason, and its callback
// value says how many calls the card showed ("calls"). The click then
// decides call by call (ParseFeishuCalls); 取消 declines every call,
// whatever is chosen.

// MaxCardCalls bounds the calls a button value may announce: the most
// calls of one model round, so of one batch (approval.MaxCalls).
const MaxCardCalls = approval.MaxCalls

// FeishuCallField is the name of the choice of call n (1-based) in a
// pending batch card's form.
func FeishuCallField(n int) string { return "call_" + strconv.Itoa(n) }

// parseCallCount reads a button value's optional "calls": absent is 0 (a
// card of one call, or of a time before per-call choices); else a decimal
// string from 2 to MaxCardCalls.
func parseCallCount(m map[string]any) (int, error) {
	raw, ok := m["calls"]
	if !ok {
		return 0, nil
	}
	s, ok := raw.(string)
	if !ok {
		return 0, fmt.Errorf("card value: calls is not a string")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 2 || n > MaxCardCalls || strconv.Itoa(n) != s {
		return 0, fmt.Errorf("card value: calls %q is not a number of calls", s)
	}
	return n, nil
}

// ParseFeishuCalls reads the per-call choices of a form submit for a card
// of n calls (the button value's Calls): nil when n < 2 or the form holds
// no choice at all (an older card); else every call "#<k>" with
// approve or reject, a choice the form does not carry counting as the
// one the card showed first (approve). A choice that is neither is an
// error: the click decides nothing.
func ParseFeishuCalls(form map[string]any, n int) (map[string]approval.Verb, error) {
	if n < 2 {
		return nil, nil
	}
	found := false
	for k := 1; k <= n; k++ {
		if _, ok := form[FeishuCallField(k)]; ok {
			found = true
			break
		}
	}
	if !found {
		return nil, nil
	}
	out := make(map[string]approval.Verb, n)
	for k := 1; k <= n; k++ {
		verb := approval.Approve
		if raw, ok := form[FeishuCallField(k)]; ok {
			s, _ := raw.(string)
			switch approval.Verb(s) {
			case approval.Approve, approval.Reject:
				verb = approval.Verb(s)
			default:
				return nil, fmt.Errorf("card form: %s is %v, neither approve nor reject", FeishuCallField(k), raw)
			}
		}
		out["#"+strconv.Itoa(k)] = verb
	}
	return out, nil
}

// feishuCallChoices are the form elements of a pending batch card that
// let the approver decide each call: a hint, then per call its number and
// tool beside a select_static (run / do not run, run chosen first). None
// for a card of one call.
func feishuCallChoices(v View, lang string) []any {
	if len(v.Calls) < 2 || v.Approve == nil || v.Approve.Calls != len(v.Calls) || v.Quorum > 1 {
		// (An approval that needs several approvers is decided whole.)
		return nil
	}
	l := words.Of(lang)
	if v.fit >= fitNoChoices {
		// Too many calls for a choice each within Feishu's limits.
		return []any{plainDiv(words.Text(l, words.CardPerCallElsewhere))}
	}
	run, skip := words.Text(l, words.CardCallRun), words.Text(l, words.CardCallSkip)
	els := []any{plainDiv(words.Text(l, words.CardPerCallHint))}
	if v.fit >= fitCompact {
		// One component per call: the select's options name the call.
		for i, c := range v.Calls {
			label := words.Text(l, words.CardCallChoice, i+1, c.Tool)
			els = append(els, map[string]any{
				"tag": "select_static", "name": FeishuCallField(i + 1), "width": "fill",
				"initial_option": string(approval.Approve),
				"options": []any{
					map[string]any{"text": plainText(label + " · " + run), "value": string(approval.Approve)},
					map[string]any{"text": plainText(label + " · " + skip), "value": string(approval.Reject)},
				},
			})
		}
		return els
	}
	for i, c := range v.Calls {
		els = append(els, map[string]any{
			"tag": "column_set", "flex_mode": "none",
			"columns": []any{
				map[string]any{"tag": "column", "width": "weighted", "weight": 2,
					"elements": []any{plainDiv(words.Text(l, words.CardCallChoice, i+1, c.Tool))}},
				map[string]any{"tag": "column", "width": "weighted", "weight": 1,
					"elements": []any{map[string]any{
						"tag": "select_static", "name": FeishuCallField(i + 1), "width": "fill",
						"initial_option": string(approval.Approve),
						"options": []any{
							map[string]any{"text": plainText(run), "value": string(approval.Approve)},
							map[string]any{"text": plainText(skip), "value": string(approval.Reject)},
						},
					}}},
			},
		})
	}
	return els
}

// DeclinedLine is the line of a final batch card that names the calls a
// per-call decision declined ("Declined, not run: call 2, 3"), or "".
func DeclinedLine(v View, lang string) string {
	if !v.Final {
		return ""
	}
	var ns []string
	for i, c := range v.Calls {
		if c.Status == approval.StatusRejected && v.Status != approval.StatusRejected {
			ns = append(ns, strconv.Itoa(i+1))
		}
	}
	if len(ns) == 0 {
		return ""
	}
	return words.In(lang, words.CardCallsDeclined, strings.Join(ns, ", "))
}
