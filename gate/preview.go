package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hitlbot/hitlbot/internal/clip"
	"github.com/hitlbot/hitlbot/internal/redact"
	"github.com/hitlbot/hitlbot/words"
)

// Bounds of what Preview writes, in runes.
const (
	toolRunes       = 100  // the tool's name
	summaryRunes    = 120  // the argument in a summary
	pathRunes       = 300  // a file's path in a preview
	previewRunes    = 2000 // a command, the lines of an excerpt, a JSON preview
	lineRunes       = 200  // one line of an excerpt
	descRunes       = 300  // a command's description
	otherRunes      = 500  // the fields a tool's preview does not show otherwise
	jsonStringRunes = 300  // one string in a JSON preview
	writeLines      = 20   // the lines of a written file shown
	editLines       = 40   // the - and + lines of an edit shown
)

// Preview returns the one-line summary and the multi-line preview of a
// call, for the card:
//
//   - Bash: summary "Bash: rm -rf build" (the command's first line that is
//     not blank, cut at 120 runes, then " …" when more lines follow);
//     preview the command (all of it, cut at 2000 runes), then
//     "(description: …)" when input.description is a string.
//   - Write: "Write /path/file (12 lines)"; preview the path, then the first
//     20 lines of content, then "… N more lines".
//   - Edit, MultiEdit: "Edit /path/file"; preview the path, then a
//     diff-like excerpt, "- old" lines and "+ new" lines of old_string and
//     new_string (MultiEdit: of each edit), at most 40 lines in all.
//   - any other tool with a primary argument (see Rules): "Tool: <primary
//     argument>"; preview the sanitised JSON of the input.
//   - anything else: "Tool"; preview the sanitised JSON of the input
//     (indented, cut at 2000 runes). Input that is not JSON is not shown.
//
// Bash, Write, Edit and MultiEdit previews end with the input's other
// fields as compact JSON (Bash's timeout, run_in_background …), so that
// nothing bound to the decision is left off the card but the text cut for
// length. A tool of those names whose input has not their shape (no
// string command …) is previewed as any other.
//
// Everything is sanitised: the values of secret-looking keys hidden and
// secrets in text redacted (internal/redact), private keys in PEM blocks
// hidden, control and invisible formatting characters (bidirectional
// overrides, zero-width characters) removed, tabs expanded, valid UTF-8,
// every part cut at a rune boundary. Markdown is the card renderer's
// business. The words (… 12 more lines) are in lang.
func Preview(tool string, input json.RawMessage, lang string) (summary, preview string) {
	name := cleanLine(tool, toolRunes)
	if len(bytes.TrimSpace(input)) == 0 {
		return name, words.In(lang, words.GateNoInput)
	}
	v, err := decodeInput(input)
	if err != nil {
		return name, words.In(lang, words.GateNotJSON)
	}
	if obj, ok := v.(map[string]any); ok {
		var s, p string
		switch tool {
		case "Bash":
			s, p, ok = bashPreview(name, obj, lang)
		case "Write":
			s, p, ok = writePreview(name, obj, lang)
		case "Edit", "MultiEdit":
			s, p, ok = editPreview(name, tool == "MultiEdit", obj, lang)
		default:
			ok = false
		}
		if ok {
			return s, p
		}
		if arg, ok := primaryOf(obj); ok {
			return name + ": " + oneLine(arg, summaryRunes), jsonPreview(v, true)
		}
	}
	return name, jsonPreview(v, true)
}

