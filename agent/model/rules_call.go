package model

import (
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hitlbot/hitlbot/agent"
	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/internal/clip"
	"github.com/hitlbot/hitlbot/words"
)

// The built-in commands that reach every tool: "/call <tool> <json>" (also
// /调用) and "/tools" (also /工具). They are tried before the configured
// patterns, so that no pattern can shadow them.

// command answers "/call" and "/tools"; ok is false when text is neither.
func (m *Rules) command(text string, tools []agent.ToolSpec, lang words.Lang) (agent.Response, bool) {
	s := strings.TrimSpace(text)
	word, rest := cutWord(s)
	switch strings.ToLower(strings.TrimRight(normalize(word), trailingPunct)) {
	case "/call", "/调用":
		return m.call(rest, tools, lang), true
	case "/tools", "/工具":
		if strings.Trim(normalize(rest), trailingPunct) != "" {
			return agent.Response{}, false // "/tools of mine": not the command
		}
		return textResponse(m.listTools(tools, lang)), true
	}
	return agent.Response{}, false
}

// cutWord splits s at its first white space: the first word, and what
// follows it with its leading white space removed.
func cutWord(s string) (word, rest string) {
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimLeftFunc(s[i:], unicode.IsSpace)
}

// call answers "/call <tool> <json>" (rest is what follows /call): one
// call of tool with the JSON object as its arguments, passed on as
// written, or a text that says what is wrong and calls nothing.
func (m *Rules) call(rest string, tools []agent.ToolSpec, lang words.Lang) agent.Response {
	usage := words.Text(lang, words.RulesCallUsage)
	// The tool's name ends at white space or at the JSON's brace.
	end := strings.IndexFunc(rest, func(r rune) bool { return unicode.IsSpace(r) || r == '{' || r == '｛' })
	if end < 0 {
		end = len(rest)
	}
	tool := strings.Trim(normalize(rest[:end]), trailingPunct)
	if tool == "" {
		return textResponse(usage)
	}
	shown := clip.Runes(tool, 64)
	if !offers(tools, tool) {
		answer := words.Text(lang, words.RulesCallNoTool, shown)
		if close := closeNames(tools, tool); len(close) > 0 {
			answer += " " + words.Text(lang, words.RulesCallClose, strings.Join(close, ", "))
		}
		return textResponse(answer + "\n" + usage)
	}
	args, problem := callArgs(rest[end:], shown, lang)
	if problem != "" {
		return textResponse(problem + "\n" + usage)
	}
	return agent.Response{Message: agent.Message{
		Role:      agent.RoleAssistant,
		ToolCalls: []agent.ToolCall{{ID: "rules-1", Name: tool, Args: args, Confidence: 1}},
	}}
}

// callArgs reads the arguments of a /call: exactly one JSON object, with
// nothing but white space around it; none at all is {}. The object is
// returned as written. When it is not valid JSON as written, full-width
// punctuation outside its strings (：，｛｝ and the like, which a Chinese
// input method types) is folded to ASCII and the result tried once more;
// the strings themselves are never changed. problem, when not empty, is
// the answer that says what is wrong (in lang; tool names the tool).
func callArgs(text, tool string, lang words.Lang) (args json.RawMessage, problem string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return json.RawMessage("{}"), ""
	}
	obj, err := oneObject(text)
	if err != nil && hasFullWidth(text) {
		if folded, ferr := oneObject(foldOutsideStrings(text)); ferr == nil {
			return folded, ""
		}
	}
	var syn *jsonSyntax
	var trail *trailingText
	switch {
	case err == nil:
		return obj, ""
	case errors.Is(err, errUnclosed):
		return nil, words.Text(lang, words.RulesCallUnclosed, tool)
	case errors.As(err, &syn):
		return nil, words.Text(lang, words.RulesCallBadJSON, tool, utf8.RuneCountInString(text[:syn.offset])+1)
	case errors.As(err, &trail):
		return nil, words.Text(lang, words.RulesCallTrailing, tool, clip.Runes(trail.text, 40))
	default:
		return nil, words.Text(lang, words.RulesCallNotObject, tool)
	}
}

// jsonSyntax is JSON that does not parse; offset is the byte of text
// near which it goes wrong.
type jsonSyntax struct{ offset int }

func (e *jsonSyntax) Error() string { return "invalid JSON" }

// trailingText is text after the one JSON value.
type trailingText struct{ text string }

func (e *trailingText) Error() string { return "text after the JSON value" }

var (
	errNotObject = errors.New("the JSON value is not an object")
	errUnclosed  = errors.New("the JSON ends before its value does")
)

// oneObject returns text's one JSON value, as written, when it is an
// object with only white space after it.
func oneObject(text string) (json.RawMessage, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, &jsonSyntax{offset: clampOffset(se.Offset-1, len(text))}
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
			return nil, errUnclosed
		}
		return nil, &jsonSyntax{offset: clampOffset(dec.InputOffset(), len(text))}
	}
	if raw[0] != '{' {
		return nil, errNotObject
	}
	if after := strings.TrimSpace(text[dec.InputOffset():]); after != "" {
		return nil, &trailingText{text: after}
	}
	return raw, nil
}

