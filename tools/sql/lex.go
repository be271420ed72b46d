package sqltool

import (
	"errors"
	"strings"
)

// dialect selects the lexical rules of one database's SQL.
type dialect int

const (
	dialectSQLite dialect = iota + 1
	dialectPostgres
	dialectMySQL
)

// tokKind is the kind of one lexical token.
type tokKind int

const (
	tokWord   tokKind = iota // an unquoted keyword or identifier
	tokIdent                 // a quoted identifier: "x", `x`, [x]
	tokString                // a string literal, including dollar-quoted ones
	tokNumber                // a numeric literal
	tokParam                 // a bind parameter: ?, ?1, $1
	tokPunct                 // one punctuation byte: ( ) , ; . = and the rest
)

// token is one lexical token of a statement. Comments and white space are
// not tokens.
type token struct {
	kind tokKind
	text string // as written in the statement
	up   string // tokWord: text in upper case; tokPunct: text
	pos  int    // byte offset in the statement
}

func (t token) is(s string) bool { return (t.kind == tokWord || t.kind == tokPunct) && t.up == s }

var (
	errUnterminatedString  = errors.New("a string literal or quoted identifier is not closed")
	errUnterminatedComment = errors.New("a /* comment is not closed")
)

// lexer splits a statement into tokens following one dialect's rules for
// literals, quoted identifiers and comments, which are what decide whether
// a ';' or a keyword is code or text.
type lexer struct {
	src string
	d   dialect
	// backslash: a backslash escapes the next byte inside '…' (and, on
	// MySQL, "…") literals. MySQL does this unless NO_BACKSLASH_ESCAPES is
	// set; PostgreSQL does it only with standard_conforming_strings off.
	// The classifier lexes both ways and refuses a statement whose meaning
	// depends on it.
	backslash bool
}

