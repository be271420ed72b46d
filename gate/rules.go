package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hitlbot/hitlbot/approval"
)

// RuleConfig is one entry of agents[].policy: the risk of the calls its
// pattern matches.
type RuleConfig struct {
	// Risk is LOW (allowed without a card, audited), MEDIUM or HIGH; any
	// case.
	Risk string `mapstructure:"risk"`
}

// Rules is an agent's compiled policy: which risk a call gets, by
// patterns over the tool's name and its primary argument. The patterns
// are Claude Code's permission-rule vocabulary:
//
//	"*"                       every tool
//	"Read"                    the tool named Read (exactly; case matters)
//	"mcp__github__push"       an MCP tool: a plain name like any other
//	"Bash(rm *)"              Bash when its primary argument matches rm *
//	"Bash(npm run test:*)"    a trailing :* means "this prefix, then anything"
//	"Read|Glob|Grep"          alternatives, separated by |
//
// In Name(glob), * matches any run of characters (spaces and / too) and
// everything else is literal; the glob matches the whole argument, so
// Bash(rm *) matches "rm -rf build" but not "sudo rm -rf build" nor
// "ls && rm -rf build": a pattern matches the text of a call, not its
// meaning. Write Bash(*rm *) to catch rm anywhere in a command, and keep
// the fallback "*" at MEDIUM or HIGH, never LOW. Parentheses inside a
// glob must balance; a | inside them belongs to the glob (Bash(ls | wc)).
//
// The primary argument of a call is the first of input.command,
// input.file_path, input.path, input.notebook_path, input.url,
// input.pattern and input.query that is a string. A call with none never
// matches a Name(glob) pattern.
//
// Precedence: the most specific alternative that matches wins, Name(glob)
// before Name before *; among matches equally specific the highest risk
// wins (fail closed). A call no alternative matches is HIGH. So with
//
//	"Read|Glob|Grep": {risk: LOW}
//	"Bash(rm *)|Bash(git push*)": {risk: HIGH}
//	"*": {risk: MEDIUM}
//
// Read is LOW, Bash "rm -rf /" HIGH, Bash "ls" MEDIUM (only * matches),
// WebFetch MEDIUM.
type Rules struct {
	// byTool holds the alternatives naming each tool; star those of *.
	byTool map[string][]alternative
	star   []alternative
}

// alternative is one alternative of a pattern.
type alternative struct {
	pattern string // the whole policy key it came from, as configured
	glob    string // the argument's glob; "" when hasGlob is false
	hasGlob bool
	risk    approval.Risk
}

// Specificities of an alternative; higher wins.
const (
	specStar = iota // *
	specName        // Name
	specGlob        // Name(glob)
)

// primaryKeys are the input fields that may hold a call's primary
// argument, in the order they are looked for.
var primaryKeys = []string{"command", "file_path", "path", "notebook_path", "url", "pattern", "query"}

// CompileRules compiles agents[].policy: pattern → rule. It reports every
// malformed pattern and unknown risk, each naming its key
// (agents[ci].policy."Bash(rm *": …). An empty policy compiles to rules
// under which every call is HIGH.
func CompileRules(agent string, policy map[string]RuleConfig) (*Rules, error) {
	keys := make([]string, 0, len(policy))
	for k := range policy {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the same rules and errors whatever the map's order
	r := &Rules{byTool: map[string][]alternative{}}
	var errs []error
	for _, key := range keys {
		where := fmt.Sprintf("agents[%s].policy.%q", agent, key)
		risk, err := approval.ParseRisk(policy[key].Risk)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.risk: %v", where, err))
		}
		alts, err := parsePattern(key)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", where, err))
			continue
		}
		for _, a := range alts {
			a.pattern, a.risk = key, risk
			if a.name == "*" {
				r.star = append(r.star, a.alternative)
			} else {
				r.byTool[a.name] = append(r.byTool[a.name], a.alternative)
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

// parsed is an alternative with the tool it names ("*" for every tool).
type parsed struct {
	name string
	alternative
}

// parsePattern splits a pattern into its alternatives and checks each.
func parsePattern(p string) ([]parsed, error) {
	if strings.TrimSpace(p) == "" {
		return nil, errors.New("the pattern is empty: write a tool name, Name(glob) or *")
	}
	// Split at the | outside parentheses.
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unbalanced parentheses: the \")\" at byte %d closes nothing", i+1)
			}
		case '|':
			if depth == 0 {
				parts = append(parts, p[start:i])
				start = i + 1
			}
		}
	}
	if depth > 0 {
		return nil, fmt.Errorf("unbalanced parentheses: %d \"(\" never closed", depth)
	}
	parts = append(parts, p[start:])
	out := make([]parsed, 0, len(parts))
	for i, s := range parts {
		a, err := parseAlternative(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("alternative %d of %d: %v", i+1, len(parts), err)
		}
		out = append(out, a)
	}
	return out, nil
}

