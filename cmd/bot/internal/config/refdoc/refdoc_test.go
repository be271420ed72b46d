package refdoc

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestZHMustHoldExactlyTheKeys(t *testing.T) {
	keys := []Key{{Path: "server"}, {Path: "server.listen"}}
	if _, err := readZH([]byte("server: HTTP 服务\nserver.listen: 监听地址\n"), keys); err != nil {
		t.Fatalf("every key described once: %v", err)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"server: HTTP 服务\n", "no Chinese description of: server.listen"},
		{"server: HTTP 服务\nserver.listen: ''\n", "no Chinese description of: server.listen"},
		{"server: HTTP 服务\nserver.listen: 监听地址\nserver.port: 端口\n", "keys that do not exist: server.port"},
		{"server: a\nserver: b\nserver.listen: c\n", "already defined"},
	} {
		_, err := readZH([]byte(tc.yaml), keys)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error saying %q", tc.yaml, err, tc.want)
		}
	}
}

func TestDefaultInTextMustBeDefaultsYAML(t *testing.T) {
	num := Key{Path: "x.max_retries", Type: reflect.TypeFor[int](), Default: "3", HasDefault: true}
	dur := Key{Path: "x.grant_window", Type: reflect.TypeFor[time.Duration](), Default: "5m", HasDefault: true}
	url := Key{Path: "x.base_url", Type: reflect.TypeFor[string](), Default: "https://open.feishu.cn", HasDefault: true}
	for _, tc := range []struct {
		k     Key
		text  string
		wrong bool
	}{
		{num, "Bounds the retries. Default 4; negative disables them.", true},
		{num, "Bounds the retries. Default 3; negative disables them.", false},
		{num, "重试次数上限。默认 4；负数关闭重试。", true},
		{num, "重试次数上限。默认 3；负数关闭重试。", false},
		{dur, "Never applies to HIGH. Default 300s.", false},
		{dur, "从不适用于 HIGH。默认 10m。", true},
		{url, "The host. Default https://open.feishu.cn (https://open.larksuite.com for Lark).", false},
		{url, "主机。默认 https://open.larksuite.com（Lark）。", true},
		{Key{Type: reflect.TypeFor[string](), Default: "", HasDefault: true}, "Default: the OS user name.", false},
	} {
		re := defaultInComment
		if strings.Contains(tc.text, "默认") {
			re = defaultInZH
		}
		if got := checkDefault(tc.k, tc.text, re); (got != "") != tc.wrong {
			t.Errorf("%q with default %q: got %q, want a problem: %v", tc.text, tc.k.Default, got, tc.wrong)
		}
	}
}

func TestClean(t *testing.T) {
	fields := map[string]string{"Listen": "listen", "Public": "public", "PublicURL": "public_url", "Feishu": "feishu", "URL": "url"}
	for _, tc := range []struct{ goName, comment, want string }{
		{"Listen", "Listen is the HTTP address. A non-loopback\naddress needs Public (see Validate).\n",
			"`listen` is the HTTP address. A non-loopback address needs `public`."},
		{"PublicURL", "PublicURL is the base URL: Feishu's webhook is PublicURL +\n\"/webhook/feishu\".\n",
			"`public_url` is the base URL: Feishu's webhook is `public_url` + \"/webhook/feishu\"."},
		{"Listen", "Listen, when set, replaces approvers.<risk> and *_file keys; see lang.go.\n",
			"`listen`, when set, replaces approvers.&lt;risk&gt; and \\*_file keys."},
		{"Listen", "Listen bounds a run. Zero: DefaultTimeout (30s); at most MaxListen (1.5s).\n",
			"`listen` bounds a run. Zero: 30s; at most 1.5s."},
		{"Listen", "Listen is a `bot chat` <thing>.\n\nSecond paragraph.\n",
			"`listen` is a `bot chat` &lt;thing&gt;.\n\nSecond paragraph."},
	} {
		if got := clean(tc.comment, tc.goName, fields); got != tc.want {
			t.Errorf("clean(%q):\n got %q\nwant %q", tc.comment, got, tc.want)
		}
	}
}

func TestChangedCommentNeedsItsChineseReviewed(t *testing.T) {
	keys := []Key{{Path: "log.level", Comment: "Level is debug, info, warn or error.\nDefault info.\n"}}
	sums := Sums(keys)
	if got := changedSince(sums, keys); len(got) != 0 {
		t.Fatalf("nothing changed, got %v", got)
	}
	rewrapped := []Key{{Path: "log.level", Comment: "Level is debug, info, warn or\nerror. Default info.\n"}}
	if got := changedSince(sums, rewrapped); len(got) != 0 {
		t.Errorf("only the line breaks changed, got %v", got)
	}
	changed := []Key{{Path: "log.level", Comment: "Level is debug, info, warn or error. Default warn.\n"}}
	if got := changedSince(sums, changed); len(got) != 1 || got[0] != "log.level" {
		t.Errorf("the comment changed: got %v, want [log.level]", got)
	}
	added := append(keys, Key{Path: "log.format", Comment: "Format is json or text.\n"})
	if got := changedSince(sums, added); len(got) != 1 || got[0] != "log.format" {
		t.Errorf("a new key: got %v, want [log.format]", got)
	}
}

type undocumented struct {
	// Documented has a comment.
	Documented string `mapstructure:"documented"`
	Bare       string `mapstructure:"bare"`
}

func TestFieldWithoutCommentFails(t *testing.T) {
	typ := reflect.TypeFor[undocumented]()
	c := &comments{pkgs: map[string]map[string]map[string]string{
		typ.PkgPath(): {"undocumented": {"Documented": "Documented has a comment.\n"}},
	}}
	var keys []Key
	err := c.walk(typ, "x", false, &keys)
	if err == nil || !strings.Contains(err.Error(), "x.bare") || !strings.Contains(err.Error(), "has no comment") {
		t.Fatalf("got %v, want x.bare has no comment", err)
	}
}
