package gate

import (
	"strings"
	"testing"
	"time"

	"github.com/hitlbot/hitlbot/approval"
)

// agentTimeouts are agents' timeout and hook_timeout and the problem each
// has ("" for none).
var agentTimeouts = []struct {
	timeout, hook time.Duration
	wantErr       string
}{
	{0, 0, ""},
	{time.Second, time.Second, ""},
	{24 * time.Hour, time.Hour, ""},
	{500 * time.Millisecond, 0, "agents[ci].timeout: 500ms is not between 1s and 24h0m0s"},
	{25 * time.Hour, 0, "agents[ci].timeout: 25h0m0s is not between"},
	{-time.Minute, 0, "agents[ci].timeout: -1m0s is not between"},
	{0, 2 * time.Hour, "agents[ci].hook_timeout: 2h0m0s is not between 1s and 1h0m0s"},
	{0, -time.Second, "agents[ci].hook_timeout: -1s is not between"},
}

func TestValidateTimeouts(t *testing.T) {
	env := func(string) string { return "agent-token-0123456789abcdef" }
	for _, tc := range agentTimeouts {
		err := Validate([]AgentConfig{{Name: "ci", TokenEnv: "T", ApproveIn: Place{Channel: "api"}, Timeout: tc.timeout, HookTimeout: tc.hook}}, env, nil)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v, %v: %v", tc.timeout, tc.hook, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v, %v: %v, want %q", tc.timeout, tc.hook, err, tc.wantErr)
		}
	}
	a := &Agent{}
	if a.timeout() != 30*time.Minute || a.hookTimeout() != 9*time.Minute {
		t.Errorf("defaults: timeout %v, hook_timeout %v", a.timeout(), a.hookTimeout())
	}
}

// tookTests: how the time a person took reads in an answer.
var tookTests = []struct {
	took time.Duration
	want string
}{
	{2*time.Minute + 14*time.Second + 600*time.Millisecond, " after 2m14s"},
	{400 * time.Millisecond, " after 0s"},
	{time.Hour + time.Second, " after 1h0m1s"},
}

func TestTook(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	for _, tt := range tookTests {
		if got := took(&approval.Approval{CreatedAt: t0, DecidedAt: t0.Add(tt.took)}); got != tt.want {
			t.Errorf("%v: %q, want %q", tt.took, got, tt.want)
		}
	}
	if got := took(&approval.Approval{CreatedAt: t0}); got != "" {
		t.Errorf("no decision time: %q", got)
	}
}
