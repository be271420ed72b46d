package feishutest

import (
	"encoding/json"
	"fmt"
)

// MaxCardBytes is the largest card content Feishu accepts (30 KB).
const MaxCardBytes = 30 * 1024

// CardRefusedCode is the code the fake answers a card it refuses with
// (Feishu's "failed to create card content"), HTTP 400.
const CardRefusedCode = 230099

// interactiveTags are the card JSON 2.0 components a person fills or
// presses: inside a form each needs a name, unique in the card.
var interactiveTags = map[string]bool{
	"input": true, "button": true, "select_static": true, "multi_select_static": true,
	"select_person": true, "multi_select_person": true, "date_picker": true, "picker_time": true,
	"picker_datetime": true, "checker": true, "overflow": true, "select_img": true,
}

// containerTags are the components that hold others (nesting ≤ 5).
var containerTags = map[string]bool{
	"form": true, "column_set": true, "column": true, "collapsible_panel": true, "interactive_container": true,
}

const maxNesting = 5

// CheckCard checks the content of an interactive message (or of a patch)
// as Feishu does before it accepts a card, for what hitlbot's cards use:
// at most MaxCardBytes; and in a card JSON 2.0, a form only at the root
// of the body, never holding a table, a chart or another form, every
// interactive component inside it named, the names unique in the card, at
// least one button that submits it (form_action_type "submit", or the
// older action_type "form_submit"), containers nested at most 5 deep. A
// content that is not a card JSON 2.0 object is only measured.
func CheckCard(content string) error {
	if len(content) > MaxCardBytes {
		return fmt.Errorf("card is %d bytes, over %d", len(content), MaxCardBytes)
	}
	var card struct {
		Schema string `json:"schema"`
		Body   struct {
			Elements []any `json:"elements"`
		} `json:"body"`
	}
	if json.Unmarshal([]byte(content), &card) != nil || card.Schema != "2.0" {
		return nil
	}
	names := map[string]bool{}
	for i, el := range card.Body.Elements {
		m, _ := el.(map[string]any)
		if err := checkElement(m, fmt.Sprintf("body.elements[%d]", i), 0, false, names); err != nil {
			return err
		}
	}
	return nil
}

// checkElement checks one component at path, depth containers deep,
// inForm when a form holds it; names gathers the card's names.
func checkElement(m map[string]any, path string, depth int, inForm bool, names map[string]bool) error {
	if m == nil {
		return nil
	}
	tag, _ := m["tag"].(string)
	name, _ := m["name"].(string)
	if name != "" {
		if names[name] {
			return fmt.Errorf("%s: name %q is not unique in the card", path, name)
		}
		names[name] = true
	}
	switch {
	case tag == "form" && (depth > 0 || inForm):
		return fmt.Errorf("%s: a form may only be at the root of the card's body", path)
	case inForm && (tag == "table" || tag == "chart"):
		return fmt.Errorf("%s: a form may not hold a %s", path, tag)
	case inForm && interactiveTags[tag] && name == "":
		return fmt.Errorf("%s: a %s in a form has no name", path, tag)
	}
	if containerTags[tag] {
		depth++
		if depth > maxNesting {
			return fmt.Errorf("%s: containers nested deeper than %d", path, maxNesting)
		}
	}
	children := childrenOf(m)
	if tag == "form" {
		if name == "" {
			return fmt.Errorf("%s: a form has no name", path)
		}
		if !submits(children) {
			return fmt.Errorf("%s: a form has no submit button", path)
		}
		inForm = true
	}
	for i, c := range children {
		if err := checkElement(c, fmt.Sprintf("%s.%d", path, i), depth, inForm, names); err != nil {
			return err
		}
	}
	return nil
}

// childrenOf returns the components a component holds: its elements, or
// a column_set's columns.
func childrenOf(m map[string]any) []map[string]any {
	var out []map[string]any
	for _, k := range []string{"elements", "columns"} {
		list, _ := m[k].([]any)
		for _, c := range list {
			if cm, ok := c.(map[string]any); ok {
				out = append(out, cm)
			}
		}
	}
	return out
}

// submits reports whether a submit button is among els or below them.
func submits(els []map[string]any) bool {
	for _, m := range els {
		if m["tag"] == "button" && (m["form_action_type"] == "submit" || m["action_type"] == "form_submit") {
			return true
		}
		if submits(childrenOf(m)) {
			return true
		}
	}
	return false
}
