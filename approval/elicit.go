package approval

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hitlbot/hitlbot/internal/redact"
	"github.com/hitlbot/hitlbot/words"
)

// Elicitations. An MCP server hitlbot calls a tool of may ask, while the
// call runs, for information from a person (elicitation/create, form
// mode: a message and a flat object schema of string, number, integer,
// boolean and enum fields). hitlbot asks it as a question (question.go)
// in the chat of the turn the call runs for: one approval of one call
// "mcp:<server>/AskUserQuestion" whose input is the questions the schema
// makes, one per field, plus "elicitation" (the fields as read from the
// schema). So its cards, its answer (an edit bound to the card's hash,
// claimed once, audited), its approvers and every surface that answers a
// question answer it. AnswerQuestions checks the answers against the
// fields (ElicitContent), so a wrong-typed answer is refused with a
// sentence in the person's language (AnswerError) and nothing is
// decided.

// elicitPrefix leads the agent part of an elicitation's call name.
const elicitPrefix = "mcp:"

// Bounds of what an elicitation shows of a server's words.
const (
	maxElicitMessage = 500
	maxElicitTitle   = 120
	maxElicitDesc    = 300
	maxElicitValue   = 150
	// MaxElicitOptions bounds the options of all of an elicitation's
	// fields together: what one Feishu card's selects can hold.
	MaxElicitOptions = 120
)

// ElicitTool is the name of the call that asks server's elicitation.
func ElicitTool(server string) string { return elicitPrefix + server + "/" + QuestionTool }

// IsElicitCall reports whether tool names an MCP server's elicitation.
func IsElicitCall(tool string) bool {
	return strings.HasPrefix(tool, elicitPrefix) && IsQuestionCall(tool)
}

// IsElicitation reports whether a asks an MCP server's elicitation.
func (a *Approval) IsElicitation() bool { return a.IsQuestion() && IsElicitCall(a.Calls[0].Tool) }

// ElicitField is one field of an elicitation's schema, as hitlbot read it.
type ElicitField struct {
	// Name is the property's name: the key of the content.
	Name string `json:"name"`
	// Kind is string, number, integer, boolean, enum or multi (an array
	// of enum values).
	Kind string `json:"kind"`
	// Required: the schema's required lists it.
	Required bool `json:"required,omitempty"`
	// Values are an enum's (or multi's) values, in its options' order.
	Values []string `json:"values,omitempty"`
	// Min and Max bound a number (minimum, maximum).
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
	// MinLen and MaxLen bound a string, in characters (minLength,
	// maxLength); for multi, the choices (minItems, maxItems).
	MinLen *int `json:"min_len,omitempty"`
	MaxLen *int `json:"max_len,omitempty"`
	// Format is a string's format: email, uri, date or date-time.
	Format string `json:"format,omitempty"`
	// Default is the schema's default as a person would type it (an
	// option's value, true or false, a number, a multi's values joined
	// ", "); kept only when it is a valid answer to the field. The
	// questions show it, and an empty answer to the field takes it.
	Default string `json:"default,omitempty"`
}

// titled is an enum value with its title (oneOf / anyOf {const, title}).
type titled struct {
	Const any    `json:"const"`
	Title string `json:"title"`
}

