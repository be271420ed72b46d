package words

import (
	"testing"
	"time"
)

var agoCases = []struct {
	d      time.Duration
	en, zh string
}{
	{0, "just now", "刚刚"},
	{59 * time.Second, "just now", "刚刚"},
	{time.Minute, "1 minute ago", "1 分钟前"},
	{4*time.Minute + 30*time.Second, "4 minutes ago", "4 分钟前"},
	{59 * time.Minute, "59 minutes ago", "59 分钟前"},
	{90 * time.Minute, "1 hour ago", "1 小时前"},
	{5 * time.Hour, "5 hours ago", "5 小时前"},
}

func TestAgo(t *testing.T) {
	for _, tc := range agoCases {
		if got := Ago(EN, tc.d); got != tc.en {
			t.Errorf("Ago(en, %v) = %q, want %q", tc.d, got, tc.en)
		}
		if got := Ago(ZH, tc.d); got != tc.zh {
			t.Errorf("Ago(zh, %v) = %q, want %q", tc.d, got, tc.zh)
		}
	}
}
