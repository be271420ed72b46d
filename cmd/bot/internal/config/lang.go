package config

import (
	"os"

	"github.com/hitlbot/hitlbot/words"
)

// Where a language is chosen. approval.lang, when set, is every
// surface's language (a channel's own lang key still wins for that
// channel's words); unset, each surface has its own default:
//   - Feishu and DingTalk: zh (the teams that use them are Chinese);
//   - the web page: the browser's (Accept-Language), see web.Config.PageLang;
//   - the HTTP API: the request's Accept-Language, else the locale;
//   - `bot chat`: the locale (LC_ALL, LC_MESSAGES, LANG);
//   - the server's own words (the router's notices, the agent's, the
//     outcome words): zh when Feishu or DingTalk is on, else the locale.

// getenv reads the locale; a variable so tests can set it.
var getenv = os.Getenv

// CoreLang is the language of the server's own words: the router's and
// the agent's notices, the outcome words, the cards' words.
func (c *Config) CoreLang() string {
	if c.Approval.Lang != "" {
		return c.Approval.Lang
	}
	if c.Channels.Feishu.Enabled || c.Channels.DingTalk.Enabled {
		return string(words.ZH)
	}
	return string(words.Locale(getenv))
}

// PlatformLang is the language of a chat platform's words (Feishu,
// DingTalk) when its own lang key is empty: approval.lang, else zh.
func (c *Config) PlatformLang() string {
	if c.Approval.Lang != "" {
		return c.Approval.Lang
	}
	return string(words.ZH)
}

// PageLang is the web page's language: approval.lang, else empty (the
// browser's).
func (c *Config) PageLang() string { return c.Approval.Lang }

// APILang is the HTTP API's language for a request that names none:
// channels.api.lang, else approval.lang, else the locale.
func (c *Config) APILang() string {
	if c.Channels.API.Lang != "" {
		return c.Channels.API.Lang
	}
	if c.Approval.Lang != "" {
		return c.Approval.Lang
	}
	return string(words.Locale(getenv))
}

// ChatLang is the language of `bot chat`: channels.cli.lang, else
// approval.lang, else the locale.
func (c *Config) ChatLang() string {
	if c.Channels.CLI.Lang != "" {
		return c.Channels.CLI.Lang
	}
	if c.Approval.Lang != "" {
		return c.Approval.Lang
	}
	return string(words.Locale(getenv))
}