// elicitProp is what hitlbot reads of one property of a requestedSchema.
type elicitProp struct {
	Type        string   `json:"type"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Enum        []any    `json:"enum"`
	EnumNames   []string `json:"enumNames"`
	OneOf       []titled `json:"oneOf"`
	Items       *struct {
		Type  string   `json:"type"`
		Enum  []any    `json:"enum"`
		AnyOf []titled `json:"anyOf"`
	} `json:"items"`
	Minimum   *float64 `json:"minimum"`
	Maximum   *float64 `json:"maximum"`
	MinLength *int     `json:"minLength"`
	MaxLength *int     `json:"maxLength"`
	MinItems  *int     `json:"minItems"`
	MaxItems  *int     `json:"maxItems"`
	Format    string   `json:"format"`
	Default   any      `json:"default"`
}

// ErrElicitSchema is the cause of a requestedSchema hitlbot cannot ask.
var ErrElicitSchema = errors.New("elicitation schema")

// ElicitArgs makes the question call's input for an elicitation: server's
// message and requestedSchema (a JSON value as the SDK decoded it), every
// text of which is untrusted: cleaned (control characters dropped,
// secrets redacted) and bounded. The questions are the fields, required
// ones first, then by name. A schema of a kind hitlbot cannot ask (not a
// flat object of the MCP kinds, more than MaxQuestions fields, more than
// MaxQuestionOptions options in a field or MaxElicitOptions in all) is an
// error wrapping ErrElicitSchema.
func ElicitArgs(message string, schema any) (json.RawMessage, error) {
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrElicitSchema, err)
	}
	var s struct {
		Type       string                `json:"type"`
		Properties map[string]elicitProp `json:"properties"`
		Required   []string              `json:"required"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrElicitSchema, err)
	}
	if s.Type != "" && s.Type != "object" {
		return nil, fmt.Errorf("%w: type %q, not object", ErrElicitSchema, s.Type)
	}
	if len(s.Properties) == 0 || len(s.Properties) > MaxQuestions {
		return nil, fmt.Errorf("%w: 1 to %d fields, not %d", ErrElicitSchema, MaxQuestions, len(s.Properties))
	}
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if req[names[i]] != req[names[j]] {
			return req[names[i]]
		}
		return names[i] < names[j]
	})
	var (
		fields  []ElicitField
		qs      []Question
		texts   = map[string]bool{}
		options int
	)
	for _, n := range names {
		f, q, err := elicitField(n, s.Properties[n], req[n])
		if err != nil {
			return nil, err
		}
		if options += len(q.Options); options > MaxElicitOptions {
			return nil, fmt.Errorf("%w: more than %d options in all", ErrElicitSchema, MaxElicitOptions)
		}
		if texts[q.Question] {
			q.Question += " [" + q.Header + "]"
		}
		texts[q.Question] = true
		fields = append(fields, f)
		qs = append(qs, q)
	}
	msg := redact.Clean(message, maxElicitMessage)
	out, err := json.Marshal(map[string]any{"questions": qs, "elicitation": map[string]any{"message": msg, "fields": fields}})
	if err != nil {
		return nil, err
	}
	if _, err := ParseQuestions(out); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrElicitSchema, err)
	}
	return Canonicalize(out)
}

// elicitField reads property name of a schema into its field and its
// question.
func elicitField(name string, p elicitProp, required bool) (ElicitField, Question, error) {
	header := redact.Clean(name, 60)
	if header == "" || header != name {
		return ElicitField{}, Question{}, fmt.Errorf("%w: field name %q", ErrElicitSchema, clipRunes(header, 60))
	}
	f := ElicitField{Name: name, Required: required, Min: p.Minimum, Max: p.Maximum, MinLen: p.MinLength, MaxLen: p.MaxLength}
	title := redact.Clean(p.Title, maxElicitTitle)
	if title == "" {
		title = header
	}
	text := title
	if d := redact.Clean(p.Description, maxElicitDesc); d != "" {
		text += ": " + d
	}
	q := Question{Question: text, Header: header}
	var opts []titled
	switch {
	case p.Type == "boolean":
		f.Kind = "boolean"
		f.Values = []string{"true", "false"}
		q.Options = []QuestionOption{{Label: "true", Description: "yes / 是"}, {Label: "false", Description: "no / 否"}}
	case p.Type == "array":
		if p.Items == nil {
			return ElicitField{}, Question{}, fmt.Errorf("%w: field %s: an array without items", ErrElicitSchema, name)
		}
		f.Kind, q.MultiSelect = "multi", true
		f.MinLen, f.MaxLen = p.MinItems, p.MaxItems
		opts = p.Items.AnyOf
		for _, v := range p.Items.Enum {
			opts = append(opts, titled{Const: v})
		}
	case p.Type == "string" || p.Type == "":
		switch {
		case len(p.OneOf) > 0:
			f.Kind, opts = "enum", p.OneOf
		case len(p.Enum) > 0:
			f.Kind = "enum"
			for i, v := range p.Enum {
				t := titled{Const: v}
				if i < len(p.EnumNames) {
					t.Title = p.EnumNames[i]
				}
				opts = append(opts, t)
			}
		default:
			f.Kind = "string"
			switch p.Format {
			case "", "email", "uri", "date", "date-time":
				f.Format = p.Format
			default:
				return ElicitField{}, Question{}, fmt.Errorf("%w: field %s: format %q", ErrElicitSchema, name, clipRunes(p.Format, 30))
			}
		}
	case p.Type == "number" || p.Type == "integer":
		f.Kind = p.Type
	default:
		return ElicitField{}, Question{}, fmt.Errorf("%w: field %s: type %q", ErrElicitSchema, name, clipRunes(p.Type, 30))
	}
	if f.Kind == "enum" || f.Kind == "multi" {
		if len(opts) == 0 || len(opts) > MaxQuestionOptions {
			return ElicitField{}, Question{}, fmt.Errorf("%w: field %s: 1 to %d options, not %d", ErrElicitSchema, name, MaxQuestionOptions, len(opts))
		}
		labels := map[string]bool{}
		for _, o := range opts {
			v, ok := o.Const.(string)
			if !ok || v == "" || redact.Clean(v, maxElicitValue) != v {
				return ElicitField{}, Question{}, fmt.Errorf("%w: field %s: an option that is not a short string", ErrElicitSchema, name)
			}
			label := redact.Clean(o.Title, maxElicitTitle)
			if label == "" {
				label = v
			} else if label != v {
				label += " (" + v + ")"
			}
			if labels[label] || (f.Kind == "multi" && strings.Contains(label, ", ")) {
				return ElicitField{}, Question{}, fmt.Errorf("%w: field %s: option %q twice or with a comma", ErrElicitSchema, name, clipRunes(label, 60))
			}
			labels[label] = true
			f.Values = append(f.Values, v)
			q.Options = append(q.Options, QuestionOption{Label: label})
		}
	}
	if d, ok := defaultText(p.Default); ok && f.validDefault(q, d) {
		f.Default = d
	}
	return f, q, nil
}

