package sqltool

import (
	"fmt"
	"strings"

	"github.com/hitlbot/hitlbot/approval"
	"github.com/hitlbot/hitlbot/words"
)

// Class is what a statement does, as far as the classifier can tell from
// its text.
type Class int

// Classes.
const (
	ClassRefused     Class = iota // not run by either tool; Reason says why
	ClassRead                     // reads only: sql_query runs it
	ClassWrite                    // changes data or schema in a way that can be changed back
	ClassDestructive              // deletes or overwrites (DELETE, DROP, TRUNCATE, UPDATE without WHERE, …)
)

var classNames = [...]string{"refused", "read", "write", "destructive"}

func (c Class) String() string {
	if c < 0 || int(c) >= len(classNames) {
		return fmt.Sprintf("Class(%d)", int(c))
	}
	return classNames[c]
}

// Classification is the verdict on one statement.
type Classification struct {
	// Class is what the statement does.
	Class Class
	// Verb is the statement's main keyword in upper case (SELECT, DELETE,
	// DROP TABLE, …), after any WITH clause; empty when it has none.
	Verb string
	// Reason explains a refusal, or why a change counts as destructive.
	Reason string
	// Statement is the statement as it will run: the input with surrounding
	// white space trimmed, otherwise verbatim.
	Statement string
	// High, for a change, says why the statement is HIGH risk whatever
	// rows it touches, in both languages (see HighReasons); empty for a
	// plain INSERT, UPDATE … WHERE or MERGE, whose risk depends on the
	// rows its dry run affects.
	High approval.Words

	// targets are the tables the statement changes, as written (for DROP
	// TABLE and TRUNCATE: every table; for INSERT, UPDATE, DELETE, REPLACE:
	// the first). ifExists reports DROP … IF EXISTS.
	targets  []string
	ifExists bool
	// names are the lower-cased identifiers the statement mentions.
	names []string
}

// Effect is the statement's effect for approval; a refused one is destructive
// so that it is never run without a person, even by mistake.
func (c Classification) Effect() approval.Effect {
	switch c.Class {
	case ClassRead:
		return approval.EffectRead
	case ClassWrite:
		return approval.EffectWrite
	}
	return approval.EffectDestructive
}

// dialectOf maps a driver name (see DatabaseConfig.Driver) to its dialect.
func dialectOf(driver string) (dialect, bool) {
	switch strings.ToLower(driver) {
	case "sqlite", "sqlite3":
		return dialectSQLite, true
	case "postgres", "postgresql", "pgx":
		return dialectPostgres, true
	case "mysql", "mariadb":
		return dialectMySQL, true
	}
	return 0, false
}

// Classify decides what one statement does, following the lexical rules of
// the driver's SQL dialect ("sqlite", "postgres" or "mysql"): comments,
// string literals and quoted identifiers are never mistaken for code.
//
// Refused: an empty statement, several statements (a ';' that is not the
// last token), an unclosed literal or comment, unbalanced parentheses, a
// data-modifying WITH clause, transaction control and session state (BEGIN,
// COMMIT, SET, USE, ATTACH, …), SELECT … INTO, locking reads, setting
// PRAGMAs, and anything else not listed below.
//
// Read: SELECT, VALUES, TABLE, WITH … SELECT, EXPLAIN, SHOW, DESCRIBE and
// (SQLite) the PRAGMAs that only report, provided that no INSERT, UPDATE,
// DELETE, DROP, … keyword appears anywhere in them.
//
// Destructive: DELETE, DROP, TRUNCATE, REPLACE, UPDATE without a top-level
// WHERE, INSERT/UPDATE OR REPLACE, CREATE OR REPLACE, ALTER … DROP, CALL and
// DO (a procedure can do anything), and any change that mentions DELETE,
// DROP or TRUNCATE as an action. Write: the other INSERT, UPDATE, MERGE and
// DDL statements.
//
// High says, in English and Chinese, why a change is HIGH risk whatever
// rows it touches: every destructive change (UPDATE or DELETE without
// WHERE among them) and every change that is not INSERT, UPDATE, DELETE,
// REPLACE or MERGE (DDL, GRANT, maintenance). The other changes are HIGH
// only when their dry run affects more rows than the policy allows (see
// sql_execute's Assess). Named parameters and variables (:name, @name,
// $name on SQLite; @var on MySQL) are values, never keywords.
func Classify(driver, statement string) Classification {
	stmt := strings.TrimSpace(statement)
	d, ok := dialectOf(driver)
	if !ok {
		return refuse(stmt, "", "unknown database driver %q", driver)
	}
	if strings.IndexByte(stmt, 0) >= 0 {
		// SQLite stops reading at a NUL byte; nothing needs one.
		return refuse(stmt, "", "it contains a NUL byte")
	}
	bs := d == dialectMySQL // the server default
	c := classifyLexed(d, stmt, bs)
	if d != dialectSQLite {
		// The server may treat backslashes in literals either way; refuse a
		// statement whose meaning depends on that.
		o := classifyLexed(d, stmt, !bs)
		if o.Class != c.Class || o.Verb != c.Verb || o.Reason != c.Reason {
			return refuse(stmt, c.Verb, "its meaning depends on how the server treats backslashes in string literals; write the literals without backslashes")
		}
	}
	return c
}

