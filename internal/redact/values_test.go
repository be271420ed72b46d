package redact

import "testing"

// valuesTests: what NewValues(secrets...).Hide does to text.
var valuesTests = []struct {
	name    string
	secrets []string
	text    string
	want    string
}{
	{"a value", []string{"s3cret-token"}, "got s3cret-token back", "got " + Mark + " back"},
	{"URL-escaped", []string{"a b&c=d"}, "q=a+b%26c%3Dd", "q=" + Mark},
	{"a bearer header and its credential alone", []string{"Bearer abc123"}, "Bearer abc123 / abc123", Mark + " / " + Mark},
	{"longest first", []string{"abcd", "abcdefgh"}, "abcdefgh", Mark},
	{"too short to hide", []string{"abc", ""}, "abc", "abc"},
	{"nothing known", nil, "token=abc", "token=abc"},
}

func TestValues(t *testing.T) {
	for _, tt := range valuesTests {
		if got := NewValues(tt.secrets...).Hide(tt.text); got != tt.want {
			t.Errorf("%s: %q -> %q, want %q", tt.name, tt.text, got, tt.want)
		}
	}
}