// defaultText is a schema default as an answer would be typed; false when
// it is none hitlbot can show (another type, empty, not clean text).
func defaultText(v any) (string, bool) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case bool:
		s = strconv.FormatBool(x)
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			p, ok := e.(string)
			if !ok || p == "" || strings.Contains(p, ", ") {
				return "", false
			}
			parts = append(parts, p)
		}
		s = strings.Join(parts, ", ")
	default:
		return "", false
	}
	return s, s != "" && redact.Clean(s, maxElicitValue) == s
}

// validDefault reports whether d is a default ElicitArgs keeps for f
// (defaultText, a valid answer to q): QuestionDefaults checks it again,
// as the input it reads may not be ElicitArgs' (another agent's
// AskUserQuestion input may carry an "elicitation" key of its own).
func (f ElicitField) validDefault(q Question, d string) bool {
	if redact.Clean(d, maxElicitValue) != d {
		return false
	}
	_, err := f.value(q, d)
	return err == nil
}

// shown is answer text s of field f as the questions show it: an option
// by its label (options of a multi joined ", "), else s.
func (f ElicitField) shown(q Question, s string) string {
	if f.Kind != "enum" && f.Kind != "multi" {
		return s
	}
	parts := strings.Split(s, ", ")
	for i, p := range parts {
		for j, v := range f.Values {
			if v == p && j < len(q.Options) {
				parts[i] = q.Options[j].Label
			}
		}
	}
	return strings.Join(parts, ", ")
}

// elicitInput is what an elicitation's question input holds besides the
// answers.
type elicitInput struct {
	Questions   []Question `json:"questions"`
	Elicitation struct {
		Fields []ElicitField `json:"fields"`
	} `json:"elicitation"`
}

// QuestionDefaults returns, per question of a question input, the
// default its answer takes when left empty, as the question shows it
// ("" for none): an MCP server's field's default (ElicitField.Default);
// nil when the input is no elicitation's or has no default.
func QuestionDefaults(args json.RawMessage) []string {
	var in elicitInput
	if json.Unmarshal(args, &in) != nil || len(in.Questions) != len(in.Elicitation.Fields) {
		return nil
	}
	var out []string
	for i, f := range in.Elicitation.Fields {
		if f.Default == "" || !f.validDefault(in.Questions[i], f.Default) {
			continue
		}
		if out == nil {
			out = make([]string, len(in.Questions))
		}
		out[i] = f.shown(in.Questions[i], f.Default)
	}
	return out
}

// AnswerError is an answer to an elicitation refused for its value: what
// the person reads, in their language (In); Error is English. It wraps
// ErrQuestion.
type AnswerError struct {
	key  words.Key
	args []any
}

// Error is the sentence in English.
func (e *AnswerError) Error() string { return e.In("en") }

// In is the sentence in lang ("zh", "en").
func (e *AnswerError) In(lang string) string { return words.In(lang, e.key, e.args...) }

// Unwrap is ErrQuestion.
func (e *AnswerError) Unwrap() error { return ErrQuestion }

func answerErr(k words.Key, args ...any) error { return &AnswerError{key: k, args: args} }

// isElicitInput reports whether a question input is an elicitation's.
func isElicitInput(orig map[string]json.RawMessage) bool {
	_, ok := orig["elicitation"]
	return ok
}