// clampOffset keeps a parser's byte offset inside text and at the start
// of a rune.
func clampOffset(off int64, n int) int {
	if off < 0 {
		return 0
	}
	if off > int64(n) {
		return n
	}
	return int(off)
}

// hasFullWidth reports a rune that normalize folds to ASCII.
func hasFullWidth(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r == '\u3000' || (r >= '\uFF01' && r <= '\uFF5E') })
}

// foldOutsideStrings folds full-width ASCII (and the ideographic space)
// to ASCII outside JSON strings; a folded ＂ opens a string, which an
// ASCII " closes. Inside strings nothing changes.
func foldOutsideStrings(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	in, esc := false, false
	for _, r := range s {
		if in {
			switch {
			case esc:
				esc = false
			case r == '\\':
				esc = true
			case r == '"':
				in = false
			}
			b.WriteRune(r)
			continue
		}
		switch {
		case r == '\u3000':
			r = ' '
		case r >= '\uFF01' && r <= '\uFF5E':
			r -= 0xFEE0
		}
		in = r == '"'
		b.WriteRune(r)
	}
	return b.String()
}

// closeNames returns up to five offered tools whose name is close to
// name, closest first: the same name in another case, a name that ends
// with "__"+name (the tool of some MCP server), one at most two edits
// away, one that starts with name (or name with it), then the other
// tools of the same server (the prefix before "__").
func closeNames(tools []agent.ToolSpec, name string) []string {
	name = clip.Runes(name, 64)
	lower := strings.ToLower(name)
	server := ""
	if i := strings.Index(name, "__"); i > 0 {
		server = strings.ToLower(name[:i+2])
	}
	type near struct {
		name string
		rank int
	}
	var found []near
	for _, t := range tools {
		l := strings.ToLower(t.Name)
		rank := -1
		switch d := editDistance(l, lower, 2); {
		case l == lower:
			rank = 0
		case strings.HasSuffix(l, "__"+lower):
			rank = 1
		case d <= 2:
			rank = 1 + d
		case len(lower) >= 3 && (strings.HasPrefix(l, lower) || strings.HasPrefix(lower, l)):
			rank = 3
		case server != "" && strings.HasPrefix(l, server):
			rank = 4
		}
		if rank >= 0 {
			found = append(found, near{t.Name, rank})
		}
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].rank != found[j].rank {
			return found[i].rank < found[j].rank
		}
		return found[i].name < found[j].name
	})
	var out []string
	for _, n := range found {
		if len(out) == 5 {
			break
		}
		out = append(out, n.name)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b in runes, or
// max+1 when it is more than max.
func editDistance(a, b string, max int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > max || -d > max {
		return max + 1
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		best := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			best = min(best, cur[j])
		}
		if best > max {
			return max + 1
		}
		prev, cur = cur, prev
	}
	if prev[len(rb)] > max {
		return max + 1
	}
	return prev[len(rb)]
}

// listTools answers "/tools": every offered tool, sorted by name, one a
// line: its name, its risk and why (when the rules model was given a
// Risk), and the first sentence of its description.
func (m *Rules) listTools(tools []agent.ToolSpec, lang words.Lang) string {
	if len(tools) == 0 {
		return words.Text(lang, words.RulesToolsNone)
	}
	sorted := append([]agent.ToolSpec(nil), tools...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	lines := []string{words.Text(lang, words.RulesToolsHeader, len(sorted))}
	for _, t := range sorted {
		parts := []string{"• " + t.Name}
		if m.risk != nil {
			if risk, why, ok := m.risk(t.Name); ok {
				// The risk in words and why, the risk said once: most
				// reasons start with it ("中风险：首次需要确认…").
				rw, w := words.Text(lang, riskKey[risk]), why.In(string(lang))
				switch {
				case strings.HasPrefix(w, rw):
					parts = append(parts, w)
				case w == "":
					parts = append(parts, rw)
				default:
					parts = append(parts, rw+words.Text(lang, words.ReasonSep)+w)
				}
			} else {
				parts = append(parts, "?")
			}
		}
		d := firstSentence(t.Description)
		if lang == words.ZH && t.About.ZH != "" && !hasHan(d) {
			d = t.About.ZH // the tool's own words in Chinese, for a description in English
		}
		if d != "" {
			parts = append(parts, d)
		}
		lines = append(lines, strings.Join(parts, " — "))
	}
	lines = append(lines, words.Text(lang, words.RulesToolsHowTo))
	return strings.Join(lines, "\n")
}

// riskKey names each risk in words.
var riskKey = map[approval.Risk]words.Key{
	approval.RiskLow:    words.CardRiskLow,
	approval.RiskMedium: words.CardRiskMedium,
	approval.RiskHigh:   words.CardRiskHigh,
}

// firstSentence is the first sentence of a description on one line: up
// to the first ". ", "。" or line break, at most 160 runes.
func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	if i := strings.Index(s, "。"); i >= 0 {
		s = s[:i+len("。")]
	}
	return clip.Runes(strings.TrimSpace(s), 160)
}