func refuse(stmt, verb, format string, args ...any) Classification {
	return Classification{Class: ClassRefused, Verb: verb, Statement: stmt, Reason: fmt.Sprintf(format, args...)}
}

var (
	// readVerbs start a statement that only reads.
	readVerbs = set("SELECT", "VALUES", "TABLE", "SHOW", "EXPLAIN", "DESCRIBE", "DESC", "PRAGMA")
	// readForbidden are keywords a read must not contain anywhere: they
	// would make it a change (EXPLAIN ANALYZE DELETE runs the DELETE,
	// SELECT … INTO creates a table or a file, FOR UPDATE locks).
	readForbidden = set("INSERT", "UPDATE", "DELETE", "DROP", "MERGE", "TRUNCATE", "ALTER", "CREATE",
		"INTO", "GRANT", "REVOKE", "ATTACH", "DETACH", "CALL", "COPY", "VACUUM", "REINDEX")
	// dmlWords make a WITH clause data-modifying.
	dmlWords = set("INSERT", "UPDATE", "DELETE", "MERGE")
	// writeVerbs start a change sql_execute runs.
	writeVerbs = set("INSERT", "UPDATE", "DELETE", "REPLACE", "MERGE", "CREATE", "ALTER", "DROP", "TRUNCATE",
		"RENAME", "COMMENT", "GRANT", "REVOKE", "ANALYZE", "REFRESH", "CLUSTER", "REINDEX", "OPTIMIZE", "CALL", "DO")
	// destructiveWords, used as an action, make a change destructive.
	destructiveWords = set("DELETE", "DROP", "TRUNCATE")
	// eventWords before DELETE/DROP/TRUNCATE name an event or a privilege,
	// not an action: ON DELETE CASCADE, AFTER DELETE ON, GRANT DELETE, …
	eventWords = set("ON", "AFTER", "BEFORE", "OF", "OR", ",", "GRANT", "REVOKE")
	// sessionVerbs are refused with a specific explanation.
	sessionVerbs = set("BEGIN", "START", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE", "ABORT",
		"SET", "RESET", "USE", "ATTACH", "DETACH", "VACUUM", "LOCK", "UNLOCK", "PREPARE", "EXECUTE", "EXEC",
		"DEALLOCATE", "DISCARD", "LISTEN", "UNLISTEN", "NOTIFY", "LOAD", "COPY", "HANDLER", "KILL", "FLUSH",
		"SHUTDOWN", "CHECKPOINT", "INSTALL", "UNINSTALL", "PURGE", "XA")
	// pragmaReads are the SQLite PRAGMAs that only report something when
	// given no argument.
	pragmaReads = set("APPLICATION_ID", "AUTO_VACUUM", "AUTOMATIC_INDEX", "BUSY_TIMEOUT", "CACHE_SIZE",
		"CACHE_SPILL", "CASE_SENSITIVE_LIKE", "CELL_SIZE_CHECK", "CHECKPOINT_FULLFSYNC", "COLLATION_LIST",
		"COMPILE_OPTIONS", "DATA_VERSION", "DATABASE_LIST", "DEFER_FOREIGN_KEYS", "ENCODING",
		"FOREIGN_KEY_CHECK", "FOREIGN_KEY_LIST", "FOREIGN_KEYS", "FREELIST_COUNT", "FULLFSYNC", "FUNCTION_LIST",
		"HARD_HEAP_LIMIT", "IGNORE_CHECK_CONSTRAINTS", "INTEGRITY_CHECK", "JOURNAL_MODE", "JOURNAL_SIZE_LIMIT",
		"LEGACY_ALTER_TABLE", "LOCKING_MODE", "MAX_PAGE_COUNT", "MMAP_SIZE", "MODULE_LIST", "PAGE_COUNT",
		"PAGE_SIZE", "PRAGMA_LIST", "QUERY_ONLY", "QUICK_CHECK", "READ_UNCOMMITTED", "RECURSIVE_TRIGGERS",
		"REVERSE_UNORDERED_SELECTS", "SCHEMA_VERSION", "SECURE_DELETE", "SOFT_HEAP_LIMIT", "SYNCHRONOUS",
		"TABLE_LIST", "TEMP_STORE", "THREADS", "TRUSTED_SCHEMA", "USER_VERSION", "WAL_AUTOCHECKPOINT")
	// pragmaArgReads are the SQLite PRAGMAs whose argument names what to
	// report on: PRAGMA table_info(orders).
	pragmaArgReads = set("FOREIGN_KEY_CHECK", "FOREIGN_KEY_LIST", "INDEX_INFO", "INDEX_LIST", "INDEX_XINFO",
		"INTEGRITY_CHECK", "QUICK_CHECK", "TABLE_INFO", "TABLE_LIST", "TABLE_XINFO")
)

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// classifyLexed lexes stmt with one backslash rule and classifies it.
func classifyLexed(d dialect, stmt string, backslash bool) Classification {
	toks, err := lex(stmt, d, backslash)
	if err != nil {
		return refuse(stmt, "", "%v", err)
	}
	return classifyTokens(d, stmt, toks)
}

