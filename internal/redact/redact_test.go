package redact_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/hitlbot/hitlbot/internal/redact"
)

func TestText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"password=hunter2", "password=[REDACTED]"},
		{"db_password: 'hunter 2' ok", "db_password: [REDACTED] ok"},
		{`{"api_key": "abc", "n": 1}`, `{"api_key": [REDACTED], "n": 1}`},
		{"see https://x.io/?a=1&access_token=abcd&b=2", "see https://x.io/?a=1&access_token=[REDACTED]&b=2"},
		{"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc", "Authorization: Bearer [REDACTED]"},
		{"use Bearer eyJhbGciOiJIUzI1NiJ9 now", "use Bearer [REDACTED] now"},
		{"Basic dXNlcjpwYXNz", "Basic [REDACTED]"},
		{"basic functionality works", "basic functionality works"},
		{"postgres://app:s3cret@db:5432/x", "postgres://app:[REDACTED]@db:5432/x"},
		{"key sk-abcdefghijklmnopqrstuv here", "key [REDACTED] here"},
		{"AKIAABCDEFGHIJKLMNOP", "[REDACTED]"},
		{"not now, the author is away", "not now, the author is away"},
		{"token expired yesterday", "token expired yesterday"},
		{"取消：密码不对", "取消：密码不对"},
	} {
		if got := redact.Text(c.in); got != c.want {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestClean(t *testing.T) {
	in := "  not now\x1b[31m\r\n\ttoken=abc123\u202e txt " + strings.Repeat("é", 600) + "\xff"
	got := redact.Clean(in, 500)
	if !strings.HasPrefix(got, "not now[31m   token=[REDACTED] txt éé") {
		t.Fatalf("Clean = %q", got)
	}
	if n := utf8.RuneCountInString(got); n != 501 || !strings.HasSuffix(got, "…") {
		t.Fatalf("Clean is %d runes: %q", n, got)
	}
	if got := redact.Clean("short", 500); got != "short" {
		t.Fatalf("Clean(short) = %q", got)
	}
	if got := redact.Clean("", 500); got != "" {
		t.Fatalf("Clean(empty) = %q", got)
	}
}

func TestValue(t *testing.T) {
	v := map[string]any{
		"host": "db1", "Password": "hunter2", "nested": map[string]any{"client_secret": 42, "dsn": nil},
		"list": []any{"a", "b", "c", "d"}, "note": strings.Repeat("x", 50), "url": "ftp://u:p4ss@h/",
	}
	got := redact.Value(v, 30, 3).(map[string]any)
	if got["host"] != "db1" || got["Password"] != redact.Mark {
		t.Fatalf("Value = %v", got)
	}
	if n := got["nested"].(map[string]any); n["client_secret"] != redact.Mark || n["dsn"] != nil {
		t.Fatalf("nested = %v", n)
	}
	if l := got["list"].([]any); len(l) != 4 || l[2] != "c" || l[3] != "… 1 more" {
		t.Fatalf("list = %v", l)
	}
	if got["note"] != strings.Repeat("x", 30)+"…" || got["url"] != "ftp://u:[REDACTED]@h/" {
		t.Fatalf("strings = %q %q", got["note"], got["url"])
	}
	if v["Password"] != "hunter2" {
		t.Fatal("Value changed its input")
	}
	// Deep nesting is bounded.
	var deep any = "bottom"
	for range 100 {
		deep = []any{deep}
	}
	d := redact.Value(deep, 0, 0)
	for i := 0; ; i++ {
		l, ok := d.([]any)
		if !ok {
			if d != "…" || i != 32 {
				t.Fatalf("depth %d ends in %v", i, d)
			}
			break
		}
		d = l[0]
	}
}

// FuzzClean: whatever comes in, Clean returns valid UTF-8 without control
// characters, within its bound, and never the value after password=.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"", "not now", "password=hunter2", "\x00\x1b[2J", "é\xff", "Bearer abcdefghijkl", strings.Repeat("长", 700)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := redact.Clean(s, 100)
		if !utf8.ValidString(got) {
			t.Fatalf("Clean(%q) = %q: invalid UTF-8", s, got)
		}
		if n := utf8.RuneCountInString(got); n > 101 {
			t.Fatalf("Clean(%q) is %d runes", s, n)
		}
		for _, r := range got {
			if unicode.IsControl(r) {
				t.Fatalf("Clean(%q) = %q holds %U", s, got, r)
			}
		}
		if got2 := redact.Clean(s+" password=SEKRETVALUE", 0); strings.Contains(got2, "SEKRETVALUE") {
			t.Fatalf("Clean(%q) kept the password: %q", s, got2)
		}
	})
}
