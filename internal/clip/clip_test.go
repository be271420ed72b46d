package clip_test

import (
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/internal/clip"
)

func TestFirstLine(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"", ""},
		{"one line", "one line"},
		{"first\nsecond", "first"},
		{"\nafter an empty line", ""},
		{"ends with a newline\n", "ends with a newline"},
		{"carriage\r\nreturn", "carriage\r"},
		{"擦除：orders\n第二行", "擦除：orders"},
	} {
		if got := clip.FirstLine(tt.in); got != tt.want {
			t.Errorf("FirstLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRunes(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"任务列表", 4, "任务列表"}, // 12 bytes, 4 runes: not cut
		{"任务列表", 3, "任务列…"}, // never splits a rune
		{"a任b务", 2, "a任…"},
		{"abc", 0, "…"},
		{"abc", -1, "…"},
		{"", 0, ""},
	} {
		if got := clip.Runes(tt.in, tt.n); got != tt.want {
			t.Errorf("Runes(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

// The loop's and the router's summary: the first line, at most n runes.
func TestFirstLineThenRunes(t *testing.T) {
	long := "erase: " + strings.Repeat("x", 300) + "\nsecond line"
	got := clip.Runes(clip.FirstLine(long), 120)
	if want := "erase: " + strings.Repeat("x", 113) + "…"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
