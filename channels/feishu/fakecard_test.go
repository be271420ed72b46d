package feishu

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/channels/feishu/feishutest"
)

// card20 is a card JSON 2.0 of these body elements.
func card20(els ...string) string {
	return `{"schema":"2.0","body":{"elements":[` + strings.Join(els, ",") + `]}}`
}

const (
	reasonInput  = `{"tag":"input","name":"reason"}`
	submitButton = `{"tag":"button","name":"ok","form_action_type":"submit","behaviors":[{"type":"callback","value":{"k":"v"}}]}`
)

// nest wraps el in n columns sets (each a column_set and a column).
func nest(el string, n int) string {
	for range n {
		el = `{"tag":"column_set","columns":[{"tag":"column","elements":[` + el + `]}]}`
	}
	return el
}

// fakeCards are cards and whether Feishu's rules for forms (as the fake
// applies them) accept each.
var fakeCards = []struct {
	name string
	card string
	ok   bool
}{
	{"a form at the root", card20(`{"tag":"form","name":"f","elements":[` + reasonInput + `,` + nest(submitButton, 1) + `]}`), true},
	{"the older submit attribute", card20(`{"tag":"form","name":"f","elements":[{"tag":"button","name":"ok","action_type":"form_submit"}]}`), true},
	{"no form", card20(`{"tag":"button","behaviors":[]}`), true},
	{"a card 1.0 is only measured", `{"elements":[{"tag":"form"}]}`, true},
	{"a form in a column", card20(nest(`{"tag":"form","name":"f","elements":[`+submitButton+`]}`, 1)), false},
	{"a form in a form", card20(`{"tag":"form","name":"f","elements":[` + submitButton + `,{"tag":"form","name":"g","elements":[]}]}`), false},
	{"a form without a name", card20(`{"tag":"form","elements":[` + submitButton + `]}`), false},
	{"an input without a name", card20(`{"tag":"form","name":"f","elements":[{"tag":"input"},` + submitButton + `]}`), false},
	{"a button without a name", card20(`{"tag":"form","name":"f","elements":[{"tag":"button","form_action_type":"submit"}]}`), false},
	{"names not unique", card20(`{"tag":"form","name":"f","elements":[{"tag":"input","name":"ok"},` + submitButton + `]}`), false},
	{"no submit button", card20(`{"tag":"form","name":"f","elements":[` + reasonInput + `,{"tag":"button","name":"r","form_action_type":"reset"}]}`), false},
	{"a table in a form", card20(`{"tag":"form","name":"f","elements":[{"tag":"table"},` + submitButton + `]}`), false},
	{"containers 6 deep", card20(`{"tag":"form","name":"f","elements":[` + nest(submitButton, 3) + `]}`), false},
	{"over 30 KB", card20(`{"tag":"markdown","content":"` + strings.Repeat("x", 31*1024) + `"}`), false},
}

func TestFakeChecksCards(t *testing.T) {
	for _, tc := range fakeCards {
		if err := feishutest.CheckCard(tc.card); (err == nil) != tc.ok {
			t.Errorf("%s: CheckCard = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// The fake answers an interactive message with a card Feishu would
// refuse as Feishu does: HTTP 400 and an error code, nothing sent.
func TestFakeRefusesABadCard(t *testing.T) {
	fake := feishutest.New()
	defer fake.Close()
	post := func(card string) (int, int) {
		body, _ := json.Marshal(map[string]string{"receive_id": "oc_x", "msg_type": "interactive", "content": card})
		req, _ := http.NewRequest("POST", fake.URL+"/open-apis/im/v1/messages?receive_id_type=chat_id", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+feishutest.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var ans struct {
			Code int `json:"code"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&ans)
		return resp.StatusCode, ans.Code
	}
	if status, code := post(fakeCards[4].card); status != 400 || code != feishutest.CardRefusedCode {
		t.Fatalf("a form in a column: HTTP %d code %d", status, code)
	}
	if status, code := post(fakeCards[0].card); status != 200 || code != 0 {
		t.Fatalf("a good form: HTTP %d code %d", status, code)
	}
}
