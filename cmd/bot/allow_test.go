package main

import (
	"encoding/json"
	"maps"
	"net/http"
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
// refuses the anonymous local user of the API, end to end: 403
// not_allowed with the refusal sentence, the agent never ran (no tool, no
// approval), and the refusal is counted.
func TestServeAllowList(t *testing.T) {
	t.Setenv("HITLBOT_CHANNELS_API_ALLOW_USERS", "default/alice")
	s := serve(t, "-data", t.TempDir())
	resp, err := http.Post(s.base+"/agent/chat", "application/json", strings.NewReader(`{"message":"`+deleteCancelled+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		t.Fatal(err)
	}
	if msg, _ := res["message"].(string); resp.StatusCode != http.StatusForbidden || res["error"] != "not_allowed" || !strings.Contains(msg, "not allowed to use this assistant") {
		t.Fatalf("a refused user's message answered %d %v", resp.StatusCode, res)
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
