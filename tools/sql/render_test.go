package sqltool

import (
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/words"
)

var formatCases = []struct {
	in   any
	want string
}{
	{nil, "NULL"},
	{"NULL", "NULL"}, // the text NULL looks the same; the table cannot tell them apart
	{int64(-7), "-7"},
	{3.5, "3.5"},
	{true, "true"},
	{[]byte("text"), "text"},
	{[]byte{0xde, 0xad, 0xbe, 0xef}, "0xdeadbeef"},
	{"two\nlines\ttab", `two\nlines\ttab`},
	{"bell\a", `bell\x07`},
	{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "2026-01-02T03:04:05Z"},
	{strings.Repeat("x", MaxCellRunes), strings.Repeat("x", MaxCellRunes)},
	{strings.Repeat("é", MaxCellRunes+1), strings.Repeat("é", MaxCellRunes) + "…"},
	{struct{ A int }{1}, "{1}"},
}

func TestFormatValue(t *testing.T) {
	for _, tc := range formatCases {
		if got := formatValue(tc.in); got != tc.want {
			t.Errorf("formatValue(%#v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRenderTable(t *testing.T) {
	got := renderTable(words.EN, []string{"id", "名字"}, [][]string{{"1", "王芳"}, {"22", "Bob"}}, false)
	want := "id | 名字\n---+-----\n1  | 王芳\n22 | Bob\n(2 rows)"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := renderTable(words.EN, []string{"n"}, nil, false); got != "n\n-\n(0 rows)" {
		t.Errorf("empty: %q", got)
	}
	if got := renderTable(words.EN, nil, nil, false); !strings.Contains(got, "no columns") {
		t.Errorf("no columns: %q", got)
	}
}
