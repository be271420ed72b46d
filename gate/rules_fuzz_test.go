package gate

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hitlbot/hitlbot/approval"
)

// FuzzRules compiles a policy of two fuzzed patterns (one LOW, one
// HIGH) and a MEDIUM fallback when asked, and asks it about a fuzzed call.
// Whatever comes in, nothing panics; a LOW answer names a LOW pattern
// that, alone, gives the call LOW too; a call that the LOW pattern alone
// does not match is never LOW; and matchGlob agrees with a regular
// expression built from the glob.
func FuzzRules(f *testing.F) {
	f.Add("Read|Glob|Grep", "Bash(rm *)|Bash(git push*)", true, "Bash", "rm -rf /")
	f.Add("Bash(ls*)", "Bash", false, "Bash", "ls -l")
	f.Add("Bash(npm run test:*)", "*", false, "Bash", "npm run test")
	f.Add("*", "Bash(*rm *)", true, "Bash", "cd x && rm -rf y")
	f.Add("Bash(ls | wc*)", "Bash(a)(b)", false, "Bash", "ls | wc")
	f.Add("((", "|", true, "", "")
	f.Add("Read(长*)", "Write", true, "Read", "长城\xff")
	f.Fuzz(func(t *testing.T, low, high string, fallback bool, tool, arg string) {
		policy := map[string]RuleConfig{low: {Risk: "LOW"}, high: {Risk: "HIGH"}}
		if fallback {
			policy["*"] = RuleConfig{Risk: "MEDIUM"}
		}
		r, err := CompileRules("fuzz", policy)
		input, _ := json.Marshal(map[string]string{"command": arg})
		risk, pattern := r.Risk(tool, input) // nil rules are HIGH
		if err != nil {
			if r != nil || risk != approval.RiskHigh || pattern != "" {
				t.Fatalf("failed to compile (%v), yet %v by %q", err, risk, pattern)
			}
			return
		}
		if pattern == "" && risk != approval.RiskHigh {
			t.Fatalf("no pattern decided, yet %v", risk)
		}
		if pattern != "" {
			if _, ok := policy[pattern]; !ok {
				t.Fatalf("decided by %q, not a pattern of the policy", pattern)
			}
		}
		lowOnly, err := CompileRules("fuzz", map[string]RuleConfig{low: {Risk: "LOW"}})
		if err != nil {
			t.Fatalf("%q compiled with others but not alone: %v", low, err)
		}
		lowRisk, _ := lowOnly.Risk(tool, input)
		// Never LOW for a call that matches no LOW alternative.
		if risk == approval.RiskLow && (policy[pattern].Risk != "LOW" || lowRisk != approval.RiskLow) {
			t.Fatalf("LOW by %q, but the LOW pattern %q alone gives %s %q %v", pattern, low, tool, arg, lowRisk)
		}
	})
}

// FuzzMatchGlob: matchGlob agrees with the regular expression of its
// glob (* is .*, everything else literal, anchored at both ends). The
// expression reads runes, matchGlob bytes: they agree on valid UTF-8,
// where a literal can only match at a rune's start.
func FuzzMatchGlob(f *testing.F) {
	for _, tt := range globTests {
		f.Add(tt.glob, tt.s)
	}
	f.Fuzz(func(t *testing.T, glob, s string) {
		got := matchGlob(glob, s)
		if !utf8.ValidString(glob) || !utf8.ValidString(s) {
			return
		}
		parts := strings.Split(glob, "*")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		re := regexp.MustCompile(`(?s)\A` + strings.Join(parts, ".*") + `\z`)
		if want := re.MatchString(s); got != want {
			t.Fatalf("matchGlob(%q, %q) = %v, the regular expression %s says %v", glob, s, got, re, want)
		}
	})
}
