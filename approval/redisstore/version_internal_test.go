package redisstore

import "testing"

var versionCases = []struct {
	info string
	ok   bool
}{
	{"# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n", true},
	{"redis_version:7.2.4\r\n", true},
	{"redis_version:8.0.0\r\n", true},
	{"redis_version:10.1\r\n", true},
	{"redis_version:6.2.14\r\n", false},
	{"redis_version:5.0.7\r\n", false},
	{"redis_version:6.9.99\r\n", false},
}

// TestAtLeast: versions compare by their numeric parts (10.1 is later
// than 7.0; 6.9.99 is older).
func TestAtLeast(t *testing.T) {
	for _, c := range versionCases {
		v := infoField(c.info, "redis_version")
		if got := atLeast(v, MinVersion); got != c.ok {
			t.Errorf("%q: atLeast(%q, %s) = %v, want %v", c.info, v, MinVersion, got, c.ok)
		}
	}
}