// decodeInput decodes one JSON value (numbers kept as written) and
// nothing after it.
func decodeInput(input json.RawMessage) (any, error) {
	d := json.NewDecoder(bytes.NewReader(input))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if err := d.Decode(new(json.RawMessage)); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

// primaryOf is primaryArg for a decoded object.
func primaryOf(obj map[string]any) (string, bool) {
	for _, k := range primaryKeys {
		if s, ok := obj[k].(string); ok {
			return s, true
		}
	}
	return "", false
}

func bashPreview(name string, obj map[string]any, lang string) (string, string, bool) {
	cmd, ok := obj["command"].(string)
	if !ok {
		return "", "", false
	}
	var b strings.Builder
	b.WriteString(cleanBlock(cmd, previewRunes))
	shown := []string{"command"}
	if d, ok := obj["description"].(string); ok {
		b.WriteString("\n" + words.In(lang, words.GateDescription, cleanLine(d, descRunes)))
		shown = append(shown, "description")
	}
	writeOther(&b, obj, shown...)
	return name + ": " + oneLine(cmd, summaryRunes), b.String(), true
}

func writePreview(name string, obj map[string]any, lang string) (string, string, bool) {
	path, ok := obj["file_path"].(string)
	content, cok := obj["content"].(string)
	if !ok || !cok {
		return "", "", false
	}
	n := countLines(content)
	size := words.In(lang, words.GateOneLine)
	if n != 1 {
		size = words.In(lang, words.GateLines, n)
	}
	e := newExcerpt(writeLines)
	e.add("", content)
	var b strings.Builder
	b.WriteString(cleanLine(path, pathRunes))
	e.writeTo(&b, lang)
	writeOther(&b, obj, "file_path", "content")
	return name + " " + oneLine(path, summaryRunes) + " (" + size + ")", b.String(), true
}

func editPreview(name string, multi bool, obj map[string]any, lang string) (string, string, bool) {
	path, ok := obj["file_path"].(string)
	if !ok {
		return "", "", false
	}
	edits := []any{obj}
	shown := []string{"file_path", "old_string", "new_string", "replace_all"}
	if multi {
		edits, ok = obj["edits"].([]any)
		if !ok {
			return "", "", false
		}
		shown = []string{"file_path", "edits"}
	}
	type edit struct {
		old, new string
		all      bool
	}
	list := make([]edit, 0, len(edits))
	for _, x := range edits {
		m, ok := x.(map[string]any)
		if !ok {
			return "", "", false
		}
		var ed edit
		var okOld, okNew bool
		ed.old, okOld = m["old_string"].(string)
		ed.new, okNew = m["new_string"].(string)
		all, okAll := m["replace_all"].(bool)
		if !okOld || !okNew || (m["replace_all"] != nil && !okAll) {
			return "", "", false
		}
		ed.all = all
		list = append(list, ed)
	}
	e := newExcerpt(editLines)
	for i, ed := range list {
		if i > 0 {
			e.note("")
		}
		if ed.all {
			e.note(words.In(lang, words.GateReplaceAll))
		}
		e.add("- ", ed.old)
		e.add("+ ", ed.new)
	}
	var b strings.Builder
	b.WriteString(cleanLine(path, pathRunes))
	e.writeTo(&b, lang)
	writeOther(&b, obj, shown...)
	return name + " " + oneLine(path, summaryRunes), b.String(), true
}

// excerpt collects the first lines of texts, within a number of lines and
// previewRunes, and counts the lines it leaves out.
type excerpt struct {
	lines   []string
	max     int // lines shown at most
	budget  int // runes left
	omitted int // lines left out
}

func newExcerpt(max int) *excerpt { return &excerpt{max: max, budget: previewRunes} }

func (e *excerpt) full() bool { return len(e.lines) >= e.max || e.budget <= 0 }

// add adds the lines of text, each after prefix; a final line break ends
// the last line rather than starting another.
func (e *excerpt) add(prefix, text string) {
	var s sanitizer
	for text != "" {
		if e.full() {
			e.omitted += countLines(text)
			return
		}
		line, rest, _ := strings.Cut(text, "\n")
		e.push(prefix + s.line(line, lineRunes))
		text = rest
	}
}

// note adds a line that is not part of a text (a separator, a remark),
// when there is room; it is never counted as left out.
func (e *excerpt) note(line string) {
	if !e.full() {
		e.push(line)
	}
}

func (e *excerpt) push(line string) {
	e.lines = append(e.lines, line)
	e.budget -= utf8.RuneCountInString(line) + 1
}

// writeTo writes the lines, each after a line break, then how many were
// left out.
func (e *excerpt) writeTo(b *strings.Builder, lang string) {
	for _, l := range e.lines {
		b.WriteString("\n" + l)
	}
	switch {
	case e.omitted == 1:
		b.WriteString("\n" + words.In(lang, words.GateOneMoreLine))
	case e.omitted > 1:
		b.WriteString("\n" + words.In(lang, words.GateMoreLines, e.omitted))
	}
}

// countLines counts the lines of text: a final line break ends the last
// line; "" has none.
func countLines(text string) int {
	if text == "" {
		return 0
	}
	n := strings.Count(text, "\n")
	if !strings.HasSuffix(text, "\n") {
		n++
	}
	return n
}

// writeOther writes, on a line of its own, the fields of obj not named in
// shown, as sanitised compact JSON; nothing when there are none.
func writeOther(b *strings.Builder, obj map[string]any, shown ...string) {
	other := map[string]any{}
	for k, v := range obj {
		if !slices.Contains(shown, k) {
			other[k] = v
		}
	}
	if len(other) == 0 {
		return
	}
	b.WriteString("\n" + clip.Runes(jsonPreview(other, false), otherRunes))
}

// jsonPreview returns v as sanitised JSON: the values of secret-looking
// keys hidden and strings redacted and cut (redact.Value), invisible
// characters removed, indented or compact, cut at previewRunes.
func jsonPreview(v any, indent bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(redact.Value(trim(v, 0), jsonStringRunes, 0)); err != nil {
		// Decoded JSON always encodes; say nothing rather than something
		// unsanitised.
		return ""
	}
	// The encoder escapes control characters below U+0020 in strings,
	// but not DEL, C1 controls or formatting characters.
	s := strings.Map(func(r rune) rune {
		if r != '\n' && invisible(r) {
			return -1
		}
		return r
	}, strings.TrimSuffix(b.String(), "\n"))
	return clip.Runes(s, previewRunes)
}

// Bounds of trim: no preview shows more, since each string, item and key
// takes at least three runes of previewRunes.
const (
	trimItems = previewRunes / 2
	trimDepth = 33 // deeper than redact.Value goes
)

// trim returns a copy of a decoded value with what no preview can show
// left out, so that redacting (redact.Value) megabytes does not take a
// long time: strings cut at four times jsonStringRunes (a secret cut in
// half there is still redacted, or falls beyond the final cut), arrays
// and objects at trimItems (the objects' first keys in order, as the
// encoder writes them), nesting at trimDepth.
func trim(v any, depth int) any {
	if depth >= trimDepth {
		return nil
	}
	switch x := v.(type) {
	case string:
		return clip.Runes(x, 4*jsonStringRunes+64)
	case []any:
		if len(x) > trimItems {
			x = x[:trimItems]
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = trim(e, depth+1)
		}
		return out
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if len(keys) > trimItems {
			keys = keys[:trimItems]
		}
		out := make(map[string]any, len(keys))
		for _, k := range keys {
			out[k] = trim(x[k], depth+1)
		}
		return out
	}
	return v
}

// invisible reports the characters a card must not hold: control
// characters and formatting characters (bidirectional overrides and
// isolates, zero-width spaces and joiners, the byte order mark), which
// can reorder or hide what a person reads.
func invisible(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }

// oneLine returns the first line of s that is not blank, sanitised and
// cut at n runes (redact.Clean), followed by " …" when more lines follow.
func oneLine(s string, n int) string {
	rest := strings.TrimLeftFunc(s, unicode.IsSpace)
	line, more, _ := strings.Cut(rest, "\n")
	out := cleanLine(line, n)
	if strings.TrimSpace(more) != "" && !strings.HasSuffix(out, clip.Ellipsis) {
		out += " " + clip.Ellipsis
	}
	return out
}

// cleanLine returns s on one line: formatting characters removed, then
// redact.Clean (control characters removed, line breaks and tabs made
// spaces, secrets redacted, cut at n runes).
func cleanLine(s string, n int) string {
	s = clip.Runes(s, 4*n+64)
	return redact.Clean(strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s), n)
}

