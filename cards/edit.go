package cards

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/redact"
	"github.com/hitlbot/hitlbot/words"
)

// Edit before approve on a Feishu card. A pending card's form holds, per
// call whose arguments may be shown (no secret-looking key or value, at
// most MaxFeishuArgsInput runes of JSON), an input named
// FeishuArgsField(n) prefilled (default_value) with the call's arguments;
// a third button, 按修改确认, submits the form with the callback value of
// 确认 but the decision EditDecision. The click then approves the
// arguments as the inputs hold them (ParseFeishuEdits); the engine checks,
// re-hashes and binds them (approval.Decision.Edits). When no call's
// arguments may be shown there are no inputs and no edit button: the card
// says to edit on the web page or with the API.

// EditDecision is the decision of the edit button's value.
const EditDecision approval.Verb = "edit"

// MaxFeishuArgsInput is the longest arguments JSON (in runes) a card
// prefills in an input: Feishu's input max_length (1000).
const MaxFeishuArgsInput = 1000

// FeishuArgsField is the name of call n's (1-based) arguments input.
func FeishuArgsField(n int) string { return "args_" + strconv.Itoa(n) }

const feishuEditName = "edit"

// editableArgs returns the arguments of c as a card may prefill them, and
// whether it may: a call of hitlbot's own tools (another agent's, named
// "<agent>/<tool>", cannot be edited), nothing redact would hide, not too
// long.
func editableArgs(c CallView) (string, bool) {
	if len(c.Args) == 0 || strings.Contains(c.Tool, "/") {
		return "", false
	}
	var v any
	if json.Unmarshal(c.Args, &v) != nil {
		return "", false
	}
	if !reflect.DeepEqual(redact.Value(v, 0, 0), v) {
		return "", false
	}
	s := string(c.Args)
	if utf8.RuneCountInString(s) > MaxFeishuArgsInput {
		return "", false
	}
	return s, true
}

// feishuEditable reports whether v's card offers the edit: every call's
// arguments may be shown.
func feishuEditable(v View) bool {
	if len(v.Calls) == 0 || v.Approve == nil || v.Quorum > 1 || v.fit >= fitNoEdit {
		return false
	}
	for _, c := range v.Calls {
		if _, ok := editableArgs(c); !ok {
			return false
		}
	}
	return true
}

// feishuEditInputs are the form elements of the edit: per call its
// arguments input, prefilled; or, when the card cannot offer the edit,
// the line that says where to edit.
func feishuEditInputs(v View, lang string) []any {
	l := words.Of(lang)
	if v.Quorum > 1 {
		return nil // each approver approves what the card shows, as it is
	}
	if !feishuEditable(v) {
		return []any{plainDiv(words.Text(l, words.CardEditElsewhere))}
	}
	var els []any
	for i, c := range v.Calls {
		s, _ := editableArgs(c)
		els = append(els, map[string]any{
			"tag": "input", "name": FeishuArgsField(i + 1), "width": "fill",
			"placeholder":   plainText(words.Text(l, words.CardEditInput, i+1, c.Tool)),
			"default_value": s, "max_length": MaxFeishuArgsInput,
		})
	}
	return els
}

// feishuEditColumn is the column of the edit button, none when the card
// does not offer the edit.
func feishuEditColumn(v View, lang string) []any {
	if !feishuEditable(v) {
		return nil
	}
	val := *v.Approve
	val.Decision, val.Grant = EditDecision, approval.GrantUnset // an edit grants as a plain approve
	return []any{feishuButtonColumn(words.In(lang, words.CardEditButton), "default", feishuEditName, val)}
}

// ParseFeishuEdits reads the edited arguments of an edit button's submit
// for a card of n calls (n 0 is one call): call "#k" -> the JSON under
// FeishuArgsField(k), for each input the form carries. An input whose
// text is not a JSON object is an error: the click decides nothing. No
// input at all is an error too (the card offered none).
func ParseFeishuEdits(form map[string]any, n int) (map[string]json.RawMessage, error) {
	n = max(n, 1)
	out := map[string]json.RawMessage{}
	for k := 1; k <= n; k++ {
		raw, ok := form[FeishuArgsField(k)]
		if !ok {
			continue
		}
		s, _ := raw.(string)
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(strings.TrimSpace(s)), &m) != nil || m == nil {
			return nil, fmt.Errorf("card form: %s is not a JSON object", FeishuArgsField(k))
		}
		out["#"+strconv.Itoa(k)] = json.RawMessage(strings.TrimSpace(s))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("card form: no arguments to approve with")
	}
	return out, nil
}

// EditedLines are the lines of a final card that say what an approver
// changed before approving, one per edited call.
func EditedLines(v View, lang string) []string {
	if !v.Final {
		return nil
	}
	var out []string
	for i, c := range v.Calls {
		if c.Edited != "" {
			out = append(out, words.In(lang, words.CardEdited, i+1, oneLine(c.Edited)))
		}
	}
	return out
}
