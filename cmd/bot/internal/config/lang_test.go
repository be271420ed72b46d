package config

import "testing"

// langTests: each surface's language from approval.lang, the channels'
// own keys and the locale.
var langTests = []struct {
	name                             string
	approval, api, cli, locale       string
	feishu, dingtalk                 bool
	core, platform, page, apiL, chat string
}{
	{name: "unset, Feishu on, English locale", feishu: true, locale: "en_US.UTF-8",
		core: "zh", platform: "zh", page: "", apiL: "en", chat: "en"},
	{name: "unset, DingTalk on, Chinese locale", dingtalk: true, locale: "zh_CN.UTF-8",
		core: "zh", platform: "zh", page: "", apiL: "zh", chat: "zh"},
	{name: "unset, no platform, Chinese locale", locale: "zh_CN.UTF-8",
		core: "zh", platform: "zh", page: "", apiL: "zh", chat: "zh"},
	{name: "unset, no platform, C locale", locale: "C",
		core: "en", platform: "zh", page: "", apiL: "en", chat: "en"},
	{name: "explicit en wins everywhere", approval: "en", feishu: true, locale: "zh_CN.UTF-8",
		core: "en", platform: "en", page: "en", apiL: "en", chat: "en"},
	{name: "explicit zh wins everywhere", approval: "zh", locale: "en_US",
		core: "zh", platform: "zh", page: "zh", apiL: "zh", chat: "zh"},
	{name: "a channel's own key wins", approval: "zh", api: "en", cli: "en", locale: "zh_CN",
		core: "zh", platform: "zh", page: "zh", apiL: "en", chat: "en"},
}

func TestLanguages(t *testing.T) {
	defer func(g func(string) string) { getenv = g }(getenv)
	for _, tc := range langTests {
		t.Run(tc.name, func(t *testing.T) {
			getenv = func(k string) string {
				if k == "LANG" {
					return tc.locale
				}
				return ""
			}
			var c Config
			c.Approval.Lang, c.Channels.API.Lang, c.Channels.CLI.Lang = tc.approval, tc.api, tc.cli
			c.Channels.Feishu.Enabled, c.Channels.DingTalk.Enabled = tc.feishu, tc.dingtalk
			for _, g := range []struct{ what, got, want string }{
				{"core", c.CoreLang(), tc.core}, {"platform", c.PlatformLang(), tc.platform}, {"page", c.PageLang(), tc.page},
				{"api", c.APILang(), tc.apiL}, {"chat", c.ChatLang(), tc.chat},
			} {
				if g.got != g.want {
					t.Errorf("%s: %q, want %q", g.what, g.got, g.want)
				}
			}
		})
	}
}