// cleanBlock sanitises multi-line text (see sanitizer) and cuts it at n
// runes.
func cleanBlock(text string, n int) string {
	// Sanitising megabytes to show n runes is wasted work: cut generously
	// first, as redact.Clean does.
	text = clip.Runes(text, 4*n+64)
	var s sanitizer
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = s.line(l, 0)
	}
	return clip.Runes(strings.Join(lines, "\n"), n)
}

// pemBegin and pemEnd mark a PEM block holding a private key.
var (
	pemBegin = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----`)
	pemEnd   = regexp.MustCompile(`-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----`)
)

// sanitizer cleans the lines of one text in order: it remembers whether
// a line is inside a private key's PEM block.
type sanitizer struct{ inKey bool }

// line returns one line (no line break in it) safe to show: invisible
// characters removed, tabs expanded, valid UTF-8, secrets redacted
// (redact.Text), a private key's lines hidden, cut at n runes (n <= 0: not
// cut).
func (s *sanitizer) line(l string, n int) string {
	if n > 0 {
		l = clip.Runes(l, 4*n+64)
	}
	l = strings.ToValidUTF8(l, "\uFFFD")
	l = strings.ReplaceAll(l, "\t", "    ")
	l = strings.Map(func(r rune) rune {
		switch {
		case r == '\u2028' || r == '\u2029':
			return ' '
		case invisible(r):
			return -1
		}
		return r
	}, l)
	switch {
	case s.inKey && pemEnd.MatchString(l):
		s.inKey = false
	case s.inKey:
		l = redact.Mark
	case pemBegin.MatchString(l):
		s.inKey = !pemEnd.MatchString(l)
		if !s.inKey { // a whole key on one line
			l = pemBegin.FindString(l) + redact.Mark
		}
	}
	l = redact.Text(l)
	if n > 0 {
		l = clip.Runes(l, n)
	}
	return l
}