// lex returns the tokens of src.
func lex(src string, d dialect, backslash bool) ([]token, error) {
	l := lexer{src: src, d: d, backslash: backslash}
	return l.run()
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isLetter(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c >= 0x80
}

func (l *lexer) identStart(c byte) bool {
	return isLetter(c) || l.d == dialectMySQL && c == '$'
}

func (l *lexer) identPart(c byte) bool { return isLetter(c) || isDigit(c) || c == '$' }

// namedParam returns the end of a named parameter or variable starting at
// i (SQLite :name, @name, $name; MySQL @name, @@name, @@scope.name), or i
// when there is none.
func (l *lexer) namedParam(i int) int {
	c, j := l.at(i), i+1
	switch {
	case l.d == dialectSQLite && (c == ':' || c == '@' || c == '$'):
	case l.d == dialectMySQL && c == '@':
		if l.at(j) == '@' {
			j++
		}
	default:
		return i
	}
	k := j
	for k < len(l.src) && (l.identPart(l.src[k]) || l.d == dialectMySQL && l.src[k] == '.') {
		k++
	}
	if k == j {
		return i
	}
	return k
}

func (l *lexer) at(i int) byte {
	if i < len(l.src) {
		return l.src[i]
	}
	return 0
}

func (l *lexer) run() ([]token, error) {
	src, n := l.src, len(l.src)
	var toks []token
	inExec := false // inside a MySQL /*! … */ executable comment
	emit := func(k tokKind, start, end int) {
		t := token{kind: k, text: src[start:end], pos: start}
		switch k {
		case tokWord:
			t.up = strings.ToUpper(t.text)
		case tokPunct:
			t.up = t.text
		}
		toks = append(toks, t)
	}
	i := 0
	for i < n {
		c := src[i]
		switch {
		case isSpace(c):
			i++
		case c == '-' && l.at(i+1) == '-' &&
			(l.d != dialectMySQL || i+2 >= n || isSpace(src[i+2]) || src[i+2] < ' '):
			// MySQL needs white space (or a control byte) after "--";
			// elsewhere "--" always starts a comment.
			i = l.lineEnd(i)
		case c == '#' && l.d == dialectMySQL:
			i = l.lineEnd(i)
		case c == '/' && l.at(i+1) == '*':
			if l.d == dialectMySQL && !inExec && (l.at(i+2) == '!' || l.at(i+2) == 'M' && l.at(i+3) == '!') {
				// /*! code */ and MariaDB's /*M! code */ are executed:
				// their content is code, lexed as such.
				i += 3
				if src[i-1] == 'M' {
					i++
				}
				for i < n && isDigit(src[i]) {
					i++
				}
				inExec = true
				continue
			}
			end, err := l.blockComment(i)
			if err != nil {
				return nil, err
			}
			i = end
		case c == '*' && inExec && l.at(i+1) == '/':
			inExec = false
			i += 2
		case c == '\'':
			end, err := l.quoted(i, '\'', l.backslash)
			if err != nil {
				return nil, err
			}
			emit(tokString, i, end)
			i = end
		case c == '"':
			kind, bs := tokIdent, false
			if l.d == dialectMySQL {
				// A string unless ANSI_QUOTES; a literal either way.
				kind, bs = tokString, l.backslash
			}
			end, err := l.quoted(i, '"', bs)
			if err != nil {
				return nil, err
			}
			emit(kind, i, end)
			i = end
		case c == '`' && l.d != dialectPostgres:
			end, err := l.quoted(i, '`', false)
			if err != nil {
				return nil, err
			}
			emit(tokIdent, i, end)
			i = end
		case c == '[' && l.d == dialectSQLite:
			j := strings.IndexByte(src[i+1:], ']')
			if j < 0 {
				return nil, errUnterminatedString
			}
			emit(tokIdent, i, i+1+j+1)
			i += j + 2
		case c == '$' && l.d == dialectPostgres:
			if isDigit(l.at(i + 1)) {
				j := i + 1
				for j < n && isDigit(src[j]) {
					j++
				}
				emit(tokParam, i, j)
				i = j
				continue
			}
			j := i + 1
			for j < n && src[j] != '$' && (isLetter(src[j]) || isDigit(src[j])) {
				j++
			}
			if j < n && src[j] == '$' {
				delim := src[i : j+1]
				k := strings.Index(src[j+1:], delim)
				if k < 0 {
					return nil, errUnterminatedString
				}
				end := j + 1 + k + len(delim)
				emit(tokString, i, end)
				i = end
				continue
			}
			emit(tokPunct, i, i+1)
			i++
		case l.identStart(c):
			j := i + 1
			for j < n && l.identPart(src[j]) {
				j++
			}
			if l.d == dialectPostgres && j == i+1 && (c == 'E' || c == 'e') && l.at(j) == '\'' {
				// E'…': a PostgreSQL string with backslash escapes.
				end, err := l.quoted(j, '\'', true)
				if err != nil {
					return nil, err
				}
				emit(tokString, i, end)
				i = end
				continue
			}
			emit(tokWord, i, j)
			i = j
		case isDigit(c) || c == '.' && isDigit(l.at(i+1)):
			j := i + 1
			for j < n && (isDigit(src[j]) || isLetter(src[j]) || src[j] == '.') {
				j++
			}
			emit(tokNumber, i, j)
			i = j
		case c == '?':
			j := i + 1
			for j < n && isDigit(src[j]) {
				j++
			}
			emit(tokParam, i, j)
			i = j
		case l.namedParam(i) > i:
			// SQLite's :name, @name and $name parameters, MySQL's @var
			// and @@var: a value, never a keyword ("SET a = :where" has
			// no WHERE clause).
			j := l.namedParam(i)
			emit(tokParam, i, j)
			i = j
		default:
			emit(tokPunct, i, i+1)
			i++
		}
	}
	if inExec {
		return nil, errUnterminatedComment
	}
	return toks, nil
}

// lineEnd returns the offset after the line comment that starts at i.
func (l *lexer) lineEnd(i int) int {
	j := strings.IndexByte(l.src[i:], '\n')
	if j < 0 {
		return len(l.src)
	}
	return i + j + 1
}

// blockComment returns the offset after the /* comment that starts at i.
// PostgreSQL nests block comments; the others do not. An unclosed comment
// is an error everywhere (SQLite would accept it, but nothing needs it).
func (l *lexer) blockComment(i int) (int, error) {
	src, n := l.src, len(l.src)
	depth, j := 1, i+2
	for j < n {
		switch {
		case src[j] == '*' && l.at(j+1) == '/':
			depth--
			j += 2
			if depth == 0 {
				return j, nil
			}
		case l.d == dialectPostgres && src[j] == '/' && l.at(j+1) == '*':
			depth++
			j += 2
		default:
			j++
		}
	}
	return 0, errUnterminatedComment
}

// quoted returns the offset after the literal or quoted identifier that
// starts with the quote byte q at i. A doubled quote stands for itself; with
// backslash set, a backslash escapes the byte after it.
func (l *lexer) quoted(i int, q byte, backslash bool) (int, error) {
	src, n := l.src, len(l.src)
	for j := i + 1; j < n; j++ {
		switch src[j] {
		case '\\':
			if backslash {
				j++
			}
		case q:
			if l.at(j+1) == q {
				j++
				continue
			}
			return j + 1, nil
		}
	}
	return 0, errUnterminatedString
}
