package cards_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/cards"
)

func TestParseFeishuCalls(t *testing.T) {
	for _, tc := range []struct {
		name string
		form map[string]any
		n    int
		want map[string]approval.Verb
		err  bool
	}{
		{"one call", map[string]any{"call_1": "reject"}, 0, nil, false},
		{"no choices (an older card)", map[string]any{"reason": "x"}, 3, nil, false},
		{"all sent", map[string]any{"call_1": "approve", "call_2": "reject", "call_3": "approve"}, 3,
			map[string]approval.Verb{"#1": approval.Approve, "#2": approval.Reject, "#3": approval.Approve}, false},
		{"one not sent is as shown", map[string]any{"call_2": "reject"}, 3,
			map[string]approval.Verb{"#1": approval.Approve, "#2": approval.Reject, "#3": approval.Approve}, false},
		{"a choice beyond the calls is ignored", map[string]any{"call_1": "reject", "call_2": "reject", "call_3": "approve"}, 2,
			map[string]approval.Verb{"#1": approval.Reject, "#2": approval.Reject}, false},
		{"neither approve nor reject", map[string]any{"call_1": "approve", "call_2": "maybe"}, 2, nil, true},
		{"an array (a multi-select)", map[string]any{"call_1": []any{"approve"}}, 2, nil, true},
	} {
		got, err := cards.ParseFeishuCalls(tc.form, tc.n)
		if (err != nil) != tc.err || len(got) != len(tc.want) {
			t.Fatalf("%s: %v, %v", tc.name, got, err)
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Fatalf("%s: %s = %s, want %s", tc.name, k, got[k], v)
			}
		}
	}
}

// FuzzParseFeishuCalls feeds arbitrary form values and button values: the
// parsers never panic; what they accept names every call of the card once
// ("#1" … "#n"), approve or reject, and a button value's call count is
// absent or 2 to MaxCardCalls.
func FuzzParseFeishuCalls(f *testing.F) {
	h := strings.Repeat("a", 64)
	f.Add(`{"call_1":"approve","call_2":"reject"}`, `{"kind":"approval","approval_id":"ap_0123abcd_00112233445566778899aabbccddeeff","decision":"approve","payload_sha256":"`+h+`","calls":"2"}`)
	f.Add(`{"call_2":"reject","reason":"no"}`, `{"kind":"approval","approval_id":"ap_0123abcd_00112233445566778899aabbccddeeff","decision":"approve","payload_sha256":"`+h+`","calls":"3"}`)
	f.Add(`{"call_1":1,"call_2":null}`, `{"calls":"1"}`)
	f.Add(`{"call_1":["approve"]}`, `{"calls":"065"}`)
	f.Add(`{}`, `{"calls":3}`)
	f.Fuzz(func(t *testing.T, form, value string) {
		var m, v map[string]any
		if json.Unmarshal([]byte(form), &m) != nil || json.Unmarshal([]byte(value), &v) != nil {
			return
		}
		bv, err := cards.ParseFeishuButtonValue(v)
		n := 0
		if err == nil {
			n = bv.Calls
			if n != 0 && (n < 2 || n > cards.MaxCardCalls) {
				t.Fatalf("accepted a call count %d from %s", n, value)
			}
		}
		if n == 0 {
			n = len(m) % 5
		}
		calls, err := cards.ParseFeishuCalls(m, n)
		if err != nil || calls == nil {
			return
		}
		if len(calls) != n {
			t.Fatalf("%d choices for %d calls: %v", len(calls), n, calls)
		}
		for k := 1; k <= n; k++ {
			verb, ok := calls["#"+strconv.Itoa(k)]
			if !ok || (verb != approval.Approve && verb != approval.Reject) {
				t.Fatalf("call %d: %q in %v", k, verb, calls)
			}
		}
	})
}

// FuzzParseFeishuEdits: arbitrary form values never panic the parser, and
// what it accepts names calls "#1" … "#n" only, each a JSON object.
func FuzzParseFeishuEdits(f *testing.F) {
	f.Add(`{"args_1":"{\"target\":\"x\"}"}`, 0)
	f.Add(`{"args_1":"{\"a\":1}","args_2":"[1]"}`, 2)
	f.Add(`{"args_2":"{}","reason":"r"}`, 3)
	f.Add(`{"args_1":7}`, 1)
	f.Add(`{}`, 0)
	f.Fuzz(func(t *testing.T, form string, n int) {
		var m map[string]any
		if json.Unmarshal([]byte(form), &m) != nil || n < 0 || n > cards.MaxCardCalls {
			return
		}
		edits, err := cards.ParseFeishuEdits(m, n)
		if err != nil {
			return
		}
		if len(edits) == 0 {
			t.Fatalf("accepted no edits from %s", form)
		}
		for k, v := range edits {
			i, err := strconv.Atoi(strings.TrimPrefix(k, "#"))
			if err != nil || i < 1 || i > max(n, 1) {
				t.Fatalf("key %q for %d calls", k, n)
			}
			var obj map[string]json.RawMessage
			if json.Unmarshal(v, &obj) != nil || obj == nil {
				t.Fatalf("%s is not an object", v)
			}
		}
	})
}
