package config

import (
	"slices"
	"testing"
	"time"
)

// channels.feishu.max_request_age: 1h by default, and it must be positive.
func TestFeishuMaxRequestAge(t *testing.T) {
	t.Chdir(t.TempDir())
	c, err := Load(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Channels.Feishu.MaxRequestAge; got != time.Hour {
		t.Fatalf("default max_request_age %v, want 1h", got)
	}
	for _, age := range []time.Duration{0, -time.Minute} {
		c, err := Load(Options{})
		if err != nil {
			t.Fatal(err)
		}
		f := &c.Channels.Feishu
		f.Enabled, f.AppID, f.AppSecret = true, "cli_x", "secret"
		f.Mode, f.EncryptKey = "webhook", "ekey"
		f.MaxRequestAge = age
		err = c.Validate()
		var ps Problems
		if err != nil {
			ps = err.(Problems)
		}
		if want := []string{"channels.feishu.max_request_age"}; !slices.Equal(paths(ps), want) {
			t.Errorf("max_request_age %v: problems at %q, want %q", age, paths(ps), want)
		}
	}
}
