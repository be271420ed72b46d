package main

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/hitlbot/hitlbot/channels/api"
	"github.com/hitlbot/hitlbot/channels/cli"
	"github.com/hitlbot/hitlbot/channels/dingtalk"
	"github.com/hitlbot/hitlbot/channels/feishu"
	"github.com/hitlbot/hitlbot/channels/web"
	"github.com/hitlbot/hitlbot/cmd/bot/internal/config"
)

// TestServeAllowList: channels.api.allow.users set from the environment
// refuses the anonymous local user of the API, end to end: the answer is
// the refusal sentence, the agent never ran (no tool, no approval), and
// the refusal is counted.
func TestServeAllowList(t *testing.T) {
	t.Setenv("HITLBOT_CHANNELS_API_ALLOW_USERS", "default/alice")
	s := serve(t, "-data", t.TempDir())
	res := chat(t, s.base, map[string]any{"message": deleteCancelled})
	if text, _ := res["text"].(string); !strings.Contains(text, "not allowed to use this assistant") || res["requiresConfirmation"] == true {
		t.Fatalf("a refused user's message answered %v", res)
	}
	_, metrics := get(t, s.base+"/metrics")
	if !strings.Contains(metrics, `hitlbot_inbound_refused_total{channel="api"} 1`) || strings.Contains(metrics, "hitlbot_approvals_requested_total") {
		t.Errorf("/metrics after a refusal:\n%s", metrics)
	}
}

// TestAllowListNames: the names config gives the allow-lists are the
// channels' own names, which the router looks them up by.
func TestAllowListNames(t *testing.T) {
	var c config.Channels
	got := slices.Sorted(maps.Keys(maps.Collect(c.Allow())))
	want := []string{api.Name, cli.Name, dingtalk.Name, feishu.Name, web.Name}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("allow-lists for %q, channels %q", got, want)
	}
}