func classifyTokens(d dialect, stmt string, toks []token) Classification {
	if len(toks) == 0 {
		return refuse(stmt, "", "the statement is empty")
	}
	for i, t := range toks {
		if t.is(";") && i != len(toks)-1 {
			return refuse(stmt, "", "it holds more than one statement; send one statement per call")
		}
	}
	if toks[len(toks)-1].is(";") {
		toks = toks[:len(toks)-1]
	}
	depth := 0
	for _, t := range toks {
		switch {
		case t.is("("):
			depth++
		case t.is(")"):
			depth--
		}
		if depth < 0 {
			break
		}
	}
	if depth != 0 {
		return refuse(stmt, "", "its parentheses are not balanced")
	}

	m := skipOpenParens(toks, 0)
	if m >= len(toks) || toks[m].kind != tokWord {
		return refuse(stmt, "", "it does not start with an SQL keyword")
	}
	if toks[m].up == "WITH" {
		main, ok := afterWith(toks, m)
		if !ok {
			return refuse(stmt, "WITH", "its WITH clause could not be read")
		}
		for _, t := range toks[m:main] {
			if t.kind == tokWord && dmlWords[t.up] {
				return refuse(stmt, "WITH", "a WITH clause that changes data (%s) is not supported; run the change as a plain statement", t.up)
			}
		}
		m = skipOpenParens(toks, main)
		if m >= len(toks) || toks[m].kind != tokWord {
			return refuse(stmt, "WITH", "no statement follows its WITH clause")
		}
	}
	c := Classification{Statement: stmt, Verb: toks[m].up, names: identifiers(toks)}
	verb := c.Verb
	switch {
	case readVerbs[verb]:
		return classifyRead(d, c, toks, m)
	case sessionVerbs[verb]:
		return refuse(stmt, verb, "%s statements are not allowed: each call runs in its own transaction on a shared connection pool", verb)
	case !writeVerbs[verb]:
		return refuse(stmt, verb, "%s statements are not supported", verb)
	}
	return classifyChange(c, toks, m)
}