// parseAlternative reads *, Name or Name(glob); its parentheses balance.
func parseAlternative(s string) (parsed, error) {
	if s == "" {
		return parsed{}, errors.New("it is empty (two | in a row, or a | at an end)")
	}
	name, glob, hasGlob := strings.Cut(s, "(")
	if hasGlob {
		// The ( after the name must close at the very end.
		depth := 1
		for i := len(name) + 1; i < len(s); i++ {
			switch s[i] {
			case '(':
				depth++
			case ')':
				depth--
			}
			if depth == 0 && i != len(s)-1 {
				return parsed{}, fmt.Errorf("%q follows the closing ); write Name(glob) with nothing after it", s[i+1:])
			}
		}
		glob = glob[:len(glob)-1]
		if glob == "" {
			return parsed{}, fmt.Errorf("%s() has an empty glob: write %s to match every call of the tool, or %s(*) for calls with a primary argument", name, name, name)
		}
		if strings.HasSuffix(glob, ":*") {
			glob = strings.TrimSuffix(glob, ":*") + "*"
		}
	}
	switch {
	case name == "":
		return parsed{}, errors.New("a ( without a tool name before it: write Name(glob)")
	case name == "*" && hasGlob:
		return parsed{}, errors.New("*(…) is not a pattern: * alone matches every tool; write Name(glob) for one tool's arguments")
	case name != "*" && strings.ContainsAny(name, "*?[]{}|"):
		return parsed{}, fmt.Errorf("the tool name %q holds a wildcard: names match exactly, and * alone matches every tool", name)
	case strings.ContainsFunc(name, isSpaceOrControl):
		return parsed{}, fmt.Errorf("the tool name %q holds a space or control character", name)
	}
	return parsed{name: name, alternative: alternative{glob: glob, hasGlob: hasGlob}}, nil
}

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }

// Risk returns the risk of one call and the pattern (the policy's key, as
// configured) that decided it: "" when none matched, and then HIGH (fail
// closed). A nil Rules matches nothing.
func (r *Rules) Risk(tool string, input json.RawMessage) (approval.Risk, string) {
	if r == nil {
		return approval.RiskHigh, ""
	}
	best, bestSpec, found := alternative{}, -1, false
	consider := func(a alternative, spec int) {
		if !found || spec > bestSpec || spec == bestSpec && a.risk > best.risk {
			best, bestSpec, found = a, spec, true
		}
	}
	for _, a := range r.star {
		consider(a, specStar)
	}
	alts := r.byTool[tool]
	arg, argOK, argRead := "", false, false
	for _, a := range alts {
		if !a.hasGlob {
			consider(a, specName)
			continue
		}
		if !argRead {
			arg, argOK = primaryArg(input)
			argRead = true
		}
		if argOK && matchGlob(a.glob, arg) {
			consider(a, specGlob)
		}
	}
	if !found {
		return approval.RiskHigh, ""
	}
	return best.risk, best.pattern
}

// primaryArg returns a call's primary argument: the first of primaryKeys
// whose value is a string. Input that is not a JSON object has none.
func primaryArg(input json.RawMessage) (string, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(input, &fields) != nil {
		return "", false
	}
	for _, k := range primaryKeys {
		raw, ok := fields[k]
		if !ok {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil && len(raw) > 0 && raw[0] == '"' {
			return s, true
		}
	}
	return "", false
}

// matchGlob reports whether glob matches all of s: * matches any run of
// bytes, every other byte itself. It backtracks only to the last *, so it
// takes at most len(glob)·len(s) steps.
func matchGlob(glob, s string) bool {
	g, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case g < len(glob) && glob[g] == '*':
			star, mark = g, i
			g++
		case g < len(glob) && glob[g] == s[i]:
			g++
			i++
		case star >= 0:
			mark++
			g, i = star+1, mark
		default:
			return false
		}
	}
	for g < len(glob) && glob[g] == '*' {
		g++
	}
	return g == len(glob)
}