// ElicitContent is the content an answered elicitation input gives: per
// answered field its typed value (a string, a float64, a bool, a list of
// strings), after checking each answer against the field: a number
// parses and is within its bounds, an integer is whole, a string has its
// length and format, an option is one of the field's (by its label or
// its value), a boolean is true/false (yes/no, 是/否), and every required
// field is answered. A refused answer is an *AnswerError.
func ElicitContent(args json.RawMessage) (map[string]any, error) {
	var in struct {
		Questions   []Question        `json:"questions"`
		Answers     map[string]string `json:"answers"`
		Elicitation struct {
			Fields []ElicitField `json:"fields"`
		} `json:"elicitation"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrQuestion, err)
	}
	if len(in.Questions) != len(in.Elicitation.Fields) {
		return nil, fmt.Errorf("%w: %d questions for %d fields", ErrQuestion, len(in.Questions), len(in.Elicitation.Fields))
	}
	out := map[string]any{}
	for i, f := range in.Elicitation.Fields {
		q := in.Questions[i]
		ans, ok := in.Answers[q.Question]
		ans = strings.TrimSpace(ans)
		if !ok || ans == "" {
			if f.Required {
				return nil, answerErr(words.ElicitRequired, f.Name)
			}
			continue
		}
		v, err := f.value(q, ans)
		if err != nil {
			return nil, err
		}
		out[f.Name] = v
	}
	return out, nil
}

// value reads answer s of field f (asked as q).
func (f ElicitField) value(q Question, s string) (any, error) {
	shown := clipRunes(s, 60)
	switch f.Kind {
	case "string":
		n := utf8.RuneCountInString(s)
		if f.MinLen != nil && n < *f.MinLen {
			return nil, answerErr(words.ElicitTooShort, f.Name, *f.MinLen)
		}
		if f.MaxLen != nil && n > *f.MaxLen {
			return nil, answerErr(words.ElicitTooLong, f.Name, *f.MaxLen)
		}
		if !formatOK(f.Format, s) {
			return nil, answerErr(words.ElicitBadFormat, f.Name, f.Format)
		}
		return s, nil
	case "number", "integer":
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, answerErr(words.ElicitNotNumber, f.Name, shown)
		}
		if f.Kind == "integer" && x != math.Trunc(x) {
			return nil, answerErr(words.ElicitNotInteger, f.Name, shown)
		}
		if f.Min != nil && x < *f.Min {
			return nil, answerErr(words.ElicitTooSmall, f.Name, strconv.FormatFloat(*f.Min, 'g', -1, 64))
		}
		if f.Max != nil && x > *f.Max {
			return nil, answerErr(words.ElicitTooLarge, f.Name, strconv.FormatFloat(*f.Max, 'g', -1, 64))
		}
		return x, nil
	case "boolean":
		switch strings.ToLower(s) {
		case "true", "yes", "y", "是":
			return true, nil
		case "false", "no", "n", "否":
			return false, nil
		}
		return nil, answerErr(words.ElicitNotBoolean, f.Name, shown)
	case "enum":
		v, ok := f.option(q, s)
		if !ok {
			return nil, answerErr(words.ElicitNotOption, f.Name, shown)
		}
		return v, nil
	case "multi":
		var vs []any
		for _, part := range strings.Split(s, ", ") {
			v, ok := f.option(q, strings.TrimSpace(part))
			if !ok {
				return nil, answerErr(words.ElicitNotOption, f.Name, clipRunes(part, 60))
			}
			vs = append(vs, v)
		}
		lo, hi := 0, len(f.Values)
		if f.MinLen != nil {
			lo = *f.MinLen
		}
		if f.MaxLen != nil {
			hi = *f.MaxLen
		}
		if len(vs) < lo || len(vs) > hi {
			return nil, answerErr(words.ElicitItems, f.Name, lo, hi)
		}
		return vs, nil
	}
	return nil, fmt.Errorf("%w: field %s of kind %q", ErrQuestion, f.Name, f.Kind)
}

// option is the value of the option s names: its label or its value.
func (f ElicitField) option(q Question, s string) (string, bool) {
	for i, o := range q.Options {
		if i < len(f.Values) && (o.Label == s || f.Values[i] == s) {
			return f.Values[i], true
		}
	}
	return "", false
}

// formatOK reports whether s is of format (empty: any).
func formatOK(format, s string) bool {
	switch format {
	case "email":
		// local@domain.tld, no spaces: the shape people type (net/mail
		// would be one more package in the binary for little more).
		local, domain, ok := strings.Cut(s, "@")
		return ok && local != "" && !strings.ContainsAny(s, " \t<>\"") && !strings.Contains(domain, "@") &&
			strings.Contains(strings.Trim(domain, "."), ".")
	case "uri":
		u, err := url.Parse(s)
		return err == nil && u.IsAbs()
	case "date":
		_, err := time.Parse(time.DateOnly, s)
		return err == nil
	case "date-time":
		_, err := time.Parse(time.RFC3339, s)
		return err == nil
	}
	return true
}
