package redisstore

import (
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/approval"
)

var messageIDTests = []struct {
	payload string
	id      approval.ID
	ok      bool
}{
	{`{"id":"ap_1","outcome":{"status":"executed"}}`, "ap_1", true},
	{`{"id":"","outcome":{}}`, "", true},
	{`{"outcome":{},"id":"ap_1"}`, "", false},
	{`{"id":"ap_1"}`, "", false},
	{`{"id":"ap_1`, "", false},
	{``, "", false},
	{`{"id": "ap_1","outcome":{}}`, "", false},
}

func TestMessageID(t *testing.T) {
	for _, tt := range messageIDTests {
		id, ok := messageID(tt.payload)
		if id != tt.id || ok != tt.ok {
			t.Errorf("messageID(%q) = %q, %v; want %q, %v", tt.payload, id, ok, tt.id, tt.ok)
		}
	}
}

// FuzzMessageID: anything may be published on the outcome channel; reading
// its id never panics, and an id it reads is exactly what stands between
// the prefix the scripts write and the next quote.
func FuzzMessageID(f *testing.F) {
	for _, tt := range messageIDTests {
		f.Add(tt.payload)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		id, ok := messageID(payload)
		if !ok {
			return
		}
		want := `{"id":"` + string(id) + `","outcome":`
		if !strings.HasPrefix(payload, want) || strings.Contains(string(id), `"`) {
			t.Fatalf("messageID(%q) = %q", payload, id)
		}
	})
}
