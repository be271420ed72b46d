package redisstore

import (
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
