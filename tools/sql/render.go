package sqltool

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/text/width"

	"github.com/hitlbot/hitlbot/words"
)

// MaxCellRunes is the most runes of one value a result table shows; a longer
// value is cut and ends in "…".
const MaxCellRunes = 60

// formatValue renders one value of a result row.
func formatValue(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		if utf8.Valid(x) {
			s = string(x)
		} else {
			s = "0x" + hex.EncodeToString(x[:min(len(x), MaxCellRunes)])
		}
	case string:
		s = x
	case int64:
		s = strconv.FormatInt(x, 10)
	case float64:
		s = strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		s = strconv.FormatBool(x)
	case time.Time:
		s = x.Format(time.RFC3339Nano)
	default:
		s = fmt.Sprint(x)
	}
	return cell(s)
}

// cell makes a value fit on one line of a table: control characters become
// visible escapes (a value cannot fake extra rows), and the text is cut to
// MaxCellRunes runes.
func cell(s string) string {
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == MaxCellRunes {
			b.WriteString("…")
			break
		}
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < ' ' || r == 0x7f || r == '\u2028' || r == '\u2029':
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
		n++
	}
	return b.String()
}

// displayWidth is how many terminal columns s takes: East Asian wide and
// full-width characters take two.
func displayWidth(s string) int {
	w := 0
	for _, r := range s {
		switch width.LookupRune(r).Kind() {
		case width.EastAsianWide, width.EastAsianFullwidth:
			w += 2
		default:
			w++
		}
	}
	return w
}

// renderTable lays out a result as aligned text: a header of column names,
// a rule, the rows, and a line that counts them.
func renderTable(lang words.Lang, cols []string, rows [][]string, more bool) string {
	if len(cols) == 0 {
		return words.Text(lang, words.SQLNoColumns)
	}
	widths := make([]int, len(cols))
	header := make([]string, len(cols))
	for i, c := range cols {
		header[i] = cell(c)
		widths[i] = displayWidth(header[i])
	}
	for _, r := range rows {
		for i, v := range r {
			widths[i] = max(widths[i], displayWidth(v))
		}
	}
	var b strings.Builder
	line := func(vals []string) {
		var l strings.Builder
		for i, v := range vals {
			if i > 0 {
				l.WriteString(" | ")
			}
			l.WriteString(v)
			if i < len(vals)-1 {
				l.WriteString(strings.Repeat(" ", widths[i]-displayWidth(v)))
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " "))
		b.WriteByte('\n')
	}
	line(header)
	for i, w := range widths {
		if i > 0 {
			b.WriteString("-+-")
		}
		b.WriteString(strings.Repeat("-", w))
	}
	b.WriteByte('\n')
	for _, r := range rows {
		line(r)
	}
	switch {
	case more:
		b.WriteString(words.Text(lang, words.SQLResultMore, len(rows)))
	case len(rows) == 1:
		b.WriteString(words.Text(lang, words.SQLResultRow))
	default:
		b.WriteString(words.Text(lang, words.SQLResultRows, len(rows)))
	}
	return b.String()
}
