// Package wordstest finds English words in text that should be Chinese:
// the check behind the tests that every sentence hitlbot says in zh is
// Chinese except names, code and values.
package wordstest

import (
	"regexp"
	"slices"
	"strings"
)

// Allowed are the English words a Chinese sentence may hold: names of
// things that have no Chinese name in an ops team's daily speech (they
// are written so on Chinese consoles and in Chinese docs), the SQL verbs a
// statement's preview and result name (code), and the platforms' names.
var Allowed = []string{
	// Protocols, formats and products, written in Latin letters in Chinese too.
	"SQL", "JSON", "HTTP", "HTTPS", "URL", "API", "MCP", "LLM", "Redis", "WebSocket", "YAML", "CLI",
	"Feishu", "Lark", "DingTalk", "OpenAI", "CardKit", "Docker", "PID", "DNS", "TLS", "UTF", "NUL",
	"hitlbot", "stdio", "stderr", "stdout", "MySQL", "PostgreSQL", "SQLite",
	// HTTP methods, as an API's routes are written.
	"GET", "POST", "PUT", "PATCH",
	// Keys as a keyboard labels them.
	"Ctrl", "Shift", "Enter", "Esc", "Tab",
	// Time zones, as a time is written ("14:32 CST").
	"UTC", "CST", "GMT",
	// JSON's values, as a config or a frame holds them.
	"true", "false", "null",
	// SQL statements' verbs and clauses: a result or a preview names the
	// statement as code ("INSERT 已在 demo 上执行").
	"SELECT", "INSERT", "UPDATE", "DELETE", "REPLACE", "MERGE", "CREATE", "ALTER", "DROP", "TRUNCATE",
	"RENAME", "GRANT", "REVOKE", "WHERE", "COMMIT", "ROLLBACK", "BEGIN", "DDL", "CALL", "SET", "LOAD",
	// The risk levels and their config names, written as configured.
	"LOW", "MEDIUM", "HIGH",
}

// spans are the parts of a sentence that are code or values, never words:
// quoted and backquoted text, URLs, paths, commands and options, fmt
// verbs, identifiers (with an underscore, a digit, a dot or an inner
// capital), JSON objects and placeholders in angle brackets.
var spans = []*regexp.Regexp{
	regexp.MustCompile("`[^`]*`"),
	regexp.MustCompile(`"[^"\n]*"`),
	regexp.MustCompile(`“[^”\n]*”`),
	regexp.MustCompile(`「[^」\n]*」`),
	regexp.MustCompile(`'[^'\n]*'`),
	regexp.MustCompile(`\{[^{}\n]*\}`),
	regexp.MustCompile(`<[^<>\n]*>`),
	regexp.MustCompile(`[a-z][a-z0-9+.-]*://\S+`),
	regexp.MustCompile(`\bbot [a-z]+`),                                     // a command of the binary: bot chat
	regexp.MustCompile(`(^|[^A-Za-z0-9])[/~][A-Za-z?][\w/{}.?=-]*( all)?`), // a path, a route, a chat command as typed (/revoke all)
	regexp.MustCompile(`--?[A-Za-z][\w-]*`),
	regexp.MustCompile(`%[-+# 0]*(\[\d+\])?(\d+|\*)?(\.(\d+|\*)?)?[a-zA-Z%]`),
	regexp.MustCompile(`[A-Za-z0-9]*[_.:$=][A-Za-z0-9_.:$=/-]+`),
	regexp.MustCompile(`[A-Za-z]*[0-9][A-Za-z0-9]*`),
	regexp.MustCompile(`\b[a-z]+[A-Z][A-Za-z]*\b`),
}

var word = regexp.MustCompile(`[A-Za-z]{3,}`)

// English returns the English words of s that are not code, values or
// Allowed (plus extra, the names the caller's text holds: tools, tables,
// databases, people), in order.
func English(s string, extra ...string) []string {
	for _, re := range spans {
		s = re.ReplaceAllString(s, " ")
	}
	var out []string
	for _, w := range word.FindAllString(s, -1) {
		if slices.ContainsFunc(Allowed, func(a string) bool { return strings.EqualFold(a, w) }) ||
			slices.Contains(extra, w) {
			continue
		}
		out = append(out, w)
	}
	return out
}