// skipOpenParens returns the index of the first token at or after i that is not "(".
func skipOpenParens(toks []token, i int) int {
	for i < len(toks) && toks[i].is("(") {
		i++
	}
	return i
}

// closeParen returns the index of the ")" matching the "(" at i, or -1.
func closeParen(toks []token, i int) int {
	depth := 0
	for j := i; j < len(toks); j++ {
		switch {
		case toks[j].is("("):
			depth++
		case toks[j].is(")"):
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// afterWith reads "WITH [RECURSIVE] name [(cols)] AS [NOT] [MATERIALIZED]
// (body) [SEARCH … | CYCLE …] [, …]" starting at the WITH token at i and
// returns the index of the token after it: the main statement.
func afterWith(toks []token, i int) (int, bool) {
	j := i + 1
	if j < len(toks) && toks[j].is("RECURSIVE") {
		j++
	}
	for {
		if j >= len(toks) || toks[j].kind != tokWord && toks[j].kind != tokIdent {
			return 0, false
		}
		j++
		if j < len(toks) && toks[j].is("(") {
			if j = closeParen(toks, j); j < 0 {
				return 0, false
			}
			j++
		}
		if j >= len(toks) || !toks[j].is("AS") {
			return 0, false
		}
		j++
		if j < len(toks) && toks[j].is("NOT") {
			j++
		}
		if j < len(toks) && toks[j].is("MATERIALIZED") {
			j++
		}
		if j >= len(toks) || !toks[j].is("(") {
			return 0, false
		}
		if j = closeParen(toks, j); j < 0 {
			return 0, false
		}
		j++
		// PostgreSQL's SEARCH and CYCLE clauses run to the next comma or
		// the main statement.
		if j < len(toks) && (toks[j].is("SEARCH") || toks[j].is("CYCLE")) {
			for j < len(toks) && !toks[j].is(",") && !toks[j].is("(") && !(toks[j].kind == tokWord && (readVerbs[toks[j].up] || dmlWords[toks[j].up])) {
				j++
			}
		}
		if j < len(toks) && toks[j].is(",") {
			j++
			continue
		}
		return j, true
	}
}

// classifyRead checks a statement that starts like a read.
func classifyRead(d dialect, c Classification, toks []token, m int) Classification {
	for i, t := range toks {
		if t.kind == tokParam {
			// A parameter named like a change (:delete) is a value, but
			// a read has no need of one: keep to the plain rule.
			if name := strings.TrimLeft(t.text, ":@$"); readForbidden[strings.ToUpper(name)] {
				return refuse(c.Statement, c.Verb, "it starts like a read but contains the keyword %s; a change must be a plain statement sent with sql_execute (quote identifiers that are keywords)", strings.ToUpper(name))
			}
			continue
		}
		if t.kind != tokWord || !readForbidden[t.up] {
			continue
		}
		switch {
		case t.up == "UPDATE" && i > 0 && toks[i-1].is("FOR"):
			return refuse(c.Statement, c.Verb, "locking reads (FOR UPDATE) are not supported: sql_query only reads")
		case t.up == "INTO" && c.Verb == "SELECT":
			return refuse(c.Statement, c.Verb, "SELECT … INTO is not supported: it creates a table, a file or variables; use CREATE TABLE … AS with sql_execute")
		}
		return refuse(c.Statement, c.Verb, "it starts like a read but contains the keyword %s; a change must be a plain statement sent with sql_execute (quote identifiers that are keywords)", t.up)
	}
	if c.Verb == "PRAGMA" {
		if d != dialectSQLite {
			return refuse(c.Statement, c.Verb, "PRAGMA exists only in SQLite")
		}
		if reason := pragmaRefusal(toks[m+1:]); reason != "" {
			return refuse(c.Statement, c.Verb, "%s", reason)
		}
	}
	c.Class = ClassRead
	return c
}

// pragmaRefusal returns why a SQLite PRAGMA (the tokens after the keyword)
// is not a read, or "".
func pragmaRefusal(toks []token) string {
	if len(toks) >= 2 && toks[1].is(".") {
		toks = toks[2:] // schema.
	}
	if len(toks) == 0 || toks[0].kind != tokWord {
		return "the PRAGMA has no name"
	}
	name := toks[0].up
	switch rest := toks[1:]; {
	case len(rest) == 0:
		if !pragmaReads[name] {
			return "PRAGMA " + strings.ToLower(name) + " is not one of the PRAGMAs that only report"
		}
	case rest[0].is("="):
		return "PRAGMA … = value changes a setting; sql_query only reads"
	case rest[0].is("(") && len(rest) == 3 && rest[2].is(")") && rest[1].kind != tokPunct:
		if !pragmaArgReads[name] {
			return "PRAGMA " + strings.ToLower(name) + "(…) changes a setting; sql_query only reads"
		}
	default:
		return "the PRAGMA could not be read"
	}
	return ""
}

// ddlVerbs change the schema.
var ddlVerbs = set("CREATE", "ALTER", "DROP", "TRUNCATE", "RENAME", "COMMENT")

// classifyChange classifies a statement whose verb (at m) is a write verb.
func classifyChange(c Classification, toks []token, m int) Classification {
	body := toks[m:]
	word := func(i int) string {
		if i < len(body) && (body[i].kind == tokWord || body[i].kind == tokPunct) {
			return body[i].up
		}
		return ""
	}
	c.Class = ClassWrite
	// destructive marks the change destructive, saying why with the
	// catalogue's sentence k: in English (the Reason, also for the model)
	// and in both languages (High, for the card).
	destructive := func(k words.Key, args ...any) {
		if c.Class != ClassDestructive {
			c.Class, c.Reason, c.High = ClassDestructive, words.Text(words.EN, k, args...), approval.Say(k, args...)
		}
	}
	switch c.Verb {
	case "DELETE":
		if topLevel(body, "WHERE") {
			destructive(words.SQLDeleteRows)
		} else {
			destructive(words.SQLDeleteAll)
		}
		c.targets = nameAfter(body, "FROM")
	case "DROP":
		if word(1) == "TEMPORARY" {
			body = body[1:]
		}
		if word(1) != "" {
			c.Verb = "DROP " + word(1)
		}
		destructive(words.SQLDropsForGood, c.Verb)
		if word(1) == "TABLE" {
			i := 2
			if word(i) == "IF" && word(i+1) == "EXISTS" {
				c.ifExists, i = true, i+2
			}
			c.targets = nameList(body[i:])
		}
	case "TRUNCATE":
		destructive(words.SQLTruncate)
		i := 1
		if word(i) == "TABLE" {
			i++
		}
		if word(i) == "ONLY" {
			i++
		}
		c.targets = nameList(body[i:])
	case "REPLACE":
		destructive(words.SQLReplace)
		c.targets = nameAfter(body, "INTO")
	case "INSERT":
		if word(1) == "OR" && word(2) == "REPLACE" {
			destructive(words.SQLInsertOrReplace)
		}
		c.targets = nameAfter(body, "INTO")
	case "UPDATE":
		if word(1) == "OR" && word(2) == "REPLACE" {
			destructive(words.SQLUpdateOrReplace)
		}
		if !topLevel(body, "WHERE") {
			destructive(words.SQLUpdateAll)
		}
		i := 1
		for i < len(body) && (word(i) == "OR" || word(i) == "LOW_PRIORITY" || word(i) == "IGNORE" || word(i) == "ONLY" ||
			word(i-1) == "OR") {
			i++
		}
		c.targets = nameList(body[i:])
		if len(c.targets) > 1 {
			c.targets = c.targets[:1]
		}
	case "ALTER":
		if word(1) != "" {
			c.Verb = "ALTER " + word(1)
		}
		for _, t := range body {
			if t.is("DROP") {
				destructive(words.SQLAlterDrop)
			}
		}
	case "CREATE":
		i := 1
		if word(1) == "OR" && word(2) == "REPLACE" {
			destructive(words.SQLCreateOrReplace)
			i = 3
		}
		for word(i) == "TEMP" || word(i) == "TEMPORARY" || word(i) == "UNIQUE" || word(i) == "UNLOGGED" {
			i++
		}
		if i < len(body) && body[i].kind == tokWord {
			c.Verb = "CREATE " + body[i].up
		}
	case "CALL", "DO":
		destructive(words.SQLRunsCode, c.Verb)
	}
	if c.Verb != "GRANT" && c.Verb != "REVOKE" {
		for i, t := range toks {
			if t.kind == tokWord && destructiveWords[t.up] && i > m {
				if !eventWords[toks[i-1].up] {
					destructive(words.SQLContains, t.up)
				}
			}
		}
	}
	// A change that is not a row change (dmlVerbs) is HIGH whatever rows
	// it touches: DDL, privileges, maintenance.
	if c.High.IsZero() && !dmlVerbs[toks[m].up] {
		c.High = notRowChange(c.Verb, toks[m].up)
	}
	return c
}

// notRowChange says why a change that is not INSERT, UPDATE, DELETE,
// REPLACE or MERGE is HIGH: verb is the statement's verb as classified
// (CREATE TABLE), first its first keyword (CREATE).
func notRowChange(verb, first string) approval.Words {
	switch {
	case ddlVerbs[first]:
		return approval.Say(words.SQLSchema, verb)
	case first == "GRANT" || first == "REVOKE":
		return approval.Say(words.SQLPrivileges, verb)
	}
	return approval.Say(words.SQLWholeTables, verb)
}

// topLevel reports whether the keyword occurs outside parentheses.
func topLevel(toks []token, keyword string) bool {
	depth := 0
	for _, t := range toks {
		switch {
		case t.is("("):
			depth++
		case t.is(")"):
			depth--
		case depth == 0 && t.is(keyword):
			return true
		}
	}
	return false
}

// nameAfter returns the (qualified) name that follows the first top-level
// keyword, as a one-element list, or nil.
func nameAfter(toks []token, keyword string) []string {
	depth := 0
	for i, t := range toks {
		switch {
		case t.is("("):
			depth++
		case t.is(")"):
			depth--
		case depth == 0 && t.is(keyword):
			rest := toks[i+1:]
			if len(rest) > 1 && rest[0].is("ONLY") {
				rest = rest[1:]
			}
			if n, _ := qualifiedName(rest); n != "" {
				return []string{n}
			}
			return nil
		}
	}
	return nil
}

// nameList reads "name [*] [, name [*]]…" and returns the names.
func nameList(toks []token) []string {
	var out []string
	for {
		n, used := qualifiedName(toks)
		if n == "" {
			return out
		}
		out = append(out, n)
		toks = toks[used:]
		if len(toks) > 0 && toks[0].is("*") {
			toks = toks[1:]
		}
		if len(toks) == 0 || !toks[0].is(",") {
			return out
		}
		toks = toks[1:]
	}
}

// qualifiedName reads "ident [. ident]…" at the start of toks and returns
// it as written, with the number of tokens used.
func qualifiedName(toks []token) (string, int) {
	var b strings.Builder
	i := 0
	for i < len(toks) && (toks[i].kind == tokWord || toks[i].kind == tokIdent) {
		b.WriteString(toks[i].text)
		i++
		if i+1 < len(toks) && toks[i].is(".") && (toks[i+1].kind == tokWord || toks[i+1].kind == tokIdent) {
			b.WriteByte('.')
			i++
			continue
		}
		break
	}
	return b.String(), i
}

// identifiers returns every word and quoted identifier of the statement,
// unquoted and lower-cased, without duplicates.
func identifiers(toks []token) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range toks {
		var s string
		switch t.kind {
		case tokWord:
			s = t.text
		case tokIdent:
			q := t.text[:1]
			s = t.text[1 : len(t.text)-1]
			if q == "[" {
				break
			}
			s = strings.ReplaceAll(s, q+q, q)
		default:
			continue
		}
		s = strings.ToLower(s)
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
